// tests/train/test_train_cuda.cpp
// The CUDA training step against the CPU one (run on the GPU machine: test_masr "[.cuda]"):
// features, normalization and augmentation computed on the GPU, the whole S2S forward/backward,
// the sync-free gradient clipping and the fused Adam/AdamW step; steps skipped on the device for
// non-finite losses, and no host synchronization in the augmentation and the optimizer step.
#include <catch2/catch.hpp>

#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "features/augment/augmenter.h"
#include "features/augment/interface.h"
#include "features/augment/spectrogram_drop.h"
#include "features/augment/warping.h"
#include "features/fbank.h"
#include "features/input_normalization.h"
#include "hparams/hparams.h"
#include "toolkit/registration.h"
#include "train/asr_task.h"
#include "train/data_parallel.h"
#include "train/fused_adam.h"
#include "train/optimizer.h"
#include "train/optimizer_stepper.h"
#include "train/step_profile.h"
#include "train/train_config.h"
#include "train/train_logger.h"

using namespace masr;

namespace {

void require_cuda() {
  if (!torch::cuda::is_available()) FAIL("no CUDA device");
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.detach().cpu().to(at::kDouble) - b.detach().cpu().to(at::kDouble)).abs().max().item<double>();
}

// Random audio of three lengths (relative lengths < 1: padding must not leak) and tokens.
train::AsrBatch random_batch(int64_t vocab) {
  torch::manual_seed(11);
  train::AsrBatch b;
  const std::vector<int64_t> samples{32000, 24000, 17000};
  b.wav = torch::zeros({3, 32000});
  for (int64_t i = 0; i < 3; ++i) b.wav[i].narrow(0, 0, samples[i]).copy_(torch::randn({samples[i]}) * 0.1);
  b.wav_rel = torch::tensor({1.0f, 24000.0f / 32000, 17000.0f / 32000});
  b.tokens = torch::randint(3, vocab, {3, 6}, torch::kLong);
  b.tokens_rel = torch::tensor({1.0f, 5.0f / 6, 4.0f / 6});
  b.tokens_bos = torch::cat({torch::ones({3, 1}, torch::kLong), b.tokens}, 1);
  b.tokens_eos = torch::cat({b.tokens, torch::full({3, 1}, 2, torch::kLong)}, 1);
  b.tokens_eos_rel = torch::tensor({1.0f, 6.0f / 7, 5.0f / 7});
  b.ids = {"a", "b", "c"};
  b.words = {"", "", ""};
  b.audio_seconds = (32000 + 24000 + 17000) / 16000.0;
  return b;
}

// Every Dropout module to p = 0: the CPU and CUDA generators draw different masks (the CNN front
// end's dropout, for one, is not transformer_dropout).
void no_dropout(torch::nn::Module& model) {
  for (const auto& m : model.modules()) {
    if (auto* d = m->as<torch::nn::DropoutImpl>()) d->options.p(0.0);
  }
}

}  // namespace

TEST_CASE("CUDA Fbank and InputNormalization equal the CPU ones", "[.cuda]") {
  require_cuda();
  features::FbankConfig config;
  config.n_mels = 80;
  const features::Fbank fbank(config);
  torch::manual_seed(3);
  const at::Tensor wav = torch::randn({4, 48000}) * 0.1;
  const at::Tensor cpu = fbank(wav);
  const at::Tensor gpu = fbank(wav.cuda());
  CHECK(gpu.is_cuda());
  // Both compute the spectrum in float64; the differences are float32 rounding of the mel sums.
  CHECK(max_abs_diff(cpu, gpu) < 1e-3);  // dB

  features::InputNormalization cpu_norm(features::InputNormalizationConfig{});
  features::InputNormalization gpu_norm(features::InputNormalizationConfig{});
  gpu_norm->to(at::kCUDA);
  const at::Tensor rel = torch::tensor({1.0, 0.75, 0.5, 0.3});
  for (int64_t epoch = 1; epoch <= 2; ++epoch) {
    const at::Tensor a = cpu_norm->forward(cpu, rel, epoch);
    const at::Tensor b = gpu_norm->forward(gpu, rel, epoch);  // CPU lengths, GPU features
    CHECK(max_abs_diff(a, b) < 1e-3);
  }
  CHECK(gpu_norm->count() == 2);
  CHECK(max_abs_diff(cpu_norm->glob_mean(), gpu_norm->glob_mean()) < 1e-4);
  CHECK(max_abs_diff(cpu_norm->glob_std(), gpu_norm->glob_std()) < 1e-4);
}

