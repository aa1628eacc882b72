// lib/toolkit/encoder_length_bench.cpp
// Encoders are built with AsrModel::from_hparams, as the other model runtime::benchmarks build
// them, and fed random features (1, 1 + 100 L, n_mels) at the Fbank's 10 ms hop through
// AsrModel::encode (CNN front end + input projection + encoder), as lib/models' 10 s encoder
// benchmark feeds them. Memory is the growth of the peak over the forwards above the level at their
// start: RSS on the CPU (the heap trimmed first, so freed pages of earlier runs do not hide new
// ones), the caching allocator's peak on CUDA.
#include "toolkit/encoder_length_bench.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "models/module_object.h"
#include "models/transformer_asr.h"
#include "runtime/machine.h"
#include "runtime/peak_memory.h"

namespace masr::toolkit {
namespace {

constexpr double kFeatureFramesPerSecond = 100.0;  // Fbank hop 10 ms
constexpr double kMemoryHeadroom = 0.8;            // of MemAvailable a length may plan to use
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const char* const kModules[] = {"conmamba", "conformer", "transformer"};

struct Encoder {
  std::string name;    // "conmamba"; "conmamba@file" when two encoders share a module
  std::string label;   // the plot's legend
  std::string module;  // conmamba | conformer | transformer
  std::string attention;
  int64_t nhead = 0, n_mels = 80, params = 0;
  std::shared_ptr<models::AsrModel> model;
};

// What earlier lengths of one encoder measured, for estimating the next.
struct History {
  std::vector<std::pair<double, double>> times;  // (length s, median forward s)
  double length_s = 0.0, growth_bytes = 0.0, frames = 0.0;
  double frames_per_feature = 0.25;  // two stride-2 convolutions until measured
};

std::string fmt(const char* format, double value) {
  char b[64];
  std::snprintf(b, sizeof(b), format, value);
  return b;
}

std::string pretty_module(const std::string& module) {
  return module == "conmamba" ? "ConMamba" : module == "conformer" ? "Conformer" : "Transformer";
}

// CNN + input projection + encoder: what encode() runs (the decoder and heads are left out).
int64_t encoder_parameters(const hparams::Hparams& hp, const models::TransformerASRImpl& asr) {
  int64_t n = 0;
  for (const auto& p : models::module_of(hp["CNN"])->parameters()) n += p.numel();
  for (const auto& item : asr.named_parameters()) {
    const std::string& key = item.key();
    if (key.rfind("encoder.", 0) == 0 || key.rfind("custom_src_module.", 0) == 0) {
      n += item.value().numel();
    }
  }
  return n;
}

Encoder build_encoder(const EncoderSpec& spec, const runtime::DeviceChoice& device) {
  hparams::LoadOptions options;
  options.placeholder_value = "unused";
  if (!spec.encoder_module.empty()) {
    options.overrides = {{"Transformer", "{encoder_module: " + spec.encoder_module + "}"}};
  }
  options.overrides_yaml = spec.overrides_yaml;
  const hparams::Hparams hp = hparams::load_file(spec.hparams, options);
  Encoder e;
  e.model = models::AsrModel::from_hparams(hp);
  const auto asr =
      std::dynamic_pointer_cast<models::TransformerASRImpl>(models::module_of(hp["Transformer"]));
  if (!asr)
    throw_config_error("bench encoder: " + spec.hparams + ": Transformer is not a TransformerASR");
  const models::TransformerASRConfig& c = asr->config();
  e.module = c.encoder_module;
  e.attention = c.attention_type;
  e.nhead = c.nhead;
  e.params = encoder_parameters(hp, *asr);
  if (const auto* mels = hp.find("n_mels")) e.n_mels = mels->as_int();
  e.name = e.module;
  const std::string stem = std::filesystem::path(spec.hparams).stem().string();
  e.label = pretty_module(e.module) + ": " + stem +
            (spec.encoder_module.empty() ? "" : ":" + e.module) + ", " +
            std::to_string(c.num_encoder_layers) + " layers x d_model " +
            std::to_string(c.d_model) + ", d_ffn " + std::to_string(c.d_ffn) + ", " +
            fmt("%.2f", static_cast<double>(e.params) / 1e6) + " M params";
  e.model->eval();
  if (!device.is_cpu()) e.model->to(runtime::torch_device(device));
  // One short forward first, so that one-time costs (thread pools, kernel set-up) count in no
  // length's time or memory.
  c10::InferenceMode inference;
  (void)e.model->encode(torch::randn({1, 101, e.n_mels}).to(e.model->device()));
  runtime::synchronize_device(device);
  return e;
}

// (H, T, T) float tensors alive at once at the attention's peak, counted from nn/attention.cpp:
// RelPosMHAXL holds the content scores, the (H, T, 2T-1) position scores, their padded copy and
// the shifted copy while shifting (1 + 2 + 2 + 2); torch's attention its scores, their softmax
// and the averaged weights.
double attention_bytes(const Encoder& e, double frames) {
  if (e.module == "conmamba") return 0.0;
  const double live = e.attention == "RelPosMHAXL" ? 7.0 : 3.0;
  return live * static_cast<double>(e.nhead) * frames * frames * sizeof(float);
}

// The attention's quadratic term plus the rest scaled linearly from the previous length.
double estimate_peak(const Encoder& e, const History& h, double frames) {
  double linear = 0.0;
  if (h.length_s > 0 && h.frames > 0) {
    linear = std::max(0.0, h.growth_bytes - attention_bytes(e, h.frames)) * frames / h.frames;
  }
  return attention_bytes(e, frames) + linear;
}

// From the last two lengths' medians (power law, exponent clamped to [1, 2]); from one, linear
// for ConMamba and quadratic for attention; 0 (unknown) before any.
double estimate_seconds(const Encoder& e, const History& h, double length_s) {
  if (h.times.empty()) return 0.0;
  const auto [l2, t2] = h.times.back();
  double exponent = e.module == "conmamba" ? 1.0 : 2.0;
  if (h.times.size() >= 2) {
    const auto [l1, t1] = h.times[h.times.size() - 2];
    if (t1 > 0 && t2 > 0 && l2 > l1) exponent = std::log(t2 / t1) / std::log(l2 / l1);
    exponent = std::clamp(exponent, 1.0, 2.0);
  }
  return t2 * std::pow(length_s / l2, exponent);
}

// Returns freed heap pages to the system, so that a new peak counts pages it touches afresh.
void trim_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

bool out_of_memory(const std::string& what) {
  return runtime::is_out_of_memory(what) || what.find("can't allocate memory") != std::string::npos;
}

std::string length_text(double seconds) { return fmt("%g", seconds); }

runtime::BenchResult base_result(const Encoder& e, double length_s,
                                 const runtime::BenchSettings& settings) {
  runtime::BenchResult r;
  r.name = "encoder/" + e.name + "/" + length_text(length_s) + "s";
  r.work = length_s;
  r.work_unit = "audio-s";
  r.note = e.label + "; " + settings.device.str() + ", batch 1, " +
           std::to_string(at::get_num_threads()) + " threads, inference mode";
  r.metrics = {{"length_s", length_s}, {"params", static_cast<double>(e.params)}};
  return r;
}

runtime::BenchResult skipped(const Encoder& e, double length_s,
                             const runtime::BenchSettings& settings, const std::string& reason,
                             LengthPoint& point) {
  runtime::BenchResult r = base_result(e, length_s, settings);
  r.note = "skipped: " + reason + "; " + r.note;
  r.metrics.emplace_back("skipped", 1.0);
  point.reason = reason;
  std::cerr << "bench encoder: " << e.name << " " << length_text(length_s)
            << " s: skipped: " << reason << "\n";
  return r;
}

// Warm-ups and repetitions that fit in what the time limit leaves after the probe (at least one
// repetition).
std::pair<int, int> runs_within(double probe_s, double limit_s,
                                const runtime::BenchSettings& settings) {
  const double fit = probe_s > 0 ? std::floor((limit_s - probe_s) / probe_s) : 1e9;
  const int budget = static_cast<int>(std::clamp(fit, 1.0, 1e6));
  const int repeat = std::min(settings.repeat, budget);
  const int warmup = std::clamp(std::min(settings.warmup - 1, budget - repeat), 0, 1000000);
  return {warmup, repeat};
}

// Why `length_s` should not run, judged from the estimates (empty: run it).
std::string reason_to_skip(const Encoder& e, const History& h, double length_s, double frames,
                           const runtime::BenchSettings& settings, double& estimated_bytes) {
  estimated_bytes = estimate_peak(e, h, frames);
  const double available =
      settings.device.is_cpu() ? static_cast<double>(runtime::memory_available_bytes()) : 0.0;
  if (available > 0 && estimated_bytes > kMemoryHeadroom * available) {
    return "estimated peak " + fmt("%.1f GiB", estimated_bytes / kGiB) + " > " +
           fmt("%.0f", kMemoryHeadroom * 100) + " % of " + fmt("%.1f GiB", available / kGiB) +
           " available";
  }
  const double estimated_s = estimate_seconds(e, h, length_s);
  if (estimated_s > settings.time_limit) {
    return "estimated " + fmt("%.0f s", estimated_s) + " per forward > --time-limit " +
           fmt("%g s", settings.time_limit);
  }
  return "";
}

runtime::BenchResult measure_length(Encoder& e, double length_s,
                                    const runtime::BenchSettings& settings, History& h,
                                    LengthPoint& point) {
  const auto feature_frames =
      static_cast<int64_t>(1 + std::floor(length_s * kFeatureFramesPerSecond + 1e-9));
  double estimated_bytes = 0.0;
  const std::string reason =
      reason_to_skip(e, h, length_s, static_cast<double>(feature_frames) * h.frames_per_feature,
                     settings, estimated_bytes);
  if (!reason.empty()) return skipped(e, length_s, settings, reason, point);
  c10::InferenceMode inference;
  torch::manual_seed(0);
  const at::Tensor feats = torch::randn({1, feature_frames, e.n_mels}).to(e.model->device());
  int64_t out_frames = 0;
  const auto forward = [&] {
    out_frames = e.model->encode(feats).out.size(1);
    runtime::synchronize_device(settings.device);
  };
  trim_heap();
  runtime::reset_peak_memory(settings.device);
  const double before = static_cast<double>(runtime::peak_memory(settings.device));
  const auto start = std::chrono::steady_clock::now();
  forward();  // the probe: the first warm-up, timed to keep to the limit
  const double probe_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (probe_s > settings.time_limit) {
    return skipped(e, length_s, settings,
                   "one forward took " + fmt("%.0f s", probe_s) + " > --time-limit " +
                       fmt("%g s", settings.time_limit),
                   point);
  }
  const auto [warmup, repeat] = runs_within(probe_s, settings.time_limit, settings);
  runtime::BenchSettings runs = settings;
  runs.warmup = warmup, runs.repeat = repeat;
  runtime::BenchResult measured = runtime::measure("", runs, forward);
  const double growth =
      std::max(0.0, static_cast<double>(runtime::peak_memory(settings.device)) - before);
  runtime::BenchResult r = base_result(e, length_s, settings);
  r.seconds = measured.seconds;
  if (repeat < settings.repeat) {
    r.note += ", repeat " + std::to_string(repeat) + " of " + std::to_string(settings.repeat) +
              " (--time-limit)";
  }
  r.metrics.emplace_back("encoder_frames", static_cast<double>(out_frames));
  r.metrics.emplace_back("peak_bytes", growth);
  if (estimated_bytes > 0) r.metrics.emplace_back("estimated_peak_bytes", estimated_bytes);
  r.metrics.emplace_back("rtf", r.median() / length_s);
  point.measured = true;
  point.median_s = r.median(), point.p10_s = r.percentile(10), point.p90_s = r.percentile(90);
  point.peak_bytes = growth;
  h.times.emplace_back(length_s, r.median());
  h.length_s = length_s, h.growth_bytes = growth, h.frames = static_cast<double>(out_frames);
  h.frames_per_feature = static_cast<double>(out_frames) / static_cast<double>(feature_frames);
  std::cerr << "bench encoder: " << e.name << " " << length_text(length_s) << " s: median "
            << fmt("%.3f s", r.median()) << ", peak +" << fmt("%.1f MiB", growth / (1 << 20))
            << "\n";
  return r;
}

std::vector<double> sorted_lengths(const std::vector<double>& lengths) {
  std::vector<double> out = lengths;
  for (double l : out) {
    if (!(l > 0) || !std::isfinite(l)) {
      throw Error(ErrorKind::kUsage, "bench encoder: --lengths must be positive seconds");
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<runtime::BenchResult> run_encoder_lengths(const runtime::BenchSettings& settings) {
  const EncoderSweep sweep = run_encoder_sweep(parse_encoder_specs(settings.hparams), settings);
  if (!settings.svg.empty()) {
    std::ostringstream subtitle;
    subtitle << "batch 1, " << settings.device.str() << ", " << at::get_num_threads()
             << " threads; median of up to " << settings.repeat
             << " forwards (p10-p90 whiskers); memory: " << sweep.memory_kind;
    std::ofstream out(settings.svg);
    out << encoder_length_svg(sweep.curves, "Encoder forward time and memory against audio length",
                              subtitle.str(), sweep.memory_kind);
    if (!out.flush()) throw_io_error("bench encoder: cannot write --svg '" + settings.svg + "'");
    std::cerr << "bench encoder: wrote " << settings.svg << "\n";
  }
  return sweep.results;
}

}  // namespace

std::vector<EncoderSpec> default_encoder_specs() {
  // d_ffn 2304: a Transformer layer has one feed-forward block where Conformer and ConMamba layers
  // have two (macaron) plus a convolution module; widened, its encoder has about their parameters.
  return {{"hparams/S2S/conmamba_small.yaml", "", ""},
          {"hparams/S2S/conformer_small.yaml", "", ""},
          {"hparams/S2S/conformer_small.yaml", "transformer", "{Transformer: {d_ffn: 2304}}"}};
}

std::vector<EncoderSpec> parse_encoder_specs(const std::string& text) {
  if (text.empty()) return default_encoder_specs();
  std::vector<EncoderSpec> specs;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    EncoderSpec spec;
    spec.hparams = item;
    const size_t colon = item.rfind(':');
    if (colon != std::string::npos) {
      const std::string module = item.substr(colon + 1);
      if (std::find(std::begin(kModules), std::end(kModules), module) == std::end(kModules)) {
        throw Error(ErrorKind::kUsage, "bench encoder: --hparams item '" + item +
                                           "': after ':' give conmamba, conformer or transformer");
      }
      spec.hparams = item.substr(0, colon), spec.encoder_module = module;
    }
    if (spec.hparams.empty()) {
      throw Error(ErrorKind::kUsage, "bench encoder: --hparams '" + text +
                                         "': give FILE[:ENCODER] items separated by commas");
    }
    specs.push_back(spec);
  }
  if (specs.empty()) return default_encoder_specs();
  return specs;
}

EncoderSweep run_encoder_sweep(const std::vector<EncoderSpec>& encoders,
                               const runtime::BenchSettings& settings) {
  if (settings.repeat < 1) throw_input_error("bench: --repeat must be at least 1");
  const std::vector<double> lengths = sorted_lengths(settings.lengths);
  EncoderSweep sweep;
  const bool cuda = settings.device.is_cuda();
  sweep.memory_kind = cuda ? "peak CUDA allocated growth" : "peak RSS growth";
  std::vector<std::string> names;
  for (const EncoderSpec& spec : encoders) {
    Encoder e = build_encoder(spec, settings.device);  // one model in memory at a time
    if (std::count(names.begin(), names.end(), e.name) > 0) {
      e.name += "@" + std::filesystem::path(spec.hparams).stem().string();
    }
    names.push_back(e.name);
    const size_t at = e.name.find('@');
    LengthCurve curve{pretty_module(e.module) +
                          (at == std::string::npos ? "" : " (" + e.name.substr(at + 1) + ")"),
                      e.label,
                      {}};
    History history;
    for (double length_s : lengths) {
      LengthPoint point;
      point.length_s = length_s;
      try {
        sweep.results.push_back(measure_length(e, length_s, settings, history, point));
      } catch (const std::exception& error) {
        if (!out_of_memory(error.what())) throw;
        const std::string what = error.what();
        sweep.results.push_back(skipped(e, length_s, settings,
                                        "out of memory (" + what.substr(0, what.find('\n')) + ")",
                                        point));
      }
      curve.points.push_back(point);
    }
    sweep.curves.push_back(std::move(curve));
  }
  return sweep;
}

void register_encoder_length_benchmark() {
  static const std::string kSuffix =
      "; with --lengths 1,10,60,300,1800 (seconds): time and peak memory against audio length of "
      "ConMamba, Conformer and Transformer encoders of about equal size (--hparams "
      "FILE[:ENCODER],...), lengths skipped that would pass the memory or --time-limit, --svg FILE "
      "plots them";
  runtime::BenchFn fixed;
  std::string description;
  for (const runtime::Benchmark& b : runtime::benchmarks()) {
    if (b.name != "encoder") continue;
    if (b.description.find(kSuffix) != std::string::npos) return;  // wrapped already
    fixed = b.run, description = b.description;
  }
  runtime::register_benchmark(
      {"encoder", description + kSuffix, [fixed](const runtime::BenchSettings& settings) {
         if (!settings.lengths.empty() || !fixed) {
           if (settings.lengths.empty()) {
             throw Error(ErrorKind::kUsage, "bench encoder: give --lengths");
           }
           return run_encoder_lengths(settings);
         }
         return fixed(settings);
       }});
}

}  // namespace masr::toolkit
