// tests/cli/test_speechbrain_recipes.cpp
// SpeechBrain's own LibriSpeech hparams files (tests/fixtures/speechbrain, v1.0.0 and main, copied
// unchanged; SOURCE.md names the commits) through `mamba-asr train FILE --dry-run`, as a user
// would run them: every file of a supported recipe family loads with --strict (no key left
// unread), and its `model` has the parameter count SpeechBrain's own classes give it (param_counts.tsv, written by
// make_param_counts.py from the upstream code). Files outside those families fail with an
// error that names the families mamba-asr loads.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <iterator>
#include <string>
#include <vector>

#include "run_cli.h"

namespace {

namespace fs = std::filesystem;

const std::string kRoot = std::string(MASR_SOURCE_DIR) + "/tests/fixtures/speechbrain";

std::string with_thousands(const std::string& digits) {
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "version/file" -> SpeechBrain's parameter count of the file's `model`.
std::map<std::string, std::string> upstream_counts() {
  std::ifstream in(kRoot + "/param_counts.tsv");
  REQUIRE(in);
  std::map<std::string, std::string> counts;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string version, file, count;
    std::getline(fields, version, '\t');
    std::getline(fields, file, '\t');
    std::getline(fields, count, '\t');
    counts[version + "/" + file] = count;
  }
  return counts;
}

masr::testing::CliResult dry_run(const std::string& file) {
  // Every placeholder these files have, filled as a user would.
  return masr::testing::run_cli("train " + kRoot + "/" + file +
                                " --dry-run --strict --data_folder /tmp/LibriSpeech");
}

}  // namespace

TEST_CASE("SpeechBrain's LibriSpeech recipes load with SpeechBrain's parameter counts",
          "[cli][speechbrain]") {
  const auto counts = upstream_counts();
  REQUIRE(counts.size() >= 12);
  for (const auto& [file, count] : counts) {
    INFO(file);
    const auto r = dry_run(file);
    INFO(r.output);
    CHECK(r.code == 0);
    CHECK_THAT(r.output, Catch::Contains("  model: ") &&
                             Catch::Contains("[built]  " + with_thousands(count) + " parameters"));
  }
}

TEST_CASE("SpeechBrain recipes outside the supported families say which ones load",
          "[cli][speechbrain]") {
  for (const char* file : {"main/ASR/CTC/hparams/train_hf_wav2vec.yaml",
                           "main/ASR/CTC/hparams/train_sb_wav2vec.yaml",
                           "main/ASR/seq2seq/hparams/train_BPE_1000.yaml",
                           "main/LM/hparams/RNNLM.yaml"}) {
    INFO(file);
    const auto r = dry_run(file);
    CHECK(r.code != 0);
    CHECK_THAT(r.output, Catch::Contains("supported SpeechBrain recipe families"));
  }
}

