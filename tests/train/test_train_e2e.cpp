// tests/train/test_train_e2e.cpp
// `mamba-asr train` end to end on a tiny synthetic corpus: the loss falls, the output folder is
// complete, a run killed with SIGKILL after a checkpoint resumes to exactly the parameters of an
// uninterrupted run, the logged losses are the batches' (read back only when logged), and a run
// whose losses turn non-finite skips those steps and keeps finite weights (CPU, one thread).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "models/asr_model.h"
#include "models/checkpoint.h"
#include "text/tokenizer.h"
#include "train/checkpointer.h"
#include "train/train_logger.h"
#include "train_fixtures.h"

using namespace masr;
using namespace masr::train;
namespace fs = std::filesystem;

namespace {

void require_binary() {
  if (!fs::exists(testing::mamba_asr_exe())) {
    FAIL("build the mamba-asr target first: " << testing::mamba_asr_exe() << " is missing");
  }
}

// True once `save` holds an intra-epoch checkpoint of epoch >= 2.
bool has_mid_epoch_checkpoint(const std::string& save) {
  if (!fs::exists(save)) return false;
  for (const auto& entry : fs::directory_iterator(save)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("CKPT+", 0) != 0 || !fs::exists(entry.path() / "meta.json")) continue;
    try {
      const CheckpointMeta m = meta_from_json(read_file((entry.path() / "meta.json").string()), "");
      if (!m.end_of_epoch && m.epoch >= 2 && m.batch > 0) return true;
    } catch (const std::exception&) {
    }
  }
  return false;
}

// Replaces the first `from` in `text` by `to` (the test's own argument strings).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// tiny_ctc_args with the recipe copied to `yaml` and `extra` keys appended to it (keys the recipe
// lacks, such as log_interval, cannot be command-line overrides).
std::string tiny_ctc_args_with(const std::string& yaml, const std::string& extra,
                               const std::string& corpus, const std::string& out, int epochs) {
  const std::string recipe = std::string(MASR_SOURCE_DIR) + "/hparams/CTC/conmamba_tiny.yaml";
  std::ofstream(yaml) << read_file(recipe) << "\n" << extra << "\n";
  return replaced(testing::tiny_ctc_args(corpus, out, epochs), recipe, yaml);
}

}  // namespace

TEST_CASE("train: tiny CTC on a synthetic corpus lowers the loss and fills the output folder",
          "[train]") {
  require_binary();
  testing::TempDir dir("train_e2e");
  testing::write_synth_corpus(dir.file("corpus"));
  const std::string out = dir.file("out");
  const std::string cmd = testing::mamba_asr_exe() + " train " +
                          testing::tiny_ctc_args(dir.file("corpus"), out, 12) +
                          " --threads 1 -q 2> " + dir.file("log.txt");
  REQUIRE(testing::run_command(cmd) == 0);
  const auto history = read_epoch_history(out + "/log.jsonl");
  REQUIRE(history.size() == 12);
  INFO("first epoch loss " << history.front().train_loss << ", last " << history.back().train_loss);
  // Measured: 40.8 -> 26.3 over 12 epochs (8 steps each).
  CHECK(history.back().train_loss < 0.75 * history.front().train_loss);
  CHECK(history.back().valid.count("WER") == 1);
  for (const char* file : {"hyperparams.yaml", "train_log.txt", "training_curves.svg", "model.masr",
                           "save/31_char.model"}) {
    CHECK(fs::exists(out + "/" + file));
  }
  const auto model = models::AsrModel::load(out + "/model.masr");
  CHECK(model->model_type() == "ctc");
  CHECK(model->normalize().has_statistics());
  REQUIRE(model->tokenizer());
  CHECK(model->tokenizer()->vocab_size() == 31);
  // --average-only redoes the averaging from the kept checkpoints.
  fs::remove(out + "/model.masr");
  REQUIRE(testing::run_command(cmd + " --average-only > /dev/null") == 0);
  CHECK(fs::exists(out + "/model.masr"));
}

TEST_CASE("train: a run killed with SIGKILL resumes to the parameters of an uninterrupted run",
          "[train]") {
  require_binary();
  testing::TempDir dir("train_resume");
  testing::write_synth_corpus(dir.file("corpus"));
  auto command = [&](const std::string& out) {
    return testing::mamba_asr_exe() + " train " +
           testing::tiny_ctc_args(dir.file("corpus"), out, 3) +
           " --ckpt-every-steps 1 --threads 1 2>> " + out + ".log";
  };
  REQUIRE(testing::run_command(command(dir.file("a"))) == 0);

  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + command(dir.file("b"))).c_str(), nullptr);
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!has_mid_epoch_checkpoint(dir.file("b/save")) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));  // killed mid-run, not finished
  CHECK_FALSE(fs::exists(dir.file("b/model.masr")));

  REQUIRE(testing::run_command(command(dir.file("b"))) == 0);
  CHECK(read_file(dir.file("b.log")).find("resuming from") != std::string::npos);
  const auto a = models::read_checkpoint(dir.file("a/model.masr")).state;
  const auto b = models::read_checkpoint(dir.file("b/model.masr")).state;
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(torch::equal(a[i].second, b[i].second));
  }
}

