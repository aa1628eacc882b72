// tests/train/test_lm_train.cpp
// LM training (`mamba-asr train hparams/LM/transformer_tiny.yaml`): batches as the SB LM recipe
// builds them, the validation perplexity falling far below the vocabulary size, the model file
// that decode loads, exact resume after SIGKILL, two data-parallel ranks training as one process
// accumulating their batches, and the error paths.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/atomic_file.h"
#include "hparams/hparams.h"
#include "models/checkpoint.h"
#include "models/lm_model.h"
#include "text/tokenizer.h"
#include "train/checkpointer.h"
#include "train/lm_data.h"
#include "train/train_logger.h"
#include "train_fixtures.h"

using namespace masr;
using namespace masr::train;
namespace fs = std::filesystem;

namespace {

// Sentences using every letter and the apostrophe (so the char tokenizer has 31 ids).
void write_lm_corpus(const std::string& dir) {
  fs::create_directories(dir);
  std::ofstream train(dir + "/train.txt");
  for (int copy = 0; copy < 4; ++copy) {
    for (const auto& s : testing::synth_transcripts()) train << s << "\n";
    train << "THE DOG JUMPS OVER THE CAT\n\nA QUICK BROWN BOX\n";
  }
  std::ofstream(dir + "/valid.txt") << "THE QUICK BROWN FOX\nJUMPS OVER\nTHE LAZY DOG'S\n";
  std::ofstream(dir + "/test.txt") << "A CAT JUMPS OVER MY BOX\n";
}

std::string tiny_lm_args(const std::string& corpus, const std::string& out, int epochs) {
  return std::string(MASR_SOURCE_DIR) + "/hparams/LM/transformer_tiny.yaml --data_folder " +
         corpus + " --train_csv null --valid_csv null --test_csv null --lm_train_data " + corpus +
         "/train.txt --lm_valid_data " + corpus + "/valid.txt --lm_test_data " + corpus +
         "/test.txt --output_folder " + out + " --number_of_epochs " + std::to_string(epochs) +
         " --threads 1";
}

}  // namespace

TEST_CASE("lm data: [bos]+tokens in, tokens+[eos] out, padded", "[train][lm]") {
  const std::vector<int64_t> a = {5, 6, 7}, b = {9};
  const LmBatch batch = collate_lm({&a, &b}, 1, 2, 0);
  CHECK(torch::equal(batch.input,
                     torch::tensor({1, 5, 6, 7, 1, 9, 0, 0}, torch::kLong).reshape({2, 4})));
  CHECK(torch::equal(batch.target,
                     torch::tensor({5, 6, 7, 2, 9, 2, 0, 0}, torch::kLong).reshape({2, 4})));
  CHECK(batch.rel[0].item<float>() == Approx(1.0));
  CHECK(batch.rel[1].item<float>() == Approx(0.5));
  CHECK(batch.tokens == 6);
}

TEST_CASE("lm train: the tiny LM's perplexity falls far below the vocabulary size", "[train][lm]") {
  testing::TempDir dir("lm_e2e");
  write_lm_corpus(dir.file("corpus"));
  const std::string out = dir.file("out");
  const std::string cmd = testing::mamba_asr_exe() + " train " +
                          tiny_lm_args(dir.file("corpus"), out, 6) + " -q 2> " +
                          dir.file("log.txt");
  REQUIRE(testing::run_command(cmd) == 0);
  const auto history = read_epoch_history(out + "/log.jsonl");
  REQUIRE(history.size() == 6);
  const double first = history.front().valid.at("perplexity");
  const double last = history.back().valid.at("perplexity");
  INFO("valid perplexity " << first << " -> " << last);
  CHECK(last == Approx(std::exp(history.back().valid.at("valid_loss"))));
  CHECK(last < first);
  // Measured: 37.7 -> 4.56 (uniform over the 31 tokens would be 31).
  CHECK(last < 31.0 / 4);
  for (const char* file : {"hyperparams.yaml", "train_log.txt", "training_curves.svg", "model.masr",
                           "save/31_char.model"}) {
    CHECK(fs::exists(out + "/" + file));
  }
  CHECK(models::read_checkpoint(out + "/model.masr").model_type == "lm");
  const auto lm = models::LmModel::load(out + "/model.masr");
  REQUIRE(lm->tokenizer());
  CHECK(lm->tokenizer()->vocab_size() == 31);
  CHECK(lm->vocab_size() == 31);
  CHECK(read_file(out + "/train_log.txt").find("test: loss") != std::string::npos);
}

