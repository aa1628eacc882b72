// tests/train/test_cuda_graph_step.cpp
// GraphedSteps (train/cuda_graph_step.h): the trainer's split forward (AsrTask::prepare +
// model_loss) and the flat-buffer gradient accumulation against forward() + backward(), on the
// CPU; on the GPU machine ("[.cuda]"), replayed CUDA graphs against the same steps op by op, and
// a capture that reaches for the host falling back to eager steps.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#ifdef MASR_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../models/repo_hparams.h"
#include "data/batch.h"
#include "hparams/hparams.h"
#include "padded_batch.h"
#include "runtime/autocast.h"
#include "runtime/compute_stream.h"
#include "runtime/device_copy.h"
#include "toolkit/registration.h"
#include "train/asr_task.h"
#include "train/cuda_graph_step.h"
#include "train/data_parallel.h"
#include "train/optimizer.h"
#include "train/optimizer_stepper.h"
#include "train/train_config.h"
#include "train/train_data.h"

using masr::train::AsrBatch;
using masr::train::AsrTask;
using masr::train::GraphedSteps;
using masr::train::InputSpec;
using masr::train::ModelInputs;

namespace {

masr::hparams::Hparams load_s2s() {
  masr::hparams::LoadOptions options;
  options.overrides = {{"num_decoder_layers", "1"}, {"transformer_dropout", "0.0"}};
  options.placeholder_value = "unused";
  return masr::test::load_repo_hparams("hparams/S2S/conmamba_tiny.yaml", options, false);
}

// `n` utterances of random audio, the longest `samples` long, and random tokens (`tokens` at
// most): relative lengths below 1, so the padding is exercised.
AsrBatch random_batch(int64_t n, int64_t samples, int64_t tokens, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<masr::testing::Utterance> items;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = samples - i * samples / (3 * n);
    const at::Tensor wav = torch::randn({len}) * 0.1;
    const at::Tensor t = torch::randint(3, 30, {std::max<int64_t>(1, tokens - i)}, torch::kLong);
    items.push_back(
        {wav, std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel())});
  }
  AsrBatch b = masr::testing::make_batch(items, /*bos=*/1, /*eos=*/2);
  b.audio_seconds = static_cast<double>(n * samples) / 16000.0;
  return b;
}

// Training mode with every dropout at 0, the normalization's statistics from one batch.
void prepare_task(AsrTask& task, const masr::train::LossOptions& options) {
  task.train(true);
  for (auto& m : task.model().modules()) {
    if (auto* d = m->as<torch::nn::DropoutImpl>()) d->options.p(0.0);
  }
  torch::NoGradGuard no_grad;
  (void)task.forward(random_batch(2, 16000, 6, 1).to(task.parameters().front().device()), true, 1,
                     nullptr, options);
}

masr::train::LossOptions loss_options() {
  masr::train::LossOptions options;
  options.ctc_weight = 0.3;
  options.label_smoothing = 0.1;
  return options;
}

std::vector<at::Tensor> inputs_of(AsrTask& task, const AsrBatch& batch) {
  // Epoch 100: past update_until_epoch, the statistics stay as they are.
  return task.prepare(batch, true, 100, nullptr).inputs.list();
}

// Largest |a - b| over all tensors, relative to the largest |b|.
double relative_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const at::Tensor x = a[i].detach().cpu().to(at::kDouble);
    const at::Tensor y = b[i].detach().cpu().to(at::kDouble);
    diff = std::max(diff, (x - y).abs().max().item<double>());
    scale = std::max(scale, y.abs().max().item<double>());
  }
  return scale > 0 ? diff / scale : diff;
}

std::vector<at::Tensor> grads_of(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : params) {
    out.push_back(p.grad().defined() ? p.grad().detach().clone() : torch::zeros_like(p));
  }
  return out;
}

void drop_grads(const std::vector<at::Tensor>& params);

// The gradients backward() leaves over `batches`, each loss / `divisor` (OptimizerStepper's
// accumulation), starting from none; the parameters have none afterwards.
std::vector<at::Tensor> backward_grads(AsrTask& task, const masr::train::LossOptions& options,
                                       const std::vector<const AsrBatch*>& batches,
                                       double divisor) {
  const std::vector<at::Tensor> params = task.parameters();
  drop_grads(params);
  for (const AsrBatch* batch : batches) {
    const at::Tensor loss = task.forward(*batch, true, 100, nullptr, options).loss;
    (masr::train::with_nan_gradients_unless_finite(loss) / divisor).backward();
  }
  std::vector<at::Tensor> out = grads_of(params);
  drop_grads(params);
  return out;
}

void drop_grads(const std::vector<at::Tensor>& params) {
  for (const at::Tensor& p : params) {
    // mutable_grad() is non-const on a const reference in LibTorch 1.13 too.
    const_cast<at::Tensor&>(p).mutable_grad() = at::Tensor();
  }
}

// One step of `inputs` through `eager` and through `graphed` (both over `params`): the same loss
// and gradients, within `tolerance` relative.
void check_same_step(GraphedSteps& eager, GraphedSteps& graphed,
                     const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& inputs,
                     const GraphedSteps::LossFn& fn, double tolerance) {
  drop_grads(params);
  const double l1 = eager.forward_backward(inputs, fn, 1.0, true).item<double>();
  const std::vector<at::Tensor> want = grads_of(params);
  drop_grads(params);
  const double l2 = graphed.forward_backward(inputs, fn, 1.0, true).item<double>();
  const std::vector<at::Tensor> got = grads_of(params);
  CHECK(std::abs(l1 - l2) <= tolerance * std::abs(l1));
  const double diff = relative_difference(got, want);
  INFO("loss " << l1 << " vs " << l2 << ", largest relative gradient difference " << diff);
  CHECK(diff <= tolerance);
}

