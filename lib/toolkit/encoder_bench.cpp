// lib/toolkit/encoder_bench.cpp
// The "encoder" benchmark: CNN front end + ConMamba encoder forward on CPU, inference mode, for
// the tiny CTC and small S2S recipes, 10 s utterances at batch 1 and 8.
#include "toolkit/benchmarks.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <filesystem>

#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "runtime/benchmark.h"

namespace masr::toolkit {
namespace {

// Measures lib/models: its names unqualified.
using namespace models;  // NOLINT(build/namespaces)

std::vector<runtime::BenchResult> run_encoder_benchmark(const runtime::BenchSettings& settings) {
  // Paths relative to the repository root (run `mamba-asr bench encoder` from there), or one
  // model given with --hparams.
  std::vector<std::string> files = {"hparams/CTC/conmamba_tiny.yaml",
                                    "hparams/S2S/conmamba_small.yaml"};
  if (!settings.hparams.empty()) files = {settings.hparams};
  std::vector<runtime::BenchResult> results;
  for (const auto& file : files) {
    hparams::LoadOptions options;
    options.overrides = {{"data_folder", "unused"}};
    const auto model = AsrModel::from_hparams(hparams::load_file(file, options));
    model->eval();
    const std::string name = std::filesystem::path(file).parent_path().filename().string() + "/" +
                             std::filesystem::path(file).stem().string();
    for (int64_t batch : {1, 8}) {
      c10::InferenceMode inference;
      torch::manual_seed(0);
      const at::Tensor feats = torch::randn({batch, 1001, 80});  // 10 s at a 10 ms hop
      auto r = runtime::measure(name + "/b" + std::to_string(batch), settings,
                                [&] { (void)model->encode(feats); });
      r.work = 10.0 * static_cast<double>(batch);
      r.work_unit = "audio-s";
      r.note = "feats (" + std::to_string(batch) + ", 1001, 80), " +
               std::to_string(model->num_parameters()) + " params, " +
               std::to_string(at::get_num_threads()) + " threads; ms per audio-s = 1000 / rate";
      results.push_back(std::move(r));
    }
  }
  return results;
}

}  // namespace

void register_encoder_bench() {
  runtime::register_benchmark(
      {"encoder",
       "CNN front end + encoder forward (AsrModel::encode) on CPU in inference mode, "
       "hparams/CTC/conmamba_tiny.yaml and hparams/S2S/conmamba_small.yaml (or --hparams), "
       "10 s utterances, batch 1 and 8",
       run_encoder_benchmark});
}

}  // namespace masr::toolkit
