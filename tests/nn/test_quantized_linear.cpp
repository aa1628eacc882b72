// tests/nn/test_quantized_linear.cpp
// int8 decoding on CPUs: one quantized Linear against its float layer (within the bound of its
// int8 steps), the engine choice and its error, int8 layers swapped into a ConMamba encoder's own
// modules, whole models int8 vs fp32 (a tiny one, and the bundled one on its example audio), and
// the errors for other encoders, other devices, training mode and `decode --device cuda`.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "audio/audio_reader.h"
#include "core/error.h"
#include "decode/file_transcriber.h"
#include "models/asr_model.h"
#include "models/int8_encoder.h"
#include "models/transformer_asr.h"
#include "nn/quantized_linear.h"
#include "../models/tiny_asr.h"

namespace {

using masr::nn::QuantizedLinear;

double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
}

double rel_rms(const at::Tensor& y, const at::Tensor& reference) {
  return ((y - reference).pow(2).mean() / reference.pow(2).mean()).sqrt().item<double>();
}

// QuantizedLinear's worst case per output element (nn/quantized_linear.h): weight rounding
// s_i / 2 * |x_r - c_r|_1 plus input rounding h_r / L * (|W_i|_1 + in * s_i / 2).
at::Tensor int8_bound(const at::Tensor& x, const at::Tensor& w, const QuantizedLinear& q) {
  const at::Tensor rows = x.reshape({-1, x.size(-1)});
  const at::Tensor s = q.weight_scales().to(at::kFloat);  // (out)
  const double levels = q.engine().reduce_range ? 127.0 : 255.0;
  const at::Tensor lo = rows.amin({1}, true), hi = rows.amax({1}, true);
  const at::Tensor half = (hi - lo) / 2, center = lo + half * (levels + 1) / levels;
  const at::Tensor centered_l1 = (rows - center).abs().sum(1, true);  // (n, 1)
  const at::Tensor w_l1 = w.abs().sum(1) + s / 2 * w.size(1);        // (out)
  return centered_l1 * (s / 2) + half / levels * w_l1;
}

std::string run_mamba_asr(const std::string& args, int* status) {
  const std::string command = std::string(MASR_BINARY_DIR) + "/bin/mamba-asr " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  const int raw = pclose(pipe.release());
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

masr::models::TransformerASRConfig tiny_conmamba(const std::string& attention, bool causal) {
  masr::models::TransformerASRConfig c;
  c.tgt_vocab = 11;
  c.input_size = 640;
  c.d_model = 32;
  c.nhead = 4;
  c.num_encoder_layers = 2;
  c.num_decoder_layers = 0;
  c.d_ffn = 64;
  c.kernel_size = 7;
  c.encoder_module = "conmamba";
  c.attention_type = attention;  // regularMHA: absolute positional encoding added to the input
  c.normalize_before = true;
  c.causal = causal;
  c.mamba.d_state = 8;
  return c;
}

std::vector<std::string> parameter_names(const torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& p : m.named_parameters()) names.push_back(p.key());
  std::sort(names.begin(), names.end());
  return names;
}

const std::string kBundled = std::string(MASR_SOURCE_DIR) + "/models/conmamba-ctc-synth-en";

}  // namespace

