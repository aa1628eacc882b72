// lib/decode/file_transcriber.h
// Files to text, the pipeline of `mamba-asr decode` and of `bench decode-files`: read every input
// (in parallel threads: decoding compressed audio and resampling are the costly part on the host),
// then decode longest first in batches (less padding), one transcript per readable input.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/manifest.h"
#include "decode/batch_decoder.h"
#include "decode/decode_inputs.h"
#include "decode/decode_progress.h"

namespace masr::models {
class AsrModel;
}

namespace masr::decode {

// A model file, or a folder holding model.masr (an input error naming the folder otherwise).
std::shared_ptr<models::AsrModel> load_asr_model(const std::string& path);

struct ReadAudio {
  std::vector<std::vector<float>> samples;  // per row, at the requested rate (empty if unreadable)
  std::vector<std::string> errors;          // per row: "" when read, else why not
  std::vector<size_t> readable;             // the rows read, in row order
  double seconds = 0.0;                     // total audio read
};

// Reads every row's `wav` as mono at `sample_rate` with `threads` threads (0: one per core, at
// most 16). Unreadable files are reported in `errors`, never thrown.
ReadAudio read_all_audio(const std::vector<data::ManifestRow>& rows, int sample_rate,
                         int threads = 0);

// How utterances are grouped: longest first, at most `max_utterances` per batch and, when
// `max_padded_seconds` > 0, at most that much audio once padded to the batch's longest (the
// batch's compute; a lone longer utterance still forms a batch). Fixed counts over mixed lengths
// waste compute on padding (208 test files of 1-12.5 s in batches of 128: 42 % of the padded
// audio is real), a padded-seconds budget keeps batches uniform.
struct Batching {
  int max_utterances = 8;
  double max_padded_seconds = 0.0;
};

// Batches of indices into `lengths` (samples), longest first; `indices` chooses the utterances.
std::vector<std::vector<size_t>> make_batches(const std::vector<size_t>& indices,
                                              const std::vector<size_t>& lengths, int sample_rate,
                                              const Batching& batching);

// One transcript per row (null for rows that could not be read, ids set from `rows`), decoded in
// make_batches' batches, reading overlapped with decoding: every header is probed first (the
// lengths order the batches), then reader threads read the batches' files in decoding order
// while the model decodes the batches already read. `read` tells which files could not be read
// and how much audio was decoded (its `samples` are released once decoded). `progress`, when
// given, is called after every batch with the files and audio seconds done so far. `source` reads
// each row's audio (stdin, raw PCM); null: the file at row.wav through libsndfile.
using DecodeProgress = std::function<void(const DecodeCounts&)>;
std::vector<std::unique_ptr<Transcript>> transcribe_files(
    RecognitionModel& model, const std::vector<data::ManifestRow>& rows, const Batching& batching,
    const DecodeConfig& config, ReadAudio& read, SequenceScorer* lm = nullptr,
    const DecodeProgress& progress = {}, int threads = 0, const InputAudio* source = nullptr);

}  // namespace masr::decode
