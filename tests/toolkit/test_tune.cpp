// tests/toolkit/test_tune.cpp
// bench --tune's plan cache: a second tune with the same signature reuses the plan without
// measuring; a changed model, --replan or a damaged file measures again.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "toolkit/model_facts.h"
#include "toolkit/plan.h"
#include "toolkit/registration.h"
#include "toolkit/tuner.h"
#include "runtime_fixtures.h"

using namespace masr::runtime;
using namespace masr::toolkit;

namespace {

// Tiny and short: 1 s utterances, batches 1 and 2, one thread, one timed run each.
TuneOptions tiny_tune() {
  TuneOptions o;
  o.hparams_file = masr::test::kTinyHparams;
  o.warmup = 0;
  o.repeat = 1;
  o.seconds = 1.0;
  o.batches = {1, 2};
  o.threads = {1};
  return o;
}

}  // namespace

TEST_CASE("a second tune with the same signature reuses the cached plan", "[runtime][tune]") {
  register_all();
  masr::test::TempCache cache;
  const TuneOptions options = tiny_tune();

  const TuneOutcome first = tune(options);
  CHECK(first.source == "measured");
  // One thread count x (train + decode), then the two batch sizes.
  CHECK(first.measurements == 4);
  CHECK(first.path == cache.dir() + "/mamba-asr/plans/" + first.plan.signature.hash + ".json");
  REQUIRE(std::filesystem::exists(first.path));
  CHECK(first.plan.measured.size() == 4);
  CHECK(first.plan.profile.intra_op_threads == 1);
  const int64_t batch = first.plan.profile.batch_size;
  CHECK((batch == 1 || batch == 2));
  CHECK(first.plan.profile.effective_batch() >= 64);  // the CPU profile's 4 x 16 is kept

  const TuneOutcome second = tune(options);
  CHECK(second.source == "cache");
  CHECK(second.measurements == 0);
  CHECK(second.path == first.path);
  CHECK(second.plan.profile.batch_size == batch);
  CHECK(second.plan.measured == first.plan.measured);

  SECTION("changed model hparams measure again, into another plan") {
    TuneOptions changed = options;
    changed.overrides = {{"d_model", "48"}};
    const TuneOutcome third = tune(changed);
    CHECK(third.source == "measured");
    CHECK(third.measurements == 4);
    CHECK(third.plan.signature.hash != first.plan.signature.hash);
    CHECK(third.plan.signature.fields["hparams_hash"] !=
          first.plan.signature.fields["hparams_hash"]);
  }
  SECTION("--replan measures again") {
    TuneOptions replan = options;
    replan.replan = true;
    const TuneOutcome again = tune(replan);
    CHECK(again.source == "measured");
    CHECK(again.measurements == 4);
    CHECK(again.path == first.path);
  }
  SECTION("other explicit candidates are another signature") {
    TuneOptions other = options;
    other.batches = {1};
    const TuneOutcome again = tune(other);
    CHECK(again.source == "measured");
    CHECK(again.measurements == 3);
    CHECK(again.plan.profile.batch_size == 1);
  }
  SECTION("a damaged plan file is measured again and rewritten") {
    std::ofstream(first.path) << "{ not json";
    const TuneOutcome again = tune(options);
    CHECK(again.source == "measured");
    CHECK(tune(options).source == "cache");
  }
}

TEST_CASE("the plan cache lives under XDG_CACHE_HOME, else ~/.cache", "[runtime][tune]") {
  masr::test::TempCache cache;
  CHECK(plan_cache_dir() == cache.dir() + "/mamba-asr/plans");
  const std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", 1);
  CHECK(plan_cache_dir() == "/home/someone/.cache/mamba-asr/plans");
  unsetenv("HOME");
  CHECK_THROWS_WITH(plan_cache_dir(), Catch::Contains("neither XDG_CACHE_HOME nor HOME is set"));
  if (!home.empty()) setenv("HOME", home.c_str(), 1);
}

TEST_CASE("plan signatures cover the device, the model and the versions", "[runtime][tune]") {
  MachineInfo m;
  m.torch_version = "1.13.1";
  m.cpu.model = "Some CPU";
  m.cpu.logical_cores = 2;
  const PlanSignature a = plan_signature(m, DeviceChoice::cpu(), "0123456789abcdef");
  CHECK(a.hash ==
        plan_signature(m, DeviceChoice::cpu(), "0123456789abcdef").hash);  // deterministic
  CHECK(a.hash.size() == 16);
  CHECK(a.fields["hparams_hash"] == "0123456789abcdef");
  CHECK(a.fields.contains("torch_version"));
  CHECK(a.fields.contains("mamba_asr_version"));
  CHECK(plan_signature(m, DeviceChoice::cpu(), "0123456789abcdee").hash != a.hash);
  MachineInfo more_cores = m;
  more_cores.cpu.logical_cores = 4;
  CHECK(plan_signature(more_cores, DeviceChoice::cpu(), "0123456789abcdef").hash != a.hash);
  CudaDeviceInfo gpu;
  gpu.name = "GPU";
  gpu.compute_major = 9;
  m.cuda.push_back(gpu);
  const PlanSignature g = plan_signature(m, parse_device("cuda:0"), "0123456789abcdef");
  CHECK(g.fields["device"]["gpu"] == "GPU");
  CHECK(g.fields["device"]["compute_capability"] == "9.0");
  CHECK(g.hash != a.hash);
}

TEST_CASE("stable_hash is 64-bit FNV-1a", "[runtime][tune]") {
  // The published FNV-1a 64 test vectors (offset basis for "", and "a").
  CHECK(stable_hash("") == "cbf29ce484222325");
  CHECK(stable_hash("a") == "af63dc4c8601ec8c");
  CHECK(stable_hash("foobar") == "85944171f73967e8");
}
