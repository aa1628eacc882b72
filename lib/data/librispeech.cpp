// lib/data/librispeech.cpp
// LibriSpeech → SpeechBrain CSVs: transcripts are read per chapter, audio headers probed in
// parallel (a full LibriSpeech has 292k files), the result sorted by ID so reruns are identical.
#include "data/librispeech.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "audio/audio_reader.h"
#include "core/error.h"
#include "core/log.h"

namespace masr::data {
namespace fs = std::filesystem;
namespace {

// `<id> <WORDS...>` lines of one chapter's transcript file.
void read_transcripts(const fs::path& file, Manifest& manifest) {
  std::ifstream in(file);
  if (!in) throw_io_error("LibriSpeech transcript '" + file.string() + "': cannot open");
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const size_t space = line.find(' ');
    const std::string where = file.string() + ":" + std::to_string(number);
    if (space == std::string::npos || space == 0) {
      throw_input_error("LibriSpeech transcript " + where + ": expected '<id> <words>', got '" +
                        line + "'");
    }
    ManifestRow row;
    row.id = line.substr(0, space);
    row.wrd = line.substr(line.find_first_not_of(' ', space));
    // SpeechBrain: spk_id = the first two fields of the id (speaker-chapter).
    const size_t second = row.id.find('-', row.id.find('-') + 1);
    row.spk_id = row.id.substr(0, second);
    row.wav = fs::absolute(file.parent_path() / (row.id + ".flac")).lexically_normal().string();
    row.source = where;
    manifest.rows.push_back(std::move(row));
  }
}

void probe_durations(Manifest& manifest, int jobs) {
  const size_t n = manifest.rows.size();
  const unsigned threads = std::max(
      1u, std::min<unsigned>(
              jobs > 0 ? static_cast<unsigned>(jobs) : std::thread::hardware_concurrency(), 16u));
  std::atomic<size_t> next{0}, done{0};
  std::mutex error_mutex;
  std::string first_error;
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      ManifestRow& row = manifest.rows[i];
      try {
        const audio::AudioInfo info = audio::probe_audio(row.wav);
        row.duration = info.duration();
      } catch (const Error& e) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error.empty()) first_error = row.source + ": " + e.what();
        next = n;  // stop the others early
      }
      ++done;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
  auto last = std::chrono::steady_clock::now();
  while (done < n && first_error.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (std::chrono::steady_clock::now() - last > std::chrono::seconds(10)) {
      MASR_LOG_INFO("prepare: %zu / %zu audio headers read", done.load(), n);
      last = std::chrono::steady_clock::now();
    }
  }
  for (auto& t : pool) t.join();
  if (!first_error.empty()) throw_input_error("LibriSpeech " + first_error);
}

void write_csv_atomically(const std::string& path, const Manifest& manifest) {
  const std::string tmp = path + ".tmp";
  try {
    write_speechbrain_csv(tmp, manifest);
    fs::rename(tmp, path);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

}  // namespace

Manifest prepare_librispeech_split(const std::string& split_folder, int jobs) {
  Manifest manifest;
  manifest.origin = split_folder;
  std::vector<fs::path> transcripts, audio;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(split_folder, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string name = it->path().filename().string();
    if (name.size() > 10 && name.compare(name.size() - 10, 10, ".trans.txt") == 0) {
      transcripts.push_back(it->path());
    } else if (it->path().extension() == ".flac") {
      audio.push_back(it->path());
    }
  }
  if (ec) throw_io_error("LibriSpeech folder '" + split_folder + "': " + ec.message());
  if (transcripts.empty()) {
    throw_input_error("LibriSpeech folder '" + split_folder +
                      "' has no *.trans.txt files (expected <speaker>/<chapter>/"
                      "<speaker>-<chapter>.trans.txt)");
  }
  std::sort(transcripts.begin(), transcripts.end());
  for (const auto& file : transcripts) read_transcripts(file, manifest);
  std::sort(manifest.rows.begin(), manifest.rows.end(),
            [](const ManifestRow& a, const ManifestRow& b) { return a.id < b.id; });
  for (size_t i = 1; i < manifest.rows.size(); ++i) {
    if (manifest.rows[i].id == manifest.rows[i - 1].id) {
      throw_input_error("LibriSpeech: utterance '" + manifest.rows[i].id + "' appears twice (" +
                        manifest.rows[i - 1].source + " and " + manifest.rows[i].source + ")");
    }
  }
  // Audio without a transcript line would silently shrink the corpus: refuse it.
  std::vector<std::string> ids;
  ids.reserve(manifest.rows.size());
  for (const auto& row : manifest.rows) ids.push_back(row.id);
  for (const auto& path : audio) {
    if (!std::binary_search(ids.begin(), ids.end(), path.stem().string())) {
      throw_input_error("LibriSpeech: '" + path.string() + "' has no line in its chapter's " +
                        "transcript file");
    }
  }
  for (const auto& row : manifest.rows) {
    if (!fs::exists(row.wav)) {
      throw_input_error("LibriSpeech transcript " + row.source + ": audio file '" + row.wav +
                        "' is missing");
    }
  }
  probe_durations(manifest, jobs);
  return manifest;
}

LibriSpeechPrepared prepare_librispeech(const std::string& data_folder,
                                        const std::string& output_folder,
                                        const LibriSpeechPrepareOptions& options) {
  if (!fs::is_directory(data_folder)) {
    throw_input_error("LibriSpeech data folder '" + data_folder + "' does not exist");
  }
  fs::create_directories(output_folder);
  LibriSpeechPrepared result;
  auto present = [&](const std::string& split) {
    if (fs::is_directory(fs::path(data_folder) / split)) return true;
    result.missing.push_back(split);
    return false;
  };
  Manifest train;
  train.origin = data_folder;
  for (const auto& split : options.train_splits) {
    if (!present(split)) continue;
    MASR_LOG_INFO("prepare: %s", split.c_str());
    Manifest part =
        prepare_librispeech_split((fs::path(data_folder) / split).string(), options.jobs);
    for (auto& row : part.rows) train.rows.push_back(std::move(row));
  }
  std::vector<std::pair<std::string, Manifest>> outputs;
  if (!train.rows.empty()) outputs.emplace_back("train", std::move(train));
  for (const auto& split : options.eval_splits) {
    if (!present(split)) continue;
    MASR_LOG_INFO("prepare: %s", split.c_str());
    outputs.emplace_back(
        split, prepare_librispeech_split((fs::path(data_folder) / split).string(), options.jobs));
  }
  if (outputs.empty()) {
    throw_input_error("LibriSpeech data folder '" + data_folder +
                      "' has none of the requested splits (expected e.g. train-clean-100/, "
                      "dev-clean/, test-clean/ inside it: pass the LibriSpeech/ folder itself)");
  }
  for (const auto& [name, manifest] : outputs) {
    const std::string path = (fs::path(output_folder) / (name + ".csv")).string();
    write_csv_atomically(path, manifest);
    MASR_LOG_INFO("prepare: %s: %zu utterances, %.2f h", path.c_str(), manifest.size(),
                  manifest.total_duration() / 3600);
    result.written.push_back(path);
  }
  return result;
}

}  // namespace masr::data