TEST_CASE("CUDA S2S training step equals the CPU step: loss, gradients, clip, fused AdamW",
          "[.cuda]") {
  require_cuda();
  // cuDNN convolutions default to TF32 (10-bit mantissa) on this GPU: off for an fp32 comparison.
  const bool tf32 = at::globalContext().allowTF32CuDNN();
  at::globalContext().setAllowTF32CuDNN(false);
  toolkit::register_all();
  hparams::LoadOptions options;
  options.overrides = {{"transformer_dropout", "0.0"}};
  options.placeholder_value = "unused";
  const std::string file = std::string(MASR_SOURCE_DIR) + "/hparams/S2S/conmamba_tiny.yaml";
  const hparams::Hparams hp_cpu = hparams::load_file(file, options);
  const hparams::Hparams hp_gpu = hparams::load_file(file, options);
  train::TrainConfig config = train::train_config_from(hp_cpu);
  config.grad_accumulation_factor = 1;
  config.precision = runtime::Precision::kFp32;
  train::AsrTask cpu(hp_cpu), gpu(hp_gpu);
  {
    torch::NoGradGuard no_grad;
    const auto from = cpu.model().named_parameters();
    auto to = gpu.model().named_parameters();
    for (const auto& item : from) to[item.key()].copy_(item.value());
  }
  gpu.to(at::kCUDA);
  no_dropout(cpu.model());
  no_dropout(gpu.model());
  cpu.train(true);
  gpu.train(true);
  const train::AsrBatch batch = random_batch(config.output_neurons);
  const train::AsrBatch batch_gpu = batch.to(at::kCUDA);
  const train::LossOptions loss = train::loss_options_of(config);
  train::OptimizerStepper step_cpu(config, cpu.parameters(), false,
                                   std::make_shared<train::DataParallel>());
  train::OptimizerStepper step_gpu(config, gpu.parameters(), true,
                                   std::make_shared<train::DataParallel>());
  CHECK(train::FusedAdam::available(gpu.parameters()) == (TORCH_VERSION_MAJOR >= 2));
  {
    // Without augmentation first (no generator): the features, the model and the losses alone.
    const train::ForwardResult a = cpu.forward(batch, true, 1, nullptr, loss);
    const train::ForwardResult b = gpu.forward(batch_gpu, true, 1, nullptr, loss);
    INFO("no augmentation: CPU loss " << a.loss.item<double>() << ", CUDA loss "
                                      << b.loss.item<double>() << "; log p_ctc max difference "
                                      << max_abs_diff(a.p_ctc, b.p_ctc));
    CHECK(b.loss.item<double>() == Approx(a.loss.item<double>()).epsilon(1e-4));
  }
  double step_bound = 0.0;
  for (int step = 0; step < 3; ++step) {
    // The same augmentation draws on both sides: the generator is a CPU one.
    at::Generator g_cpu = features::make_generator(100 + step);
    at::Generator g_gpu = features::make_generator(100 + step);
    const train::ForwardResult a = cpu.forward(batch, true, 1, &g_cpu, loss);
    const train::ForwardResult b = gpu.forward(batch_gpu, true, 1, &g_gpu, loss);
    INFO("step " << step << ": CPU loss " << a.loss.item<double>() << ", CUDA loss "
                 << b.loss.item<double>());
    CHECK(b.loss.item<double>() == Approx(a.loss.item<double>()).epsilon(1e-4));
    CHECK(b.rel.is_cpu());
    CHECK(a.rel.equal(b.rel));
    step_bound += 2.0 * step_cpu.lr();  // this step's lr (Noam sets the next one after it)
    step_cpu.backward(a.loss);
    step_gpu.backward(b.loss);
    const auto pa = cpu.parameters();
    const auto pb = gpu.parameters();
    // Adam's first steps move each weight by about lr * sign(gradient): a weight whose gradient is
    // rounding noise (|g| << eps) may move either way on the two devices, so the largest difference
    // is bounded by twice the steps so far, and the mean difference (all weights) must be tiny.
    double worst = 0.0, sum = 0.0, count = 0.0;
    for (size_t i = 0; i < pa.size(); ++i) {
      const at::Tensor d = (pa[i].detach().cpu().to(at::kDouble) - pb[i].detach().cpu().to(at::kDouble)).abs();
      worst = std::max(worst, d.max().item<double>());
      sum += d.sum().item<double>(), count += static_cast<double>(d.numel());
    }
    INFO("largest parameter difference " << worst << ", mean " << sum / count);
    CHECK(worst <= step_bound * 1.05);
    CHECK(sum / count < 1e-6);
  }
  at::globalContext().setAllowTF32CuDNN(tf32);
}

