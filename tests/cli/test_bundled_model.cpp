// tests/cli/test_bundled_model.cpp
// The bundled model (models/conmamba-ctc-synth-en) decodes utterances of voices it never heard in
// training, from a fresh checkout, with nothing but the binary.
#include <string>

#include "run_cli.h"

using masr::testing::run_cli;

namespace {
const std::string kModel = std::string(MASR_SOURCE_DIR) + "/models/conmamba-ctc-synth-en";
}

TEST_CASE("bundled model: decodes held-out synthetic utterances", "[cli][bundled]") {
  const std::string examples = kModel + "/examples";
  SECTION("two test-voice utterances come out exactly") {
    const auto r = run_cli("-q decode --model " + kModel + "/model.masr --search greedy " +
                           examples + "/en_us_nyc_m4-000499.wav " + examples +
                           "/en_gb_x_gbcwmd_m5-002757.wav");
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(r.output.find("en_us_nyc_m4-000499 IT IS A PERIOD OF SYSTEM WAR\n") != std::string::npos);
    CHECK(r.output.find("en_gb_x_gbcwmd_m5-002757 TELL ME A JOKE\n") != std::string::npos);
  }
  SECTION("a longer one with the default search stays within its measured error rate") {
    // Measured: 7 character errors of 131 over the three examples (5.3 % CER); the model's
    // test-voice CER is 12.2 % (models/conmamba-ctc-synth-en/README.md).
    const auto r = run_cli("decode --model " + kModel + " --ref " + examples + "/text " + examples);
    INFO(r.output);
    REQUIRE(r.code == 0);
    const size_t at = r.output.find("%CER ");
    REQUIRE(at != std::string::npos);
    CHECK(std::stod(r.output.substr(at + 5)) <= 8.0);
  }
}
