// tests/hparams/test_scalars.cpp
// Plain YAML values as HyperPyYAML files use them: YAML 1.2 core types, Python booleans,
// implicit tuples, quoted strings.
#include "helpers.h"

using masr::hparams::python_float_repr;
using masr::hparams::Value;
using masr::hparams::testing::load;

TEST_CASE("scalars are typed like Python values", "[hparams]") {
  const auto hp = load(R"(
an_int: 3407
negative: -12
hex: 0x1f
octal: 0o17
a_float: 0.0008
tiny: 0.000000001
exponent: 1e-9
big_exponent: 2.5E+3
true_python: True
true_yaml: true
false_python: False
none_word: null
none_tilde: ~
empty:
plain_text: conmamba
quoted_number: "123"
single_quoted: 'True'
infinity: .inf
path: results/S2S/x
)");
  CHECK(hp["an_int"].as_int() == 3407);
  CHECK(hp["negative"].as_int() == -12);
  CHECK(hp["hex"].as_int() == 31);
  CHECK(hp["octal"].as_int() == 15);
  CHECK(hp["a_float"].type() == Value::Type::kFloat);
  CHECK(hp["a_float"].as_double() == 0.0008);
  CHECK(hp["tiny"].as_double() == 1e-9);
  CHECK(hp["exponent"].type() == Value::Type::kFloat);
  CHECK(hp["exponent"].as_double() == 1e-9);
  CHECK(hp["big_exponent"].as_double() == 2500.0);
  CHECK(hp["true_python"].as_bool());
  CHECK(hp["true_yaml"].as_bool());
  CHECK_FALSE(hp["false_python"].as_bool());
  CHECK(hp["none_word"].is_null());
  CHECK(hp["none_tilde"].is_null());
  CHECK(hp["empty"].is_null());
  CHECK(hp["plain_text"].as_string() == "conmamba");
  CHECK(hp["quoted_number"].as_string() == "123");
  CHECK(hp["single_quoted"].as_string() == "True");
  CHECK(hp["infinity"].as_double() == INFINITY);
  CHECK(hp["path"].as_string() == "results/S2S/x");
  // ints read as floats where a float is asked for, not the other way round
  CHECK(hp["an_int"].as_double() == 3407.0);
}

TEST_CASE("implicit tuples become flat tuples of typed values", "[hparams]") {
  const auto hp = load(R"(
input_shape: (8, 10, 80)
betas: (0.9, 0.98)
residuals: (False, False)
single: (5,)
empty_tuple: ()
words: (a, b)
explicit: !tuple (1, 2)
explicit_list: !tuple [3, 4]
)");
  const auto& shape = hp["input_shape"];
  REQUIRE(shape.type() == Value::Type::kTuple);
  REQUIRE(shape.items().size() == 3);
  CHECK(shape.items()[0].as_int() == 8);
  CHECK(shape.items()[2].as_int() == 80);
  CHECK(hp["betas"].items()[0].as_double() == 0.9);
  CHECK(hp["betas"].items()[1].as_double() == 0.98);
  CHECK_FALSE(hp["residuals"].items()[1].as_bool());
  CHECK(hp["single"].items().size() == 1);
  CHECK(hp["empty_tuple"].items().empty());
  CHECK(hp["words"].items()[1].as_string() == "b");
  CHECK(hp["explicit"].type() == Value::Type::kTuple);
  CHECK(hp["explicit_list"].items()[1].as_int() == 4);
}

TEST_CASE("lists and nested mappings keep their order and types", "[hparams]") {
  const auto hp = load(R"(
splits: ["train-clean-100", "train-clean-360"]
block:
    - 1
    - two
    - [3, 4]
mamba_config: {d_state: 16, expand: 2, bidirectional: True}
)");
  CHECK(hp["splits"].items()[1].as_string() == "train-clean-360");
  CHECK(hp["block"].items()[1].as_string() == "two");
  CHECK(hp["block"].items()[2].items()[0].as_int() == 3);
  const auto& config = hp["mamba_config"].entries();
  REQUIRE(config.size() == 3);
  CHECK(config[0].first == "d_state");
  CHECK(config[2].first == "bidirectional");
  CHECK(hp["mamba_config"]["expand"].as_int() == 2);
}

TEST_CASE("Python's float repr is reproduced for interpolation", "[hparams]") {
  CHECK(python_float_repr(0.001) == "0.001");
  CHECK(python_float_repr(1e-9) == "1e-09");
  CHECK(python_float_repr(0.0001) == "0.0001");
  CHECK(python_float_repr(0.00001) == "1e-05");
  CHECK(python_float_repr(1.0) == "1.0");
  CHECK(python_float_repr(3750.0) == "3750.0");
  CHECK(python_float_repr(1e16) == "1e+16");
  CHECK(python_float_repr(1234567890123456.0) == "1234567890123456.0");
  CHECK(python_float_repr(0.1) == "0.1");
  CHECK(python_float_repr(-2.5) == "-2.5");
  CHECK(python_float_repr(1.0 / 3.0) == "0.3333333333333333");
  CHECK(python_float_repr(1.15) == "1.15");
}

TEST_CASE("str() of values matches Python's", "[hparams]") {
  const auto hp = load("a: True\nb: null\nc: 0.5\nd: [1, 'x']\ne: (1,)\nf: {k: 2}\n");
  CHECK(hp["a"].str() == "True");
  CHECK(hp["b"].str() == "None");
  CHECK(hp["c"].str() == "0.5");
  CHECK(hp["d"].str() == "[1, 'x']");
  CHECK(hp["e"].str() == "(1,)");
  CHECK(hp["f"].str() == "{'k': 2}");
}
