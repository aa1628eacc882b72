// fuzz/fuzz_hparams.cpp
// Fuzzes the hparams engine: YAML text (and, after a NUL byte, an overrides mapping) is loaded,
// resolved and written back; anything but a masr::Error is a finding.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_input.h"
#include "hparams/hparams.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const masr::fuzz::ScratchDir quiet;  // sets the log level
  const std::string input(reinterpret_cast<const char*>(data), size);
  masr::hparams::LoadOptions options;
  const size_t nul = input.find('\0');
  if (nul != std::string::npos) options.overrides_yaml = input.substr(nul + 1);
  try {
    const masr::hparams::Hparams hp = masr::hparams::load_text(input.substr(0, nul), options);
    (void)hp.to_yaml();
  } catch (const masr::Error&) {
  }
  return 0;
}
