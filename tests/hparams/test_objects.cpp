// tests/hparams/test_objects.cpp
// `!new:`, `!name:`, `!apply:`, `_args`/`_kwargs`, `__` keys, and the object registry.
#include "helpers.h"

using masr::hparams::Args;
using masr::hparams::ClassInfo;
using masr::hparams::Object;
using masr::hparams::Registry;
using masr::hparams::Value;
using masr::hparams::testing::load;
using masr::hparams::testing::load_error;

namespace {

struct Counter : Object {
  int64_t start = 0;
  std::string label;
  std::string summary() const override { return "counter from " + std::to_string(start); }
};

Registry test_registry() {
  Registry registry;
  masr::hparams::register_builtin_classes(registry);
  ClassInfo counter;
  counter.name = "tests.Counter";
  counter.aliases = {"mamba_asr.Counter"};
  counter.params = {"start", "label"};
  counter.required = {"start"};
  counter.build = [](const Args& args) {
    auto c = std::make_shared<Counter>();
    c->start = args.get_int("start", 0);
    c->label = args.get_string("label", "none");
    return c;
  };
  registry.add(counter);
  return registry;
}

}  // namespace

TEST_CASE("!new: with a mapping passes keyword arguments", "[hparams]") {
  const auto hp = load(R"(
lin: !new:speechbrain.nnet.linear.Linear
    input_size: 144
    n_neurons: 5000
)");
  const auto& instance = hp["lin"].instance();
  CHECK(instance->info->name == "speechbrain.nnet.linear.Linear");
  CHECK(instance->args.get("input_size").as_int() == 144);
  CHECK(instance->args.get("n_neurons").as_int() == 5000);
  CHECK(instance->object == nullptr);  // declared, not implemented in the engine's own registry
  CHECK(hp.objects().size() == 1);
  CHECK(hp.objects()[0].key == "lin");
}

TEST_CASE("!new: with a list passes positional arguments, mapped to parameter names", "[hparams]") {
  const auto hp = load(R"(
lin: !new:speechbrain.nnet.linear.Linear [31, null, 256]
both: !new:speechbrain.nnet.linear.Linear
    _args: [31]
    _kwargs: {input_size: 256, bias: False}
)");
  const auto& args = hp["lin"].instance()->args;
  CHECK(args.positional.size() == 3);
  CHECK(args.get("n_neurons").as_int() == 31);
  CHECK(args.get("input_shape").is_null());
  CHECK(args.get("input_size").as_int() == 256);
  const auto& both = hp["both"].instance()->args;
  CHECK(both.get("n_neurons").as_int() == 31);
  CHECK(both.get("input_size").as_int() == 256);
  CHECK_FALSE(both.get("bias").as_bool());
}

TEST_CASE("implemented classes are built through the registry", "[hparams]") {
  const Registry registry = test_registry();
  masr::hparams::LoadOptions options;
  options.registry = &registry;
  const auto hp =
      load("c: !new:tests.Counter {start: 5, label: x}\nd: !new:mamba_asr.Counter [7]\n", options);
  auto counter = std::dynamic_pointer_cast<Counter>(hp["c"].instance()->object);
  REQUIRE(counter);
  CHECK(counter->start == 5);
  CHECK(counter->label == "x");
  CHECK(counter->summary() == "counter from 5");
  auto by_alias = std::dynamic_pointer_cast<Counter>(hp["d"].instance()->object);
  REQUIRE(by_alias);
  CHECK(by_alias->start == 7);
  CHECK(load_error("c: !new:tests.Counter {label: x}\n", options)
            .find("needs the argument 'start'") != std::string::npos);
}

