// lib/decode/decode_inputs.h
// What `mamba-asr decode` reads: audio files, folders (searched recursively), @list files,
// SpeechBrain CSVs, Kaldi wav.scp files or data folders, and "-" (a list of paths on stdin).
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "data/manifest.h"

namespace masr::decode {

// Extensions (lower case, with the dot) taken from folders; other files in a folder are skipped.
const std::vector<std::string>& audio_extensions();

// Every utterance of every input, in input order (folders sorted by path). Ids are file names
// without extension for files, folders and lists, the manifest's ids otherwise; a duplicate id is
// an input error naming both sources. A CSV's or Kaldi folder's `wrd`/text is kept as reference.
// `stdin_list` is read for the input "-". `replacements` fill a CSV's `$name` variables
// (SpeechBrain's `$data_root`).
std::vector<data::ManifestRow> gather_inputs(const std::vector<std::string>& inputs,
                                             std::istream& stdin_list,
                                             const data::Replacements& replacements = {});

}  // namespace masr::decode
