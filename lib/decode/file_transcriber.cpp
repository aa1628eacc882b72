// lib/decode/file_transcriber.cpp
#include "decode/file_transcriber.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "audio/audio_reader.h"
#include "core/error.h"
#include "models/asr_model.h"
#include "models/checkpoint.h"

namespace masr::decode {

std::shared_ptr<models::AsrModel> load_asr_model(const std::string& path) {
  return models::AsrModel::load(models::model_file_in(path));
}

namespace {

// Runs fn(0) ... fn(n - 1) on `threads` threads (0: one per core, at most 16), this one included.
void for_each_parallel(size_t n, int threads, const std::function<void(size_t)>& fn) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers =
      std::min<size_t>(n, threads > 0 ? static_cast<size_t>(threads) : std::min(cores, 16u));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

// Reads one row into `out`, an error message instead of an exception.
void read_row(const data::ManifestRow& row, int sample_rate, std::vector<float>& samples,
              std::string& error, const InputAudio& source = {}) {
  try {
    samples = source.read(row, sample_rate);
  } catch (const Error& e) {
    error = e.what();
  } catch (const std::exception& e) {  // bad_alloc on an absurd declared size
    error = "'" + row.wav + "' cannot be read: " + e.what();
  }
}

}  // namespace

ReadAudio read_all_audio(const std::vector<data::ManifestRow>& rows, int sample_rate,
                         int threads) {
  ReadAudio out;
  out.samples.resize(rows.size());
  out.errors.resize(rows.size());
  for_each_parallel(rows.size(), threads, [&](size_t i) {
    read_row(rows[i], sample_rate, out.samples[i], out.errors[i]);
  });
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!out.errors[i].empty()) continue;
    out.readable.push_back(i);
    out.seconds += static_cast<double>(out.samples[i].size()) / sample_rate;
  }
  return out;
}

std::vector<std::vector<size_t>> make_batches(const std::vector<size_t>& indices,
                                              const std::vector<size_t>& lengths, int sample_rate,
                                              const Batching& batching) {
  if (batching.max_utterances < 1) throw_config_error("decode: batch size must be at least 1");
  if (!(batching.max_padded_seconds >= 0)) {
    throw_config_error("decode: batch seconds must be >= 0 (0: no limit)");
  }
  std::vector<size_t> order = indices;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  const double budget = batching.max_padded_seconds * sample_rate;  // samples
  std::vector<std::vector<size_t>> batches;
  for (const size_t i : order) {
    // Longest first, so a batch's first utterance sets its padded length.
    const bool full =
        batches.empty() ||
        batches.back().size() >= static_cast<size_t>(batching.max_utterances) ||
        (budget > 0 && static_cast<double>(batches.back().size() + 1) *
                               static_cast<double>(lengths[batches.back().front()]) >
                           budget);
    if (full) batches.emplace_back();
    batches.back().push_back(i);
  }
  return batches;
}

void TranscribeOptions::validate() const {
  if (batching.max_utterances < 1) throw_config_error("decode: batch size must be at least 1");
  if (read_ahead_batches < 1) throw_config_error("decode: read-ahead must be at least 1 batch");
  chunking.validate();
}

namespace {

// Rows read by reader threads at most a bounded number of queue positions ahead of decoding:
// slot k % ring holds queue position k; a reader takes position k only when the decoder has
// released every position before k - ring.
class BoundedReader {
 public:
  BoundedReader(const std::vector<data::ManifestRow>& rows, std::vector<size_t> queue,
                size_t ring, int rate, const InputAudio& input, int threads)
      : rows_(rows), queue_(std::move(queue)), slots_(std::max<size_t>(1, ring)), rate_(rate),
        input_(input) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const size_t workers = std::min<size_t>(
        queue_.size(), threads > 0 ? static_cast<size_t>(threads) : std::min(cores, 16u));
    for (size_t t = 0; t < workers; ++t) pool_.emplace_back([this] { work(); });
  }
  ~BoundedReader() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    space_.notify_all();
    for (auto& t : pool_) t.join();
  }
  BoundedReader(const BoundedReader&) = delete;
  BoundedReader& operator=(const BoundedReader&) = delete;

  // Waits for queue positions [begin, end) (end - begin <= ring) and moves their audio out.
  void take(size_t begin, size_t end, std::vector<std::vector<float>>& samples,
            std::vector<std::string>& errors) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (size_t k = begin; k < end; ++k) {
      Slot& slot = slots_[k % slots_.size()];
      ready_.wait(lock, [&] { return slot.ready; });
      samples.push_back(std::move(slot.samples));
      errors.push_back(std::move(slot.error));
      slot = Slot();
    }
    released_ = end;
    space_.notify_all();
  }

 private:
  struct Slot {
    std::vector<float> samples;
    std::string error;
    bool ready = false;
  };

  void work() {
    for (;;) {
      size_t k = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        space_.wait(lock, [&] {
          return stop_ || next_ >= queue_.size() || next_ < released_ + slots_.size();
        });
        if (stop_ || next_ >= queue_.size()) return;
        k = next_++;
      }
      Slot read;
      read_row(rows_[queue_[k]], rate_, read.samples, read.error, input_);
      read.ready = true;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        slots_[k % slots_.size()] = std::move(read);
      }
      ready_.notify_all();
    }
  }

  const std::vector<data::ManifestRow>& rows_;
  const std::vector<size_t> queue_;  // rows in decoding order
  std::vector<Slot> slots_;
  const int rate_;
  const InputAudio& input_;
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  size_t next_ = 0, released_ = 0;
  bool stop_ = false;
  std::vector<std::thread> pool_;
};

