// lib/data/loader.h
// A multi-threaded loader: worker threads turn manifest rows into items (audio reading, features:
// the function is the caller's) ahead of the consumer, and batches come out in the sampler's order.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "data/manifest.h"
#include "data/sampler.h"

namespace masr::data {

struct LoaderOptions {
  int num_workers = 0;  // 0: items are made in the consumer's thread, on demand
  int prefetch_batches =
      2;  // batches made ahead of the consumer, per worker (PyTorch's prefetch_factor)
  // Added to the workers' nice value (Linux: per thread; elsewhere ignored). Where the consumer
  // must not wait for the CPU (a GPU training thread queueing kernels), niced workers yield the
  // core to it when the machine is busy, and still use every idle one.
  int worker_nice = 0;
};

// The scheduling half of DataLoader, independent of the item type: hands out the items of the
// batches to workers in order, one item at a time, keeps at most `window` batches started but
// not consumed, and records each batch's outcome. Items rather than whole batches: the first
// batch of an epoch, which the consumer waits for with nothing to do, is made by every worker
// at once instead of by one (450 s of Opus with speed perturbation: 0.3 s of one core, `bench
// loader`), and so is any batch the consumer catches up with. A failed batch stops the
// scheduling of later ones.
class PrefetchScheduler {
 public:
  // `begin(b)` (under the scheduler's lock, before any item of batch b is handed out; may be
  // empty), `make_item(b, i)` (item i of batch b's `items[b]`) and `finish(b)` (on the worker
  // that made b's last item, after every item of b) store what they make where the caller will
  // look; make_item and finish may throw. A batch of no items is only finished.
  PrefetchScheduler(std::vector<size_t> items, int num_workers, size_t window,
                    std::function<void(size_t)> begin,
                    std::function<void(size_t, size_t)> make_item,
                    std::function<void(size_t)> finish, int worker_nice = 0);
  // Stops scheduling, waits for the batches being made to finish, joins the workers.
  ~PrefetchScheduler();
  PrefetchScheduler(const PrefetchScheduler&) = delete;
  PrefetchScheduler& operator=(const PrefetchScheduler&) = delete;

  // Blocks until batch b is made; rethrows the original exception if making it failed.
  void wait(size_t b);
  // The consumer is done with batch b (b must be the last waited for): frees a window slot.
  void release(size_t b);

 private:
  void work();
  // Batch b's outcome, once its last item is made (finish ran unless an item failed).
  void complete(size_t b, std::exception_ptr error);

  std::vector<size_t> items_;
  size_t num_batches_;
  size_t window_;
  int worker_nice_;
  std::function<void(size_t)> begin_;
  std::function<void(size_t, size_t)> make_item_;
  std::function<void(size_t)> finish_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<char> done_;
  std::vector<size_t> made_;  // items of each batch made (or failed)
  std::vector<std::exception_ptr> errors_;
  size_t next_batch_ = 0;  // the batch whose items are being handed out
  size_t next_item_ = 0;   // its next item
  size_t consumed_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// Yields, for each batch of the sampler, the items made by `make_item` from its rows, in the
// batch's order, or what `collate` makes of them (Out): collating in the workers keeps padding
// and copying a batch off the consumer's thread, which in GPU training must keep the device fed.
// The manifest must outlive the loader. An exception thrown by `make_item` reaches
// the consumer unchanged, from next(), when the consumer arrives at that batch; the loader then
// ends. Destroying the loader early stops the workers: each finishes the item it is making, and
// the destructor returns once they have.
template <typename Item, typename Out = std::vector<Item>>
class DataLoader {
 public:
  using ItemFn = std::function<Item(const ManifestRow&)>;
  using CollateFn = std::function<Out(std::vector<Item>)>;

  // Yields the items themselves (Out = std::vector<Item>).
  DataLoader(const Manifest& manifest, std::vector<Batch> batches, ItemFn make_item,
             LoaderOptions options = {})
      : DataLoader(manifest, std::move(batches), std::move(make_item),
                   [](std::vector<Item> items) { return Out(std::move(items)); }, options) {}