TEST_CASE("!name: makes a factory with bound arguments", "[hparams]") {
  const auto hp = load(R"(
lr_adam: 0.0008
activation: !name:torch.nn.GELU
Adam: !name:torch.optim.AdamW
    lr: !ref <lr_adam>
    betas: (0.9, 0.98)
    eps: 0.000000001
ctc_cost: !name:speechbrain.nnet.losses.ctc_loss
    blank_index: 0
    reduction: batchmean
)");
  CHECK(hp["activation"].type() == Value::Type::kFactory);
  CHECK(hp["activation"].partial()->info->name == "torch.nn.GELU");
  CHECK(hp["activation"].partial()->bound.named.empty());
  const auto& adam = hp["Adam"].partial()->bound;
  CHECK(hp["Adam"].partial()->info->name == "torch.optim.AdamW");
  CHECK(adam.get("lr").as_double() == 0.0008);
  CHECK(adam.get("betas").items()[1].as_double() == 0.98);
  CHECK(adam.get("eps").as_double() == 1e-9);
  CHECK(hp["ctc_cost"].partial()->bound.get_string("reduction", "") == "batchmean");
}

TEST_CASE("!apply:torch.manual_seed runs at load time and __ keys are dropped", "[hparams]") {
  const auto hp = load("seed: 1234\n__set_seed: !apply:torch.manual_seed [!ref <seed>]\nx: 1\n");
  CHECK(masr::hparams::requested_manual_seed() == 1234);
  CHECK_FALSE(hp.root().contains("__set_seed"));
  CHECK(hp.root().entries().size() == 2);
}

TEST_CASE("!apply:speechbrain.utils.seed_everything seeds as SpeechBrain does", "[hparams]") {
  const auto hp = load(
      "seed: 3407\n__set_seed: !apply:speechbrain.utils.seed_everything [!ref <seed>]\nx: 1\n");
  CHECK(masr::hparams::requested_manual_seed() == 3407);
  CHECK_FALSE(hp.root().contains("__set_seed"));
  // Out of numpy's range [0, 2**32 - 1]: SpeechBrain falls back to 0.
  load("__s: !apply:speechbrain.utils.seed_everything {seed: 4294967296, verbose: False}\n");
  CHECK(masr::hparams::requested_manual_seed() == 0);
  load("__s: !apply:speechbrain.utils.seed_everything [7, True, True]\n");
  CHECK(masr::hparams::requested_manual_seed() == 7);
}

TEST_CASE("the registry knows the upstream names and proposes close ones", "[hparams]") {
  const Registry& registry = Registry::global();
  for (const char* name :
       {"speechbrain.lobes.features.Fbank", "modules.TransformerASR.TransformerASR",
        "speechbrain.lobes.models.transformer.TransformerASR.TransformerASR", "torch.optim.AdamW",
        "speechbrain.nnet.schedulers.NoamScheduler",
        "speechbrain.dataio.sampler.DynamicBatchSampler",
        "speechbrain.decoders.S2STransformerBeamSearcher",
        "speechbrain.augment.augmenter.Augmenter", "mamba_asr.Fbank", "mamba_asr.TransformerASR"}) {
    INFO(name);
    CHECK(registry.find(name) != nullptr);
  }
  const auto close = registry.closest("speechbrain.lobes.features.Fbnak");
  REQUIRE_FALSE(close.empty());
  CHECK(close[0] == "speechbrain.lobes.features.Fbank");
}

TEST_CASE("SpeechBrain's LibriSpeech recipes' collate_fn and Softmax entries load", "[hparams]") {
  // v1.0.0's recipes/LibriSpeech/ASR/transformer/hparams/transformer.yaml and
  // recipes/LibriSpeech/LM/hparams/transformer.yaml use these.
  const Registry registry = test_registry();
  masr::hparams::LoadOptions options;
  options.registry = &registry;
  const auto hp = load(
      "train_dataloader_opts:\n"
      "    batch_size: 4\n"
      "    collate_fn: !name:speechbrain.dataio.batch.PaddedBatch\n"
      "        padding_kwargs:\n"
      "            value: 0\n"
      "log_softmax: !new:speechbrain.nnet.activations.Softmax\n"
      "    apply_log: True\n",
      options);
  CHECK(hp.find("log_softmax") != nullptr);
  CHECK(load_error("s: !new:speechbrain.nnet.activations.Softmax\n    apply_logs: True\n", options)
            .find("apply_logs") != std::string::npos);
}