TEST_CASE("lm train: a run killed with SIGKILL resumes to the uninterrupted parameters",
          "[train][lm]") {
  testing::TempDir dir("lm_resume");
  write_lm_corpus(dir.file("corpus"));
  auto command = [&](const std::string& out) {
    return testing::mamba_asr_exe() + " train " + tiny_lm_args(dir.file("corpus"), out, 3) +
           " --batch_size 2 --ckpt-every-steps 1 2>> " + out + ".log";
  };
  REQUIRE(testing::run_command(command(dir.file("a"))) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + command(dir.file("b"))).c_str(), nullptr);
    _exit(127);
  }
  // Kill once an intra-epoch checkpoint of epoch 2 exists.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool found = false;
  while (!found && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (!fs::exists(dir.file("b/save"))) continue;
    for (const auto& e : fs::directory_iterator(dir.file("b/save"))) {
      if (!fs::exists(e.path() / "meta.json")) continue;
      try {
        const auto m = meta_from_json(read_file((e.path() / "meta.json").string()), "");
        found = found || (!m.end_of_epoch && m.epoch >= 2 && m.batch > 0);
      } catch (const std::exception&) {
      }
    }
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(testing::run_command(command(dir.file("b"))) == 0);
  CHECK(read_file(dir.file("b.log")).find("resuming the LM") != std::string::npos);
  const auto a = models::read_checkpoint(dir.file("a/model.masr")).state;
  const auto b = models::read_checkpoint(dir.file("b/model.masr")).state;
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(torch::equal(a[i].second, b[i].second));
  }
}

TEST_CASE("lm train --nproc 2 ends with the parameters of one process accumulating 2 batches",
          "[train][lm][parallel]") {
  testing::TempDir dir("lm_ddp");
  write_lm_corpus(dir.file("corpus"));  // 40 sentences: 20 batches of 2 per epoch
  auto command = [&](const std::string& out, const std::string& extra) {
    return testing::mamba_asr_exe() + " train " +
           tiny_lm_args(dir.file("corpus"), dir.file(out), 2) + " --batch_size 2 --device cpu " +
           extra + " 2> " + dir.file(out + ".log");
  };
  // One process accumulating 2 batches ("one"), two ranks with 1 each ("two"): the LM shares the
  // ASR recipes' training loop, so its ranks deal batches, average gradients and agree alike.
  REQUIRE(testing::run_command(command("one", "--grad_accumulation_factor 2")) == 0);
  const int rc = testing::run_command(command("two", "--nproc 2 --grad_accumulation_factor 1"));
  INFO(read_file(dir.file("two.log")));
  REQUIRE(rc == 0);
  const double worst =
      testing::largest_difference(dir.file("one/model.masr"), dir.file("two/model.masr"));
  CHECK(worst < 1e-5);  // measured: 0 (no dropout in the tiny LM)
  WARN("largest relative difference: " << worst);
  const auto one = read_epoch_history(dir.file("one/log.jsonl"));
  const auto two = read_epoch_history(dir.file("two/log.jsonl"));
  REQUIRE(one.size() == 2);
  REQUIRE(two.size() == 2);
  for (size_t e = 0; e < 2; ++e) {
    CHECK(two[e].step == one[e].step);
    CHECK(two[e].train_loss == Approx(one[e].train_loss).epsilon(1e-6));
    CHECK(two[e].valid.at("valid_loss") == Approx(one[e].valid.at("valid_loss")).epsilon(1e-6));
  }
  CHECK(read_file(dir.file("two/train_log.txt")).find("test: loss") != std::string::npos);
}

TEST_CASE("lm train: missing or empty text is an error naming it", "[train][lm]") {
  testing::TempDir dir("lm_err");
  write_lm_corpus(dir.file("corpus"));
  auto run = [&](const std::string& extra) {
    const std::string err = dir.file("err.txt");
    const int rc = testing::run_command(testing::mamba_asr_exe() + " train " +
                                        tiny_lm_args(dir.file("corpus"), dir.file("out"), 1) + " " +
                                        extra + " 2> " + err);
    CHECK(rc != 0);
    return read_file(err);
  };
  CHECK_THAT(run("--lm_train_data " + dir.file("nope.txt")), Catch::Contains("nope.txt"));
  std::ofstream(dir.file("empty.txt")) << "\n  \n";
  CHECK_THAT(run("--lm_train_data " + dir.file("empty.txt")), Catch::Contains("holds no sentence"));
  CHECK_THAT(run("--lm_train_data null"), Catch::Contains("the LM has no training text"));
}