TEST_CASE("fused Adam/AdamW and sync-free clipping equal torch::optim on CUDA", "[.cuda]") {
  require_cuda();
  for (const char* type : {"AdamW", "Adam"}) {
    for (bool amsgrad : {false, true}) {
      train::OptimizerConfig oc;
      oc.type = type;
      oc.lr = 1e-2;
      oc.weight_decay = 0.05;
      oc.amsgrad = amsgrad;
      torch::manual_seed(5);
      std::vector<at::Tensor> ref{torch::randn({7, 5}).cuda().requires_grad_(),
                                  torch::randn({5}).cuda().requires_grad_(),
                                  torch::randn({3}).cuda().requires_grad_()};
      std::vector<at::Tensor> fused;
      for (const auto& p : ref) fused.push_back(p.detach().clone().requires_grad_());
      auto opt_ref = train::make_optimizer(oc, ref);
      auto opt_fused = train::make_optimizer(oc, fused);
      REQUIRE(train::FusedAdam::available(fused) == (TORCH_VERSION_MAJOR >= 2));
      if (!train::FusedAdam::available(fused)) continue;
      train::FusedAdam runner(*opt_fused, oc);
      for (int step = 0; step < 4; ++step) {
        const at::Tensor g = torch::randn({7, 5}).cuda();
        for (auto* params : {&ref, &fused}) {
          ((*params)[0] * g).sum().add((*params)[1].pow(2).sum()).backward();
          // The third parameter gets no gradient on odd steps: it must not move then.
          if (step % 2 == 0) (*params)[2].sum().backward();
        }
        const double norm_ref = train::clip_gradients(ref, 1.0).item<double>();
        const double norm_fused = train::clip_gradients(fused, 1.0).item<double>();
        CHECK(norm_fused == Approx(norm_ref).epsilon(1e-6));
        opt_ref->step();
        runner.step();
        opt_ref->zero_grad();
        opt_fused->zero_grad();
        for (size_t i = 0; i < ref.size(); ++i) {
          INFO(type << (amsgrad ? " amsgrad" : "") << " step " << step << " parameter " << i);
          CHECK(max_abs_diff(ref[i], fused[i]) < 1e-6);
        }
      }
      // The step counts (checkpoint state) match torch::optim's.
      const std::string a = train::optimizer_bytes(*opt_ref);
      const std::string b = train::optimizer_bytes(*opt_fused);
      CHECK(a.size() == b.size());
    }
  }
}

