// tests/hparams/test_references.cpp
// `!ref` and `!copy`: whole-value references, interpolation, nested keys, arithmetic with
// Python's int/float semantics, chains and forward references.
#include "helpers.h"

using masr::hparams::Value;
using masr::hparams::testing::load;

TEST_CASE("a whole-value !ref returns the referenced value", "[hparams]") {
  const auto hp = load(R"(
seed: 3407
alias: !ref <seed>
config: {d_state: 16, expand: 2}
same_config: !ref <config>
)");
  CHECK(hp["alias"].as_int() == 3407);
  CHECK(hp["alias"].type() == Value::Type::kInt);
  CHECK(hp["same_config"]["d_state"].as_int() == 16);
}

TEST_CASE("!ref interpolates into strings", "[hparams]") {
  const auto hp = load(R"(
seed: 3407
experiment: conmamba_L_S2S
output_folder: !ref results/S2S/<experiment>/<seed>
save_folder: !ref <output_folder>/save
lm: !ref <repo>/lm.ckpt
repo: speechbrain/asr-transformer-transformerlm-librispeech
flag_text: !ref use_<flag>
flag: True
rate_text: !ref lr=<lr>
lr: 0.000000001
)");
  CHECK(hp["output_folder"].as_string() == "results/S2S/conmamba_L_S2S/3407");
  CHECK(hp["save_folder"].as_string() == "results/S2S/conmamba_L_S2S/3407/save");
  CHECK(hp["lm"].as_string() == "speechbrain/asr-transformer-transformerlm-librispeech/lm.ckpt");
  CHECK(hp["flag_text"].as_string() == "use_True");
  CHECK(hp["rate_text"].as_string() == "lr=1e-09");
}

TEST_CASE("nested references index mappings and lists", "[hparams]") {
  const auto hp = load(R"(
mamba_config:
    d_state: 16
    inner: {depth: 3}
splits: [a, b, c]
table: [[1, 2], [3, 4]]
d_state: !ref <mamba_config[d_state]>
depth: !ref <mamba_config[inner][depth]>
second: !ref <splits[1]>
cell: !ref <table[1][0]>
path: !ref x/<splits[2]>
self_ref:
    x: 5
    y: !ref <self_ref[x]>
)");
  CHECK(hp["d_state"].as_int() == 16);
  CHECK(hp["depth"].as_int() == 3);
  CHECK(hp["second"].as_string() == "b");
  CHECK(hp["cell"].as_int() == 3);
  CHECK(hp["path"].as_string() == "x/c");
  CHECK(hp["self_ref"]["y"].as_int() == 5);
}

TEST_CASE("!ref arithmetic follows Python's int and float rules", "[hparams]") {
  const auto hp = load(R"(
grad_accumulation_factor: 8
n_warmup_steps: !ref 30000 // <grad_accumulation_factor>
true_div: !ref <grad_accumulation_factor> / 16
exact_div: !ref 16 / <grad_accumulation_factor>
product: !ref <grad_accumulation_factor> * 64
float_product: !ref 1.5 * <grad_accumulation_factor>
power: !ref 2 ** 10
negative_power: !ref 2 ** -1
neg_square: !ref -2 ** 2
unary_minus: !ref -<grad_accumulation_factor>
floor_negative: !ref -7 // 2
mod_negative: !ref -7 % 3
mod_negative_divisor: !ref 7 % -3
float_mod: !ref 7.5 % 2
float_floor: !ref 7.5 // 2
parentheses: !ref (1 + 2) * <grad_accumulation_factor>
sum: !ref <grad_accumulation_factor> + 3
difference: !ref 10 - <grad_accumulation_factor> - 1
precedence: !ref 2 + 3 * 4 ** 2
no_reference: !ref 0.001
no_reference_int: !ref 42
text_stays_text: !ref results/<grad_accumulation_factor>
)");
  CHECK(hp["n_warmup_steps"].type() == Value::Type::kInt);
  CHECK(hp["n_warmup_steps"].as_int() == 3750);
  CHECK(hp["true_div"].type() == Value::Type::kFloat);
  CHECK(hp["true_div"].as_double() == 0.5);
  CHECK(hp["exact_div"].type() == Value::Type::kFloat);  // 16 / 8 is 2.0 in Python 3
  CHECK(hp["exact_div"].as_double() == 2.0);
  CHECK(hp["product"].as_int() == 512);
  CHECK(hp["float_product"].type() == Value::Type::kFloat);
  CHECK(hp["float_product"].as_double() == 12.0);
  CHECK(hp["power"].as_int() == 1024);
  CHECK(hp["negative_power"].as_double() == 0.5);
  CHECK(hp["neg_square"].as_int() == -4);
  CHECK(hp["unary_minus"].as_int() == -8);
  CHECK(hp["floor_negative"].as_int() == -4);
  CHECK(hp["mod_negative"].as_int() == 2);
  CHECK(hp["mod_negative_divisor"].as_int() == -2);
  CHECK(hp["float_mod"].as_double() == 1.5);
  CHECK(hp["float_floor"].type() == Value::Type::kFloat);
  CHECK(hp["float_floor"].as_double() == 3.0);
  CHECK(hp["parentheses"].as_int() == 24);
  CHECK(hp["sum"].as_int() == 11);
  CHECK(hp["difference"].as_int() == 1);
  CHECK(hp["precedence"].as_int() == 50);
  CHECK(hp["no_reference"].type() == Value::Type::kFloat);
  CHECK(hp["no_reference"].as_double() == 0.001);
  CHECK(hp["no_reference_int"].as_int() == 42);
  CHECK(hp["text_stays_text"].as_string() == "results/8");
}