TEST_CASE("an int8 Linear stays within the bound of its int8 steps of the float layer",
          "[nn][int8]") {
  const masr::nn::Int8Engine engine = masr::nn::int8_engine();
  INFO("engine " << engine.name);
  torch::manual_seed(3);
  // The bundled model's shapes: feed-forward in/out, Mamba in_proj / out_proj, a pointwise conv.
  for (const auto& [in, out, bias] : std::vector<std::tuple<int64_t, int64_t, bool>>{
           {192, 768, true}, {768, 192, true}, {192, 768, false}, {384, 192, false},
           {192, 384, true}}) {
    INFO(in << " -> " << out << (bias ? " with bias" : ""));
    torch::nn::Linear linear(torch::nn::LinearOptions(in, out).bias(bias));
    // A row of zeros, and a row 100x larger than the rest: per-channel steps handle both.
    {
      torch::NoGradGuard no_grad;
      linear->weight[0].zero_();
      linear->weight[1].mul_(100.0);
    }
    const QuantizedLinear q(*linear, engine);
    REQUIRE(q.in_features() == in);
    REQUIRE(q.out_features() == out);
    const at::Tensor expected_steps =
        (linear->weight.abs().amax({1}) / 127.0).clamp_min(1.1920929e-07).to(at::kDouble);
    CHECK(rel_diff(q.weight_scales(), expected_steps) < 1e-6);
    // (B, T, in) activations with a few outliers and an offset row, as LayerNorm / GELU give.
    at::Tensor x = torch::randn({3, 50, in});
    x.index_put_({0, 7, 0}, 12.0);
    x.index_put_({2, 3, in - 1}, -9.0);
    x[1][4].add_(5.0);
    x[2][9].fill_(0.25);  // a constant frame: exact (its offset carries it)
    torch::NoGradGuard no_grad;
    const at::Tensor reference = linear->forward(x);
    const at::Tensor y = q.forward(x);
    REQUIRE(y.sizes() == reference.sizes());
    REQUIRE(y.scalar_type() == at::kFloat);
    const at::Tensor bound = int8_bound(x, linear->weight, q).view(reference.sizes());
    const at::Tensor excess = (y - reference).abs() - bound * 1.001 - 1e-4;
    CHECK(excess.max().item<double>() <= 0.0);
    CHECK((y[2][9] - reference[2][9]).abs().max().item<double>() < 1e-4);
    // The bound is a worst case; per-frame inputs keep the typical error near 1.5 % of the
    // output's RMS (measured 1.3-1.5 % for these shapes with onednn; 3.7-4.5 % with one input
    // step for the whole tensor, as torch.ao's dynamic Linear does).
    CHECK(rel_rms(y, reference) < 0.03);
    // A transposed (non-contiguous) input gives the same result.
    const at::Tensor xt = x.reshape({-1, in}).t().contiguous().t();
    CHECK(q.forward(xt).sub(y.reshape({-1, out})).abs().max().item<double>() < 1e-5);
    // A frame's input step is its own: alone it gives the same output as in the batch. (With the
    // extremes mapped onto ties between grid points, oneDNN's paths for other row counts rounded
    // them differently: up to 127 accumulator units for the 100x row.)
    const at::Tensor alone = q.forward(x[1].narrow(0, 4, 1));
    const at::Tensor reference_alone = linear->forward(x[1].narrow(0, 4, 1));
    CHECK(((alone - reference_alone).abs() - bound[1].narrow(0, 4, 1) * 1.001 - 1e-4)
              .max()
              .item<double>() <= 0.0);
    CHECK(rel_diff(alone, y[1].narrow(0, 4, 1)) < 1e-5);
  }
}

TEST_CASE("the int8 engine is fbgemm, then onednn, then qnnpack (ARM: qnnpack first)",
          "[nn][int8]") {
  using c10::QEngine;
  const auto onednn = masr::nn::choose_int8_engine(
      {QEngine::NoQEngine, QEngine::ONEDNN, QEngine::QNNPACK}, false);
  CHECK(onednn.name == "onednn");
  CHECK(onednn.reduce_range);
  CHECK(masr::nn::choose_int8_engine({QEngine::QNNPACK, QEngine::ONEDNN, QEngine::FBGEMM}, false)
            .name == "fbgemm");
  const auto arm = masr::nn::choose_int8_engine({QEngine::ONEDNN, QEngine::QNNPACK}, true);
  CHECK(arm.name == "qnnpack");
  CHECK_FALSE(arm.reduce_range);
  CHECK_THROWS_WITH(masr::nn::choose_int8_engine({QEngine::NoQEngine}, true),
                    Catch::Contains("no quantized engine for ARM") &&
                        Catch::Contains("it has none") && Catch::Contains("--precision fp32"));
  CHECK_THROWS_WITH(masr::nn::choose_int8_engine({}, false),
                    Catch::Contains("int8 needs fbgemm or onednn"));
  CHECK_NOTHROW(masr::nn::int8_engine());  // this LibTorch has one
}

