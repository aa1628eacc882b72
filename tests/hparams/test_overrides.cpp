// tests/hparams/test_overrides.cpp
// Command-line overrides (before references resolve), !PLACEHOLDER, !include:, and the fixture
// that uses every construct of the reference's §1.4.
#include <filesystem>
#include <fstream>

#include "helpers.h"
#include "core/remove_tree.h"

using masr::hparams::LoadOptions;
using masr::hparams::parse_override_args;
using masr::hparams::Value;
using masr::hparams::testing::load;
using masr::hparams::testing::load_error;
using masr::hparams::testing::same;

namespace {

const std::string kFixtures = std::string(MASR_TEST_FIXTURES) + "/hparams";

LoadOptions with(std::vector<std::pair<std::string, std::string>> overrides,
                 std::string yaml = "") {
  LoadOptions options;
  options.overrides = std::move(overrides);
  options.overrides_yaml = std::move(yaml);
  return options;
}

}  // namespace

TEST_CASE("overrides apply before references resolve and are typed as YAML", "[hparams]") {
  const std::string text = R"(
seed: 3407
output_folder: !ref results/<seed>
number_of_epochs: 120
precision: bf16
mamba_config: {d_state: 16, expand: 2}
)";
  const auto hp =
      load(text, with({{"seed", "1986"}, {"number_of_epochs", "3"}, {"precision", "fp32"}}));
  CHECK(hp["seed"].as_int() == 1986);
  CHECK(hp["output_folder"].as_string() == "results/1986");
  CHECK(hp["number_of_epochs"].as_int() == 3);
  CHECK(hp["precision"].as_string() == "fp32");

  // A nested mapping override merges key by key (SpeechBrain's recursive_update).
  const auto merged = load(text, with({{"mamba_config", "{d_state: 8}"}}));
  CHECK(merged["mamba_config"]["d_state"].as_int() == 8);
  CHECK(merged["mamba_config"]["expand"].as_int() == 2);

  // --overrides "yaml" comes after the --key value pairs.
  const auto yaml = load(text, with({{"seed", "1"}}, "{seed: 2, mamba_config: {expand: 4}}"));
  CHECK(yaml["seed"].as_int() == 2);
  CHECK(yaml["output_folder"].as_string() == "results/2");
  CHECK(yaml["mamba_config"]["expand"].as_int() == 4);

  // An override may itself be a reference or an object.
  const auto tagged = load(text, with({{"precision", "!ref p<seed>"}}));
  CHECK(tagged["precision"].as_string() == "p3407");
}

TEST_CASE("an override of a key the file lacks is an error with a suggestion", "[hparams]") {
  const auto message = load_error("number_of_epochs: 1\n", with({{"number_of_epoch", "2"}}));
  CHECK_THAT(message, Catch::Contains("'number_of_epoch' matches no top-level key"));
  CHECK_THAT(message, Catch::Contains("Did you mean 'number_of_epochs'?"));
}

TEST_CASE("command-line override arguments parse like SpeechBrain's", "[hparams]") {
  const auto parsed = parse_override_args({"--seed", "7", "--data_folder=/d", "--lr=1e-3"});
  REQUIRE(parsed.size() == 3);
  CHECK(parsed[0] == std::make_pair(std::string("seed"), std::string("7")));
  CHECK(parsed[1] == std::make_pair(std::string("data_folder"), std::string("/d")));
  CHECK(parsed[2].second == "1e-3");
  CHECK_THROWS_WITH(parse_override_args({"--seed"}), Catch::Contains("needs a value"));
  CHECK_THROWS_WITH(parse_override_args({"stray"}), Catch::Contains("unexpected argument 'stray'"));
}

TEST_CASE("a !PLACEHOLDER must be overridden", "[hparams]") {
  const std::string text = "data_folder: !PLACEHOLDER\ntrain_csv: !ref <data_folder>/train.csv\n";
  const auto message = load_error(text);
  CHECK_THAT(message, Catch::Contains("'data_folder' is a !PLACEHOLDER"));
  CHECK_THAT(message, Catch::Contains("--data_folder VALUE"));
  CHECK_THAT(message, Catch::Contains("test.yaml:1"));
  const auto hp = load(text, with({{"data_folder", "/data/LibriSpeech"}}));
  CHECK(hp["train_csv"].as_string() == "/data/LibriSpeech/train.csv");
  // Nested placeholders name their full key.
  CHECK_THAT(load_error("opts:\n    path: !PLACEHOLDER\n"), Catch::Contains("'opts[path]'"));
}

TEST_CASE("placeholder_value fills every !PLACEHOLDER an override leaves", "[hparams]") {
  const std::string text =
      "data_folder: !PLACEHOLDER\noutput_folder: !PLACEHOLDER\n"
      "train_csv: !ref <data_folder>/train.csv\nopts:\n    path: !PLACEHOLDER\n";
  LoadOptions options;
  options.placeholder_value = "unused";
  auto hp = load(text, options);
  CHECK(hp["data_folder"].as_string() == "unused");
  CHECK(hp["train_csv"].as_string() == "unused/train.csv");
  CHECK(hp["opts"]["path"].as_string() == "unused");
  // An override still wins over the placeholder value.
  options.overrides = {{"output_folder", "results/1"}};
  hp = load(text, options);
  CHECK(hp["output_folder"].as_string() == "results/1");
  CHECK(hp["data_folder"].as_string() == "unused");
  // Placeholders in included files are filled too.
  const auto dir = std::filesystem::temp_directory_path() / "masr_placeholder_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "data.yaml") << "root: !PLACEHOLDER\n";
  std::ofstream(dir / "main.yaml") << "data: !include:data.yaml\n";
  LoadOptions filled;
  filled.placeholder_value = "";
  CHECK(masr::hparams::load_file((dir / "main.yaml").string(), filled)["data"]["root"]
            .as_string()
            .empty());
  CHECK_THROWS_WITH(masr::hparams::load_file((dir / "main.yaml").string()),
                    Catch::Contains("'root' is a !PLACEHOLDER"));
  masr::remove_tree(dir);
}