TEST_CASE("references follow chains and may point forward", "[hparams]") {
  const auto hp = load(R"(
first: !ref <second>
second: !ref <third>
third: 7
derived: !ref <first> * 2
later_object: !ref <layer>
layer: !new:torch.nn.LogSoftmax
    dim: !ref <third>
)");
  CHECK(hp["first"].as_int() == 7);
  CHECK(hp["second"].as_int() == 7);
  CHECK(hp["derived"].as_int() == 14);
  CHECK(hp["later_object"].instance() == hp["layer"].instance());
  CHECK(hp["layer"].instance()->args.get("dim").as_int() == 7);
}

TEST_CASE("a whole-value !ref to an object shares it; !copy makes a separate one", "[hparams]") {
  const auto hp = load(R"(
ctc_lin: !new:speechbrain.nnet.linear.Linear
    input_size: 144
    n_neurons: 31
CNN: !new:torch.nn.LogSoftmax {dim: -1}
model: !new:torch.nn.ModuleList
    - [!ref <CNN>, !ref <ctc_lin>]
modules:
    ctc_lin: !ref <ctc_lin>
copied: !copy <ctc_lin>
copied_map: !copy <modules>
)");
  const auto& list = hp["model"].instance()->args.get("modules").items();
  REQUIRE(list.size() == 2);
  CHECK(list[0].instance() == hp["CNN"].instance());
  CHECK(list[1].instance() == hp["ctc_lin"].instance());
  CHECK(hp["modules"]["ctc_lin"].instance() == hp["ctc_lin"].instance());
  const auto& copy = hp["copied"].instance();
  CHECK(copy != hp["ctc_lin"].instance());
  CHECK(copy->info == hp["ctc_lin"].instance()->info);
  CHECK(copy->args.get("n_neurons").as_int() == 31);
  CHECK(hp["copied_map"]["ctc_lin"].instance() != hp["ctc_lin"].instance());
}

TEST_CASE("unread_keys: the keys neither read nor referred to from a used key", "[hparams]") {
  const auto hp = load(R"(
seed: 3
d_model: 8
layers: 2
model: {width: !ref <d_model>, depth: !ref <layers>}
lr: 0.1
unused_base: 5
unused_derived: !ref <unused_base>
path: !ref out/<seed>
__note: !ref <seed>
forgotten: 1
)");
  using Keys = std::vector<std::string>;
  // Nothing read yet: only what a "__" key (applied at load) refers to is used.
  CHECK(hp.unread_keys() ==
        Keys{"d_model", "layers", "model", "lr", "unused_base", "unused_derived", "path",
             "forgotten"});
  // Reading a key uses what it refers to, transitively; a copy shares what was read.
  const masr::hparams::Hparams copy = hp;
  CHECK(copy["model"]["width"].as_int() == 8);
  CHECK(hp.find("lr") != nullptr);
  hp.mark_read("path");
  CHECK(hp.unread_keys() == Keys{"unused_base", "unused_derived", "forgotten"});
  CHECK(hp.find("unused_derived")->as_int() == 5);
  CHECK(hp.unread_keys() == Keys{"forgotten"});
  // A key looked up but absent counts for nothing.
  CHECK(hp.find("no_such_key") == nullptr);
  CHECK(hp.unread_keys() == Keys{"forgotten"});
}
