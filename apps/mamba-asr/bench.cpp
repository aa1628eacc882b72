// apps/mamba-asr/bench.cpp
// `mamba-asr bench [NAME...]`: runs registered benchmarks (warm-up, repetitions, median and
// spread; --json for machine-readable lines). Subsystems register theirs in lib/*/.
#include <iostream>

#include "commands.h"
#include "core/error.h"
#include "runtime/benchmark.h"

namespace masr::cli {
namespace {

struct BenchOptions {
  std::vector<std::string> names;
  runtime::BenchSettings settings;
  bool json = false;
  bool list = false;
};

int run_bench(const BenchOptions& options) {
  const auto& all = runtime::benchmarks();
  if (options.list || all.empty()) {
    if (all.empty()) std::cerr << "no benchmarks are registered in this build\n";
    for (const auto& b : all) std::cout << b.name << "\n    " << b.description << "\n";
    return all.empty() ? 1 : 0;
  }
  std::vector<const runtime::Benchmark*> chosen;
  for (const auto& name : options.names) {
    const runtime::Benchmark* found = nullptr;
    for (const auto& b : all) found = b.name == name ? &b : found;
    if (found == nullptr) {
      std::string known;
      for (const auto& b : all) known += " " + b.name;
      throw Error(ErrorKind::kUsage,
                  "bench: no benchmark named '" + name + "'; available:" + known);
    }
    chosen.push_back(found);
  }
  if (chosen.empty()) {
    for (const auto& b : all) chosen.push_back(&b);
  }
  std::vector<runtime::BenchResult> results;
  for (const auto* b : chosen) {
    std::cerr << "bench: " << b->name << " (" << options.settings.warmup << " warm-up, "
              << options.settings.repeat << " timed)\n";
    for (auto& r : b->run(options.settings)) {
      if (options.json) std::cout << runtime::format_results({r}, true) << std::flush;
      results.push_back(std::move(r));
    }
  }
  if (!options.json) std::cout << runtime::format_results(results, false);
  return 0;
}

}  // namespace

Runner add_bench_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Benchmark the pieces of mamba-asr on this machine.\n\n"
      "Every benchmark warms up, repeats, and reports the median and the p10-p90 spread;\n"
      "--json prints one machine-readable object per result. With no NAME, all run.\n\n"
      "Examples:\n"
      "  mamba-asr bench --list\n"
      "  mamba-asr bench features --repeat 20\n"
      "  mamba-asr --threads 2 bench scan --json");
  cmd->add_option("names", options->names, "Benchmarks to run (see --list)");
  cmd->add_flag("--list", options->list, "List the benchmarks");
  cmd->add_option("--hparams", options->settings.hparams, "Model for model benchmarks");
  cmd->add_option("--repeat", options->settings.repeat, "Timed repetitions")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", options->settings.warmup, "Untimed warm-up runs")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_flag("--json", options->json, "Machine-readable output (one JSON object per line)");
  return [options] { return run_bench(*options); };
}

}  // namespace masr::cli
