// tests/toolkit/test_encoder_bench.cpp
// `bench encoder --lengths`: every encoder reports every length (or why it was skipped), and the
// SVG plot is a well-formed document naming each encoder. Tiny models, short lengths.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/benchmark.h"
#include "toolkit/encoder_length_bench.h"
#include "toolkit/registration.h"

using namespace masr::runtime;
using namespace masr::toolkit;

namespace {

const std::string kTinyS2s = std::string(MASR_SOURCE_DIR) + "/hparams/S2S/conmamba_tiny.yaml";

const Benchmark& encoder_benchmark() {
  register_all();
  for (const Benchmark& b : benchmarks()) {
    if (b.name == "encoder") return b;
  }
  FAIL("no benchmark named encoder");
  throw std::logic_error("unreachable");
}

double metric(const BenchResult& r, const std::string& name) {
  for (const auto& [key, value] : r.metrics) {
    if (key == name) return value;
  }
  FAIL("result " << r.name << " has no metric " << name);
  return 0.0;
}

bool has_metric(const BenchResult& r, const std::string& name) {
  for (const auto& m : r.metrics) {
    if (m.first == name) return true;
  }
  return false;
}

std::string temp_svg(const std::string& tag) {
  return (std::filesystem::temp_directory_path() /
          ("masr-encoder-bench-" + std::to_string(getpid()) + "-" + tag + ".svg"))
      .string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Checks that every element is closed in order, that there is one root <svg> element, and that
// text has no stray '<' or unescaped '&'. Returns "" when well formed, else what is wrong.
std::string xml_problem(const std::string& doc) {
  std::vector<std::string> open;
  int roots = 0;
  for (size_t i = 0; i < doc.size(); ++i) {
    if (doc[i] == '&') {
      const size_t semi = doc.find(';', i);
      const std::string entity = doc.substr(i, semi == std::string::npos ? 1 : semi - i + 1);
      if (entity != "&lt;" && entity != "&gt;" && entity != "&amp;" && entity != "&quot;") {
        return "unescaped & at " + std::to_string(i);
      }
      continue;
    }
    if (doc[i] != '<') continue;
    const size_t end = doc.find('>', i);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(i);
    const std::string tag = doc.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside tag at " + std::to_string(i);
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1))
        return "mismatched </" + tag.substr(1) + ">";
      open.pop_back();
    } else if (tag.back() != '/') {
      const std::string name = tag.substr(0, tag.find_first_of(" \n\t"));
      if (open.empty()) ++roots;
      if (open.empty() && name != "svg") return "root element is <" + name + ">";
      open.push_back(name);
    } else if (open.empty()) {
      return "self-closed element outside the root";
    }
    i = end;
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return roots == 1 ? "" : std::to_string(roots) + " root elements";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("bench encoder --lengths measures ConMamba, Conformer and Transformer and plots them",
          "[runtime][bench]") {
  BenchSettings settings;
  settings.hparams = kTinyS2s + "," + kTinyS2s + ":conformer," + kTinyS2s + ":transformer";
  settings.lengths = {1.0, 0.5};  // sorted by the benchmark
  settings.warmup = 0;
  settings.repeat = 2;
  settings.svg = temp_svg("three");
  const std::vector<BenchResult> results = encoder_benchmark().run(settings);

  const std::vector<std::string> names = {"encoder/conmamba/0.5s",    "encoder/conmamba/1s",
                                          "encoder/conformer/0.5s",   "encoder/conformer/1s",
                                          "encoder/transformer/0.5s", "encoder/transformer/1s"};
  REQUIRE(results.size() == names.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const BenchResult& r = results[i];
    INFO(r.name << ": " << r.note);
    CHECK(r.name == names[i]);
    CHECK_FALSE(has_metric(r, "skipped"));
    CHECK(r.seconds.size() == 2);
    CHECK(r.work == Approx(i % 2 == 0 ? 0.5 : 1.0));
    // 51 or 101 feature frames through two stride-2 convolutions.
    CHECK(metric(r, "encoder_frames") == (i % 2 == 0 ? 13 : 26));
    CHECK(metric(r, "params") > 0);
    CHECK(metric(r, "peak_bytes") >= 0);
  }
  // The same hparams file with the encoder replaced: different parameter counts.
  CHECK(metric(results[0], "params") != metric(results[2], "params"));
  CHECK(metric(results[2], "params") != metric(results[4], "params"));

  const auto line = nlohmann::json::parse(format_results({results[3]}, ResultFormat::kJson));
  CHECK(line["name"] == "encoder/conformer/1s");
  CHECK(line.contains("peak_bytes"));
  CHECK(format_results(results, ResultFormat::kCsv).find("encoder/transformer/0.5s") !=
        std::string::npos);

  const std::string svg = read_file(settings.svg);
  std::remove(settings.svg.c_str());
  CHECK(xml_problem(svg).empty());
  INFO(xml_problem(svg));
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  for (const char* label : {"ConMamba: conmamba_tiny,", "Conformer: conmamba_tiny:conformer,",
                            "Transformer: conmamba_tiny:transformer,", "audio length (s",
                            "encoder forward time (s)", "peak RSS growth (MiB)"}) {
    CHECK(svg.find(label) != std::string::npos);
  }
  CHECK(count(svg, "<polyline") == 6);     // two panels, three encoders
  CHECK(count(svg, "<circle") >= 12 + 3);  // a dot per point, and one per legend entry
}

TEST_CASE("bench encoder --lengths skips a length whose attention would not fit in memory",
          "[runtime][bench]") {
  BenchSettings settings;
  settings.hparams = kTinyS2s + ":conformer";
  // 100,000 s: 2.5 M encoder frames, attention scores of 4 heads x (2.5 M)^2 floats, far beyond
  // any machine's memory; estimated, not run.
  settings.lengths = {0.5, 100000.0};
  settings.warmup = 0;
  settings.repeat = 1;
  settings.svg = temp_svg("skip");
  const std::vector<BenchResult> results = encoder_benchmark().run(settings);
  REQUIRE(results.size() == 2);
  CHECK_FALSE(has_metric(results[0], "skipped"));
  CHECK(metric(results[1], "skipped") == 1.0);
  CHECK(results[1].seconds.empty());
  CHECK(results[1].note.find("skipped: estimated peak") != std::string::npos);
  const std::string svg = read_file(settings.svg);
  std::remove(settings.svg.c_str());
  CHECK(xml_problem(svg).empty());
  CHECK(svg.find("1e+05 s: estimated peak") != std::string::npos);
}

TEST_CASE("bench encoder --hparams takes FILE[:ENCODER] lists", "[runtime][bench]") {
  CHECK(parse_encoder_specs("").size() == 3);
  const auto specs = parse_encoder_specs("a.yaml,b.yaml:transformer");
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].hparams == "a.yaml");
  CHECK(specs[0].encoder_module.empty());
  CHECK(specs[1].hparams == "b.yaml");
  CHECK(specs[1].encoder_module == "transformer");
  CHECK_THROWS_WITH(parse_encoder_specs("a.yaml:lstm"), Catch::Contains("conmamba, conformer"));
  CHECK_THROWS_AS(parse_encoder_specs("a.yaml,,b.yaml"), masr::Error);
  // Without --lengths the benchmark is the fixed 10 s one; lengths must be positive.
  BenchSettings settings;
  settings.hparams = kTinyS2s;
  settings.lengths = {-1.0};
  CHECK_THROWS_WITH(encoder_benchmark().run(settings), Catch::Contains("positive"));
}
