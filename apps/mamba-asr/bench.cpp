// apps/mamba-asr/bench.cpp
// `mamba-asr bench`: measures speed on this machine (warm-up, repetitions, median and spread).
#include "commands.h"

namespace masr::cli {
namespace {

struct BenchOptions {
  std::string what = "all";
  std::string hparams;
  int repeat = 10;
  int warmup = 3;
  bool json = false;
};

}  // namespace

Runner add_bench_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Benchmark the pieces of mamba-asr on this machine.\n\n"
      "Every benchmark warms up, repeats, and reports the median and spread; --json prints\n"
      "one machine-readable object per result.\n\n"
      "Examples:\n"
      "  mamba-asr bench features --repeat 20\n"
      "  mamba-asr bench --hparams hparams/CTC/conmamba_tiny.yaml --json");
  cmd->add_option("what", options->what, "features, scan, encoder, decode, train or all")
      ->capture_default_str();
  cmd->add_option("--hparams", options->hparams, "Model to benchmark");
  cmd->add_option("--repeat", options->repeat, "Timed repetitions")->capture_default_str()->check(
      CLI::Range(1, 100000));
  cmd->add_option("--warmup", options->warmup, "Untimed warm-up runs")->capture_default_str()->check(
      CLI::Range(0, 100000));
  cmd->add_flag("--json", options->json, "Machine-readable output (one JSON object per line)");
  return [] () -> int { not_available("bench", "benchmarking"); };
}

}  // namespace masr::cli