TEST_CASE("train: a missing train_csv is an error naming it", "[train]") {
  require_binary();
  testing::TempDir dir("train_err");
  testing::write_synth_corpus(dir.file("corpus"));
  const std::string args = testing::tiny_ctc_args(dir.file("corpus"), dir.file("out"), 1) +
                           " --train_csv " + dir.file("nope.csv");
  const int rc = testing::run_command(testing::mamba_asr_exe() + " train " + args + " 2> " +
                                      dir.file("err.txt"));
  CHECK(rc != 0);
  CHECK(read_file(dir.file("err.txt")).find("nope.csv") != std::string::npos);
}

TEST_CASE("train: log.jsonl step records are the batch losses, epoch records their mean",
          "[train]") {
  require_binary();
  testing::TempDir dir("train_log_means");
  testing::write_synth_corpus(dir.file("corpus"));
  const std::string out = dir.file("out");
  // log_interval 1 and no accumulation: every step record is one batch's loss.
  const std::string cmd =
      testing::mamba_asr_exe() + " train " +
      tiny_ctc_args_with(dir.file("tiny.yaml"), "log_interval: 1", dir.file("corpus"), out, 2) +
      " --threads 1 -q 2> " + dir.file("log.txt");
  REQUIRE(testing::run_command(cmd) == 0);
  std::map<int64_t, std::vector<double>> step_losses;
  std::vector<nlohmann::json> epochs;
  int64_t last_step = 0;
  std::istringstream lines(read_file(out + "/log.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j["kind"] == "epoch") {
      epochs.push_back(j);
      continue;
    }
    CHECK(j["step"].get<int64_t>() == ++last_step);  // every step logged, in order
    step_losses[j["epoch"].get<int64_t>()].push_back(j["train_loss"].get<double>());
  }
  REQUIRE(epochs.size() == 2);
  int64_t previous = 0;
  for (const auto& e : epochs) {
    const std::vector<double>& losses = step_losses[e["epoch"].get<int64_t>()];
    INFO("epoch " << e["epoch"]);
    CHECK(static_cast<int64_t>(losses.size()) == e["step"].get<int64_t>() - previous);
    REQUIRE_FALSE(losses.empty());
    double sum = 0.0;
    for (double v : losses) sum += v;
    CHECK(e["train_loss"].get<double>() == Approx(sum / losses.size()).epsilon(1e-12));
    previous = e["step"].get<int64_t>();
  }
  CHECK(read_file(dir.file("log.txt")).find("skipped") == std::string::npos);
}

TEST_CASE("train: steps whose loss turns non-finite are skipped with a warning, weights finite",
          "[train]") {
  require_binary();
  testing::TempDir dir("train_nonfinite");
  const std::string corpus = dir.file("corpus");
  testing::write_synth_corpus(corpus);
  const std::string out = dir.file("out");
  // lr 1e30: the first step throws the weights to ~1e30, after which the forward pass overflows
  // and the losses are inf/nan. No validation set (its NaN loss is not what this tests).
  std::string args = testing::tiny_ctc_args(corpus, out, 2);
  args = replaced(args, "--lr_model 0.003", "--lr_model 1e30");
  args = replaced(args, "--valid_csv " + corpus + "/valid.csv", "--valid_csv ''");
  const std::string cmd =
      testing::mamba_asr_exe() + " train " + args + " --threads 1 -q 2> " + dir.file("log.txt");
  REQUIRE(testing::run_command(cmd) == 0);
  const std::string log = read_file(dir.file("log.txt"));
  INFO(log);
  const std::regex warning(
      "(\\d+) batches skipped since the last log: non-finite loss or gradients \\((\\d+) "
      "optimizer steps");
  int64_t batches = 0, steps = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), warning);
       it != std::sregex_iterator(); ++it) {
    batches += std::stoll((*it)[1]);
    steps += std::stoll((*it)[2]);
  }
  CHECK(steps > 0);
  CHECK(batches == steps);  // no accumulation: one batch per step
  const auto history = read_epoch_history(out + "/log.jsonl");
  REQUIRE(history.size() == 2);
  CHECK(steps < history.back().step);  // the first step was finite
  // Skipped steps still count as steps; they wrote nothing into the weights.
  const auto state = models::read_checkpoint(out + "/model.masr").state;
  REQUIRE_FALSE(state.empty());
  for (const auto& [name, tensor] : state) {
    INFO(name);
    if (tensor.is_floating_point()) CHECK(torch::isfinite(tensor).all().item<bool>());
  }
}