// The tiny S2S task on the first GPU, prepared as prepare_task does, with its parameters and
// loss function (the [.cuda] GraphedSteps tests).
struct CudaS2s {
  static masr::hparams::Hparams hparams() {
    masr::toolkit::register_all();
    return load_s2s();
  }
  masr::hparams::Hparams hp = hparams();
  AsrTask task{hp};
  at::Device cuda{at::kCUDA, 0};
  std::vector<at::Tensor> params;
  GraphedSteps::LossFn fn;
  CudaS2s() {
    task.to(cuda);
    const auto options = loss_options();
    prepare_task(task, options);
    params = task.parameters();
    fn = task.loss_of_inputs(options);
  }
};

}  // namespace

TEST_CASE("the split forward equals forward(): the same loss", "[train]") {
  masr::toolkit::register_all();
  const auto hp = load_s2s();
  AsrTask task(hp);
  const auto options = loss_options();
  prepare_task(task, options);
  const AsrBatch batch = random_batch(3, 21011, 7, 5);
  const double whole = task.forward(batch, true, 100, nullptr, options).loss.item<double>();
  const masr::train::PreparedBatch prepared = task.prepare(batch, true, 100, nullptr);
  const double split = task.model_loss(prepared.inputs, options).loss.item<double>();
  CHECK(split == whole);
  // The lengths: the feature frames of each utterance (1 + samples / hop) and its CTC targets.
  const at::Tensor lengths = prepared.inputs.lengths;
  REQUIRE(lengths.sizes() == at::IntArrayRef({2, 3}));
  CHECK(lengths[0][0].item<int64_t>() == 1 + 21011 / 160);
  CHECK(lengths[1][0].item<int64_t>() == 7);
  CHECK(lengths[1][2].item<int64_t>() == 5);
  REQUIRE(prepared.inputs.list().size() == 6);
}

TEST_CASE("ModelInputs::like makes inputs of given shapes that a step runs on", "[train]") {
  masr::toolkit::register_all();
  const auto hp = load_s2s();
  AsrTask task(hp);
  const auto options = loss_options();
  prepare_task(task, options);
  const std::vector<at::Tensor> real =
      task.prepare(random_batch(3, 21011, 7, 5), true, 100, nullptr).inputs.list();
  std::vector<InputSpec> specs;
  for (const at::Tensor& t : real) specs.push_back({t.sizes().vec(), t.scalar_type()});
  const std::vector<at::Tensor> like = ModelInputs::like(specs, at::kCPU);
  REQUIRE(like.size() == real.size());
  for (size_t i = 0; i < like.size(); ++i) {
    CHECK(like[i].sizes() == real[i].sizes());
    CHECK(like[i].scalar_type() == real[i].scalar_type());
  }
  // Full lengths: every frame and every target slot.
  CHECK(like[1][0].eq(real[0].size(1)).all().item<bool>());
  CHECK(like[1][1].eq(real[2].size(1)).all().item<bool>());
  const at::Tensor loss = task.loss_of_inputs(options)(like);
  CHECK(loss.dim() == 0);
  CHECK_THROWS(ModelInputs::like({specs[0]}, at::kCPU));
}

// AsrBatch::padded_to (CUDA-graph training pads a batch of a new shape into a held graph's):
// exactly the tensors collate makes when it pads to those lengths (data::pad_right), the model
// inputs' shapes known beforehand (AsrTask::input_specs), and the same loss as unpadded.
TEST_CASE("a batch padded further is the batch collate makes at those lengths", "[train]") {
  masr::toolkit::register_all();
  masr::train::TrainConfig config;
  config.bos_index = 1;
  config.eos_index = 2;
  config.pad_index = 0;
  torch::manual_seed(5);
  std::vector<masr::train::Utterance> items;
  for (const auto& [samples, tokens] :
       std::vector<std::pair<int64_t, int64_t>>{{20011, 7}, {12345, 4}, {16000, 9}}) {
    masr::train::Utterance u;
    u.id = "u" + std::to_string(samples);
    u.words = "x";
    const at::Tensor wav = torch::randn({samples}) * 0.1;
    u.samples.assign(wav.data_ptr<float>(), wav.data_ptr<float>() + samples);
    for (int64_t i = 0; i < tokens; ++i) u.tokens.push_back(3 + (i * 7 + samples) % 25);
    items.push_back(u);
  }
  const AsrBatch plain = masr::train::collate(items, 16000, config);
  REQUIRE(plain.wav.size(1) == 20011);
  REQUIRE(plain.tokens.size(1) == 9);
  const int64_t samples = 20011 + 3 * 160 + 37, tokens = 13;
  const AsrBatch padded = plain.padded_to(samples, tokens, config.pad_index);
  // What collate does at those padded lengths.
  std::vector<at::Tensor> wavs;
  std::vector<std::vector<int64_t>> toks, bos, eos;
  for (const auto& u : items) {
    wavs.push_back(torch::tensor(u.samples));
    toks.push_back(u.tokens);
    bos.push_back(u.tokens);
    bos.back().insert(bos.back().begin(), 1);
    eos.push_back(u.tokens);
    eos.back().push_back(2);
  }
  const auto wav = masr::data::pad_right(wavs, 0.0, samples);
  const auto tok = masr::data::pad_sequences(toks, 0, tokens);
  const auto tok_bos = masr::data::pad_sequences(bos, 0, tokens + 1);
  const auto tok_eos = masr::data::pad_sequences(eos, 0, tokens + 1);
  CHECK(padded.wav.equal(wav.data));
  CHECK(padded.wav_rel.equal(wav.lengths));
  CHECK(padded.wav_rel_on_host().equal(wav.lengths));
  CHECK(padded.tokens.equal(tok.data));
  CHECK(padded.tokens_rel.equal(tok.lengths));
  CHECK(padded.tokens_rel_on_host().equal(tok.lengths));
  CHECK(padded.tokens_bos.equal(tok_bos.data));
  CHECK(padded.tokens_eos.equal(tok_eos.data));
  CHECK(padded.tokens_eos_rel.equal(tok_eos.lengths));
  CHECK(padded.ids == plain.ids);
  CHECK(padded.audio_seconds == plain.audio_seconds);
  CHECK_THROWS(plain.padded_to(20000, tokens, 0));
  CHECK_THROWS(plain.padded_to(samples, 8, 0));

  // The inputs' shapes before the features, and the loss of the padded batch (its padding is
  // masked: the batch-invariance tests' tolerance).
  const auto hp = load_s2s();
  AsrTask task(hp);
  const auto options = loss_options();
  prepare_task(task, options);
  for (const AsrBatch* batch : {&plain, &padded}) {
    const std::vector<InputSpec> expected =
        task.input_specs(3, batch->wav.size(1), batch->tokens.size(1));
    CHECK((masr::train::specs_of(inputs_of(task, *batch)) == expected));
  }
  CHECK(task.input_specs(3, samples, tokens)[0].sizes[1] == 1 + samples / 160);
  CHECK(task.samples_for_frames(129) == 128 * 160);
  const double a = task.forward(plain, true, 100, nullptr, options).loss.item<double>();
  const double b = task.forward(padded, true, 100, nullptr, options).loss.item<double>();
  INFO("loss " << a << " unpadded, " << b << " padded");
  CHECK(std::abs(a - b) <= 1e-4 * std::abs(a));
  // A recipe whose wav_augment draws rows and lengths: no shapes beforehand.
  masr::hparams::LoadOptions bundle_options;
  bundle_options.placeholder_value = "unused";
  const auto bundle = masr::test::load_repo_hparams("hparams/S2S/conmamba_synth_bundle.yaml",
                                                    bundle_options, false);
  CHECK(AsrTask(bundle).input_specs(3, samples, tokens).empty());
}

