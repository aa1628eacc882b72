// apps/mamba-asr/bench.cpp
// `mamba-asr bench [NAME...]`: runs registered benchmarks (warm-up, repetitions, median and
// spread) over sweeps of --threads and --batch, as a table, JSON lines, CSV or Markdown; and
// `bench --tune`, which measures a model's settings and caches the plan.
#include <ATen/Parallel.h>

#include <iostream>
#include <sstream>

#include "commands.h"
#include "core/error.h"
#include "runtime/benchmark.h"
#include "runtime/device.h"
#include "toolkit/tuner.h"

namespace masr::cli {
namespace {

struct BenchOptions {
  std::vector<std::string> names;
  runtime::BenchSettings settings;
  std::string batches, threads, workers, lengths;  // comma-separated sweeps
  bool json = false, csv = false, markdown = false;
  bool list = false;
  bool tune = false, replan = false;
};

template <typename T>
std::vector<T> parse_list(const std::string& text, const char* option) {
  std::vector<T> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      const long long value = std::stoll(item, &used);
      if (used != item.size() || value < 1) throw std::invalid_argument(item);
      out.push_back(static_cast<T>(value));
    } catch (const std::exception&) {
      throw Error(ErrorKind::kUsage,
                  std::string("bench: ") + option + " '" + text +
                      "': give positive integers separated by commas, e.g. 1,8,32");
    }
  }
  return out;
}

// --lengths: positive seconds, e.g. 1,10,60 or 0.5,2.
std::vector<double> parse_seconds(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      const double value = std::stod(item, &used);
      if (used != item.size() || !(value > 0) || value > 1e6) throw std::invalid_argument(item);
      out.push_back(value);
    } catch (const std::exception&) {
      throw Error(ErrorKind::kUsage, "bench: --lengths '" + text +
                                         "': give positive seconds separated by commas, e.g. "
                                         "1,10,60,300,1800");
    }
  }
  return out;
}

runtime::ResultFormat format_of(const BenchOptions& o) {
  if (o.json + o.csv + o.markdown > 1) {
    throw Error(ErrorKind::kUsage, "bench: give at most one of --json, --csv, --markdown");
  }
  return o.json       ? runtime::ResultFormat::kJson
         : o.csv      ? runtime::ResultFormat::kCsv
         : o.markdown ? runtime::ResultFormat::kMarkdown
                      : runtime::ResultFormat::kTable;
}

int run_tune(const BenchOptions& o, const runtime::DeviceChoice& device,
             const std::vector<int>& threads) {
  if (o.settings.hparams.empty()) {
    throw Error(ErrorKind::kUsage,
                "bench --tune: give the model, e.g. --hparams hparams/CTC/conmamba_tiny.yaml");
  }
  toolkit::TuneOptions t;
  t.hparams_file = o.settings.hparams;
  t.device = device;
  t.replan = o.replan;
  t.warmup = o.settings.warmup;
  t.repeat = o.settings.repeat;
  t.seconds = o.settings.seconds;
  t.batches = o.settings.batches;
  t.threads = threads;
  const toolkit::TuneOutcome out = toolkit::tune(t);
  nlohmann::json j = toolkit::plan_to_json(out.plan);
  j["plan_source"] = out.source;
  j["plan_file"] = out.path;
  j["measurements"] = out.measurements;
  if (o.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "plan source: " << out.source << " (" << out.measurements << " measurements)\n"
              << "plan file:   " << out.path << "\n"
              << toolkit::format_profile(out.plan.profile)
              << "decode threads: " << out.plan.decode_threads << "\n";
  }
  return 0;
}

std::vector<const runtime::Benchmark*> choose(const std::vector<std::string>& names) {
  const auto& all = runtime::benchmarks();
  std::vector<const runtime::Benchmark*> chosen;
  for (const auto& name : names) {
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
    for (const auto& b : all)
      if (!b.only_when_named) chosen.push_back(&b);
  }
  return chosen;
}