// What the probe found and how the rows are grouped: per reorder window, its long files (decoded
// in chunks, in row order) and its batches (longest first); `queue` lists the batched rows of all
// windows in decoding order, which is the order readers read them.
struct DecodePlan {
  std::vector<size_t> lengths;      // samples at the model's rate, from the headers
  std::vector<std::string> errors;  // per row: the probe's error
  struct Window {
    size_t begin = 0, end = 0;  // rows
    std::vector<size_t> long_rows;
    std::vector<std::vector<size_t>> batches;
  };
  std::vector<Window> windows;
  std::vector<size_t> queue;
  DecodeCounts counts;
};

DecodePlan plan_decoding(const std::vector<data::ManifestRow>& rows, const TranscribeOptions& o,
                         int rate, const InputAudio& input) {
  DecodePlan plan;
  plan.lengths.assign(rows.size(), 0);
  plan.errors.assign(rows.size(), std::string());
  for_each_parallel(rows.size(), o.threads, [&](size_t i) {
    try {
      const audio::AudioInfo info = input.probe(rows[i]);
      plan.lengths[i] = static_cast<size_t>(static_cast<double>(info.frames) * rate /
                                            std::max(1, info.sample_rate));
    } catch (const Error& e) {
      plan.errors[i] = e.what();
    } catch (const std::exception& e) {
      plan.errors[i] = "'" + rows[i].wav + "' cannot be read: " + e.what();
    }
  });
  const size_t group = o.reorder_window > 0
                           ? o.reorder_window
                           : std::max<size_t>(256, 16 * static_cast<size_t>(o.batching.max_utterances));
  for (size_t begin = 0; begin < rows.size(); begin += group) {
    DecodePlan::Window w;
    w.begin = begin;
    w.end = std::min(rows.size(), begin + group);
    std::vector<size_t> batched;
    for (size_t i = w.begin; i < w.end; ++i) {
      if (!plan.errors[i].empty()) continue;
      ++plan.counts.files_total;
      plan.counts.audio_total += static_cast<double>(plan.lengths[i]) / rate;
      (o.chunking.applies_to(plan.lengths[i], rate) ? w.long_rows : batched).push_back(i);
    }
    w.batches = make_batches(batched, plan.lengths, rate, o.batching);
    for (const auto& b : w.batches) plan.queue.insert(plan.queue.end(), b.begin(), b.end());
    plan.windows.push_back(std::move(w));
  }
  return plan;
}

// Hands results on in row order: rows are marked done in any order within a window.
class OrderedEmitter {
 public:
  OrderedEmitter(const ResultSink& sink, size_t begin, size_t end)
      : sink_(sink), next_(begin), pending_(end - begin), begin_(begin) {}
  void done(FileResult&& result) {
    FileResult& slot = pending_[result.row - begin_];
    slot = std::move(result);
    filled_.insert(slot.row);
    while (filled_.count(next_) != 0) {
      filled_.erase(next_);
      FileResult out = std::move(pending_[next_ - begin_]);
      ++next_;
      if (sink_) sink_(std::move(out));
    }
  }

 private:
  const ResultSink& sink_;
  size_t next_;
  std::vector<FileResult> pending_;
  size_t begin_;
  std::set<size_t> filled_;
};

struct Decoding {
  RecognitionModel& model;
  const std::vector<data::ManifestRow>& rows;
  const TranscribeOptions& options;
  const DecodeConfig& config;
  SequenceScorer* lm;
  const DecodeProgress& progress;
  const InputAudio& input;
  DecodePlan& plan;