// collated_lengths (what CUDA-graph training predicts an epoch's batch shapes with) against the
// batches collate makes, on the shape grid and off it.
TEST_CASE("collated_lengths are the lengths collate pads a batch to", "[train]") {
  masr::train::TrainConfig config;
  config.bos_index = 1;
  config.eos_index = 2;
  for (const bool grid : {false, true}) {
    config.recurring_shapes = grid;
    for (int round = 0; round < 6; ++round) {
      std::vector<masr::train::Utterance> items;
      int64_t longest = 0, longest_tokens = 0;
      for (int i = 0; i < 3; ++i) {
        masr::train::Utterance u;
        u.id = "u" + std::to_string(i);
        const int64_t samples = 5000 + 7919 * ((round * 3 + i) % 11) + 13 * round;
        u.samples.assign(static_cast<size_t>(samples), 0.1f);
        u.tokens.assign(static_cast<size_t>(3 + (round * 5 + i * 7) % 40), 4);
        longest = std::max(longest, samples);
        longest_tokens = std::max<int64_t>(longest_tokens, static_cast<int64_t>(u.tokens.size()));
        items.push_back(u);
      }
      const AsrBatch b = masr::train::collate(items, 16000, config);
      const auto [samples, tokens] =
          masr::train::collated_lengths(longest, longest_tokens, 16000, config);
      INFO("grid " << grid << ", longest " << longest << " samples, " << longest_tokens
                   << " tokens");
      CHECK(b.wav.size(1) == samples);
      CHECK(b.tokens.size(1) == tokens);
      CHECK(b.tokens_bos.size(1) == tokens + 1);
      CHECK(b.tokens_eos.size(1) == tokens + 1);
      if (!grid) {
        CHECK(samples == longest);
        CHECK(tokens == longest_tokens);
      } else {
        CHECK(samples >= longest);
        CHECK(samples % 640 == 0);  // 40 ms units
        CHECK((tokens + 1) % 8 == 0);
      }
    }
  }
}

TEST_CASE("the held graph shape a batch is padded into", "[train]") {
  // Inputs of an S2S step: feats (B, T, 80), lengths (2, B), tokens (B, U), BOS and EOS
  // sequences (B, U + 1), their relative lengths (B).
  auto s2s = [](int64_t batch, int64_t frames, int64_t tokens) {
    return std::vector<InputSpec>{
        {{batch, frames, 80}, at::kFloat}, {{2, batch}, at::kLong},
        {{batch, tokens}, at::kLong},      {{batch, tokens + 1}, at::kLong},
        {{batch, tokens + 1}, at::kLong},  {{batch}, at::kFloat}};
  };
  using Size = std::pair<int64_t, int64_t>;
  const std::vector<InputSpec> wanted = s2s(20, 1000, 39);  // 40 BOS/EOS tokens
  CHECK((ModelInputs::resized(wanted, 1040, 47) == s2s(20, 1040, 47)));
  auto into = [&](const std::vector<std::vector<InputSpec>>& held) {
    return ModelInputs::padding_into(wanted, held, 1.06, 1.25);
  };
  CHECK_FALSE(into({}).has_value());
  CHECK(into({s2s(20, 1000, 39)}) == Size{1000, 39});  // its own shape qualifies
  CHECK(into({s2s(20, 1060, 49)}) == Size{1060, 49});  // 6 % more frames, 25 % more tokens
  CHECK_FALSE(into({s2s(20, 1061, 39)}).has_value());  // more than 6 % more frames
  CHECK_FALSE(into({s2s(20, 1000, 50)}).has_value());  // 51 of 40: more than 25 %
  CHECK_FALSE(into({s2s(20, 999, 47)}).has_value());   // fewer frames
  CHECK_FALSE(into({s2s(20, 1020, 38)}).has_value());  // fewer tokens
  CHECK_FALSE(into({s2s(21, 1020, 39)}).has_value());  // another batch size
  std::vector<InputSpec> other_type = s2s(20, 1020, 39);
  other_type[0].dtype = at::kBFloat16;
  CHECK_FALSE(into({other_type}).has_value());
  std::vector<InputSpec> ctc(wanted.begin(), wanted.begin() + 3);
  CHECK_FALSE(into({ctc}).has_value());  // a CTC step's three inputs
  // The fewest frames first, then the fewest tokens.
  CHECK(into({s2s(20, 1050, 40), s2s(20, 1020, 47), s2s(20, 1020, 41), s2s(21, 1000, 39)}) ==
        Size{1020, 41});
  // A CTC step pads its three inputs the same way.
  const std::vector<InputSpec> ctc_wanted(wanted.begin(), wanted.begin() + 3);
  std::vector<InputSpec> ctc_held = ModelInputs::resized(ctc_wanted, 1010, 45);
  CHECK(ModelInputs::padding_into(ctc_wanted, {ctc_held}, 1.06, 1.25) == Size{1010, 45});
}

