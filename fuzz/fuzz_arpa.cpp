// fuzz/fuzz_arpa.cpp
// Fuzzes the ARPA n-gram reader; a file that loads is then queried with words from its own text.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "decode/arpa_lm.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const masr::fuzz::ScratchDir quiet;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto lm = masr::decode::ArpaLm::from_string(text, "<fuzz>");
    std::istringstream words(text);
    std::vector<std::string> context = {"<s>"};
    std::string word;
    for (int i = 0; i < 64 && words >> word; ++i) {
      (void)lm.log_prob(context, word);
      context.push_back(word);
    }
  } catch (const masr::Error&) {
  }
  return 0;
}
