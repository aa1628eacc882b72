// tests/hparams/test_errors.cpp
// Every error path of the hparams engine: each message names the file, line and key at fault.
#include "helpers.h"

using masr::hparams::testing::load;
using masr::hparams::testing::load_error;

TEST_CASE("an unknown reference names the key, the location and a close key", "[hparams]") {
  const auto message = load_error("d_model: 144\nlin: {size: !ref <d_modle>}\n");
  CHECK_THAT(message, Catch::Contains("test.yaml:2"));
  CHECK_THAT(message, Catch::Contains("'lin[size]' refers to <d_modle>"));
  CHECK_THAT(message, Catch::Contains("Did you mean 'd_model'?"));
  CHECK_THAT(load_error("a: {b: 1}\nc: !ref <a[x]>\n"), Catch::Contains("'a[x]' does not exist"));
  CHECK_THAT(load_error("a: [1]\nc: !ref <a[3]>\n"), Catch::Contains("'a[3]' does not exist"));
  CHECK_THAT(load_error("a: 1\nc: !ref <a.real>\n"), Catch::Contains("attribute"));
  CHECK_THAT(load_error("a: 1\nc: !ref <a[0>\n"), Catch::Contains("malformed reference"));
}

TEST_CASE("reference cycles are errors, not hangs", "[hparams]") {
  CHECK_THAT(load_error("a: !ref <b>\nb: !ref <a>\n"), Catch::Contains("reference cycle"));
  CHECK_THAT(load_error("a: !ref <a>\n"), Catch::Contains("reference cycle"));
  CHECK_THAT(load_error("a:\n    x: !ref <a>\n"), Catch::Contains("reference cycle"));
  CHECK_THAT(load_error("a: !ref <b>/x\nb: !ref <a>/y\n"), Catch::Contains("reference cycle"));
}

TEST_CASE("an unknown class lists the closest registered names", "[hparams]") {
  const auto message = load_error("f: !new:speechbrain.lobes.features.Fbnk\n    n_mels: 80\n");
  CHECK_THAT(message, Catch::Contains("test.yaml:1"));
  CHECK_THAT(message, Catch::Contains("unknown class 'speechbrain.lobes.features.Fbnk'"));
  CHECK_THAT(message, Catch::Contains("speechbrain.lobes.features.Fbank"));
  CHECK_THAT(load_error("f: !name:torch.optim.Adamm\n"), Catch::Contains("torch.optim.Adam"));
}

TEST_CASE("wrong arguments to a class are errors naming the argument", "[hparams]") {
  const auto message = load_error("f: !new:speechbrain.lobes.features.Fbank\n    n_mel: 80\n");
  CHECK_THAT(message, Catch::Contains("unknown argument 'n_mel'"));
  CHECK_THAT(message, Catch::Contains("Did you mean 'n_mels'?"));
  CHECK_THAT(message, Catch::Contains("It accepts: deltas"));
  CHECK_THAT(load_error("l: !new:torch.nn.LogSoftmax [1, 2]\n"),
             Catch::Contains("at most 1 positional"));
  CHECK_THAT(load_error("l: !new:torch.nn.LogSoftmax\n    _args: [1]\n    _kwargs: {dim: 2}\n"),
             Catch::Contains("'dim' twice"));
  CHECK_THAT(load_error("l: !new:torch.nn.LogSoftmax 3\n"), Catch::Contains("must be a mapping"));
  CHECK_THAT(load_error("l: !new:speechbrain.nnet.losses.ctc_loss\n"),
             Catch::Contains("is a function, not a class"));
  CHECK_THAT(load_error("l: !apply:torch.nn.GELU\n"),
             Catch::Contains("cannot be called with !apply:"));
  CHECK_THAT(load_error("l: !module:torch\n"), Catch::Contains("!module:"));
  CHECK_THAT(load_error("l: !frobnicate 3\n"), Catch::Contains("unknown tag '!frobnicate'"));
}

TEST_CASE("type errors name the key, file and line, and the value", "[hparams]") {
  const auto hp = load("name: conmamba\nlayers: 12\nrate: 0.5\n");
  CHECK_THROWS_WITH(hp["name"].as_int(),
                    Catch::Contains("key 'name' (test.yaml:1) must be an integer, but it is "
                                    "'conmamba' (str)"));
  CHECK_THROWS_WITH(hp["rate"].as_int(), Catch::Contains("0.5 (float)"));
  CHECK_THROWS_WITH(hp["layers"].as_string(), Catch::Contains("key 'layers' (test.yaml:2)"));
  CHECK_THROWS_WITH(hp["layers"].as_bool(), Catch::Contains("must be a boolean"));
  CHECK_THROWS_WITH(hp["missing"], Catch::Contains("has no key 'missing'"));
  CHECK_THROWS_WITH(hp["layers"].items(), Catch::Contains("must be a list or tuple"));
}