TEST_CASE("GraphedSteps accumulates the gradients backward() does, into flat buffers", "[train]") {
  masr::toolkit::register_all();
  const auto hp = load_s2s();
  AsrTask task(hp);
  const auto options = loss_options();
  prepare_task(task, options);
  const std::vector<at::Tensor> params = task.parameters();
  const AsrBatch a = random_batch(2, 20000, 6, 7);
  const AsrBatch b = random_batch(3, 14000, 4, 8);

  // Reference: two backward passes of loss / 2 (an accumulation of 2), as OptimizerStepper.
  const std::vector<at::Tensor> expected = backward_grads(task, options, {&a, &b}, 2.0);

  GraphedSteps steps(params, /*capture=*/false);
  const auto fn = task.loss_of_inputs(options);
  const at::Tensor la = steps.forward_backward(inputs_of(task, a), fn, 2.0, /*first=*/true);
  const at::Tensor lb = steps.forward_backward(inputs_of(task, b), fn, 2.0, /*first=*/false);
  CHECK(la.item<double>() == task.forward(a, true, 100, nullptr, options).loss.item<double>());
  CHECK_FALSE(lb.requires_grad());
  const double diff = relative_difference(grads_of(params), expected);
  INFO("largest relative gradient difference " << diff);
  CHECK(diff <= 1e-6);

  // Every gradient lies in a flat buffer.
  REQUIRE(steps.flats().size() == 1);
  const at::Tensor& flat = steps.flats().front();
  int64_t covered = 0;
  for (const at::Tensor& p : params) {
    REQUIRE(p.grad().defined());
    CHECK(p.grad().storage().is_alias_of(flat.storage()));
    covered += p.numel();
  }
  CHECK(covered == flat.numel());

  SECTION("a new accumulation starts from zero, after zero_grad dropped the gradients") {
    drop_grads(params);
    (void)steps.forward_backward(inputs_of(task, b), fn, 1.0, /*first=*/true);
    const std::vector<at::Tensor> alone = backward_grads(task, options, {&b}, 1.0);
    (void)steps.forward_backward(inputs_of(task, b), fn, 1.0, /*first=*/true);
    CHECK(relative_difference(grads_of(params), alone) <= 1e-6);
  }
  // (An embedding's rows that no token picked keep a zero gradient, as with backward().)
  SECTION("a non-finite loss makes NaN of every gradient, so the step's norm is NaN") {
    const GraphedSteps::LossFn bad = [&](const std::vector<at::Tensor>& t) {
      return fn(t) * std::numeric_limits<double>::infinity();
    };
    (void)steps.forward_backward(inputs_of(task, a), bad, 1.0, /*first=*/true);
    for (const at::Tensor& p : params) {
      if (p.grad().defined()) CHECK(p.grad().isnan().any().item<bool>());
    }
  }
  CHECK(steps.stats().eager >= 2);
  CHECK(steps.stats().captured == 0);
}

TEST_CASE("OptimizerStepper's graphed backward trains as its backward does", "[train]") {
  masr::toolkit::register_all();
  const auto hp = load_s2s();
  masr::train::TrainConfig config = masr::train::train_config_from(hp);
  config.grad_accumulation_factor = 2;
  AsrTask eager_task(hp), split_task(hp);
  const auto options = loss_options();
  prepare_task(eager_task, options);
  prepare_task(split_task, options);
  {
    torch::NoGradGuard no_grad;
    const auto from = eager_task.model().named_parameters();
    for (auto& p : split_task.model().named_parameters()) p.value().copy_(from[p.key()]);
    const auto bfrom = eager_task.normalizer().named_buffers();
    for (auto& t : split_task.normalizer().named_buffers()) t.value().copy_(bfrom[t.key()]);
  }
  masr::train::OptimizerStepper eager(config, eager_task.parameters(), false,
                                      std::make_shared<masr::train::DataParallel>());
  masr::train::OptimizerStepper split(config, split_task.parameters(), false,
                                      std::make_shared<masr::train::DataParallel>());
  REQUIRE(split.graphable());
  GraphedSteps steps(split_task.parameters(), /*capture=*/false);
  const auto fn = split_task.loss_of_inputs(options);
  int stepped = 0;
  for (int i = 0; i < 4; ++i) {
    const AsrBatch batch = random_batch(2 + i % 2, 12000 + 3000 * i, 5, 20 + i);
    const bool e = eager.backward(eager_task.forward(batch, true, 100, nullptr, options).loss);
    at::Tensor loss;
    const bool s = split.backward_graphed(steps, inputs_of(split_task, batch), fn, &loss);
    CHECK(e == s);
    stepped += s ? 1 : 0;
  }
  CHECK(stepped == 2);
  CHECK(split.steps() == 2);
  const double diff = relative_difference(split_task.parameters(), eager_task.parameters());
  INFO("largest relative parameter difference after two steps " << diff);
  CHECK(diff <= 1e-6);
}

