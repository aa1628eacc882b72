// lib/data/librispeech.h
// LibriSpeech data preparation: SpeechBrain CSVs (ID,duration,wav,spk_id,wrd) from the standard
// `LibriSpeech/<split>/<speaker>/<chapter>/<id>.flac` + `<speaker>-<chapter>.trans.txt` layout.
#pragma once

#include <string>
#include <vector>

#include "data/manifest.h"

namespace masr::data {

struct LibriSpeechPrepareOptions {
  // Splits merged into train.csv (those present), as SpeechBrain's librispeech_prepare merges them.
  std::vector<std::string> train_splits = {"train-clean-100", "train-clean-360", "train-other-500"};
  // Splits written to <split>.csv each.
  std::vector<std::string> eval_splits = {"dev-clean", "dev-other", "test-clean", "test-other"};
  int jobs = 0;  // threads probing audio headers; 0: hardware concurrency
};

// One split folder into a manifest: every `*.trans.txt` line `<id> <WORDS>` paired with
// `<id>.flac` beside it; rows sorted by ID; duration from the FLAC header; spk_id
// `<speaker>-<chapter>` (SpeechBrain's convention); wav is the absolute path. Errors name the file:
// a transcript line without audio, audio without a transcript line, an unreadable header, a
// folder with no transcripts.
Manifest prepare_librispeech_split(const std::string& split_folder, int jobs = 0);

struct LibriSpeechPrepared {
  std::vector<std::string> written;  // CSV paths, in order
  std::vector<std::string> missing;  // requested splits not in data_folder (skipped)
};

// Writes <output_folder>/train.csv (the train splits found, merged) and <split>.csv for each eval
// split found; each file is written under a temporary name and renamed. Throws when data_folder
// has none of the splits at all.
LibriSpeechPrepared prepare_librispeech(const std::string& data_folder,
                                        const std::string& output_folder,
                                        const LibriSpeechPrepareOptions& options = {});

}  // namespace masr::data