TEST_CASE("int8 layers swapped into a ConMamba encoder keep its parameters and its output",
          "[nn][int8]") {
  for (const auto& [attention, causal] : std::vector<std::pair<std::string, bool>>{
           {"RelPosMHAXL", false}, {"regularMHA", false}, {"RelPosMHAXL", true}}) {
    INFO(attention << (causal ? ", causal (unidirectional Mamba)" : ""));
    torch::manual_seed(21);
    masr::models::TransformerASR asr(tiny_conmamba(attention, causal));
    asr->eval();
    const at::Tensor src = torch::randn({3, 20, 640});
    const at::Tensor lengths = torch::tensor({20, 13, 6}, torch::kLong);
    torch::NoGradGuard no_grad;
    const at::Tensor expected = asr->encode(src, lengths);
    const auto names = parameter_names(*asr);
    const int64_t count = masr::nn::count_parameters(*asr);
    // Per layer: 2 x 2 feed-forward Linears, in_proj, out_proj, the 2 pointwise layers.
    const masr::models::Int8Summary summary = masr::models::quantize_encoder_int8(*asr);
    CHECK(summary.layers == 16);
    CHECK(summary.str().find("16 Linear layers") == 0);
    CHECK(parameter_names(*asr) == names);
    CHECK(masr::nn::count_parameters(*asr) == count);
    CHECK(masr::models::quantize_encoder_int8(*asr).layers == 0);  // already done
    const at::Tensor quantized = asr->encode(src, lengths);
    for (int64_t b = 0; b < 3; ++b) {
      INFO("utterance " << b);
      const int64_t len = lengths[b].item<int64_t>();
      CHECK(rel_diff(quantized[b].narrow(0, 0, len), expected[b].narrow(0, 0, len)) < 0.05);
      // Each utterance alone gives nearly what it gives in the batch: inputs are quantized per
      // frame, but the float layers between differ by ~1e-7 across batch sizes, which can move
      // a value across an int8 rounding boundary (8 of these 9 cases measured exact, one 0.46 %).
      const at::Tensor alone = asr->encode(src.narrow(0, b, 1).narrow(1, 0, len),
                                           torch::tensor({len}, torch::kLong));
      CHECK(rel_diff(alone[0], quantized[b].narrow(0, 0, len)) < 0.01);
    }
  }
}

TEST_CASE("an int8 tiny model's CTC log-probabilities stay close to fp32's", "[nn][int8]") {
  // Random weights (d 64, one layer); measured max |delta log p| 0.017 and 0.024 (onednn).
  auto model = masr::testing::build(masr::testing::tiny_yaml(0, 64), 5);
  torch::manual_seed(9);
  (void)model->features(torch::randn({2, 16000}) * 0.1, {}, 1, /*update_norm=*/true);
  model->eval();
  const at::Tensor wavs = torch::randn({2, 16000}) * 0.1;
  const at::Tensor samples = torch::tensor({16000, 11000}, torch::kLong);
  c10::InferenceMode inference;
  const auto fp32 = model->encode_audio(wavs, samples);
  const at::Tensor lp32 = model->ctc_log_probs(fp32.out);
  const int64_t parameters = model->num_parameters();
  CHECK_FALSE(model->is_int8());
  const std::string summary = model->quantize_int8();
  INFO(summary);
  CHECK(summary.find("8 Linear layers") == 0);  // one encoder layer
  CHECK(model->is_int8());
  CHECK(model->quantize_int8() == summary);  // once
  CHECK(model->num_parameters() == parameters);
  const auto int8 = model->encode_audio(wavs, samples);
  CHECK(torch::equal(int8.lengths, fp32.lengths));
  const at::Tensor lp8 = model->ctc_log_probs(int8.out);
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t len = fp32.lengths[b].item<int64_t>();
    const at::Tensor d = (lp8[b].narrow(0, 0, len) - lp32[b].narrow(0, 0, len)).abs();
    INFO("utterance " << b << ": max |delta log p| " << d.max().item<double>());
    CHECK(d.max().item<double>() < 0.1);
  }
}