// A few optimizer steps of every supported family, from SpeechBrain's own files made small on
// the command line (as a user trying a recipe on a laptop would), on a synthetic corpus: the run
// finishes, its epoch losses are finite, and the averaged model decodes a file. The LM trains
// from a LibriSpeech-like transcript tree through the file's own transcript patterns.
TEST_CASE("SpeechBrain's recipes of every supported family train a few steps",
          "[cli][speechbrain]") {
  const masr::testing::CliScratch scratch("sbtrain");
  // Every letter and the apostrophe: the CTC recipes' character vocabulary (31 with blank,
  // space and unk) comes out whole.
  const std::vector<std::string> texts = {"THE QUICK BROWN FOX", "JUMPS OVER", "THE LAZY DOG'S",
                                          "BACK", "A CAT", "VEXING WALTZ", "MY BOX", "QUIZ JOB"};
  std::string csv = "ID,duration,wav,spk_id,wrd\n";
  std::string transcripts;
  for (size_t n = 0; n < texts.size(); ++n) {
    std::vector<int16_t> samples;
    for (char c : texts[n]) {  // a tone per letter, 120 ms each (Branchformer: > 15 frames)
      const double f = c == ' ' ? 0.0 : 200.0 + 40.0 * (c == '\'' ? 27 : c - 'A');
      for (int i = 0; i < 1920; ++i) {
        samples.push_back(static_cast<int16_t>(9000 * std::sin(2 * M_PI * f * i / 16000.0)));
      }
    }
    samples.resize(samples.size() + 3200, 0);
    const std::string id = "utt" + std::to_string(n);
    const std::string wav = scratch.write("wav/" + id + ".wav", masr::testing::wav_bytes(samples));
    csv += id + "," + std::to_string(samples.size() / 16000.0) + "," + wav + ",spk," + texts[n] +
           "\n";
    transcripts += "1-2-" + std::to_string(1000 + n) + " " + texts[n] + "\n";
  }
  const std::string train_csv = scratch.write("train.csv", csv);
  scratch.write("train-clean-100/1/2/1-2.trans.txt", transcripts);
  scratch.write("dev-clean/3/4/3-4.trans.txt", transcripts);
  scratch.write("test-clean/5/6/5-6.trans.txt", transcripts);
  const std::string data = scratch.file("");
  const std::string common = " --data_folder " + data + " --number_of_epochs 1";
  const std::string asr = common + " --num_workers 0 --train_csv " + train_csv + " --valid_csv " + train_csv +
                          " --test_csv " + train_csv + " --d_model 32 --nhead 2" +
                          " --num_encoder_layers 1 --output_neurons 31";
  struct Run {
    const char* file;
    std::string args;
  };
  const std::vector<Run> runs = {
      {"main/ASR/transformer/hparams/conformer_large.yaml",  // RoPE attention, augment_warmup
       asr + " --num_decoder_layers 1 --d_ffn 64 --max_batch_length_train 4"},
      {"main/ASR/transformer/hparams/transformer.yaml",  // the residual front end
       asr + " --num_decoder_layers 1 --d_ffn 64 --max_batch_length_train 4"},
      {"main/ASR/transformer/hparams/hyperconformer_8M.yaml",  // HyperMixing
       asr + " --num_decoder_layers 1 --d_ffn 64 --max_batch_length_train 4"},
      {"v1.0.0/ASR/transformer/hparams/branchformer_large.yaml",
       asr + " --num_decoder_layers 1 --csgu_linear_units 64 --max_batch_length_train 4"},
      {"main/ASR/CTC/hparams/conformer_large.yaml",  // the waveform Augmenter
       asr + " --d_ffn 64 --max_batch_length_train 4 --grad_accumulation_factor 1"},
      {"main/ASR/CTC/hparams/branchformer_large.yaml",
       asr + " --csgu_linear_units 64 --max_batch_length_train 4 --grad_accumulation_factor 1"},
      {"main/LM/hparams/transformer.yaml",
       common + " --d_model 32 --output_neurons 31 --batch_size 2 --grad_accumulation_factor 1"
                " --tokenizer_file " + data + "/no_tokenizer_yet.model"
                " --overrides \"{model: {nhead: 2, num_encoder_layers: 1, d_ffn: 64}}\""},
  };
  int index = 0;
  for (const Run& run : runs) {
    INFO(run.file);
    const std::string out = scratch.file("out" + std::to_string(index++));
    const auto r = masr::testing::run_cli("train " + kRoot + "/" + run.file + run.args +
                                          " --output_folder " + out);
    INFO(r.output);
    REQUIRE(r.code == 0);
    std::ifstream log(out + "/log.jsonl");
    const std::string records((std::istreambuf_iterator<char>(log)),
                              std::istreambuf_iterator<char>());
    CHECK_THAT(records, Catch::Contains("\"kind\":\"epoch\"") &&
                            Catch::Contains("\"train_loss\":") && !Catch::Contains("nan"));
    REQUIRE(fs::exists(out + "/model.masr"));
    if (std::string(run.file).find("/LM/") == std::string::npos) {
      const auto decoded = masr::testing::run_cli("decode -m " + out + "/model.masr " +
                                                  scratch.file("wav/utt0.wav"));
      INFO(decoded.output);
      CHECK(decoded.code == 0);
    }
  }
}
