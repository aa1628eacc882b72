// fuzz/fuzz_manifest.cpp
// Fuzzes the manifest readers. The first byte picks the reader: 0 a SpeechBrain CSV, 1 a list of
// audio paths, 2 a Kaldi folder whose wav.scp, text, utt2spk and utt2dur are the rest of the
// input split at NUL bytes. A CSV that reads is written back and must read again.
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "data/manifest.h"
#include "fuzz_input.h"

namespace {

masr::data::Manifest read_kaldi(const masr::fuzz::ScratchDir& scratch, const std::string& rest) {
  const std::string dir = scratch.path() + "/kaldi";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const char* names[] = {"kaldi/wav.scp", "kaldi/text", "kaldi/utt2spk", "kaldi/utt2dur"};
  size_t at = 0;
  for (const char* name : names) {
    if (at > rest.size()) break;
    const size_t end = std::min(rest.find('\0', at), rest.size());
    scratch.write(name, reinterpret_cast<const uint8_t*>(rest.data() + at), end - at);
    at = end + 1;
  }
  return masr::data::read_kaldi_dir(dir);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const masr::fuzz::ScratchDir scratch;
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const masr::data::Replacements replacements = {{"data_root", "/data"}};
  try {
    switch (data[0] % 3) {
      case 0: {
        const std::string path = scratch.write("in.csv", data + 1, size - 1);
        const auto manifest = masr::data::read_speechbrain_csv(path, replacements);
        const std::string copy = scratch.path() + "/copy.csv";
        masr::data::write_speechbrain_csv(copy, manifest);
        if (masr::data::read_speechbrain_csv(copy).size() != manifest.size()) __builtin_trap();
        break;
      }
      case 1:
        (void)masr::data::read_audio_list(scratch.write("in.lst", data + 1, size - 1));
        break;
      default:
        (void)read_kaldi(scratch, rest);
    }
  } catch (const masr::Error&) {
  }
  return 0;
}