  void long_file(size_t i, OrderedEmitter& emit) {
    FileResult r;
    r.row = i;
    const double before = plan.counts.audio_done;
    try {
      std::unique_ptr<SampleStream> stream = input.open_stream(rows[i], model.sample_rate());
      ChunkedDecodeStats stats;
      r.transcript = std::make_unique<Transcript>(decode_chunked(
          model, *stream, config, options.chunking, lm,
          [&](double seconds) {
            plan.counts.audio_done = before + seconds;
            if (progress) progress(plan.counts);
          },
          &stats));
      r.transcript->id = rows[i].id;
      r.seconds = stats.seconds;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInput && e.kind() != ErrorKind::kIo) throw;
      r.error = e.what();
      plan.counts.audio_total -= static_cast<double>(plan.lengths[i]) / model.sample_rate();
    }
    plan.counts.audio_done = before + r.seconds;
    ++plan.counts.files_done;
    if (progress) progress(plan.counts);
    emit.done(std::move(r));
  }

  void batch(const std::vector<size_t>& b, std::vector<std::vector<float>>& samples,
             std::vector<std::string>& errors, OrderedEmitter& emit) {
    const int rate = model.sample_rate();
    std::vector<size_t> good;
    std::vector<const std::vector<float>*> waveforms;
    for (size_t k = 0; k < b.size(); ++k) {
      if (!errors[k].empty()) {  // readable header, unreadable audio: no longer to come
        plan.counts.audio_total -= static_cast<double>(plan.lengths[b[k]]) / rate;
        continue;
      }
      good.push_back(k);
      waveforms.push_back(&samples[k]);
    }
    std::vector<Transcript> transcripts;
    if (!good.empty()) transcripts = decode_batch(model, waveforms, config, lm);
    for (size_t k = 0, g = 0; k < b.size(); ++k) {
      FileResult r;
      r.row = b[k];
      if (g < good.size() && good[g] == k) {
        r.transcript = std::make_unique<Transcript>(std::move(transcripts[g++]));
        r.transcript->id = rows[b[k]].id;
        r.seconds = static_cast<double>(samples[k].size()) / rate;
        plan.counts.audio_done += r.seconds;
      } else {
        r.error = std::move(errors[k]);
      }
      emit.done(std::move(r));
    }
    plan.counts.files_done += b.size();
    if (progress) progress(plan.counts);
  }
};

}  // namespace

void transcribe_files(RecognitionModel& model, const std::vector<data::ManifestRow>& rows,
                      const TranscribeOptions& options, const DecodeConfig& config,
                      const ResultSink& sink, SequenceScorer* lm, const DecodeProgress& progress,
                      const InputAudio* source) {
  options.validate();
  const InputAudio files;
  const InputAudio& input = source != nullptr ? *source : files;
  const int rate = model.sample_rate();
  DecodePlan plan = plan_decoding(rows, options, rate, input);
  const size_t batch = static_cast<size_t>(options.batching.max_utterances);
  BoundedReader reader(rows, plan.queue, (options.read_ahead_batches + 1) * batch, rate, input,
                       options.threads);
  Decoding decoding{model, rows, options, config, lm, progress, input, plan};
  size_t taken = 0;  // queue positions handed to the decoder
  for (const auto& w : plan.windows) {
    OrderedEmitter emit(sink, w.begin, w.end);
    for (size_t i = w.begin; i < w.end; ++i) {
      if (!plan.errors[i].empty()) emit.done({i, nullptr, std::move(plan.errors[i]), 0.0});
    }
    for (const size_t i : w.long_rows) decoding.long_file(i, emit);
    for (const auto& b : w.batches) {
      std::vector<std::vector<float>> samples;
      std::vector<std::string> errors;
      reader.take(taken, taken + b.size(), samples, errors);
      taken += b.size();
      decoding.batch(b, samples, errors, emit);
    }
  }
}

std::vector<std::unique_ptr<Transcript>> transcribe_files(
    RecognitionModel& model, const std::vector<data::ManifestRow>& rows, const Batching& batching,
    const DecodeConfig& config, ReadAudio& read, SequenceScorer* lm, const DecodeProgress& progress,
    int threads, const InputAudio* source) {
  TranscribeOptions options;
  options.batching = batching;
  options.threads = threads;
  read = ReadAudio();
  read.samples.resize(rows.size());
  read.errors.resize(rows.size());
  std::vector<std::unique_ptr<Transcript>> results(rows.size());
  transcribe_files(
      model, rows, options, config,
      [&](FileResult&& r) {
        read.errors[r.row] = std::move(r.error);
        if (r.transcript) read.readable.push_back(r.row);
        read.seconds += r.seconds;
        results[r.row] = std::move(r.transcript);
      },
      lm, progress, source);
  return results;
}

}  // namespace masr::decode
