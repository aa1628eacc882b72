// lib/decode/file_transcriber.cpp
#include "decode/file_transcriber.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "audio/audio_reader.h"
#include "core/error.h"
#include "models/asr_model.h"

namespace masr::decode {

std::shared_ptr<models::AsrModel> load_asr_model(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path)) {
    if (fs::exists(fs::path(path) / "model.masr"))
      return models::AsrModel::load((fs::path(path) / "model.masr").string());
    throw_input_error("model folder '" + path + "' has no model.masr (pass the model file itself)");
  }
  return models::AsrModel::load(path);
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

std::vector<std::unique_ptr<Transcript>> transcribe_files(
    RecognitionModel& model, const std::vector<data::ManifestRow>& rows, const Batching& batching,
    const DecodeConfig& config, ReadAudio& read, SequenceScorer* lm, const DecodeProgress& progress,
    int threads, const InputAudio* source) {
  const InputAudio files;
  const InputAudio& input = source != nullptr ? *source : files;
  const int rate = model.sample_rate();
  read = ReadAudio();
  read.samples.resize(rows.size());
  read.errors.resize(rows.size());
  // Lengths from the headers (at the model's rate), to order and group before reading.
  std::vector<size_t> lengths(rows.size(), 0);
  for_each_parallel(rows.size(), threads, [&](size_t i) {
    try {
      const audio::AudioInfo info = input.probe(rows[i]);
      lengths[i] = static_cast<size_t>(static_cast<double>(info.frames) * rate /
                                       std::max(1, info.sample_rate));
    } catch (const Error& e) {
      read.errors[i] = e.what();
    } catch (const std::exception& e) {
      read.errors[i] = "'" + rows[i].wav + "' cannot be read: " + e.what();
    }
  });
  std::vector<size_t> probed;
  DecodeCounts counts;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!read.errors[i].empty()) continue;
    probed.push_back(i);
    counts.audio_total += static_cast<double>(lengths[i]) / rate;
  }
  counts.files_total = probed.size();
  const auto batches = make_batches(probed, lengths, rate, batching);
  std::vector<size_t> queue;  // rows in decoding order
  for (const auto& b : batches) queue.insert(queue.end(), b.begin(), b.end());

  std::mutex mutex;
  std::condition_variable ready;
  std::vector<char> done(rows.size(), 0);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto reader = [&] {
    for (size_t k = next++; k < queue.size() && !stop; k = next++) {
      const size_t i = queue[k];
      read_row(rows[i], rate, read.samples[i], read.errors[i], input);
      {
        std::lock_guard<std::mutex> lock(mutex);
        done[i] = 1;
      }
      ready.notify_all();
    }
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::min<size_t>(
      queue.size(), threads > 0 ? static_cast<size_t>(threads) : std::min(cores, 16u));
  std::vector<std::thread> pool;
  for (size_t t = 0; t < workers; ++t) pool.emplace_back(reader);
  struct Joiner {  // an exception from decoding stops and joins the readers
    std::vector<std::thread>& pool;
    std::atomic<bool>& stop;
    ~Joiner() {
      stop = true;
      for (auto& t : pool)
        if (t.joinable()) t.join();
    }
  } joiner{pool, stop};

  std::vector<std::unique_ptr<Transcript>> results(rows.size());
  for (const auto& batch : batches) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      ready.wait(lock, [&] {
        return std::all_of(batch.begin(), batch.end(), [&](size_t i) { return done[i] != 0; });
      });
    }
    std::vector<size_t> good;
    std::vector<const std::vector<float>*> waveforms;
    for (const size_t i : batch) {
      if (!read.errors[i].empty()) {  // readable header, unreadable audio: no longer to come
        counts.audio_total -= static_cast<double>(lengths[i]) / rate;
        continue;
      }
      good.push_back(i);
      waveforms.push_back(&read.samples[i]);
    }
    if (!good.empty()) {
      auto transcripts = decode_batch(model, waveforms, config, lm);
      for (size_t k = 0; k < good.size(); ++k) {
        results[good[k]] = std::make_unique<Transcript>(std::move(transcripts[k]));
        results[good[k]]->id = rows[good[k]].id;
        read.seconds += static_cast<double>(read.samples[good[k]].size()) / rate;
        std::vector<float>().swap(read.samples[good[k]]);  // decoded: release the audio
      }
    }
    counts.files_done += batch.size();
    counts.audio_done = read.seconds;
    if (progress) progress(counts);
  }
  for (size_t i = 0; i < rows.size(); ++i)
    if (read.errors[i].empty()) read.readable.push_back(i);
  return results;
}

}  // namespace masr::decode
