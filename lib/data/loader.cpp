// lib/data/loader.cpp
// PrefetchScheduler: in-order hand-out of the batches' items to workers with a bounded window.
#include "data/loader.h"

#include <algorithm>
#include <cerrno>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/error.h"

namespace masr::data {

namespace {

// Lowers the calling thread's priority by `increment` nice levels (Linux threads have their own).
void nice_this_thread(int increment) {
#ifdef __linux__
  if (increment <= 0) return;
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, tid);
  if (errno == 0) setpriority(PRIO_PROCESS, tid, std::min(19, current + increment));
#else
  (void)increment;
#endif
}

}  // namespace

PrefetchScheduler::PrefetchScheduler(std::vector<size_t> items, int num_workers, size_t window,
                                     std::function<void(size_t)> begin,
                                     std::function<void(size_t, size_t)> make_item,
                                     std::function<void(size_t)> finish, int worker_nice)
    : items_(std::move(items)),
      num_batches_(items_.size()),
      window_(std::max<size_t>(window, 1)),
      worker_nice_(worker_nice),
      begin_(std::move(begin)),
      make_item_(std::move(make_item)),
      finish_(std::move(finish)),
      done_(num_batches_, 0),
      made_(num_batches_, 0),
      errors_(num_batches_) {
  workers_.reserve(static_cast<size_t>(num_workers));
  for (int i = 0; i < num_workers; ++i) workers_.emplace_back([this] { work(); });
}

PrefetchScheduler::~PrefetchScheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void PrefetchScheduler::work() {
#ifdef _OPENMP
  // A worker is one thread of the loader's parallelism: an OpenMP region it enters (libsoxr is
  // built with OpenMP) runs on this thread alone, instead of forking a team as large as the
  // machine per call, whose spinning threads compete with the other workers for the cores.
  omp_set_num_threads(1);
#endif
  nice_this_thread(worker_nice_);
  while (true) {
    size_t b, i;
    bool only_finish = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] {
        return stopping_ || next_batch_ >= num_batches_ || next_batch_ < consumed_ + window_;
      });
      if (stopping_ || next_batch_ >= num_batches_) return;
      b = next_batch_;
      i = next_item_;
      if (i == 0 && begin_) begin_(b);
      only_finish = items_[b] == 0;
      if (only_finish || ++next_item_ >= items_[b]) {
        ++next_batch_;
        next_item_ = 0;
      }
    }
    std::exception_ptr error;
    if (!only_finish) {
      try {
        make_item_(b, i);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (error && !errors_[b]) errors_[b] = error;
      if (++made_[b] < items_[b]) continue;  // other items of b are still being made
      error = errors_[b];
    }
    complete(b, error);
  }
}

void PrefetchScheduler::complete(size_t b, std::exception_ptr error) {
  if (!error) {
    try {
      finish_(b);
    } catch (...) {
      error = std::current_exception();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_[b] = 1;
    errors_[b] = error;
    // Later batches would never be consumed: stop handing them out.
    if (error) stopping_ = true;
  }
  changed_.notify_all();
}

void PrefetchScheduler::wait(size_t b) {
  std::unique_lock<std::mutex> lock(mutex_);
  // A batch never handed out (scheduling stopped after an earlier failure) cannot be waited for;
  // the consumer always reaches the failed batch first, so this only guards against misuse.
  changed_.wait(lock, [&] { return done_[b] != 0 || (stopping_ && b >= next_batch_); });
  if (done_[b] == 0) {
    throw Error(ErrorKind::kInternal,
                "data loader: batch " + std::to_string(b) + " was never made (the loader stopped)");
  }
  if (errors_[b]) std::rethrow_exception(errors_[b]);
}

void PrefetchScheduler::release(size_t b) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    consumed_ = b + 1;
  }
  changed_.notify_all();
}

void check_batch_indices(const Manifest& manifest, const std::vector<Batch>& batches) {
  for (size_t b = 0; b < batches.size(); ++b) {
    for (size_t index : batches[b]) {
      if (index >= manifest.rows.size()) {
        throw_input_error("batch " + std::to_string(b) + " refers to row " + std::to_string(index) +
                          ", but manifest '" + manifest.origin + "' has " +
                          std::to_string(manifest.rows.size()) + " rows");
      }
    }
  }
}

}  // namespace masr::data