TEST_CASE("lm train: fp16 with the gradient scaler on CUDA", "[.cuda]") {
  testing::TempDir dir("lm_fp16");
  write_lm_corpus(dir.file("corpus"));
  const std::string out = dir.file("out");
  REQUIRE(testing::run_command(
              testing::mamba_asr_exe() + " train " + tiny_lm_args(dir.file("corpus"), out, 6) +
              " --precision fp16 --device cuda -q 2> " + dir.file("log.txt")) == 0);
  const auto history = read_epoch_history(out + "/log.jsonl");
  REQUIRE(history.size() == 6);
  CHECK(std::isfinite(history.back().train_loss));
  CHECK(history.back().valid.at("perplexity") < history.front().valid.at("perplexity"));
  // The scaler's state is in the newest checkpoint: 60 steps, growth_interval 2000, so the
  // scale is 65536 halved once per skipped step.
  Checkpointer checkpointer(out + "/save");
  const auto latest = checkpointer.latest();
  REQUIRE(latest);
  const auto& counters = latest->meta.counters;
  REQUIRE(counters.count("scaler_scale") == 1);
  CHECK(counters.at("scaler_scale") == 65536.0 * std::pow(0.5, counters.at("scaler_skipped")));
}

TEST_CASE("decode --lm: a trained LM sharing the ASR tokenizer joins the s2s search",
          "[train][lm]") {
  testing::TempDir dir("lm_decode");
  const std::string corpus = dir.file("corpus");
  testing::write_synth_corpus(corpus);
  const std::string exe = testing::mamba_asr_exe();
  const std::string asr = dir.file("asr"), lm = dir.file("lm");
  auto succeeds = [](const std::string& command, const std::string& log) {
    const int rc = testing::run_command(command + " 2> " + log);
    if (rc != 0) FAIL("exit " << rc << ": " << command << "\n" << read_file(log));
  };
  succeeds(exe + " train " + MASR_SOURCE_DIR + "/hparams/S2S/conmamba_tiny.yaml --data_folder " +
               corpus + " --output_folder " + asr + " --train_csv " + corpus +
               "/train.csv --valid_csv " + corpus +
               "/valid.csv --number_of_epochs 1 --num_workers 0 --output_neurons 31 "
               "--precision fp32 --max_batch_length_train 4 --max_batch_length_val 20 "
               "--threads 1 -q",
           dir.file("asr.log"));
  // The LM takes its tokenizer from the ASR model file (tokenizer_file: a model.masr).
  succeeds(exe + " train " + MASR_SOURCE_DIR + "/hparams/LM/transformer_tiny.yaml --data_folder " +
               corpus + " --test_csv null --tokenizer_file " + asr +
               "/model.masr --number_of_epochs 2 --output_folder " + lm + " --threads 1 -q",
           dir.file("lm.log"));
  CHECK(models::read_checkpoint(lm + "/model.masr").tokenizer_model ==
        models::read_checkpoint(asr + "/model.masr").tokenizer_model);
  CHECK_FALSE(fs::exists(lm + "/save/31_char.model"));  // none trained

  const std::string decode = exe + " decode --model " + asr + "/model.masr --beam 3 --threads 1 " +
                             corpus + "/wav/utt0.wav --search s2s";
  REQUIRE(testing::run_command(decode + " --lm " + lm + "/model.masr --lm-weight 0.6 > " +
                               dir.file("hyp.txt") + " 2> " + dir.file("decode.log")) == 0);
  CHECK(read_file(dir.file("hyp.txt")).rfind("utt0", 0) == 0);
  // Errors: an ASR model given as the LM, an LM with a CTC search.
  CHECK(testing::run_command(decode + " --lm " + asr + "/model.masr 2> " + dir.file("e1.txt")) !=
        0);
  CHECK_THAT(read_file(dir.file("e1.txt")), Catch::Contains("is not a language model"));
  CHECK(testing::run_command(exe + " decode --model " + asr + "/model.masr --search greedy " +
                             corpus + "/wav/utt0.wav --lm " + lm + "/model.masr 2> " +
                             dir.file("e2.txt")) != 0);
  CHECK_THAT(read_file(dir.file("e2.txt")),
             Catch::Contains("used by the s2s and ctc-beam searches, not 'greedy'"));
  // CTC prefix beam search with the LM fused per token.
  REQUIRE(testing::run_command(exe + " decode --model " + asr + "/model.masr --search ctc-beam " +
                               corpus + "/wav/utt0.wav --beam 3 --threads 1 --lm " + lm +
                               "/model.masr --lm-weight 0.5 > " + dir.file("hyp2.txt") + " 2> " +
                               dir.file("decode2.log")) == 0);
  CHECK(read_file(dir.file("hyp2.txt")).rfind("utt0", 0) == 0);
}