namespace {

// Host synchronizations per profiled step, by phase (LibTorch's sync debug mode, as --profile).
std::map<std::string, double> syncs_by_phase(const train::StepProfile& profile) {
  std::map<std::string, double> out;
  for (const auto& p : profile.summary()) out[p.name] = p.syncs;
  return out;
}

// A small tanh perceptron on `device`: 3 inputs, 4 hidden units, 1 output.
std::vector<at::Tensor> perceptron(const at::Device& device) {
  at::Generator g = features::make_generator(21);
  std::vector<at::Tensor> p{torch::randn({4, 3}, g), torch::randn({4}, g), torch::randn({1, 4}, g)};
  for (auto& t : p) t = t.to(device).requires_grad_();
  return p;
}

at::Tensor perceptron_loss(const std::vector<at::Tensor>& p, const at::Tensor& x,
                           const at::Tensor& y) {
  const at::Tensor h = torch::tanh(torch::matmul(x, p[0].t()) + p[1]);
  return (torch::matmul(h, p[2].t()).squeeze(1) - y).pow(2).mean();
}

}  // namespace

TEST_CASE("fused AdamW/Adam: a found_inf step changes nothing; stored step counts skip it",
          "[.cuda]") {
  require_cuda();
  for (const char* type : {"AdamW", "Adam"}) {
    train::OptimizerConfig oc;
    oc.type = type;
    oc.lr = 1e-2;
    oc.weight_decay = 0.05;
    torch::manual_seed(6);
    std::vector<at::Tensor> ref{torch::randn({7, 5}).cuda().requires_grad_(),
                                torch::randn({5}).cuda().requires_grad_()};
    std::vector<at::Tensor> fused;
    for (const auto& p : ref) fused.push_back(p.detach().clone().requires_grad_());
    auto opt_ref = train::make_optimizer(oc, ref);
    auto opt_fused = train::make_optimizer(oc, fused);
    if (!train::FusedAdam::available(fused)) {
      WARN("this LibTorch has no fused Adam kernels");
      return;
    }
    train::FusedAdam runner(*opt_fused, oc);
    const auto flag = [](double v) {
      return at::full({}, v, at::dtype(at::kFloat).device(at::kCUDA));
    };
    for (int step = 0; step < 4; ++step) {
      const at::Tensor g = torch::randn({7, 5}).cuda();
      for (auto* params : {&ref, &fused})
        ((*params)[0] * g).sum().add((*params)[1].pow(2).sum()).backward();
      std::vector<at::Tensor> before;
      for (const auto& p : fused) before.push_back(p.detach().clone());
      if (step == 1) {
        runner.step(flag(1.0));  // skipped: the reference takes no step either
        for (size_t i = 0; i < fused.size(); ++i) CHECK(torch::equal(fused[i].detach(), before[i]));
      } else {
        runner.step(flag(0.0));
        opt_ref->step();
      }
      opt_ref->zero_grad();
      opt_fused->zero_grad();
      for (size_t i = 0; i < ref.size(); ++i) {
        INFO(type << " step " << step << " parameter " << i);
        CHECK(max_abs_diff(ref[i], fused[i]) < 1e-6);
      }
    }
    runner.store_steps();  // three steps taken, one skipped
    for (auto* opt : {opt_ref.get(), opt_fused.get()}) {
      for (const auto& item : opt->state()) {
        const int64_t steps = std::string(type) == "AdamW"
                                  ? static_cast<torch::optim::AdamWParamState&>(*item.second).step()
                                  : static_cast<torch::optim::AdamParamState&>(*item.second).step();
        CHECK(steps == 3);
      }
    }
  }
}