TEST_CASE("the bundled model decoded int8 keeps its fp32 frame decisions on real audio",
          "[nn][int8][bundled]") {
  // The three test-voice utterances of models/conmamba-ctc-synth-en/examples: the greedy CTC path
  // and the log-probability of fp32's best token per frame. Measured (onednn): 197 of 197 frames
  // keep their best token, |delta log p| of it max 0.30, mean 0.0077.
  auto fp32_model = masr::decode::load_asr_model(kBundled);
  auto int8_model = masr::decode::load_asr_model(kBundled);
  int8_model->eval();
  const std::string summary = int8_model->quantize_int8();
  CHECK(summary.find("40 Linear layers") == 0);  // 5 layers x 8
  int64_t frames = 0, same = 0;
  double worst = 0.0, sum = 0.0;
  for (const char* id :
       {"en_us_nyc_m4-000499", "en_gb_x_gbcwmd_m5-002757", "en_gb_x_gbclan_m1-000167"}) {
    INFO(id);
    const auto audio = masr::audio::read_audio(kBundled + "/examples/" + id + ".wav", 16000);
    const at::Tensor wavs = torch::from_blob(const_cast<float*>(audio.samples.data()),
                                             {1, static_cast<int64_t>(audio.samples.size())})
                                .clone();
    const at::Tensor samples = torch::tensor({wavs.size(1)}, torch::kLong);
    c10::InferenceMode inference;
    const at::Tensor a = fp32_model->ctc_log_probs(fp32_model->encode_audio(wavs, samples).out)[0];
    const at::Tensor b = int8_model->ctc_log_probs(int8_model->encode_audio(wavs, samples).out)[0];
    const at::Tensor best = a.argmax(-1);
    frames += a.size(0);
    same += b.argmax(-1).eq(best).sum().item<int64_t>();
    const at::Tensor at_best = (a.gather(1, best.unsqueeze(1)) - b.gather(1, best.unsqueeze(1)));
    worst = std::max(worst, at_best.abs().max().item<double>());
    sum += at_best.abs().sum().item<double>();
  }
  INFO(same << " of " << frames << " frames keep their best token; |delta log p| of it: max "
            << worst << ", mean " << sum / static_cast<double>(frames));
  CHECK(static_cast<double>(same) >= 0.98 * static_cast<double>(frames));
  CHECK(worst < 1.0);
  CHECK(sum / static_cast<double>(frames) < 0.05);
}

TEST_CASE("int8 is refused for other encoders, other devices and training", "[nn][int8]") {
  masr::models::TransformerASRConfig conformer = tiny_conmamba("RelPosMHAXL", false);
  conformer.encoder_module = "conformer";
  masr::models::TransformerASR asr(conformer);
  asr->eval();
  CHECK_THROWS_WITH(masr::models::quantize_encoder_int8(*asr),
                    Catch::Contains("implemented for ConMamba encoders") &&
                        Catch::Contains("'conformer'") && Catch::Contains("--precision fp32"));

  masr::models::TransformerASR training(tiny_conmamba("RelPosMHAXL", false));
  CHECK_THROWS_WITH(masr::models::quantize_encoder_int8(*training),
                    Catch::Contains("training mode"));

  auto model = masr::testing::build(masr::testing::tiny_yaml(0), 5);
  (void)model->features(torch::randn({1, 16000}) * 0.1, {}, 1, /*update_norm=*/true);
  model->eval();
  model->quantize_int8();
  try {
    model->to(c10::Device("cuda"));
    FAIL("an int8 model moved to CUDA");
  } catch (const masr::Error& e) {
    CHECK(e.kind() == masr::ErrorKind::kConfig);
    CHECK_THAT(e.what(), Catch::Contains("int8 model runs on the CPU"));
  }
  CHECK(model->device().is_cpu());
  CHECK_THROWS_WITH(model->train(), Catch::Contains("int8 model is for decoding only"));
  // Modules put in training mode behind the model's back refuse to run int8.
  model->module().train(true);
  CHECK_THROWS_WITH(model->encode_audio(torch::zeros({1, 8000}), torch::tensor({8000})),
                    Catch::Contains("decoding only"));
}

TEST_CASE("decode --precision int8 on a GPU device is a config error before anything loads",
          "[nn][int8][cli]") {
  int status = -1;
  const std::string out = run_mamba_asr("--device cuda decode --precision int8 --model " +
                                            kBundled + " " + kBundled +
                                            "/examples/en_us_nyc_m4-000499.wav",
                                        &status);
  INFO(out);
  CHECK(status == 3);  // ExitCode::kConfig
  CHECK_THAT(out, Catch::Contains("--precision int8 runs on the CPU") &&
                      Catch::Contains("--device cuda"));
}