int run_bench(BenchOptions& options, const GlobalOptions& global) {
  const runtime::ResultFormat format = format_of(options);
  if (!options.batches.empty()) {
    options.settings.batches = parse_list<int64_t>(options.batches, "--batch");
  }
  if (!options.workers.empty()) {
    options.settings.workers = parse_list<int64_t>(options.workers, "--workers");
  }
  if (!options.lengths.empty()) options.settings.lengths = parse_seconds(options.lengths);
  const std::vector<int> threads =
      options.threads.empty() ? std::vector<int>{} : parse_list<int>(options.threads, "--threads");
  options.settings.device = runtime::resolve_device(global.device);
  if (options.tune) return run_tune(options, options.settings.device, threads);
  const auto& all = runtime::benchmarks();
  if (options.list || all.empty()) {
    if (all.empty()) std::cerr << "no benchmarks are registered in this build\n";
    for (const auto& b : all) std::cout << b.name << "\n    " << b.description << "\n";
    return all.empty() ? 1 : 0;
  }
  const auto chosen = choose(options.names);
  std::vector<runtime::BenchResult> results;
  const std::vector<int> sweep = threads.empty() ? std::vector<int>{0} : threads;
  for (int t : sweep) {
    if (t > 0) at::set_num_threads(t);
    for (const auto* b : chosen) {
      std::cerr << "bench: " << b->name << " (" << options.settings.warmup << " warm-up, "
                << options.settings.repeat << " timed, " << at::get_num_threads() << " threads)\n";
      for (auto& r : b->run(options.settings)) {
        if (format == runtime::ResultFormat::kJson) {
          std::cout << runtime::format_results({r}, format) << std::flush;
        }
        results.push_back(std::move(r));
      }
    }
  }
  if (format != runtime::ResultFormat::kJson) std::cout << runtime::format_results(results, format);
  int failed = 0;
  for (const auto& r : results) {
    if (!r.failed.empty()) std::cerr << "bench: " << r.name << " FAILED: " << r.failed << "\n";
    failed += r.failed.empty() ? 0 : 1;
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace

Runner add_bench_command(CLI::App& app, GlobalOptions& global) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Benchmark the pieces of mamba-asr on this machine, or tune a model's runtime plan.\n\n"
      "Every benchmark warms up, repeats, and reports the median and the p10-p90 spread.\n"
      "With no NAME, all run. --batch and --threads take comma-separated sweeps.\n"
      "--tune measures a model's candidates (threads, batch sizes up to the memory limit,\n"
      "precisions) and caches the fastest as a plan under $XDG_CACHE_HOME/mamba-asr/plans\n"
      "(default ~/.cache); a later --tune with the same signature reuses it.\n\n"
      "Examples:\n"
      "  mamba-asr bench --list\n"
      "  mamba-asr bench features --repeat 20\n"
      "  mamba-asr bench train-step decode-rtf --batch 1,8 --threads 1,2 --markdown\n"
      "  mamba-asr bench --tune --hparams hparams/CTC/conmamba_tiny.yaml\n"
      "  mamba-asr --device cuda bench decode-files --model models/conmamba-ctc-synth-en \\\n"
      "      --input @test.txt --batch 32,128\n"
      "  mamba-asr --threads 2 bench scan --json\n"
      "  mamba-asr bench encoder --lengths 1,10,60,300,1800 --svg encoder_vs_length.svg\n"
      "  mamba-asr --threads 2 bench long-audio --model models/conmamba-ctc-synth-en \\\n"
      "      --lengths 600,3600 --repeat 1 --memory-limit 1000");
  cmd->add_option("names", options->names, "Benchmarks to run (see --list)");
  cmd->add_flag("--list", options->list, "List the benchmarks");
  cmd->add_option("--hparams", options->settings.hparams, "Model for model benchmarks and --tune");
  cmd->add_option("--repeat", options->settings.repeat, "Timed repetitions")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", options->settings.warmup, "Untimed warm-up runs")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--batch", options->batches,
                  "Batch sizes to sweep, e.g. 1,8,32 (train-step, decode-rtf; --tune candidates)");
  cmd->add_option("--workers", options->workers,
                  "loader: data-loader worker counts to sweep, e.g. 1,4,16");
  cmd->add_option("--threads", options->threads,
                  "Thread counts to sweep, e.g. 1,2 (with --tune: the candidates)");
  cmd->add_option("--seconds", options->settings.seconds,
                  "Length of the synthetic utterances of train-step, decode-rtf and --tune")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--shapes-from", options->settings.shapes_from,
                  "train-step: time the step at each batch shape of a training run (its output "
                  "folder's batch_shapes.tsv, CUDA) and sum batches x median step, to set a real "
                  "epoch's step time against")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tokens-per-second", options->settings.tokens_per_second,
                  "Transcript tokens per audio second of train-step's synthetic batches (default: "
                  "12 for character vocabularies, 3 for subword ones, about LibriSpeech's)")
      ->check(CLI::Range(0.1, 100.0));
  add_precision_option(
      cmd, options->settings.precision,
      {runtime::Precision::kFp32, runtime::Precision::kBf16, runtime::Precision::kFp16},
      "train-step and decode-files precision on CUDA: fp32, bf16, fp16");
  cmd->add_option(
      "-m,--model", options->settings.model,
      "decode-files, long-audio: a trained model (file or folder); stream: a causal one");
  cmd->add_option(
      "--input", options->settings.inputs,
      "decode-files: audio inputs as decode takes them (files, folders, @list, CSV); "
      "long-audio, stream: audio files (default: the bundled examples); "
      "loader: a SpeechBrain CSV of training audio ($data_root: the CSV's folder); repeatable");
  cmd->add_option("--batch-seconds", options->settings.batch_seconds,
                  "decode-files: padded audio seconds per batch (0: --batch alone), as decode's; "
                  "loader with --input: max_batch_length (0: 500 s, ConMamba-L's)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--search", options->settings.search,
                  "decode-files, long-audio: greedy, ctc-beam or s2s")
      ->capture_default_str()
      ->check(CLI::IsMember({"greedy", "ctc-beam", "s2s"}));
  cmd->add_flag("--profile", options->settings.profile,
                "train-step: time each phase of the step (features, normalize, augment, encoder, "
                "decoder, loss, backward, clip, optimizer, ...) with CUDA events on GPUs and count "
                "host syncs; table on stderr, medians in the results");
  cmd->add_option("--trace", options->settings.trace,
                  "train-step on CUDA: write a Chrome trace (Kineto) of 3 timed steps to FILE");
  cmd->add_option("--shapes", options->settings.shapes,
                  "train-step: cycle through K batch shapes of about the same audio (utterances "
                  "of 0.7-1.3 x --seconds), as real training's batches change shape")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  cmd->add_option("--ragged", options->settings.ragged,
                  "train-step: random relative lengths 0.85-1 of the utterances (audio), the "
                  "transcripts (tokens) or both, so that padding masks are in play as in real "
                  "batches")
      ->check(CLI::IsMember({"audio", "tokens", "both"}));
  cmd->add_option("--init", options->settings.init,
                  "train-parity: folder with the reference's model.ckpt and batch.pt");
  cmd->add_option("--lengths", options->lengths,
                  "encoder: audio lengths in seconds to sweep, e.g. 1,10,60,300,1800; --hparams "
                  "then takes FILE[:conmamba|conformer|transformer],... (default: ConMamba-S, "
                  "Conformer-S and a Transformer of about their size); long-audio: recording "
                  "lengths (default 600,3600)");
  cmd->add_option("--time-limit", options->settings.time_limit,
                  "encoder --lengths: seconds one encoder may spend on one length (probe, warm-up "
                  "and repetitions; fewer repetitions or a skip beyond it); long-audio: no further "
                  "repetition of a length starts beyond it")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1e6));
  cmd->add_option("--memory-limit", options->settings.memory_limit_mib,
                  "long-audio: peak memory in MiB a length may reach; above it the result fails "
                  "and bench exits with 1 (0: no bound)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--svg", options->settings.svg,
                  "encoder --lengths: write a plot of time and memory against length to FILE");
  cmd->add_flag("--json", options->json, "One JSON object per result (with --tune: the plan)");
  cmd->add_flag("--csv", options->csv, "CSV with a header line");
  cmd->add_flag("--markdown", options->markdown, "A Markdown table");
  cmd->add_flag("--tune", options->tune,
                "Measure and cache the runtime plan of --hparams (reuses a matching cached plan)");
  cmd->add_flag("--replan", options->replan, "With --tune: measure again even if a plan is cached");
  return [options, &global] { return run_bench(*options, global); };
}

}  // namespace masr::cli
