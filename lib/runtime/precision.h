// lib/runtime/precision.h
// The numeric precision of a run: fp32, bf16 or fp16 autocast on CUDA, int8 (quantized CPU
// decoding). Parsed once where hparams or the command line are read; LibTorch-free.
#pragma once

#include <string>
#include <vector>

namespace masr::runtime {

enum class Precision { kFp32, kBf16, kFp16, kInt8 };

// "fp32", "bf16", "fp16", "int8": the spelling of hparams, the CLI and reports.
const char* precision_name(Precision precision);

// Parses `text` as one of `allowed`; anything else is a config error that names the option and
// the allowed values: "<option> 'x' must be fp32, bf16 or fp16".
Precision parse_precision(const std::string& text, const std::string& option,
                          const std::vector<Precision>& allowed);

// bf16 or fp16: the forward pass runs under autocast on CUDA.
inline bool is_mixed(Precision precision) {
  return precision == Precision::kBf16 || precision == Precision::kFp16;
}

}  // namespace masr::runtime