TEST_CASE("malformed YAML and files are errors naming the line", "[hparams]") {
  CHECK_THAT(load_error("a: [1, 2\nb: 3\n"), Catch::Contains("invalid YAML"));
  CHECK_THAT(load_error("a: 1\na: 2\n"), Catch::Contains("'a' appears twice"));
  CHECK_THAT(load_error("- 1\n- 2\n"), Catch::Contains("must be a mapping"));
  CHECK_THAT(load_error("a: 99999999999999999999\n"), Catch::Contains("does not fit in 64 bits"));
  CHECK_THAT(load_error("a: (1, [2)\n"), Catch::Contains("cannot read the tuple"));
  CHECK_THROWS_WITH(masr::hparams::load_file("/nonexistent/x.yaml"),
                    Catch::Contains("cannot open '/nonexistent/x.yaml'"));
  CHECK_THROWS_WITH(masr::hparams::load_file("/tmp"), Catch::Contains("is a folder"));
  CHECK_THROWS_WITH(masr::hparams::load_file("/dev/zero"), Catch::Contains("not a regular file"));
  CHECK_THAT(load_error("a: !include:/dev/zero\n"), Catch::Contains("not a regular file"));
  // An empty file is an empty configuration, not a crash.
  CHECK(load("").root().entries().empty());
}

TEST_CASE("bad arithmetic and interpolation are errors", "[hparams]") {
  CHECK_THAT(load_error("a: 0\nb: !ref 1 / <a>\n"), Catch::Contains("division by zero"));
  CHECK_THAT(load_error("a: 0\nb: !ref 1 // <a>\n"), Catch::Contains("division by zero"));
  CHECK_THAT(load_error("a: 0\nb: !ref 1 % <a>\n"), Catch::Contains("modulo by zero"));
  CHECK_THAT(load_error("b: !ref 2 ** 64\n"), Catch::Contains("integer overflow"));
  CHECK_THAT(load_error("b: !ref 0 ** -1\n"), Catch::Contains("negative power"));
  CHECK_THAT(load_error("a: {x: 1}\nb: !ref path/<a>\n"), Catch::Contains("cannot insert <a>"));
  CHECK_THAT(load_error("a: !name:torch.nn.GELU\nb: !ref act_<a>\n"),
             Catch::Contains("it is a !name:torch.nn.GELU"));
  CHECK_THAT(load_error("b: !ref [1, 2]\n"), Catch::Contains("takes a scalar"));
  // Not arithmetic: stays a string, as in Python.
  const auto hp = load("a: 3\nb: !ref <a>abc\nc: !ref 1 +\nd: !ref (<a>, 4)\ne: !ref 007\n");
  CHECK(hp["b"].as_string() == "3abc");
  CHECK(hp["c"].as_string() == "1 +");
  CHECK(hp["d"].as_string() == "(3, 4)");
  CHECK(hp["e"].as_string() == "007");
}

TEST_CASE("pathological nesting and reference chains are errors, not stack overflows",
          "[hparams]") {
  CHECK_THAT(load_error("a: " + std::string(100000, '[') + "\n"),
             Catch::Contains("nested too deeply"));
  std::string chain;
  const int n = 20000;
  for (int i = 0; i < n - 1; ++i) {
    chain += "k" + std::to_string(i) + ": !ref <k" + std::to_string(i + 1) + ">\n";
  }
  chain += "k" + std::to_string(n - 1) + ": 1\n";
  CHECK_THAT(load_error(chain), Catch::Contains("levels deep"));
  std::string lists;
  for (int i = 0; i < n - 1; ++i) {
    lists += "k" + std::to_string(i) + ": [!ref <k" + std::to_string(i + 1) + ">]\n";
  }
  lists += "k" + std::to_string(n - 1) + ": 1\n";
  CHECK_THAT(load_error(lists), Catch::Contains("levels deep"));
  // A long but reasonable chain still resolves.
  std::string fine = "k0: 5\n";
  for (int i = 1; i < 200; ++i) {
    fine += "k" + std::to_string(i) + ": !ref <k" + std::to_string(i - 1) + ">\n";
  }
  CHECK(load(fine)["k199"].as_int() == 5);
}
