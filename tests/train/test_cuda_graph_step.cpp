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
  masr::toolkit::register_all();
  const auto hp = load_s2s();
  AsrTask task(hp);
  const at::Device cuda(at::kCUDA, 0);
  task.to(cuda);
  const auto options = loss_options();
  prepare_task(task, options);
  const std::vector<at::Tensor> params = task.parameters();
  const auto fn = task.loss_of_inputs(options);
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
