// tests/toolkit/test_detect_cli.cpp
// `mamba-asr detect --json` with a model: the machine, the model's facts and the profile.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <memory>

#include "runtime_fixtures.h"

namespace {

// stdout only, or with stderr merged into it.
std::string run_output(const std::string& args, int* status, bool with_stderr = false) {
  const std::string command = std::string(MASR_BINARY_DIR) + "/bin/mamba-asr " + args +
                              (with_stderr ? " 2>&1" : " 2>/dev/null");
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  *status = pclose(pipe.release());
  return out;
}

}  // namespace

TEST_CASE("detect --json lists the machine, the model and a profile", "[runtime][detect]") {
  int status = -1;
  const std::string out =
      run_output("--device cpu detect --json --hparams " + masr::test::kTinyHparams, &status);
  REQUIRE(status == 0);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["device"] == "cpu");
  CHECK(j["cpu"]["logical_cores"].get<int>() >= 1);
  const auto& p = j["profile"];
  for (const char* key :
       {"precision", "batch_size", "grad_accumulation_factor", "effective_batch",
        "max_batch_length_train", "num_workers", "intra_op_threads", "inter_op_threads",
        "dynamic_batching", "tf32", "cudnn_benchmark", "cuda_alloc_conf"}) {
    INFO(key);
    CHECK(p.contains(key));
  }
  CHECK(p["precision"] == "fp32");
  CHECK(p["effective_batch"] == 64);
  // The tiny recipe: 2 ConMamba layers of width 64 (its parameter count is pinned by tests/models).
  CHECK(j["model"]["type"] == "ctc");
  CHECK(j["model"]["d_model"] == 64);
  CHECK(j["model"]["encoder_layers"] == 2);
  CHECK(j["model"]["parameters"].get<int64_t>() > 100000);
}

TEST_CASE("detect rejects conflicting options with a message", "[runtime][detect]") {
  int status = -1;
  std::string out = run_output("detect --json --yaml", &status, true);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(out, Catch::Contains("give --json or --yaml, not both"));
  out = run_output("detect --hparams a.yaml --model b.masr", &status, true);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(out, Catch::Contains("give --hparams or --model, not both"));
  out = run_output("detect --hparams /nonexistent.yaml", &status, true);
  CHECK(WEXITSTATUS(status) != 0);
  CHECK_THAT(out, Catch::Contains("/nonexistent.yaml"));
}

TEST_CASE("bench --tune twice: the second run reuses the plan and measures nothing",
          "[runtime][tune]") {
  masr::test::TempCache cache;
  const std::string args = "--device cpu bench --tune --hparams " + masr::test::kTinyHparams +
                           " --seconds 1 --batch 1 --threads 1 --warmup 0 --repeat 1 --json";
  int status = -1;
  const auto first = nlohmann::json::parse(run_output(args, &status));
  REQUIRE(status == 0);
  CHECK(first["plan_source"] == "measured");
  CHECK(first["measurements"] == 3);  // train + decode at 1 thread, then batch 1
  CHECK(first["profile"]["intra_op_threads"] == 1);
  CHECK(first["profile"]["batch_size"] == 1);
  const auto second = nlohmann::json::parse(run_output(args, &status));
  REQUIRE(status == 0);
  CHECK(second["plan_source"] == "cache");
  CHECK(second["measurements"] == 0);
  CHECK(second["plan_file"] == first["plan_file"]);
  CHECK(second["measured"] == first["measured"]);
}

TEST_CASE("train --dry-run fills auto knobs from the profile and keeps explicit ones",
          "[runtime][detect]") {
  masr::test::TempCache cache;
  int status = -1;
  const std::string out = run_output(
      "--device cpu --threads auto train " + masr::test::kTinyHparams +
          " --data_folder d --batch_size auto --max_batch_length_train auto --num_workers 5 "
          "--dry-run",
      &status, true);
  REQUIRE(status == 0);
  CHECK_THAT(out, Catch::Contains("auto: batch_size = 4 (from the profile"));
  CHECK_THAT(out, Catch::Contains("auto: threads = "));
  CHECK_THAT(out, Catch::Contains("\nbatch_size: 4\n"));
  CHECK_THAT(out, Catch::Contains("\nmax_batch_length_train: 200\n"));
  CHECK_THAT(out, Catch::Contains("\nnum_workers: 5\n"));
  status = -1;
  const std::string bad = run_output("--threads many detect", &status, true);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(bad, Catch::Contains("'many' is not a number or auto"));
}