// Two copies of the tiny S2S task with the same weights and normalization, in training mode.
struct TwinTasks {
  AsrTask a, b;
  explicit TwinTasks(const masr::hparams::Hparams& hp, const masr::train::LossOptions& options,
                     const at::Device& device)
      : a(hp), b(hp) {
    a.to(device);
    b.to(device);
    prepare_task(a, options);
    prepare_task(b, options);
    torch::NoGradGuard no_grad;
    const auto from = a.model().named_parameters();
    for (auto& p : b.model().named_parameters()) p.value().copy_(from[p.key()]);
    const auto bfrom = a.normalizer().named_buffers();
    for (auto& t : b.normalizer().named_buffers()) t.value().copy_(bfrom[t.key()]);
  }
};

// Batches for the optimizer-in-the-step tests: two shapes, and one batch of NaN audio (a
// non-finite loss, whose step is skipped).
std::vector<AsrBatch> update_batches(const at::Device& device) {
  std::vector<AsrBatch> out;
  for (int i = 0; i < 5; ++i) {
    AsrBatch b = random_batch(2 + i % 2, 12000 + 4000 * (i % 2), 5, 40 + i);
    if (i == 2) b.wav.fill_(std::numeric_limits<double>::quiet_NaN());
    out.push_back(b.to(device));
  }
  return out;
}

TEST_CASE("the optimizer's update inside GraphedSteps' step trains as backward() and step() do",
          "[train]") {
  masr::toolkit::register_all();
  const auto hp = load_s2s();
  const masr::train::TrainConfig config = masr::train::train_config_from(hp);
  REQUIRE(config.grad_accumulation_factor == 1);
  REQUIRE(config.has_scheduler);  // Noam: the learning rate changes every step
  const auto options = loss_options();
  TwinTasks twins(hp, options, at::kCPU);
  masr::train::OptimizerStepper eager(config, twins.a.parameters(), false,
                                      std::make_shared<masr::train::DataParallel>());
  masr::train::OptimizerStepper inside(config, twins.b.parameters(), false,
                                       std::make_shared<masr::train::DataParallel>());
  GraphedSteps::Update update = inside.graph_update(/*capture=*/false);
  REQUIRE(update);
  // No update where the step cannot hold it: gradient accumulation.
  {
    masr::train::TrainConfig accumulating = config;
    accumulating.grad_accumulation_factor = 2;
    masr::train::OptimizerStepper other(accumulating, twins.b.parameters(), false,
                                        std::make_shared<masr::train::DataParallel>());
    CHECK_FALSE(other.graph_update(false));
  }
  GraphedSteps steps(twins.b.parameters(), /*capture=*/false, std::move(update));
  CHECK(steps.steps_optimizer());
  CHECK(steps.flats().empty());
  const auto fn = twins.b.loss_of_inputs(options);
  for (const AsrBatch& batch : update_batches(at::kCPU)) {
    const bool e = eager.backward(twins.a.forward(batch, true, 100, nullptr, options).loss);
    at::Tensor loss;
    CHECK(inside.backward_graphed(steps, inputs_of(twins.b, batch), fn, &loss));
    CHECK(e);
    CHECK(inside.lr_of_last_step() == eager.lr_of_last_step());
    // No gradient outlives the step.
    for (const at::Tensor& p : twins.b.parameters()) CHECK_FALSE(p.grad().defined());
  }
  CHECK(inside.steps() == 5);
  CHECK(inside.lr() == eager.lr());
  const masr::train::SkippedSteps skipped = inside.take_skipped();
  CHECK(skipped.steps == 1);
  CHECK(eager.take_skipped().steps == 1);
  const double diff = relative_difference(twins.b.parameters(), twins.a.parameters());
  INFO("largest relative parameter difference after five steps " << diff);
  CHECK(diff <= 1e-6);
  CHECK_THROWS_WITH(steps.forward_backward(inputs_of(twins.b, update_batches(at::kCPU)[0]), fn, 1.0,
                                           /*first=*/false),
                    Catch::Contains("accumulates no gradients"));
}

TEST_CASE("a host upload is refused while a HostUploadGuard lives", "[train]") {
  const at::Tensor host = torch::ones({3});
  {
    const masr::runtime::HostUploadGuard guard;
    // A CPU target is no upload.
    CHECK(masr::runtime::to_device_async(host, at::kCPU).is_same(host));
  }
  CHECK(masr::runtime::to_device_async(host, at::kCPU).is_same(host));
  if (torch::cuda::is_available()) {
    const masr::runtime::HostUploadGuard guard;
    CHECK_THROWS_WITH(masr::runtime::to_device_async(host, at::Device(at::kCUDA, 0)),
                      Catch::Contains("CUDA graph capture"));
  }
}

