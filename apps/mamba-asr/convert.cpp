// apps/mamba-asr/convert.cpp
// `mamba-asr convert`: a model file rewritten with its weights stored in another precision.
#include <iostream>

#include "commands.h"
#include "core/error.h"
#include "core/log.h"
#include "models/checkpoint.h"

namespace masr::cli {
namespace {

struct ConvertOptions {
  std::string in, out;
  runtime::Precision weights = runtime::Precision::kFp16;
};

int run_convert(ConvertOptions o) {
  if (o.in.empty() || o.out.empty()) {
    throw Error(ErrorKind::kUsage, std::string("convert: give the model to read (-m/--model) and "
                                               "the file to write (-o/--output)"));
  }
  o.in = models::model_file_in(o.in);
  const at::ScalarType dtype = o.weights == runtime::Precision::kFp16 ? at::kHalf : at::kFloat;
  const models::WeightConversion r = models::convert_weights(o.in, o.out, dtype);
  MASR_LOG_INFO("convert: %lld tensors stored as %s, %lld kept (integers, normalization "
                "statistics); %.1f MB -> %.1f MB",
                static_cast<long long>(r.converted), runtime::precision_name(o.weights),
                static_cast<long long>(r.kept), static_cast<double>(r.bytes_in) / 1e6,
                static_cast<double>(r.bytes_out) / 1e6);
  std::cout << o.out << "\n";
  return 0;
}

}  // namespace

Runner add_convert_command(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Rewrite a model file (ASR or LM) with its weights stored in another precision.\n\n"
      "--weights fp16 halves the file: the weights are rounded to float16 (11 significant bits)\n"
      "and loaded back into float32, so decoding computes exactly as before in whatever\n"
      "--precision it is given, with weights that differ by at most 1 part in 2048; the\n"
      "normalization statistics stay float32. Check a converted model's error rate on your own\n"
      "test set before shipping it.\n"
      "--weights fp32 stores float32 again (it does not bring back the rounded-off bits).\n\n"
      "Examples:\n"
      "  mamba-asr convert -m results/ctc -o small.masr --weights fp16\n"
      "  mamba-asr decode -m small.masr audio.wav");
  cmd->add_option("-m,--model", o->in, "The model to read (a model file or its folder)");
  cmd->add_option("-o,--output", o->out,
                  "The model file to write (atomically; may be the model read)");
  // The older spelling `convert IN OUT` keeps working.
  cmd->add_option("input", o->in)->group("");
  cmd->add_option("output", o->out)->group("");
  add_precision_option(cmd, o->weights, {runtime::Precision::kFp16, runtime::Precision::kFp32},
                       "How the weights are stored: fp16 or fp32", "--weights");
  add_global_options(*cmd, global);
  return [o] { return run_convert(*o); };
}

}  // namespace masr::cli