TEST_CASE("CUDA optimizer steps and a non-finite loss's skip run without a host sync", "[.cuda]") {
  require_cuda();
  train::TrainConfig config;
  config.optimizer.type = "AdamW";
  config.optimizer.lr = 0.05;
  config.grad_accumulation_factor = 1;
  config.max_grad_norm = 0.5;
  config.precision = runtime::Precision::kFp32;
  const std::vector<at::Tensor> gpu = perceptron(at::kCUDA);
  const std::vector<at::Tensor> cpu = perceptron(at::kCPU);
  if (!train::FusedAdam::available(gpu)) {
    WARN("this LibTorch has no fused Adam kernels: the step reads its norm back");
    return;
  }
  train::OptimizerStepper step_gpu(config, gpu, true, std::make_shared<train::DataParallel>());
  train::OptimizerStepper step_cpu(config, cpu, false, std::make_shared<train::DataParallel>());
  // Batches made before the profile (their copies to the GPU are not part of the step).
  std::vector<at::Tensor> xs, ys, xs_gpu, ys_gpu;
  for (int i = 0; i < 4; ++i) {
    at::Generator g = features::make_generator(50 + static_cast<uint64_t>(i));
    xs.push_back(torch::randn({8, 3}, g));
    ys.push_back(torch::randn({8}, g));
    if (i == 2) xs.back()[1][0] = std::numeric_limits<double>::quiet_NaN();
    xs_gpu.push_back(xs.back().cuda());
    ys_gpu.push_back(ys.back().cuda());
  }
  train::LossTotals totals;
  train::StepProfile profile(at::Device(at::kCUDA));
  {
    train::ActiveProfile active(&profile);
    for (size_t i = 0; i < xs.size(); ++i) {
      profile.begin_step("loss");
      const at::Tensor loss = perceptron_loss(gpu, xs_gpu[i], ys_gpu[i]);
      train::profile_phase("loss-check");
      totals.add(loss);
      step_gpu.backward(loss);
      profile.end_step();
    }
  }
  for (const auto& [phase, syncs] : syncs_by_phase(profile)) {
    INFO("phase " << phase);
    CHECK(syncs == 0.0);
  }
  for (size_t i = 0; i < xs.size(); ++i) step_cpu.backward(perceptron_loss(cpu, xs[i], ys[i]));
  const train::SkippedSteps skipped = step_gpu.take_skipped();
  CHECK(skipped.steps == 1);
  CHECK(skipped.batches == 1);
  CHECK(step_cpu.take_skipped().steps == 1);
  for (size_t i = 0; i < gpu.size(); ++i) CHECK(max_abs_diff(gpu[i], cpu[i]) < 1e-5);
  CHECK(totals.read().epoch.count == 3);
}

TEST_CASE("CUDA augmentation: no host sync; lengths and row map stay on the host", "[.cuda]") {
  require_cuda();
  auto drop = [](const std::string& replace, int64_t dim) {
    features::SpectrogramDropConfig c;
    c.drop_length_low = 3, c.drop_length_high = 8, c.drop_count_low = 2, c.drop_count_high = 4;
    c.replace = replace, c.dim = dim;
    return std::make_shared<features::SpectrogramDrop>(c);
  };
  features::AugmenterConfig config;
  config.min_augmentations = 3;
  config.max_augmentations = 3;
  const features::Augmenter augmenter(
      config, {drop("mean", 1), drop("mean", 2),
               std::make_shared<features::Warping>(features::WarpingConfig{})});
  const at::Tensor x = torch::randn({3, 80, 20});
  const at::Tensor x_gpu = x.cuda();
  const at::Tensor lengths = torch::tensor({1.0f, 0.7f, 0.5f});
  at::Generator g_cpu = features::make_generator(8), g_gpu = features::make_generator(8);
  const features::AugmentBatch a = augmenter.apply(x, lengths, g_cpu);
  train::StepProfile profile(at::Device(at::kCUDA));
  features::AugmentBatch b;
  {
    train::ActiveProfile active(&profile);
    profile.begin_step("augment");
    b = augmenter.apply(x_gpu, lengths, g_gpu);
    profile.end_step();
  }
  CHECK(syncs_by_phase(profile)["augment"] == 0.0);
  CHECK(b.x.is_cuda());
  CHECK(b.lengths.is_cpu());
  CHECK(b.source.is_cpu());
  CHECK(torch::equal(a.lengths, b.lengths));
  CHECK(max_abs_diff(a.x, b.x) < 1e-4);
}