// SpeechBrain's LibriSpeech LM recipe reads the LibriSpeech transcripts through glob patterns
// under data_folder (train.py's glob.glob(..., recursive=True)) and its dataset script drops the
// utterance ids and lines of 1,000 characters or more.
TEST_CASE("LM text from SpeechBrain's transcript patterns: glob, ids removed, long lines out",
          "[train][lm]") {
  const std::string root = fs::temp_directory_path() / ("masr_lm_globs_" + std::to_string(getpid()));
  fs::remove_all(root);
  auto write = [&](const std::string& rel, const std::string& text) {
    fs::create_directories(fs::path(root + "/" + rel).parent_path());
    std::ofstream(root + "/" + rel) << text;
  };
  write("train-clean-100/19/198/19-198.trans.txt",
        "19-198-0000 NORTHANGER ABBEY\n19-198-0001 CHAPTER ONE\n");
  write("train-other-500/20/205/20-205.trans.txt", "20-205-0007 NO ONE WHO HAD EVER SEEN\n");
  write("train-clean-360/top.trans.txt", "1-2-3 ZERO FOLDERS DEEP\n" + std::string(1200, 'A') + "\n");
  write("train-clean-100/.hidden/1-1.trans.txt", "1-1-1 HIDDEN\n");
  write("dev-clean/84/121/84-121.trans.txt", "84-121-0000 GO DO YOU HEAR\n");
  write("train-clean-100/19/198/notes.txt", "NOT A TRANSCRIPT\n");

  const auto files = glob_files(root + "/train*/**/*.trans.txt");
  REQUIRE(files.size() == 3);  // the hidden folder and the other names left out
  CHECK(files[0] == root + "/train-clean-100/19/198/19-198.trans.txt");
  CHECK(files[1] == root + "/train-clean-360/top.trans.txt");
  CHECK(files[2] == root + "/train-other-500/20/205/20-205.trans.txt");
  CHECK(glob_files(root + "/nothing*/**/*.txt").empty());

  const std::string yaml = "data_folder: " + root +
                           "\ntrain_transcripts_pattern: \"train*/**/*.trans.txt\"\n"
                           "dev_transcripts_pattern: \"dev*/**/*.trans.txt\"\n"
                           "test_transcripts_pattern: \"test*/**/*.trans.txt\"\n";
  const auto hp = hparams::load_text(yaml);
  const LmCorpusConfig corpus = lm_corpus_from(hp);
  CHECK(corpus.speechbrain_transcripts);
  REQUIRE(corpus.train_patterns.size() == 1);
  const data::Manifest train =
      read_lm_sentences({}, {}, {}, corpus.train_patterns, corpus.speechbrain_transcripts);
  std::vector<std::string> sentences;
  for (const auto& row : train.rows) sentences.push_back(row.wrd);
  CHECK(sentences == std::vector<std::string>{"NORTHANGER ABBEY", "CHAPTER ONE",
                                              "ZERO FOLDERS DEEP", "NO ONE WHO HAD EVER SEEN"});
  const data::Manifest dev = read_lm_sentences({}, {}, {}, corpus.valid_patterns, true);
  REQUIRE(dev.rows.size() == 1);
  CHECK(dev.rows[0].wrd == "GO DO YOU HEAR");
  // A split whose pattern matches nothing is an error naming the pattern.
  CHECK_THROWS_WITH(read_lm_sentences({}, {}, {}, corpus.test_patterns, true),
                    Catch::Contains("no file matches") && Catch::Contains("test*/**/*.trans.txt"));
  // Without any training text at all, the error names the keys that give it.
  CHECK_THROWS_WITH(lm_corpus_from(hparams::load_text("data_folder: /x\n")),
                    Catch::Contains("train_transcripts_pattern"));
  fs::remove_all(root);
}
