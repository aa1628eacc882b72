// tests/toolkit/test_bench_format.cpp
// Benchmark output formats (table, JSON lines, CSV, Markdown) and the step benchmarks' metrics.
#include <catch2/catch.hpp>

#include <torch/cuda.h>
#include <nlohmann/json.hpp>

#include "hparams/hparams.h"
#include "runtime/benchmark.h"
#include "runtime/peak_memory.h"
#include "runtime_fixtures.h"
#include "toolkit/registration.h"
#include "toolkit/step_bench.h"
#include "train/cuda_graph_step.h"

using namespace masr::runtime;
using namespace masr::toolkit;

namespace {
BenchResult sample() {
  BenchResult r;
  r.name = "decode/b1";
  r.seconds = {0.3, 0.1, 0.2};
  r.work = 4.0;
  r.work_unit = "audio-s";
  r.note = "cpu fp32, batch 1";  // a comma: CSV must quote it
  r.metrics = {{"rtf", 0.05}, {"peak_bytes", 2097152}};
  return r;
}

// The tiny model's hparams, with every class registered.
masr::hparams::Hparams tiny_hparams() {
  register_all();
  masr::hparams::LoadOptions load;
  load.placeholder_value = "unused";
  return masr::hparams::load_file(masr::test::kTinyHparams, load);
}
}  // namespace

TEST_CASE("bench results print as JSON lines, CSV and Markdown", "[runtime][bench]") {
  const std::vector<BenchResult> results = {sample()};
  const auto j = nlohmann::json::parse(format_results(results, ResultFormat::kJson));
  CHECK(j["median_s"] == Approx(0.2));
  CHECK(j["throughput_per_s"] == Approx(20.0));
  CHECK(j["rtf"] == Approx(0.05));
  CHECK(j["peak_bytes"] == Approx(2097152));

  const std::string csv = format_results(results, ResultFormat::kCsv);
  CHECK(csv ==
        "name,repeat,median_s,p10_s,p90_s,work,work_unit,throughput_per_s,rtf,peak_bytes,note\n"
        "decode/b1,3,0.2,0.12,0.28,4,audio-s,20,0.05,2097152,\"cpu fp32, batch 1\"\n");

  const std::string md = format_results(results, ResultFormat::kMarkdown);
  CHECK_THAT(md, Catch::StartsWith("| benchmark | median ms |"));
  CHECK_THAT(md, Catch::Contains("| decode/b1 | 200.000 | 120.000 - 280.000 | 20 audio-s/s | "
                                 "rtf 0.05, peak 2.0 MiB | cpu fp32, batch 1 |"));
  CHECK_THAT(format_results(results, ResultFormat::kTable), Catch::Contains("rtf 0.05"));
}

TEST_CASE("the train-step and decode benchmarks report work, RTF and peak memory",
          "[runtime][bench]") {
  const auto hp = tiny_hparams();
  BenchSettings settings;
  settings.warmup = 0;
  settings.repeat = 2;
  StepSpec spec;
  spec.batch = 2;
  spec.seconds = 0.5;

  // Decoding first: a fresh model has no normalization statistics until DecodeBench sets them.
  DecodeBench decode(hp, DeviceChoice::cpu());
  const BenchResult d = decode.run(spec, settings);
  std::map<std::string, double> m(d.metrics.begin(), d.metrics.end());
  CHECK(m.at("rtf") == Approx(d.median() / 1.0));
  CHECK(m.at("rtfx") == Approx(1.0 / m.at("rtf")));
  CHECK(m.at("latency_p50_ms") == Approx(d.median() * 1e3));
  CHECK(m.at("latency_p90_ms") >= m.at("latency_p50_ms"));
  CHECK(m.at("peak_bytes") > 0);

  TrainStepBench train(hp, DeviceChoice::cpu());
  const BenchResult t = train.run(spec, settings);
  CHECK(t.seconds.size() == 2);
  CHECK(t.work == Approx(1.0));  // 2 x 0.5 audio seconds
  CHECK(t.work_unit == "audio-s");
  REQUIRE(t.metrics.size() == 1);
  CHECK(t.metrics[0].first == "peak_bytes");
  CHECK(t.metrics[0].second > 0);
}

TEST_CASE("peak memory follows an allocation on the CPU", "[runtime][bench]") {
  reset_peak_memory(DeviceChoice::cpu());
  const int64_t before = peak_memory(DeviceChoice::cpu());
  REQUIRE(before > 0);
  {
    std::vector<char> block(256 << 20, 1);  // touched: 256 MiB resident
    CHECK(peak_memory(DeviceChoice::cpu()) >= before + (200 << 20));
  }
  CHECK(std::string(peak_memory_kind(DeviceChoice::cpu())) == "RSS");
  CHECK(is_out_of_memory("CUDA out of memory. Tried to allocate 2.00 GiB"));
  CHECK_FALSE(is_out_of_memory("shape mismatch"));
}

// Hidden tag: run on a GPU machine with  test_masr "[.cuda]".
TEST_CASE("the train-step benchmark keeps one set of CUDA graphs across shapes when asked",
          "[.cuda]") {
  REQUIRE(torch::cuda::is_available());
  const auto hp = tiny_hparams();
  BenchSettings settings;
  settings.warmup = 1;
  settings.repeat = 2;
  const DeviceChoice cuda{DeviceChoice::Type::kCuda, 0};
  StepSpec spec;
  spec.device = cuda;
  spec.batch = 2;
  spec.seconds = 0.5;
  TrainStepBench train(hp, cuda);
  const auto metric = [](const BenchResult& r, const std::string& name) {
    for (const auto& [key, value] : r.metrics) {
      if (key == name) return value;
    }
    FAIL("no metric " << name);
    return -1.0;
  };
  // A new set per run: one shape's key after each.
  if (!masr::train::GraphedSteps::supported(torch_device(cuda))) {
    WARN("CUDA graphs are not supported by this build (LibTorch < 2): nothing to check");
    return;
  }
  const BenchResult a = train.run(spec, settings);
  REQUIRE(train.graph_keys().size() == 1);
  CHECK(metric(a, "graphs.captured") == 1);
  CHECK(metric(a, "graphs.replayed") == 2);
  spec.batch = 4;
  train.run(spec, settings);
  CHECK(train.graph_keys().size() == 1);
  // Kept: the next shapes join the set, and each run counts only its own steps. (A smaller
  // batch after a larger one: the set's shared input buffers, sized by the largest batch so far,
  // hold it; a larger one would make new buffers and drop the set's graphs, GraphedSteps.)
  spec.keep_graphs = true;
  spec.batch = 3;
  const BenchResult c = train.run(spec, settings);
  CHECK(train.graph_keys().size() == 2);
  CHECK(metric(c, "graphs.captured") == 1);
  CHECK(metric(c, "graphs.replayed") == 2);
  spec.batch = 4;  // a shape the set holds: replayed from the first call
  const BenchResult d = train.run(spec, settings);
  CHECK(train.graph_keys().size() == 2);
  CHECK(metric(d, "graphs.captured") == 0);
  CHECK(metric(d, "graphs.replayed") == 3);
}