TEST_CASE("CUDA augmentation equals the CPU one at training batch sizes", "[.cuda]") {
  require_cuda();
  // The time and frequency drops of hparams/CTC/conmamba_synth_gpu.yaml on batches of the sizes
  // its 300-second batches make (the test above uses a 3 x 80 x 20 one), queued behind other GPU
  // work so that the host runs ahead of the device as in training.
  auto drop = [](int64_t low, int64_t high, int64_t count_high, int64_t dim) {
    features::SpectrogramDropConfig c;
    c.drop_length_low = low, c.drop_length_high = high, c.drop_count_low = 1;
    c.drop_count_high = count_high, c.replace = "mean", c.dim = dim;
    return std::make_shared<features::SpectrogramDrop>(c);
  };
  features::AugmenterConfig config;
  config.min_augmentations = 2;
  config.max_augmentations = 2;
  const features::Augmenter augmenter(config, {drop(6, 12, 5, 1), drop(10, 20, 3, 2)});
  torch::manual_seed(5);
  for (const auto& [batch, frames] : std::vector<std::pair<int64_t, int64_t>>{{128, 174}, {65, 460}, {14, 960}}) {
    const at::Tensor x = torch::randn({batch, frames, 80});
    const at::Tensor lengths = torch::rand({batch}, torch::kFloat64) * 0.5 + 0.5;
    const at::Tensor busy = torch::randn({4096, 4096}, at::kCUDA);
    at::Tensor sink = busy;
    for (int i = 0; i < 20; ++i) sink = at::matmul(sink, busy).tanh();  // keeps the GPU queue deep
    const at::Tensor x_gpu = x.cuda();
    at::Generator g_cpu = features::make_generator(frames), g_gpu = features::make_generator(frames);
    const features::AugmentBatch a = augmenter.apply(x, lengths, g_cpu);
    const features::AugmentBatch b = augmenter.apply(x_gpu, lengths, g_gpu);
    INFO("batch " << batch << " x " << frames << " x 80");
    CHECK(torch::equal(a.lengths, b.lengths));
    const double changed = a.x.ne(x).to(at::kFloat).mean().item<double>();
    CHECK(changed > 0.05);  // the drops did change the features (about 20-50 % of the values)
    CHECK(b.x.cpu().ne(x).to(at::kFloat).mean().item<double>() == Approx(changed).margin(1e-6));
    CHECK(max_abs_diff(a.x, b.x) < 1e-5);  // the replaced values are the batch mean, float32 sums
    CHECK(std::isfinite(sink.sum().item<double>()));
  }
}

TEST_CASE("CUDA trainer forward with each utterance's own lengths runs without a host sync",
          "[.cuda]") {
  require_cuda();
  toolkit::register_all();
  hparams::LoadOptions options;
  options.placeholder_value = "unused";
  const hparams::Hparams hp = hparams::load_file(
      std::string(MASR_SOURCE_DIR) + "/hparams/S2S/conmamba_tiny.yaml", options);
  const train::TrainConfig config = train::train_config_from(hp);
  train::AsrTask task(hp);
  task.to(at::kCUDA);
  task.train(true);
  const train::AsrBatch batch = random_batch(config.output_neurons).to(at::kCUDA);
  const train::LossOptions loss = train::loss_options_of(config);
  (void)task.forward(batch, true, 1, nullptr, loss);  // first calls: cuDNN plans, allocations
  train::StepProfile profile(at::Device(at::kCUDA));
  {
    train::ActiveProfile active(&profile);
    for (int step = 0; step < 2; ++step) {
      profile.begin_step("forward");
      const train::ForwardResult r = task.forward(batch, true, 1, nullptr, loss);
      train::profile_phase("backward");
      r.loss.backward();
      profile.end_step();
    }
  }
  // The frame counts (filterbank, front end, encoder, losses) are computed on the host and
  // queued through pinned memory; none of the forward's phases waits for the device.
  for (const auto& [phase, syncs] : syncs_by_phase(profile)) {
    INFO("phase " << phase);
    if (phase != "backward" && phase != "step") CHECK(syncs == 0.0);
  }
}