TEST_CASE("!include: loads another file with the body as its overrides", "[hparams]") {
  const auto dir = std::filesystem::temp_directory_path() / "masr_include_test";
  std::filesystem::create_directories(dir / "sub");
  std::ofstream(dir / "sub" / "encoder.yaml")
      << "d_model: 256\nlayers: 2\nd_ffn: !ref <d_model> * 4\n";
  std::ofstream(dir / "main.yaml")
      << "d_model: 144\nencoder: !include:sub/encoder.yaml\n    d_model: !ref <d_model>\n"
         "plain: !include:sub/encoder.yaml\n";
  const auto hp = masr::hparams::load_file((dir / "main.yaml").string());
  CHECK(hp["encoder"]["d_model"].as_int() == 144);
  CHECK(hp["encoder"]["d_ffn"].as_int() == 576);
  CHECK(hp["encoder"]["layers"].as_int() == 2);
  CHECK(hp["plain"]["d_ffn"].as_int() == 1024);

  std::ofstream(dir / "loop_a.yaml") << "x: !include:loop_b.yaml\n";
  std::ofstream(dir / "loop_b.yaml") << "y: !include:loop_a.yaml\n";
  CHECK_THROWS_WITH(masr::hparams::load_file((dir / "loop_a.yaml").string()),
                    Catch::Contains("include cycle"));
  std::ofstream(dir / "missing.yaml") << "x: !include:nowhere.yaml\n";
  CHECK_THROWS_WITH(masr::hparams::load_file((dir / "missing.yaml").string()),
                    Catch::Contains("does not exist"));
  masr::remove_tree(dir);
}

TEST_CASE("the fixture with every §1.4 construct resolves to the expected values", "[hparams]") {
  const auto hp = masr::hparams::load_file(kFixtures + "/every_construct.yaml");
  CHECK(masr::hparams::requested_manual_seed() == 3407);
  CHECK_FALSE(hp.root().contains("__set_seed"));
  CHECK(hp["output_folder"].as_string() == "results/demo/3407");
  CHECK(hp["save_folder"].as_string() == "results/demo/3407/save");
  CHECK(hp["n_warmup_steps"].as_int() == 3750);
  CHECK(hp["ratio"].as_double() == 0.5);
  CHECK(hp["neg_square"].as_int() == -64);
  CHECK(hp["remainder"].as_int() == 1);
  CHECK(hp["lr_adam"].as_double() == 0.001);
  CHECK(hp["eps"].as_double() == 1e-9);
  CHECK(hp["betas"].type() == Value::Type::kTuple);
  CHECK(hp["test_csv"].items()[1].as_string() == "results/demo/3407/test-other.csv");
  CHECK(hp["d_state_again"].as_int() == 16);
  CHECK(hp["d_inner"].as_int() == 288);
  CHECK(hp["first_split"].as_string() == "train-clean-100");
  CHECK(hp["activation"].partial()->info->name == "torch.nn.GELU");
  const auto& cnn = hp["CNN"].instance();
  CHECK(cnn->args.get("input_shape").items()[2].as_int() == 80);
  CHECK_FALSE(cnn->args.get("residuals").items()[0].as_bool());
  const auto& modules = hp["model"].instance()->args.get("modules").items();
  CHECK(modules[0].instance() == cnn);
  CHECK(modules[1].instance() == hp["ctc_lin"].instance());
  CHECK(hp["ctc_lin_copy"].instance() != hp["ctc_lin"].instance());
  CHECK(hp["Adam"].partial()->bound.get("lr").as_double() == 0.001);
  CHECK(hp["log_softmax"].instance()->args.get("dim").as_int() == -1);
  CHECK(hp["noam_annealing"].instance()->args.get("n_warmup_steps").as_int() == 3750);
  CHECK(hp["encoder"]["d_model"].as_int() == 144);
  CHECK(hp["encoder"]["d_ffn"].as_int() == 576);
}

TEST_CASE("to_yaml writes YAML that reads back to the same values", "[hparams]") {
  const auto hp = masr::hparams::load_file(kFixtures + "/every_construct.yaml");
  const std::string yaml = hp.to_yaml();
  INFO(yaml);
  const auto again = load(yaml);
  CHECK(same(hp.root(), again.root()));
  // Shared objects stay shared: written once, then as a reference.
  CHECK_THAT(yaml, Catch::Contains("!ref <CNN>"));
  const auto& modules = again["model"].instance()->args.get("modules").items();
  CHECK(modules[0].instance() == again["CNN"].instance());

  const auto tricky = load(R"yaml(
a: "True"
b: "123"
c: ""
d: "x: y"
e: "#hash"
f: "line\nbreak"
g: "(1, 2)"
h: 1.0
i: -0.5
j: [1, "2", null]
k: {}
l: []
)yaml");
  CHECK(same(tricky.root(), load(tricky.to_yaml()).root()));
}
