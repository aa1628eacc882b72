// tests/train/train_fixtures.h
// A tiny synthetic corpus for trainer tests (tones and noise standing for words, so nothing is
// downloaded), helpers to run the mamba-asr binary on it, and a comparison of the model files
// that runs end with.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../text/text_corpus.h"
#include "audio/audio_reader.h"
#include "models/checkpoint.h"

namespace masr::testing {

// Transcripts together use all 26 letters and the apostrophe, so a SentencePiece char model
// trained on them has the 31 ids of the CTC recipes (27 + "▁" + unk, bos, eos).
inline const std::vector<std::string>& synth_transcripts() {
  static const std::vector<std::string> t = {
      "THE QUICK BROWN FOX", "JUMPS OVER", "THE LAZY DOG'S", "BACK", "A CAT",
      "VEXING WALTZ",        "MY BOX",     "QUIZ JOB",
  };
  return t;
}

// Writes wav/<id>.wav (16 kHz, a tone per letter, ~60 ms per letter, plus noise) and train.csv /
// valid.csv (the same utterances: the tests check the optimization, not generalization).
inline void write_synth_corpus(const std::string& dir, int copies = 1) {
  std::filesystem::create_directories(dir + "/wav");
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 0.01f);
  std::string csv = "ID,duration,wav,spk_id,wrd\n";
  int n = 0;
  for (int copy = 0; copy < copies; ++copy) {
    for (const auto& text : synth_transcripts()) {
      std::vector<float> samples;
      for (char c : text) {
        const double f = c == ' ' ? 0.0 : 200.0 + 40.0 * (c == '\'' ? 27 : c - 'A');
        for (int i = 0; i < 960; ++i) {
          samples.push_back(0.3f * static_cast<float>(std::sin(2 * M_PI * f * i / 16000.0)) +
                            noise(rng));
        }
      }
      for (int i = 0; i < 3200; ++i) samples.push_back(noise(rng));  // 200 ms of silence
      const std::string id = "utt" + std::to_string(n++);
      const std::string path = dir + "/wav/" + id + ".wav";
      audio::write_audio(path, samples, 16000);
      csv +=
          id + "," + std::to_string(samples.size() / 16000.0) + "," + path + ",spk," + text + "\n";
    }
  }
  std::ofstream(dir + "/train.csv") << csv;
  std::ofstream(dir + "/valid.csv") << csv;
}

inline std::string mamba_asr_exe() { return std::string(MASR_BINARY_DIR) + "/bin/mamba-asr"; }

// The tiny CTC recipe on the synthetic corpus, as command-line arguments.
inline std::string tiny_ctc_args(const std::string& corpus, const std::string& out, int epochs) {
  return std::string(MASR_SOURCE_DIR) + "/hparams/CTC/conmamba_tiny.yaml --data_folder " + corpus +
         " --output_folder " + out + " --train_csv " + corpus + "/train.csv --valid_csv " + corpus +
         "/valid.csv --number_of_epochs " + std::to_string(epochs) +
         " --num_workers 0 --grad_accumulation_factor 1 --max_batch_length_train 4"
         " --max_batch_len_val 20 --n_warmup_steps 10 --lr_model 0.003 --transformer_dropout 0.1";
}

// Runs a shell command; returns its exit status (-1 if it did not exit normally).
inline int run_command(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The largest difference between two model files' parameters, relative to each tensor's scale;
// names, order and integer tensors must agree exactly.
inline double largest_difference(const std::string& a, const std::string& b) {
  const auto one = models::read_checkpoint(a).state;
  const auto two = models::read_checkpoint(b).state;
  REQUIRE(one.size() == two.size());
  double worst = 0.0;
  for (size_t i = 0; i < one.size(); ++i) {
    INFO(one[i].first);
    REQUIRE(one[i].first == two[i].first);
    if (!one[i].second.is_floating_point()) {
      CHECK(torch::equal(one[i].second, two[i].second));
      continue;
    }
    const double scale = std::max(1e-3, one[i].second.abs().max().item<double>());
    worst = std::max(worst, (one[i].second - two[i].second).abs().max().item<double>() / scale);
  }
  return worst;
}

}  // namespace masr::testing