TEST_CASE("CUDA graphs replay the steps op by op gives, shape by shape", "[.cuda]") {
  if (!torch::cuda::is_available()) FAIL("no CUDA device");
  REQUIRE(GraphedSteps::supported(at::Device(at::kCUDA, 0)));
  masr::toolkit::register_all();
  const auto hp = load_s2s();
  AsrTask task(hp);
  task.to(at::Device(at::kCUDA, 0));
  const auto options = loss_options();
  prepare_task(task, options);
  const std::vector<at::Tensor> params = task.parameters();
  const auto fn = task.loss_of_inputs(options);
  for (const auto precision : {masr::runtime::Precision::kFp32, masr::runtime::Precision::kBf16}) {
    INFO(masr::runtime::precision_name(precision));
    GraphedSteps graphed(params, /*capture=*/true);
    GraphedSteps eager(params, /*capture=*/false);
    // Two shapes, each three times with new values.
    for (int round = 0; round < 3; ++round) {
      for (int shape = 0; shape < 2; ++shape) {
        INFO("round " << round << ", shape " << shape);
        const AsrBatch batch =
            random_batch(2 + shape, 16000 + 8000 * shape, 5 + shape, 100 + 10 * round + shape)
                .to(at::Device(at::kCUDA, 0));
        const masr::runtime::AutocastGuard autocast(at::Device(at::kCUDA, 0), precision);
        check_same_step(eager, graphed, params, inputs_of(task, batch), fn,
                        precision == masr::runtime::Precision::kFp32 ? 1e-5 : 2e-2);
      }
    }
    // Round 0 captures shape 0, then shape 1, whose larger inputs grow the shared input buffers
    // and so drop shape 0's graph (and with it the memory pool); round 1 captures shape 0 again
    // (in a new pool) and replays shape 1; round 2 replays both.
    const masr::train::GraphStats s = graphed.stats();
    INFO(s.to_string());
    CHECK(s.eager == 0);
    CHECK(s.captured == 3);
    CHECK(s.dropped == 1);
    CHECK(s.replayed == 3);
    CHECK(s.graphs == 2);
  }
}

TEST_CASE("a capture that copies from the host falls back to steps op by op", "[.cuda]") {
  if (!torch::cuda::is_available()) FAIL("no CUDA device");
  masr::toolkit::register_all();
  const auto hp = load_s2s();
  AsrTask task(hp);
  task.to(at::Device(at::kCUDA, 0));
  const auto options = loss_options();
  prepare_task(task, options);
  const auto fn = task.loss_of_inputs(options);
  // Adds a host tensor's value: fine op by op, refused inside a capture.
  const GraphedSteps::LossFn uploads = [&](const std::vector<at::Tensor>& t) {
    return fn(t) + masr::runtime::to_device_async(torch::zeros({}), t.front().device());
  };
  GraphedSteps graphed(task.parameters(), /*capture=*/true);
  const AsrBatch batch = random_batch(2, 16000, 5, 3).to(at::Device(at::kCUDA, 0));
  double first = 0.0;
  for (int i = 0; i < 3; ++i) {
    const double loss =
        graphed.forward_backward(inputs_of(task, batch), uploads, 1.0, true).item<double>();
    if (i == 0) first = loss;
    CHECK(std::abs(loss - first) <= 1e-5 * std::abs(first));
    CHECK(std::isfinite(loss));
  }
  CHECK(graphed.stats().captured == 0);
  CHECK(graphed.stats().eager == 3);
  // The stream works after the failed capture.
  CHECK(torch::ones({4}, at::Device(at::kCUDA, 0)).sum().item<double>() == 4.0);
}

TEST_CASE("turning capturing on captures the shapes seen so far, and those other ranks saw",
          "[.cuda]") {
  if (!torch::cuda::is_available()) FAIL("no CUDA device");
  CudaS2s s2s;
  AsrTask& task = s2s.task;
  const at::Device cuda = s2s.cuda;
  const std::vector<at::Tensor>& params = s2s.params;
  const GraphedSteps::LossFn& fn = s2s.fn;
  auto batch_of = [&](int shape, int round) {
    return random_batch(2 + shape, 16000 + 8000 * shape, 5 + shape, 200 + 10 * round + shape)
        .to(cuda);
  };
  // Shape 2 is seen only by another rank's GraphedSteps.
  std::vector<std::string> theirs;
  {
    GraphedSteps other(params, /*capture=*/true);
    other.set_capturing(false);
    drop_grads(params);
    (void)other.forward_backward(inputs_of(task, batch_of(2, 0)), fn, 1.0, true);
    theirs = other.shape_keys();
    REQUIRE(theirs.size() == 1);
  }
  GraphedSteps graphed(params, /*capture=*/true);
  graphed.set_inputs_like(&ModelInputs::like);
  GraphedSteps eager(params, /*capture=*/false);
  graphed.set_capturing(false);
  auto compare = [&](int shape, int round) {
    INFO("round " << round << ", shape " << shape);
    check_same_step(eager, graphed, params, inputs_of(task, batch_of(shape, round)), fn, 1e-5);
  };
  for (int shape = 0; shape < 2; ++shape) compare(shape, 0);  // seen (counted), op by op
  CHECK(graphed.stats().eager == 2);
  CHECK(graphed.stats().captured == 0);
  graphed.add_shape_keys(theirs);
  CHECK(graphed.shape_keys().size() == 3);
  graphed.set_capturing(true);
  compare(1, 1);  // captures all three first, then replays
  CHECK(graphed.stats().captured == 3);
  CHECK(graphed.stats().replayed == 1);
  compare(0, 1);
  compare(2, 1);  // never run here: replays the graph captured from the other rank's key
  const masr::train::GraphStats s = graphed.stats();
  INFO(s.to_string());
  CHECK(s.captured == 3);
  CHECK(s.replayed == 3);
  CHECK(s.eager == 2);
  CHECK(s.graphs == 3);
}

