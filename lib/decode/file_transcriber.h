// lib/decode/file_transcriber.h
// Files to text, the pipeline of `mamba-asr decode` and of `bench decode-files`: read the inputs
// (in parallel threads: decoding compressed audio and resampling are the costly part on the host)
// a bounded distance ahead of decoding, decode longest first in batches (less padding) and long
// files in windows, and hand each transcript on in input order as soon as it is ready.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/manifest.h"
#include "decode/batch_decoder.h"
#include "decode/chunked_decoder.h"
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

// How a list of files is decoded with bounded memory, whatever its length.
struct TranscribeOptions {
  Batching batching;
  // Files longer than a chunk are decoded window by window (chunked_decoder.h).
  ChunkingOptions chunking;
  int threads = 0;  // reader threads (0: one per core, at most 16)
  // Rows are taken in input order, `reorder_window` at a time (0: max(256, 16 x batch size));
  // each group is decoded longest first in batches and its results are handed on in input order.
  // Results are held at most that long, never for the whole list.
  size_t reorder_window = 0;
  // Batches of audio read ahead of the one being decoded (at least 1).
  size_t read_ahead_batches = 2;
  void validate() const;  // throws a config error naming the option
};

// One row's outcome, handed on in row order.
struct FileResult {
  size_t row = 0;
  std::unique_ptr<Transcript> transcript;  // null when the audio could not be read
  std::string error;                       // why not
  double seconds = 0.0;                    // audio decoded
};
using ResultSink = std::function<void(FileResult&&)>;
using DecodeProgress = std::function<void(const DecodeCounts&)>;

// Decodes every row and calls `sink` once per row, in row order, as soon as the row and every
// row before it are done. Every header is probed first (the lengths order the batches and give
// the totals); then, per reorder window, reader threads read the batches' files in decoding
// order at most `read_ahead_batches` batches ahead while the model decodes the batches already
// read, and files longer than a chunk are streamed window by window. Memory is bounded by the
// read-ahead, one long file's window and the reorder window's transcripts. `progress`, when
// given, is called after every batch and every window of a long file. `source` reads each
// row's audio (stdin, raw PCM); null: the file at row.wav through libsndfile.
void transcribe_files(RecognitionModel& model, const std::vector<data::ManifestRow>& rows,
                      const TranscribeOptions& options, const DecodeConfig& config,
                      const ResultSink& sink, SequenceScorer* lm = nullptr,
                      const DecodeProgress& progress = {}, const InputAudio* source = nullptr);

// The same, collected: one transcript per row (null for rows that could not be read, ids set
// from `rows`); `read` gets the errors, the rows read and the audio seconds (no samples).
std::vector<std::unique_ptr<Transcript>> transcribe_files(
    RecognitionModel& model, const std::vector<data::ManifestRow>& rows, const Batching& batching,
    const DecodeConfig& config, ReadAudio& read, SequenceScorer* lm = nullptr,
    const DecodeProgress& progress = {}, int threads = 0, const InputAudio* source = nullptr);

}  // namespace masr::decode
