// fuzz/fuzz_audio.cpp
// Fuzzes the audio reader (libsndfile underneath: every container it detects from the bytes),
// probing and decoding to 16 kHz mono.
#include <cstdint>
#include <string>

#include "audio/audio_reader.h"
#include "core/error.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const masr::fuzz::ScratchDir scratch;
  const std::string path = scratch.write("input", data, size);
  try {
    const masr::audio::AudioInfo info = masr::audio::probe_audio(path);
    const masr::audio::Audio audio = masr::audio::read_audio(path, 16000);
    if (info.frames <= 0 || audio.samples.empty()) __builtin_trap();  // probe promised samples
  } catch (const masr::Error&) {
  }
  return 0;
}
