// tests/train/test_training_curves.cpp
// training_curves.svg: well-formed (balanced tags), the step-level loss under the epoch curves
// when log.jsonl has step records, axis labels with units, and a title that fits.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <vector>

#include "../text/text_corpus.h"
#include "train/train_logger.h"
#include "train/training_curves.h"

using namespace masr::train;

namespace {

// Checks that every element is closed in order (an XML-ish parse: no DTD, no CDATA needed);
// returns the element names seen.
std::vector<std::string> check_balanced(const std::string& svg) {
  std::vector<std::string> stack, seen;
  size_t pos = 0;
  while ((pos = svg.find('<', pos)) != std::string::npos) {
    const size_t end = svg.find('>', pos);
    REQUIRE(end != std::string::npos);
    const std::string tag = svg.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    REQUIRE_FALSE(tag.empty());
    if (tag[0] == '/') {
      REQUIRE_FALSE(stack.empty());
      CHECK(stack.back() == tag.substr(1));
      stack.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    seen.push_back(name);
    if (tag.back() != '/') stack.push_back(name);
    // Attribute values are quoted and hold no raw '<' or '&' (escaped).
    CHECK(std::count(tag.begin(), tag.end(), '"') % 2 == 0);
  }
  CHECK(stack.empty());
  return seen;
}

// The text between <title> and </title>.
std::string title_of(const std::string& svg) {
  const size_t a = svg.find("<title>"), b = svg.find("</title>");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  return svg.substr(a + 7, b - a - 7);
}

std::vector<EpochRecord> two_epochs() {
  return {{1, 40, 1e-3, 2.0, {{"valid_loss", 1.5}, {"WER", 80.0}, {"CER", 40.0}}},
          {2, 80, 5e-4, 1.0, {{"valid_loss", 0.9}, {"WER", 50.0}, {"CER", 20.0}}}};
}

}  // namespace

TEST_CASE("training curves: step losses under the epoch curves, labelled axes", "[train][curves]") {
  std::vector<StepLoss> steps;
  for (int s = 10; s <= 80; s += 10) steps.push_back({s <= 40 ? 1 : 2, s, 3.0 - s / 40.0});
  const std::string svg = training_curves_svg(two_epochs(), steps, "conformer.yaml · run/1");
  CHECK(svg.rfind("<svg", 0) == 0);
  const auto elements = check_balanced(svg);
  CHECK(std::count(elements.begin(), elements.end(), "svg") == 1);
  // The step line: 8 points, drawn before (under) the epoch curves.
  const size_t steps_at = svg.find("<polyline class=\"steps\"");
  REQUIRE(steps_at != std::string::npos);
  const size_t points = svg.find("points=\"", steps_at) + 8;
  const std::string list = svg.substr(points, svg.find('"', points) - points);
  CHECK(std::count(list.begin(), list.end(), ',') == 8);
  CHECK(steps_at < svg.find("<polyline fill=\"none\" stroke-width=\"2\""));
  CHECK(svg.find("train (steps)") != std::string::npos);
  // Axis titles with units, gridlines, tick labels.
  for (const char* label : {"loss (nats)", "error rate (%)", "learning rate",
                            "optimizer step (points: end of each epoch)"}) {
    CHECK(svg.find(label) != std::string::npos);
  }
  CHECK(svg.find("<g stroke=\"#e4e4e4\">") != std::string::npos);
  CHECK(std::regex_search(svg, std::regex(R"(text-anchor="end">5\.0e-04</text>)")));
  CHECK(title_of(svg) == "conformer.yaml · run/1");
  // Without step records there is no step line; an empty history draws placeholders.
  CHECK(training_curves_svg(two_epochs(), {}, "t").find("class=\"steps\"") == std::string::npos);
  const std::string empty = training_curves_svg({}, {}, "t");
  check_balanced(empty);
  CHECK(empty.find("no data yet") != std::string::npos);
}

TEST_CASE("training curves: the trainers' title is shortened, steps read from log.jsonl",
          "[train][curves]") {
  masr::testing::TempDir dir("curves");
  const std::string run = dir.str() + "/results/conmamba_ctc/1986";
  std::filesystem::create_directories(run);
  {
    TrainLogger log(run, run + "/train_log.txt", 0);
    log.log_step(1, 20, 4.0, 1e-3, 10.0);
    log.log_step(1, 40, 3.0, 1e-3, 10.0);
    log.log_epoch(two_epochs()[0]);
    log.log_step(2, 60, 2.5, 1e-3, 10.0);
    log.log_step(2, 80, 2.0, 1e-3, 10.0);
    log.log_epoch(two_epochs()[1]);
    log.log_step(3, 100, 1.5, 1e-3, 10.0);  // an epoch not drawn yet
  }
  const auto steps = read_step_losses(run + "/log.jsonl");
  REQUIRE(steps.size() == 5);
  CHECK(steps[4].step == 100);
  CHECK(steps[4].loss == 1.5);
  // As the trainers draw it: the hparams file and the run folder.
  const std::string hparams = "/home/someone/projects/Mamba-ASR/hparams/CTC/conmamba_large.yaml";
  const std::string svg = run_curves_svg(two_epochs(), hparams, run);
  check_balanced(svg);
  CHECK(title_of(svg) == "conmamba_large.yaml · …/conmamba_ctc/1986");
  CHECK(svg.find(dir.str()) == std::string::npos);  // no absolute path anywhere
  const size_t at = svg.find("<polyline class=\"steps\"");
  REQUIRE(at != std::string::npos);
  const size_t points = svg.find("points=\"", at) + 8;
  const std::string list = svg.substr(points, svg.find('"', points) - points);
  CHECK(std::count(list.begin(), list.end(), ',') == 4);  // step 100 left out
}

TEST_CASE("curve titles fit", "[train][curves]") {
  CHECK(curves_title("hparams/a.yaml", "results/a") == "a.yaml · results/a");
  CHECK(curves_title("/x/y/z.yaml", "/abs/path/to/results/run/7/") == "z.yaml · …/run/7");
  const std::string shortened =
      curves_title(std::string(100, 'h') + ".yaml", "/r/" + std::string(100, 'f'), 40);
  // 40 code points: 19 + "…" + 20.
  size_t code_points = 0;
  for (const char c : shortened) code_points += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  CHECK(code_points == 40);
  CHECK(shortened.find("\xe2\x80\xa6") != std::string::npos);
  CHECK(shortened.substr(shortened.size() - 5) == "fffff");
  // A long file and folder give a title of at most 80 code points.
  const std::string svg = run_curves_svg({}, std::string(200, 'x') + ".yaml", "/r/un");
  check_balanced(svg);
  CHECK(title_of(svg).size() < 100);
}
