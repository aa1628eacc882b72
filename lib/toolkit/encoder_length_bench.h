// lib/toolkit/encoder_length_bench.h
// `mamba-asr bench encoder --lengths 1,10,60,300,1800`: encoder forward time and peak memory
// against audio length for several encoders (by default ConMamba, Conformer and Transformer of
// about equal size), skipping lengths that would not fit the memory or the time limit.
#pragma once

#include <string>
#include <vector>

#include "runtime/benchmark.h"
#include "toolkit/encoder_length_plot.h"

namespace masr::toolkit {

// One encoder to runtime::measure: an hparams file, optionally with its TransformerASR
// encoder_module replaced (and further YAML overrides, a mapping applied as `--overrides` would).
struct EncoderSpec {
  std::string hparams;         // an S2S or CTC hparams file with CNN and Transformer entries
  std::string encoder_module;  // "" (the file's own), conmamba, conformer or transformer
  std::string overrides_yaml;  // e.g. "{Transformer: {d_ffn: 2048}}"; "" for none
};

// --hparams of this benchmark: FILE[:ENCODER][,FILE[:ENCODER]...], ENCODER one of conmamba,
// conformer, transformer; an empty text gives default_encoder_specs(). Throws a usage error.
std::vector<EncoderSpec> parse_encoder_specs(const std::string& text);

// hparams/S2S/conmamba_small.yaml, hparams/S2S/conformer_small.yaml, and conformer_small.yaml with
// a Transformer encoder (same d_model 144, 12 layers, 4 heads, RelPosMHAXL) whose d_ffn is widened
// so that its encoder has about the parameters of the other two. Paths relative to the repository
// root.
std::vector<EncoderSpec> default_encoder_specs();

struct EncoderSweep {
  std::vector<runtime::BenchResult> results;  // one per encoder and length, skipped ones included
  std::vector<LengthCurve> curves;            // the same, per encoder, for the plot
  std::string memory_kind;                    // what peak_bytes is, e.g. "peak RSS growth"
};

// Runs the sweep of settings.lengths (ascending) for `encoders` on settings.device, batch 1,
// random features, inference mode. Per encoder and length: one probe forward (untimed), up to
// settings.warmup - 1 more warm-ups, settings.repeat timed repetitions (fewer, down to 1, when
// they would pass settings.time_limit; the note says so). A length is skipped, with a result whose
// metric "skipped" is 1 and whose note says why, when its estimated memory exceeds the memory
// available (MemAvailable on the CPU), when its estimated or probed forward time exceeds
// settings.time_limit, or when LibTorch runs out of memory. Progress goes to stderr.
EncoderSweep run_encoder_sweep(const std::vector<EncoderSpec>& encoders,
                               const runtime::BenchSettings& settings);

// Wraps the registered "encoder" benchmark (lib/models: 10 s utterances) so that
// `bench encoder --lengths ...` runs the sweep (and writes --svg); without --lengths it runs as
// before. Call after models::register_model_classes.
void register_encoder_length_benchmark();

}  // namespace masr::toolkit
