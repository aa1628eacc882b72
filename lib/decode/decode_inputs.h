// lib/decode/decode_inputs.h
// What `mamba-asr decode` reads: audio files, folders (searched recursively), @list files,
// SpeechBrain CSVs, Kaldi wav.scp files or data folders, and "-" (stdin: one audio file, or a list
// of paths); and how each utterance's audio is read (libsndfile, headerless PCM, stdin's bytes).
#pragma once

#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audio/audio_reader.h"
#include "audio/raw_pcm.h"
#include "data/manifest.h"
#include "decode/sample_stream.h"

namespace masr::decode {

// Extensions (lower case, with the dot) taken from folders; other files in a folder are skipped.
const std::vector<std::string>& audio_extensions();

// How the utterances' audio is read: files through libsndfile, or as headerless PCM when
// `raw_pcm` is set; the utterance whose wav is kStdinPath from `stdin_bytes`. Safe to use from
// several threads at once.
struct InputAudio {
  std::optional<audio::RawPcmFormat> raw_pcm;
  std::shared_ptr<const std::string> stdin_bytes;  // set when stdin held audio

  // Throws masr::Error naming the file (or "stdin") and the reason, as audio::probe_audio does.
  audio::AudioInfo probe(const data::ManifestRow& row) const;
  // Mono samples at `sample_rate`; the same errors.
  std::vector<float> read(const data::ManifestRow& row, int sample_rate) const;
  // The same samples front to back in blocks: files libsndfile streams are read as they are
  // decoded (memory independent of their length), anything else is read whole first.
  std::unique_ptr<SampleStream> open_stream(const data::ManifestRow& row, int sample_rate) const;
};

inline constexpr const char* kStdinPath = "-";  // the wav of the utterance read from stdin
inline constexpr const char* kStdinId = "stdin";

struct DecodeInputs {
  std::vector<data::ManifestRow> rows;
  InputAudio audio;
};

// Every utterance of every input, in input order (folders sorted by path). Ids are file names
// without extension for files, folders and lists, the manifest's ids otherwise. Files whose names
// repeat (a/x.wav and b/x.wav) take their path below the folder given ("a/x", "b/x"), then their
// path as given, without extension; the same file given twice, or a manifest id that repeats, is
// an input error naming both sources. A CSV's or Kaldi folder's `wrd`/text is kept as reference.
// `replacements` fill a CSV's `$name` variables (SpeechBrain's `$data_root`).
// The input "-" reads all of `stdin_stream` (once): with `raw_pcm`, or when libsndfile recognizes
// it, it is one audio file (id "stdin"); otherwise text is a list of paths, one per line (blank
// lines and '#' comments skipped). Empty or unrecognized binary stdin is an input error. With
// `raw_pcm`, folders also yield .raw and .pcm files, and every file is read as that PCM.
DecodeInputs gather_decode_inputs(const std::vector<std::string>& inputs,
                                  std::istream& stdin_stream,
                                  const data::Replacements& replacements = {},
                                  const std::optional<audio::RawPcmFormat>& raw_pcm = std::nullopt);

// The rows alone, for callers that read files by path (audio on stdin is an input error here).
std::vector<data::ManifestRow> gather_inputs(const std::vector<std::string>& inputs,
                                             std::istream& stdin_stream,
                                             const data::Replacements& replacements = {});

// All of `in` (binary-safe).
std::string read_all(std::istream& in);

}  // namespace masr::decode