TEST_CASE(
    "a batch of a new shape padded into a held graph's replays it: its own loss and gradients",
    "[.cuda]") {
  if (!torch::cuda::is_available()) FAIL("no CUDA device");
  CudaS2s s2s;
  AsrTask& task = s2s.task;
  const at::Device cuda = s2s.cuda;
  const std::vector<at::Tensor>& params = s2s.params;
  const GraphedSteps::LossFn& fn = s2s.fn;
  GraphedSteps graphed(params, /*capture=*/true);
  GraphedSteps eager(params, /*capture=*/false);
  graphed.set_capturing(true);
  const AsrBatch big = random_batch(3, 24000, 8, 300).to(cuda);
  const std::vector<at::Tensor> big_inputs = inputs_of(task, big);
  check_same_step(eager, graphed, params, big_inputs, fn, 1e-5);  // captured
  REQUIRE(graphed.stats().captured == 1);
  CHECK(graphed.replays(masr::train::specs_of(big_inputs)));
  // 23,000 samples and 7 tokens: 144 frames where the graph has 151, 8 BOS tokens of its 9.
  const AsrBatch small = random_batch(3, 23000, 7, 301).to(cuda);
  const std::vector<InputSpec> wanted =
      task.input_specs(3, small.wav.size(1), small.tokens.size(1));
  CHECK((masr::train::specs_of(inputs_of(task, small)) == wanted));
  CHECK_FALSE(graphed.replays(wanted));
  CHECK(graphed.times_seen(wanted) == 0);
  const auto held = graphed.replayable_shapes();
  REQUIRE(held.size() == 1);
  const auto into = ModelInputs::padding_into(wanted, held, 1.06, 1.25);
  REQUIRE(into.has_value());
  CHECK(*into == std::make_pair(big_inputs[0].size(1), big_inputs[2].size(1)));
  const AsrBatch padded = small.padded_to(
      std::max(small.wav.size(1), task.samples_for_frames(into->first)), into->second, 0);
  graphed.note_padded(wanted);
  CHECK(graphed.times_seen(wanted) == 1);
  drop_grads(params);
  const double l1 = eager.forward_backward(inputs_of(task, small), fn, 1.0, true).item<double>();
  const std::vector<at::Tensor> want = grads_of(params);
  drop_grads(params);
  const double l2 = graphed.forward_backward(inputs_of(task, padded), fn, 1.0, true).item<double>();
  const std::vector<at::Tensor> got = grads_of(params);
  const masr::train::GraphStats s = graphed.stats();
  INFO(s.to_string() << "; loss " << l1 << " unpadded op by op, " << l2 << " padded, replayed");
  CHECK(s.captured == 1);
  CHECK(s.replayed == 1);
  CHECK(s.padded == 1);
  // The batch-invariance tests' tolerances: padding moves results by summation order alone.
  CHECK(std::abs(l1 - l2) <= 1e-4 * std::abs(l1));
  CHECK(relative_difference(got, want) <= 1e-3);
}

TEST_CASE("capture_ahead: shapes told beforehand are captured with the next step, not padded ones",
          "[.cuda]") {
  if (!torch::cuda::is_available()) FAIL("no CUDA device");
  CudaS2s s2s;
  AsrTask& task = s2s.task;
  const at::Device cuda = s2s.cuda;
  const std::vector<at::Tensor>& params = s2s.params;
  const GraphedSteps::LossFn& fn = s2s.fn;
  GraphedSteps graphed(params, /*capture=*/true);
  graphed.set_inputs_like(&ModelInputs::like);
  GraphedSteps eager(params, /*capture=*/false);
  graphed.set_capturing(false);
  auto batch_of = [&](int64_t n, int64_t samples, int64_t tokens, uint64_t seed) {
    return random_batch(n, samples, tokens, seed).to(cuda);
  };
  // A step op by op (capturing off) tells GraphedSteps its divisor; nothing is captured ahead then.
  const AsrBatch first = batch_of(2, 16000, 5, 400);
  check_same_step(eager, graphed, params, inputs_of(task, first), fn, 1e-5);
  const AsrBatch later = batch_of(3, 20000, 6, 401), only_padded = batch_of(4, 12000, 4, 402);
  const std::vector<InputSpec> later_shape = masr::train::specs_of(inputs_of(task, later));
  const std::vector<InputSpec> padded_shape = masr::train::specs_of(inputs_of(task, only_padded));
  graphed.capture_ahead({later_shape});
  CHECK(graphed.stats().captured == 0);  // capturing is off
  graphed.set_capturing(true);
  graphed.note_padded(padded_shape);  // met once, padded into another: no graph of its own yet
  graphed.capture_ahead({later_shape});
  CHECK(graphed.replays(later_shape));
  CHECK_FALSE(graphed.replays(padded_shape));
  // The next step captures the shape seen so far and the one told, not the padded one.
  check_same_step(eager, graphed, params, inputs_of(task, first), fn, 1e-5);
  masr::train::GraphStats s = graphed.stats();
  INFO(s.to_string());
  CHECK(s.captured == 2);
  CHECK(s.replayed == 1);
  check_same_step(eager, graphed, params, inputs_of(task, later), fn, 1e-5);  // replayed
  s = graphed.stats();
  CHECK(s.captured == 2);
  CHECK(s.replayed == 2);
  CHECK(s.graphs == 2);
}

