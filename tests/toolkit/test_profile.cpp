// tests/toolkit/test_profile.cpp
// Runtime profiles: the design documents' platform tables (docs/runtime.md) on synthetic
// machines, memory fitting, the override YAML read back by the hparams loader, and `auto`.
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "toolkit/auto_settings.h"
#include "toolkit/model_facts.h"
#include "toolkit/plan.h"
#include "toolkit/profile.h"
#include "toolkit/registration.h"
#include "runtime_fixtures.h"

using namespace masr::runtime;
using namespace masr::toolkit;

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

MachineInfo cpu_machine(int cores, int64_t available) {
  MachineInfo m;
  m.cpu.logical_cores = cores;
  m.cpu.physical_cores = cores;
  m.cpu.memory_total_bytes = 2 * available;
  m.cpu.memory_available_bytes = available;
  return m;
}

MachineInfo gpu_machine(int major, double gib) {
  MachineInfo m = cpu_machine(32, 64 * kGiB);
  CudaDeviceInfo d;
  d.name = "GPU";
  d.compute_major = major;
  d.memory_total_bytes = static_cast<int64_t>(gib * kGiB);
  d.memory_free_bytes = d.memory_total_bytes;
  d.bf16 = d.tf32 = major >= 8;
  d.fp16 = major >= 7;
  m.cuda.push_back(d);
  return m;
}

}  // namespace

TEST_CASE("the CPU profile follows the guide, sized to the cores", "[runtime][profile]") {
  const RuntimeProfile p = derive_profile(cpu_machine(2, 16 * kGiB), DeviceChoice::cpu(), nullptr);
  CHECK(p.precision == Precision::kFp32);
  CHECK(p.batch_size == 4);
  CHECK(p.grad_accumulation_factor == 16);
  CHECK(p.max_grad_norm == 1.0);
  CHECK_FALSE(p.dynamic_batching);
  CHECK(p.max_batch_length_train == 200);
  CHECK(p.max_batch_length_val == 50);
  CHECK(p.num_bucket == 50);
  CHECK(p.intra_op_threads == 2);
  CHECK(p.inter_op_threads == 2);
  CHECK(p.num_workers == 1);  // half of 2 cores
  CHECK(p.memory_budget_bytes == 8 * kGiB);
  CHECK_FALSE(p.tf32);
  const RuntimeProfile big =
      derive_profile(cpu_machine(64, 16 * kGiB), DeviceChoice::cpu(), nullptr);
  CHECK(big.intra_op_threads == 8);  // min(cores, 8)
  CHECK(big.num_workers == 2);
}

TEST_CASE("the CUDA profile scales the batch with memory and keeps the effective batch",
          "[runtime][profile]") {
  struct Case {
    int major;
    double gib;
    const char* precision;
    int64_t batch, accumulation;
  };
  for (const Case& c : {Case{9, 80, "bf16", 64, 2}, Case{8, 40, "bf16", 32, 4},
                        Case{7, 24, "fp16", 16, 4}, Case{6, 10, "fp32", 8, 8}}) {
    INFO(c.gib << " GiB, compute " << c.major);
    const RuntimeProfile p =
        derive_profile(gpu_machine(c.major, c.gib), parse_device("cuda:0"), nullptr);
    CHECK(precision_name(p.precision) == std::string(c.precision));
    CHECK(p.batch_size == c.batch);
    CHECK(p.grad_accumulation_factor == c.accumulation);
    CHECK(p.dynamic_batching);
    CHECK(p.max_batch_length_train == 850);
    CHECK(p.cudnn_benchmark);
    CHECK(p.tf32 == (c.major >= 8));
    CHECK(p.cuda_alloc_conf == "max_split_size_mb:128");
  }
}

TEST_CASE("a model that does not fit shortens the batch and raises the accumulation",
          "[runtime][profile]") {
  ModelFacts model;
  model.parameters = 1000;
  model.static_train_bytes = 0;
  model.activation_bytes_per_audio_s = 50 << 20;  // 50 MiB per audio second
  // Budget: half of 2 GiB = 1 GiB -> 20 s of audio -> one 12 s utterance per batch.
  const RuntimeProfile p = derive_profile(cpu_machine(2, 2 * kGiB), DeviceChoice::cpu(), &model);
  CHECK(p.max_batch_length_train == 20);
  CHECK(p.max_batch_length_val == 20);
  CHECK(p.batch_size == 1);
  CHECK(p.grad_accumulation_factor == 64);
  CHECK(p.effective_batch() == 64);
  // A small model keeps the guide's values.
  model.activation_bytes_per_audio_s = 1 << 20;
  const RuntimeProfile small =
      derive_profile(cpu_machine(2, 2 * kGiB), DeviceChoice::cpu(), &model);
  CHECK(small.max_batch_length_train == 200);
  CHECK(small.batch_size == 4);
}

TEST_CASE("profile JSON round-trips", "[runtime][profile]") {
  RuntimeProfile p = derive_profile(gpu_machine(8, 40), parse_device("cuda:0"), nullptr);
  const RuntimeProfile back = profile_from_json(profile_to_json(p));
  CHECK(profile_to_json(back) == profile_to_json(p));
}