// MASR_CUDA_GRAPHS=split runs each batch as a CUDA-graph step would (AsrTask::prepare, then the
// model's loss and backward into flat gradient buffers: train/cuda_graph_step.h) without
// capturing: on the CPU it must train exactly as the plain path does.
TEST_CASE("train: the split step of CUDA-graph training trains as the plain step does", "[train]") {
  require_binary();
  testing::TempDir dir("train_split");
  testing::write_synth_corpus(dir.file("corpus"));
  auto command = [&](const std::string& out, const std::string& env) {
    return env + " " + testing::mamba_asr_exe() + " train " +
           testing::tiny_ctc_args(dir.file("corpus"), out, 2) + " --threads 1 2>> " + out + ".log";
  };
  REQUIRE(testing::run_command(command(dir.file("plain"), "MASR_CUDA_GRAPHS=0")) == 0);
  REQUIRE(testing::run_command(command(dir.file("split"), "MASR_CUDA_GRAPHS=split")) == 0);
  const auto a = models::read_checkpoint(dir.file("plain/model.masr")).state;
  const auto b = models::read_checkpoint(dir.file("split/model.masr")).state;
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(torch::allclose(a[i].second, b[i].second, 0.0, 1e-6));
  }
  CHECK(read_file(dir.file("split.log")).find("CUDA graphs: 0 batches replayed") !=
        std::string::npos);
  CHECK(read_file(dir.file("plain.log")).find("CUDA graphs:") == std::string::npos);
  // The model inputs' shapes were known before each batch's features (AsrTask::input_specs,
  // what padding into held graphs' shapes relies on): no batch disagreed.
  CHECK(read_file(dir.file("split.log")).find("are not padded into the shapes") ==
        std::string::npos);
}

TEST_CASE("train --init-model starts a run from a model file's weights and tokenizer", "[train]") {
  require_binary();
  testing::TempDir dir("train_init");
  testing::write_synth_corpus(dir.file("corpus"));
  const std::string first = dir.file("first"), second = dir.file("second");
  const std::string exe = testing::mamba_asr_exe() + " train ";
  REQUIRE(testing::run_command(exe + testing::tiny_ctc_args(dir.file("corpus"), first, 6) +
                               " --threads 1 -q 2> " + dir.file("first.txt")) == 0);
  // The second run starts from the first one's model (its float16 copy), one epoch.
  REQUIRE(testing::run_command(testing::mamba_asr_exe() + " convert " + first + "/model.masr " +
                               dir.file("half.masr") + " --weights fp16 > /dev/null 2>&1") == 0);
  const std::string args = testing::tiny_ctc_args(dir.file("corpus"), second, 1) +
                           " --init-model " + dir.file("half.masr") + " --threads 1";
  REQUIRE(testing::run_command(exe + args + " 2> " + dir.file("second.txt")) == 0);
  const std::string log = read_file(dir.file("second.txt"));
  INFO(log);
  CHECK_THAT(log, Catch::Contains("(--init-model); a fresh optimizer and schedule"));
  // Its first step runs at Noam's rate for step 1 (0.003 x 10^-1.5 x 10^0.5 with 10 warm-up
  // steps), not at the optimizer's raw 0.003.
  CHECK_THAT(log, Catch::Contains("from its step-1 rate 0.0003"));
  CHECK_THAT(log, Catch::Contains("the tokenizer of " + dir.file("half.masr")));
  // The tokens are the first run's (its tokenizer, not one trained again).
  CHECK(read_file(second + "/save/31_char.model") == read_file(first + "/save/31_char.model"));
  // A warm start: its first epoch's loss is near where the first run ended, far below where the
  // first run began (measured: 40.8 at the first run's first epoch).
  const auto one = read_epoch_history(first + "/log.jsonl");
  const auto two = read_epoch_history(second + "/log.jsonl");
  REQUIRE(one.size() == 6);
  REQUIRE(two.size() == 1);
  INFO("first run: epoch 1 " << one.front().train_loss << ", epoch 6 " << one.back().train_loss
                             << "; warm start: epoch 1 " << two.front().train_loss);
  CHECK(two.front().train_loss <
        one.front().train_loss - 0.5 * (one.front().train_loss - one.back().train_loss));
  // A checkpoint wins over --init-model: run again, it resumes (nothing left to train).
  REQUIRE(testing::run_command(exe + args + " 2> " + dir.file("third.txt")) == 0);
  CHECK_THAT(read_file(dir.file("third.txt")), !Catch::Contains("(--init-model)"));
  // A model of another architecture (here a wider one) is an error naming the file.
  const int status =
      testing::run_command(exe + testing::tiny_ctc_args(dir.file("corpus"), dir.file("wrong"), 1) +
                           " --d_model 96 --init-model " + first +
                           "/model.masr --threads 1 -q 2> " + dir.file("wrong.txt"));
  CHECK(status != 0);
  CHECK_THAT(read_file(dir.file("wrong.txt")), Catch::Contains(first + "/model.masr"));
}