  DataLoader(const Manifest& manifest, std::vector<Batch> batches, ItemFn make_item,
             CollateFn collate, LoaderOptions options = {})
      : manifest_(manifest),
        batches_(std::move(batches)),
        make_item_(std::move(make_item)),
        collate_(std::move(collate)),
        slots_(batches_.size()),
        pending_(batches_.size()) {
    check_batches();
    if (options.num_workers > 0) {
      const size_t window = static_cast<size_t>(options.num_workers) *
                            static_cast<size_t>(std::max(1, options.prefetch_batches));
      std::vector<size_t> items;
      for (const Batch& batch : batches_) items.push_back(batch.size());
      scheduler_ = std::make_unique<PrefetchScheduler>(
          std::move(items), options.num_workers, window,
          [this](size_t b) { pending_[b].resize(batches_[b].size()); },
          [this](size_t b, size_t i) {
            // Shutting down: the item is left unmade and the batch discarded.
            if (cancelled_.load(std::memory_order_relaxed)) return;
            pending_[b][i].emplace(make_item_(manifest_.rows[batches_[b][i]]));
          },
          [this](size_t b) {
            std::vector<std::optional<Item>> made = std::move(pending_[b]);
            pending_[b] = {};
            if (cancelled_.load(std::memory_order_relaxed)) return;
            std::vector<Item> items;
            items.reserve(made.size());
            for (std::optional<Item>& item : made) items.push_back(std::move(*item));
            slots_[b] = collate_(std::move(items));
          },
          options.worker_nice);
    }
  }
  ~DataLoader() {
    cancelled_.store(true, std::memory_order_relaxed);
    scheduler_.reset();  // joins the workers before the slots go
  }
  // Workers hold `this`: a loader stays where it was built.
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch (its items, or their collation), with its indices in `indices` if given;
  // false after the last one.
  bool next(Out& items, Batch* indices = nullptr) {
    if (next_ >= batches_.size() || failed_) return false;
    const size_t b = next_++;
    if (scheduler_) {
      try {
        scheduler_->wait(b);
      } catch (...) {
        failed_ = true;
        throw;
      }
      items = std::move(slots_[b]);
      slots_[b] = Out();
      scheduler_->release(b);
    } else {
      try {
        items = make(b);
      } catch (...) {
        failed_ = true;
        throw;
      }
    }
    if (indices != nullptr) *indices = batches_[b];
    return true;
  }

  size_t size() const { return batches_.size(); }

 private:
  Out make(size_t b) const {
    std::vector<Item> items;
    items.reserve(batches_[b].size());
    for (size_t index : batches_[b]) {
      // Shutting down: the batch is discarded.
      if (cancelled_.load(std::memory_order_relaxed)) return Out();
      items.push_back(make_item_(manifest_.rows[index]));
    }
    return collate_(std::move(items));
  }

  void check_batches() const;

  const Manifest& manifest_;
  std::vector<Batch> batches_;
  ItemFn make_item_;
  CollateFn collate_;
  std::vector<Out> slots_;  // slot b is written by one worker, read by the consumer
  // Batch b's items while its workers make them (each element written by one worker; sized by
  // the scheduler's begin(b) before any of them starts).
  std::vector<std::vector<std::optional<Item>>> pending_;
  size_t next_ = 0;
  bool failed_ = false;
  std::atomic<bool> cancelled_{false};
  std::unique_ptr<PrefetchScheduler> scheduler_;  // last: destroyed (joined) first
};

// Throws an input error if a batch refers past the manifest's rows.
void check_batch_indices(const Manifest& manifest, const std::vector<Batch>& batches);

template <typename Item, typename Out>
void DataLoader<Item, Out>::check_batches() const {
  check_batch_indices(manifest_, batches_);
}

}  // namespace masr::data