TEST_CASE("the override YAML is accepted back by the hparams loader", "[runtime][profile]") {
  register_all();
  masr::hparams::LoadOptions load;
  load.placeholder_value = "unused";
  const auto hp = masr::hparams::load_file(masr::test::kTinyHparams, load);
  RuntimeProfile p = derive_profile(cpu_machine(2, 16 * kGiB), DeviceChoice::cpu(), nullptr);
  p.batch_size = 3, p.grad_accumulation_factor = 22, p.max_batch_length_train = 123;
  const std::string yaml = profile_to_override_yaml(p, &hp);
  CHECK_THAT(yaml, Catch::Contains("max_batch_len_val: 50"));  // the recipe's spelling
  CHECK_THAT(yaml, Catch::Contains("# process settings (not hparams): --threads 2"));
  load.overrides_yaml = yaml;
  const auto tuned = masr::hparams::load_file(masr::test::kTinyHparams, load);
  CHECK(tuned["batch_size"].as_int() == 3);
  CHECK(tuned["grad_accumulation_factor"].as_int() == 22);
  CHECK(tuned["max_batch_length_train"].as_double() == 123);
  CHECK(tuned["precision"].as_string() == "fp32");
  CHECK(tuned["dynamic_batching"].as_bool() == false);
  CHECK(tuned["num_workers"].as_int() == 1);
  // References follow: the sampler options see the new batch length.
  CHECK(tuned["dynamic_batch_sampler_train"]["max_batch_length"].as_double() == 123);
}

TEST_CASE("auto knobs come from the cached plan, else the profile; explicit values win",
          "[runtime][profile]") {
  register_all();
  masr::test::TempCache cache;
  const Overrides overrides = {
      {"batch_size", "auto"}, {"max_batch_length_train", "auto"}, {"num_workers", "3"}};
  CHECK(auto_keys(masr::test::kTinyHparams, overrides) ==
        std::vector<std::string>{"batch_size", "max_batch_length_train"});
  CHECK(auto_keys(masr::test::kTinyHparams, {}).empty());

  AutoResolution r = resolve_auto(masr::test::kTinyHparams, overrides, DeviceChoice::cpu());
  CHECK_THAT(r.source, Catch::StartsWith("profile"));
  CHECK(r.overrides == Overrides{{"batch_size", "4"}, {"max_batch_length_train", "200"}});
  CHECK(r.threads == 0);

  // A plan as `bench --tune` caches it for this model (default constraints).
  const MachineInfo machine = detect_machine();
  const ModelFacts facts = model_facts_from(
      load_hparams_for_runtime(masr::test::kTinyHparams, {}, machine, DeviceChoice::cpu()));
  RuntimePlan plan;
  plan.signature =
      plan_signature(machine, DeviceChoice::cpu(), facts.hparams_hash, {{"seconds", 4.0}});
  plan.profile.batch_size = 5;
  plan.profile.max_batch_length_train = 77;
  plan.profile.intra_op_threads = 1;
  save_plan(plan, plan_path(plan.signature));

  r = resolve_auto(masr::test::kTinyHparams, overrides, DeviceChoice::cpu(), /*threads_auto=*/true);
  CHECK_THAT(r.source, Catch::StartsWith("plan " + cache.dir()));
  CHECK(r.overrides == Overrides{{"batch_size", "5"}, {"max_batch_length_train", "77"}});
  CHECK(r.threads == 1);
  // Explicit values are never replaced.
  r = resolve_auto(masr::test::kTinyHparams, {{"batch_size", "7"}}, DeviceChoice::cpu());
  CHECK(r.overrides.empty());
}

TEST_CASE("a saved model hashes like its recipe and finds the recipe's plan for decoding",
          "[runtime][profile]") {
  register_all();
  masr::test::TempCache cache;
  const MachineInfo machine = detect_machine();
  const auto hp =
      load_hparams_for_runtime(masr::test::kTinyHparams, {}, machine, DeviceChoice::cpu());
  const ModelFacts recipe = model_facts_from(hp);
  const std::string model_file = cache.dir() + "/model.masr";
  masr::models::AsrModel::from_hparams(hp)->save(model_file);
  const ModelFacts saved = model_facts_from_model(model_file);
  CHECK(saved.hparams_hash == recipe.hparams_hash);
  CHECK(saved.parameters == recipe.parameters);
  CHECK(saved.d_model == 64);

  std::string source;
  const int profile_threads =
      derive_profile(machine, DeviceChoice::cpu(), nullptr).intra_op_threads;
  const auto model = masr::models::AsrModel::load(model_file);
  CHECK(auto_decode_threads(model->hparams_yaml(), DeviceChoice::cpu(), &source) ==
        profile_threads);
  CHECK(source == "profile");

  RuntimePlan plan;
  plan.signature =
      plan_signature(machine, DeviceChoice::cpu(), recipe.hparams_hash, {{"seconds", 4.0}});
  plan.decode_threads = profile_threads + 3;  // distinguishable from the profile's
  save_plan(plan, plan_path(plan.signature));
  CHECK(auto_decode_threads(model->hparams_yaml(), DeviceChoice::cpu(), &source) ==
        profile_threads + 3);
  CHECK(source == "plan " + plan_path(plan.signature));
}