TEST_CASE("a CUDA graph with the optimizer's update inside trains as the steps op by op do",
          "[.cuda]") {
  if (!torch::cuda::is_available()) FAIL("no CUDA device");
  masr::toolkit::register_all();
  const auto hp = load_s2s();
  const masr::train::TrainConfig config = masr::train::train_config_from(hp);
  const at::Device cuda(at::kCUDA, 0);
  const auto options = loss_options();
  TwinTasks twins(hp, options, cuda);
  masr::train::OptimizerStepper eager(config, twins.a.parameters(), true,
                                      std::make_shared<masr::train::DataParallel>());
  masr::train::OptimizerStepper inside(config, twins.b.parameters(), true,
                                       std::make_shared<masr::train::DataParallel>());
  GraphedSteps::Update update = inside.graph_update(/*capture=*/true);
  REQUIRE(update);  // LibTorch 2.11: fused kernels with a tensor learning rate
  GraphedSteps graphed(twins.b.parameters(), /*capture=*/true, std::move(update));
  REQUIRE(graphed.steps_optimizer());
  const auto fn = twins.b.loss_of_inputs(options);
  // Shapes 0, 1, 0 (NaN audio: the step is skipped), 1, 0, with Noam changing the learning
  // rate at every step: shape 1's larger inputs grow the shared buffers and drop shape 0's
  // graph, so shape 0 is captured twice; the last two steps replay.
  int i = 0;
  for (const AsrBatch& batch : update_batches(cuda)) {
    INFO("step " << i++);
    const bool e = eager.backward(twins.a.forward(batch, true, 100, nullptr, options).loss);
    at::Tensor loss;
    CHECK(inside.backward_graphed(graphed, inputs_of(twins.b, batch), fn, &loss));
    CHECK(e);
    for (const at::Tensor& p : twins.b.parameters()) CHECK_FALSE(p.grad().defined());
    const double diff = relative_difference(twins.b.parameters(), twins.a.parameters());
    INFO("largest relative parameter difference " << diff);
    CHECK(diff <= 1e-5);
  }
  const masr::train::GraphStats s = graphed.stats();
  INFO(s.to_string());
  CHECK(s.captured == 3);
  CHECK(s.dropped == 1);
  CHECK(s.replayed == 2);
  CHECK(s.eager == 0);
  CHECK(inside.take_skipped().steps == 1);
  CHECK(eager.take_skipped().steps == 1);
  CHECK(inside.lr() == eager.lr());
  // The checkpoint's step counts come from the device, where the skipped step was taken back:
  // 4 for every parameter, as op by op (the host counted every capture and no replay).
  auto step_counts = [&](masr::train::OptimizerStepper& stepper, AsrTask& task) {
    std::map<std::string, std::string> files;
    std::map<std::string, double> counters;
    stepper.save(files, counters);
    std::vector<at::Tensor> copies;
    for (const at::Tensor& p : task.parameters()) copies.push_back(p.detach().clone());
    const auto optimizer = masr::train::make_optimizer(config.optimizer, copies);
    masr::train::load_optimizer(*optimizer, files.at("optimizer.ckpt"), "test");
    std::vector<int64_t> counts;
    for (const auto& [key, state] : optimizer->state()) {
      if (config.optimizer.type == "AdamW") {
        counts.push_back(static_cast<torch::optim::AdamWParamState&>(*state).step());
      } else {
        counts.push_back(static_cast<torch::optim::AdamParamState&>(*state).step());
      }
    }
    return counts;
  };
  const std::vector<int64_t> a = step_counts(eager, twins.a);
  const std::vector<int64_t> b = step_counts(inside, twins.b);
  CHECK(a.size() == twins.a.parameters().size());
  CHECK(b == a);
  CHECK(std::all_of(b.begin(), b.end(), [](int64_t n) { return n == 4; }));
}

TEST_CASE("a ComputeStream does nothing off CUDA", "[train]") {
  const masr::runtime::ComputeStream stream(at::Device(at::kCPU));
  CHECK_FALSE(stream.active());
}

TEST_CASE("cuBLAS workspaces for graphs: 8 MiB unless CUBLAS_WORKSPACE_CONFIG is set", "[train]") {
  const char* before = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  const std::string previous = before != nullptr ? before : "";
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  CHECK(masr::runtime::small_cublas_workspaces_for_graphs());
  CHECK(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")) == ":4096:2");
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":0:0", 1);
  CHECK_FALSE(masr::runtime::small_cublas_workspaces_for_graphs());
  CHECK(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")) == ":0:0");
  if (before != nullptr) {
    ::setenv("CUBLAS_WORKSPACE_CONFIG", previous.c_str(), 1);
  } else {
    ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  }
}

TEST_CASE("on a ComputeStream, steps op by op and captured ones run on it and agree", "[.cuda]") {
  if (!torch::cuda::is_available()) FAIL("no CUDA device");
#ifdef MASR_WITH_CUDA
  masr::toolkit::register_all();
  const auto hp = load_s2s();
  const at::Device cuda(at::kCUDA, 0);
  const auto options = loss_options();
  const c10::cuda::CUDAStream default_stream = c10::cuda::getDefaultCUDAStream(0);
  {
    const masr::runtime::ComputeStream compute(cuda);
    REQUIRE(compute.active());
    const c10::cuda::CUDAStream mine = c10::cuda::getCurrentCUDAStream(0);
    CHECK(mine != default_stream);
    AsrTask task(hp);
    task.to(cuda);
    prepare_task(task, options);
    const std::vector<at::Tensor> params = task.parameters();
    const auto fn = task.loss_of_inputs(options);
    GraphedSteps graphed(params, /*capture=*/true);
    GraphedSteps eager(params, /*capture=*/false);
    for (int round = 0; round < 3; ++round) {
      INFO("round " << round);
      const AsrBatch batch = random_batch(2, 16000, 5, 300 + round).to(cuda);
      check_same_step(eager, graphed, params, inputs_of(task, batch), fn, 1e-5);
      CHECK(c10::cuda::getCurrentCUDAStream(0) == mine);  // the capture gave it back
    }
    const masr::train::GraphStats s = graphed.stats();
    INFO(s.to_string());
    CHECK(s.captured == 1);
    CHECK(s.replayed == 2);
  }
  CHECK(c10::cuda::getCurrentCUDAStream(0) == default_stream);
  // MASR_COMPUTE_STREAM=0: the current stream stays.
  const char* before = std::getenv("MASR_COMPUTE_STREAM");
  const std::string previous = before != nullptr ? before : "";
  ::setenv("MASR_COMPUTE_STREAM", "0", 1);
  {
    const masr::runtime::ComputeStream off(cuda);
    CHECK_FALSE(off.active());
    CHECK(c10::cuda::getCurrentCUDAStream(0) == default_stream);
  }
  if (before != nullptr) {
    ::setenv("MASR_COMPUTE_STREAM", previous.c_str(), 1);
  } else {
    ::unsetenv("MASR_COMPUTE_STREAM");
  }
#endif
}
