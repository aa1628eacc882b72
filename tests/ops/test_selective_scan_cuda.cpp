// tests/ops/test_selective_scan_cuda.cpp
// The CUDA selective scan against the CPU implementation (forward and every gradient, fresh random
// inputs, many shapes, both directions, padded batches), its determinism, and its timing.
// Hidden tags: run on a GPU machine with  test_masr "[.cuda]"  and  test_masr "[.cuda-bench]".
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "ops/causal_conv.h"
#include "ops/selective_scan_cuda.h"
#include "scan_test_util.h"

#ifdef MASR_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#endif

using masr::test::ScanCase;
using masr::test::ScanInputSet;

namespace {

const char* const kNames[] = {"u", "delta", "A", "B", "C", "D", "z", "delta_bias"};

bool cuda_ready() {
#ifdef MASR_WITH_CUDA
  return torch::cuda::is_available();
#else
  return false;
#endif
}

// Stated tolerances: max |cuda - cpu| / max |cpu| per tensor. The kernels compute in float32
// (exp2 on the special-function unit, ~2^-22 relative) and round results to the input dtype.
struct Tolerance {
  double forward, gradient;
};
Tolerance tolerance_for(at::ScalarType t) {
  if (t == at::kFloat) return {2e-4, 1e-3};
  if (t == at::kHalf) return {3e-3, 5e-3};
  return {1.5e-2, 2e-2};  // bfloat16: 8-bit mantissa, 2^-9 rounding of each output
}

// The input set rounded to `dtype` (so CPU and CUDA see the same values), in float32 on the CPU.
ScanInputSet rounded(const ScanInputSet& s, at::ScalarType dtype) {
  ScanInputSet r = s;
  for (at::Tensor* t : {&r.u, &r.delta, &r.B, &r.C, &r.z}) {
    if (t->defined()) *t = t->to(dtype).to(at::kFloat);
  }
  return r;
}

// On the GPU: activations in dtype, A/D/bias in float32, lengths stay int64 on the CPU.
ScanInputSet on_cuda(const ScanInputSet& s, at::ScalarType dtype) {
  ScanInputSet r = s;
  for (at::Tensor* t : {&r.u, &r.delta, &r.B, &r.C, &r.z}) {
    if (t->defined()) *t = t->to(at::kCUDA, dtype);
  }
  for (at::Tensor* t : {&r.A, &r.D, &r.bias}) {
    if (t->defined()) *t = t->to(at::kCUDA);
  }
  return r;
}

std::string describe(const ScanCase& c, at::ScalarType dtype) {
  return std::string(c10::toString(dtype)) + (c.reverse ? " reverse" : " forward") +
         (c.use_z ? " z" : "") + (c.use_D ? " D" : "") + (c.use_bias ? " bias" : "") +
         (c.softplus ? " softplus" : "") + (c.use_lengths ? " lengths" : "") +
         " B=" + std::to_string(c.batch) + " D=" + std::to_string(c.channels) +
         " L=" + std::to_string(c.time) + " N=" + std::to_string(c.state);
}

std::vector<ScanCase> shapes() {
  std::vector<ScanCase> out;
  auto add = [&](int64_t b, int64_t d, int64_t l, int64_t n) {
    ScanCase c;
    c.batch = b, c.channels = d, c.time = l, c.state = n;
    out.push_back(c);
  };
  add(2, 3, 7, 4);       // odd sizes, one warp of states
  add(3, 40, 1, 16);     // length 1
  add(3, 70, 37, 5);     // channels not a multiple of 32, odd state count
  add(2, 32, 50, 24);    // 8 warps of states
  add(2, 33, 100, 64);   // the largest state size
  add(4, 64, 2000, 16);  // a long sequence
  add(5, 96, 333, 16);   // Mamba-like, padded batch
  return out;
}

void compare_case(const ScanCase& c, at::ScalarType dtype, uint64_t seed) {
  INFO(describe(c, dtype));
  const Tolerance tol = tolerance_for(dtype);
  ScanInputSet cpu = rounded(masr::test::random_scan_inputs(c, at::kFloat, seed), dtype);
  if (c.use_lengths && c.batch > 2) cpu.lengths[2] = 0;  // an empty utterance
  // Without softplus, delta + bias must stay a positive step: a negative one makes the state grow
  // as exp(|dt A| t) and overflow float32 within tens of frames, in any implementation.
  if (!c.softplus && cpu.bias.defined()) cpu.bias = cpu.bias.abs() * 0.1;
  const at::Tensor weight = torch::randn({c.batch, c.channels, c.time}).to(dtype).to(at::kFloat);
  const ScanInputSet gpu = on_cuda(cpu, dtype);

  const at::Tensor want = masr::test::run_fast(cpu, c);
  const at::Tensor got = masr::test::run_fast(gpu, c);
  REQUIRE(got.is_cuda());
  CHECK(got.scalar_type() == dtype);
  const at::Tensor got_cpu = got.cpu().to(at::kFloat);
  CHECK_FALSE(got_cpu.isnan().any().item<bool>());
  CHECK(masr::test::relative_error(got_cpu, want) <= tol.forward);

  const auto want_grads = masr::test::scan_gradients(cpu, c, weight, masr::test::run_fast);
  const auto got_grads =
      masr::test::scan_gradients(gpu, c, weight.to(at::kCUDA, dtype), masr::test::run_fast);
  for (size_t i = 0; i < want_grads.size(); ++i) {
    INFO("gradient of " << kNames[i]);
    REQUIRE(want_grads[i].defined() == got_grads[i].defined());
    if (!want_grads[i].defined()) continue;
    const at::Tensor g = got_grads[i].cpu().to(at::kFloat);
    CHECK_FALSE(g.isnan().any().item<bool>());
    CHECK(masr::test::relative_error(g, want_grads[i], 1e-6) <= tol.gradient);
  }
}

}  // namespace

TEST_CASE("CUDA selective_scan matches the CPU scan: forward and gradients, many shapes",
          "[.cuda]") {
  REQUIRE(cuda_ready());
  uint64_t seed = 500;
  for (at::ScalarType dtype : {at::kFloat, at::kHalf, at::kBFloat16}) {
    for (ScanCase c : shapes()) {
      for (bool reverse : {false, true}) {
        c.reverse = reverse;
        compare_case(c, dtype, seed++);
      }
    }
  }
}

TEST_CASE("CUDA selective_scan matches the CPU scan with each option off", "[.cuda]") {
  REQUIRE(cuda_ready());
  uint64_t seed = 900;
  for (int mask = 0; mask < 64; ++mask) {
    ScanCase c;
    c.batch = 3, c.channels = 35, c.time = 41, c.state = 16;
    c.use_z = mask & 1;
    c.use_D = mask & 2;
    c.use_bias = mask & 4;
    c.softplus = mask & 8;
    c.use_lengths = mask & 16;
    c.reverse = mask & 32;
    compare_case(c, at::kFloat, seed++);
  }
}

TEST_CASE("CUDA selective_scan backward is bitwise reproducible", "[.cuda]") {
  REQUIRE(cuda_ready());
  ScanCase c;
  c.batch = 4, c.channels = 256, c.time = 300, c.state = 16;
  const ScanInputSet gpu =
      on_cuda(masr::test::random_scan_inputs(c, at::kFloat, 77), at::kBFloat16);
  const at::Tensor weight = torch::randn({c.batch, c.channels, c.time}).to(at::kCUDA);
  const auto first = masr::test::scan_gradients(gpu, c, weight, masr::test::run_fast);
  const auto second = masr::test::scan_gradients(gpu, c, weight, masr::test::run_fast);
  for (size_t i = 0; i < first.size(); ++i) {
    INFO("gradient of " << kNames[i]);
    CHECK(torch::equal(first[i], second[i]));
  }
}

namespace {

masr::ops::ScanDirection direction_of(const ScanInputSet& s) {
  masr::ops::ScanDirection d;
  d.u = s.u, d.delta = s.delta, d.A = s.A, d.B = s.B, d.C = s.C, d.D = s.D, d.delta_bias = s.bias;
  return d;
}

// The two outputs, then the gradients of sum(wf * yf) + sum(wr * yr) for `leaves`.
std::vector<at::Tensor> outputs_and_grads(const at::Tensor& yf, const at::Tensor& yr,
                                          const at::Tensor& wf, const at::Tensor& wr,
                                          const std::vector<at::Tensor*>& leaves) {
  ((yf.to(at::kFloat) * wf.to(at::kFloat)).sum() + (yr.to(at::kFloat) * wr.to(at::kFloat)).sum())
      .backward();
  std::vector<at::Tensor> out = {yf.detach(), yr.detach()};
  for (at::Tensor* t : leaves) out.push_back(t->grad());
  return out;
}

// Both directions through selective_scan_bidirectional: outputs, then the gradients of
// sum(wf * yf) + sum(wr * yr) for the forward set's inputs, the reverse set's, and the shared z.
std::vector<at::Tensor> bidirectional_run(ScanInputSet f, ScanInputSet r, const at::Tensor& wf,
                                          const at::Tensor& wr) {
  r.z = f.z;  // shared
  std::vector<at::Tensor*> leaves = {&f.u, &f.delta, &f.A, &f.B, &f.C, &f.D, &f.bias,
                                     &r.u, &r.delta, &r.A, &r.B, &r.C, &r.D, &r.bias, &f.z};
  for (at::Tensor* t : leaves) *t = t->detach().clone().requires_grad_(true);
  r.z = f.z;
  const auto [yf, yr] =
      masr::ops::selective_scan_bidirectional(direction_of(f), direction_of(r), f.z, f.lengths);
  return outputs_and_grads(yf, yr, wf, wr, leaves);
}

}  // namespace

TEST_CASE("CUDA bidirectional scan (both directions in one launch) matches the CPU scans",
          "[.cuda]") {
  REQUIRE(cuda_ready());
  const char* const names[] = {"yf",  "yr",      "f.u",  "f.delta", "f.A", "f.B", "f.C", "f.D",
                               "f.bias", "r.u", "r.delta", "r.A", "r.B", "r.C", "r.D", "r.bias",
                               "z"};
  uint64_t seed = 1300;
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (ScanCase c : shapes()) {
      INFO(describe(c, dtype));
      const Tolerance tol = tolerance_for(dtype);
      ScanInputSet f = rounded(masr::test::random_scan_inputs(c, at::kFloat, seed++), dtype);
      ScanInputSet r = rounded(masr::test::random_scan_inputs(c, at::kFloat, seed++), dtype);
      if (c.batch > 2) f.lengths[2] = 0;  // an empty utterance
      r.lengths = f.lengths;
      const at::Tensor wf = torch::randn({c.batch, c.channels, c.time}).to(dtype).to(at::kFloat);
      const at::Tensor wr = torch::randn({c.batch, c.channels, c.time}).to(dtype).to(at::kFloat);
      const auto want = bidirectional_run(f, r, wf, wr);  // CPU: two scans
      const auto got = bidirectional_run(on_cuda(f, dtype), on_cuda(r, dtype),
                                         wf.to(at::kCUDA, dtype), wr.to(at::kCUDA, dtype));
      for (size_t i = 0; i < want.size(); ++i) {
        INFO(names[i]);
        REQUIRE(got[i].defined());
        const at::Tensor g = got[i].cpu().to(at::kFloat);
        CHECK_FALSE(g.isnan().any().item<bool>());
        CHECK(masr::test::relative_error(g, want[i], 1e-6) <= (i < 2 ? tol.forward : tol.gradient));
      }
      // One launch computes each direction exactly as a launch of its own does.
      ScanCase reverse = c;
      reverse.reverse = true;
      ScanInputSet rz = on_cuda(r, dtype);
      rz.z = on_cuda(f, dtype).z;
      CHECK(torch::equal(got[0], masr::test::run_fast(on_cuda(f, dtype), c)));
      CHECK(torch::equal(got[1], masr::test::run_fast(rz, reverse)));
    }
  }
}

namespace {

// Low-rank deltas (ScanDirection::delta_low/delta_weight) for both directions: outputs, then the
// gradients of sum(gf * yf) + sum(gr * yr) for each direction's u, delta_low and delta_weight and
// the shared z. `factored` false hands the scan the product instead (autograd through at::mm).
std::vector<at::Tensor> low_rank_run(ScanInputSet f, ScanInputSet r, at::Tensor low_f,
                                     at::Tensor weight_f, at::Tensor low_r, at::Tensor weight_r,
                                     const at::Tensor& gf, const at::Tensor& gr, bool factored) {
  std::vector<at::Tensor*> leaves = {&f.u, &low_f, &weight_f, &r.u, &low_r, &weight_r, &f.z};
  for (at::Tensor* t : leaves) *t = t->detach().clone().requires_grad_(true);
  masr::ops::ScanDirection df = direction_of(f), dr = direction_of(r);
  df.delta = dr.delta = at::Tensor();
  df.delta_low = low_f, df.delta_weight = weight_f;
  dr.delta_low = low_r, dr.delta_weight = weight_r;
  if (!factored) {
    df.delta = masr::ops::delta_of(df), dr.delta = masr::ops::delta_of(dr);
    df.delta_low = df.delta_weight = dr.delta_low = dr.delta_weight = at::Tensor();
  }
  const auto [yf, yr] = masr::ops::selective_scan_bidirectional(df, dr, f.z, f.lengths);
  return outputs_and_grads(yf, yr, gf, gr, leaves);
}

}  // namespace

TEST_CASE("CUDA bidirectional scan with low-rank deltas: as the product on CUDA and on the CPU",
          "[.cuda]") {
  REQUIRE(cuda_ready());
  const char* const names[] = {"yf", "yr", "f.u", "f.delta_low", "f.delta_weight",
                               "r.u", "r.delta_low", "r.delta_weight", "z"};
  uint64_t seed = 1700;
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (ScanCase c : shapes()) {
      INFO(describe(c, dtype));
      const int64_t rank = 5;
      ScanInputSet f = rounded(masr::test::random_scan_inputs(c, at::kFloat, seed++), dtype);
      ScanInputSet r = rounded(masr::test::random_scan_inputs(c, at::kFloat, seed++), dtype);
      r.z = f.z;
      r.lengths = f.lengths;
      const auto factor = [&](int64_t rows, int64_t cols) {
        return (0.4 * torch::randn({rows, cols})).to(dtype).to(at::kFloat);
      };
      const at::Tensor low_f = factor(rank, c.batch * c.time), low_r = factor(rank, c.batch * c.time);
      const at::Tensor weight_f = factor(c.channels, rank), weight_r = factor(c.channels, rank);
      const at::Tensor gf = torch::randn({c.batch, c.channels, c.time}).to(dtype).to(at::kFloat);
      const at::Tensor gr = torch::randn({c.batch, c.channels, c.time}).to(dtype).to(at::kFloat);
      const auto cuda_run = [&](bool factored) {
        return low_rank_run(on_cuda(f, dtype), on_cuda(r, dtype), low_f.to(at::kCUDA, dtype),
                            weight_f.cuda(), low_r.to(at::kCUDA, dtype), weight_r.cuda(),
                            gf.cuda(), gr.cuda(), factored);
      };
      const auto got = cuda_run(true);
      // The same products formed outside the scan, through autograd: the same values, since the
      // Function forms them with the same matrix products in both passes.
      const auto product = cuda_run(false);
      for (size_t i = 0; i < got.size(); ++i) {
        INFO(names[i]);
        REQUIRE(got[i].defined());
        CHECK(got[i].scalar_type() == product[i].scalar_type());
        CHECK(masr::test::relative_error(got[i].cpu().to(at::kFloat),
                                         product[i].cpu().to(at::kFloat), 1e-6) <= 1e-5);
      }
      if (dtype == at::kFloat) {  // and the CPU scans on the CPU product, within the kernels' tolerance
        const auto want = low_rank_run(f, r, low_f, weight_f, low_r, weight_r, gf, gr, true);
        const Tolerance tol = tolerance_for(dtype);
        for (size_t i = 0; i < want.size(); ++i) {
          INFO(names[i]);
          CHECK(masr::test::relative_error(got[i].cpu(), want[i], 1e-6) <=
                (i < 2 ? tol.forward : tol.gradient));
        }
      }
    }
  }
}

#ifdef MASR_WITH_CUDA
namespace {

// Median (and 10th/90th percentiles) of per-call milliseconds: 40 samples of 10 back-to-back
// calls each between two CUDA events, after 10 warm-up calls.
struct Timing {
  double median, p10, p90;
};
template <typename Fn>
Timing time_cuda(Fn&& fn) {
  for (int i = 0; i < 10; ++i) fn();
  std::vector<double> ms;
  for (int s = 0; s < 40; ++s) {
    at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);
    start.record();
    for (int i = 0; i < 10; ++i) fn();
    stop.record();
    stop.synchronize();
    ms.push_back(start.elapsed_time(stop) / 10.0);
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[ms.size() / 10], ms[ms.size() * 9 / 10]};
}

}  // namespace

TEST_CASE("CUDA selective_scan timing at the reference shapes", "[.cuda-bench]") {
  REQUIRE(cuda_ready());
  struct Shape {
    int64_t b, d, l, n;
    at::ScalarType dtype;
    double upstream_fwd, upstream_bwd;  // state-spaces/mamba on an H200 (docs/kernels.md)
  };
  const Shape shapes[] = {{16, 1024, 750, 16, at::kBFloat16, 0.476, 1.381},
                          {16, 1024, 750, 16, at::kFloat, 0.488, 1.370},
                          {8, 1024, 4000, 16, at::kBFloat16, 0.970, 3.460},
                          {32, 512, 1500, 16, at::kBFloat16, 0.943, 3.324}};
  const double copy_bw = 4.16e12, ex2_rate = 132 * 16 * 1.98e9;
  std::printf("\n%-22s %-5s %9s %9s %9s %9s %9s %9s %9s\n", "B D L N", "dtype", "fwd ms",
              "fwd+ck ms", "bwd ms", "fwd DRAM", "bwd DRAM", "fwd ex2", "upstream");
  for (const Shape& s : shapes) {
    const auto o = at::TensorOptions().device(at::kCUDA);
    const auto a = o.dtype(s.dtype);
    const at::Tensor u = torch::randn({s.b, s.d, s.l}, a), delta = torch::randn({s.b, s.d, s.l}, a);
    const at::Tensor A = -torch::arange(1, s.n + 1, o.dtype(at::kFloat)).repeat({s.d, 1});
    const at::Tensor B = torch::randn({s.b, s.n, s.l}, a), C = torch::randn({s.b, s.n, s.l}, a);
    const at::Tensor D = torch::ones({s.d}, o), z = torch::randn({s.b, s.d, s.l}, a);
    const at::Tensor bias = torch::full({s.d}, -4.6f, o), dout = torch::randn({s.b, s.d, s.l}, a);
    const masr::ops::CudaScanInputs in =
        masr::ops::prepare_cuda_scan(u, delta, A, B, C, D, z, bias, at::Tensor(), {});
    const at::Tensor ck = masr::ops::cuda_scan_forward(in, true).checkpoints;
    const Timing fwd = time_cuda([&] { masr::ops::cuda_scan_forward(in, false); });
    const Timing fwd_ck = time_cuda([&] { masr::ops::cuda_scan_forward(in, true); });
    const Timing bwd = time_cuda([&] { masr::ops::cuda_scan_backward(in, ck, dout); });
    const double e = s.dtype == at::kFloat ? 4 : 2, bdl = double(s.b * s.d * s.l);
    const double bnl = double(s.b * s.n * s.l), updates = bdl * s.n;
    const double fwd_floor = (4 * e * bdl + 2 * e * bnl) / copy_bw * 1e3;  // u, delta, z, out
    const double bwd_floor = (7 * e * bdl + 4 * e * bnl + 4 * updates / 16) / copy_bw * 1e3;
    char name[64];
    std::snprintf(name, sizeof(name), "%lld %lld %lld %lld", (long long)s.b, (long long)s.d,
                  (long long)s.l, (long long)s.n);
    std::printf("%-22s %-5s %9.4f %9.4f %9.4f %8.0f%% %8.0f%% %8.0f%% %4.2f/%4.2f\n", name,
                s.dtype == at::kFloat ? "fp32" : "bf16", fwd.median, fwd_ck.median, bwd.median,
                100 * fwd_floor / fwd.median, 100 * bwd_floor / bwd.median,
                100 * updates / ex2_rate * 1e3 / fwd.median, s.upstream_fwd, s.upstream_bwd);
    std::printf("    spread p10-p90: fwd %.4f-%.4f  fwd+ck %.4f-%.4f  bwd %.4f-%.4f ms\n", fwd.p10,
                fwd.p90, fwd_ck.p10, fwd_ck.p90, bwd.p10, bwd.p90);
    CHECK(fwd.median > 0);
  }
}
TEST_CASE("CUDA bidirectional scan timing: one launch against two", "[.cuda-bench]") {
  REQUIRE(cuda_ready());
  struct Shape {
    int64_t b, d, l, n;
  };
  // ConMamba-L at the reference batch, ConMamba-S and the bundled model at decoding sizes.
  const Shape shapes[] = {{16, 1024, 750, 16}, {4, 288, 250, 16}, {32, 384, 250, 16},
                          {1, 384, 100, 16}};
  std::printf("\n%-22s %12s %12s %12s %12s\n", "B D L N (bf16)", "fwd 2x1 ms", "fwd 1x2 ms",
              "bwd 2x1 ms", "bwd 1x2 ms");
  for (const Shape& s : shapes) {
    const auto o = at::TensorOptions().device(at::kCUDA);
    const auto a = o.dtype(at::kBFloat16);
    auto inputs = [&](bool reverse) {
      masr::ops::ScanOptions options;
      options.reverse = reverse;
      return masr::ops::prepare_cuda_scan(
          torch::randn({s.b, s.d, s.l}, a), torch::randn({s.b, s.d, s.l}, a),
          -torch::arange(1, s.n + 1, o.dtype(at::kFloat)).repeat({s.d, 1}),
          torch::randn({s.b, s.n, s.l}, a), torch::randn({s.b, s.n, s.l}, a),
          torch::ones({s.d}, o), torch::randn({s.b, s.d, s.l}, a),
          torch::full({s.d}, -4.6f, o), at::Tensor(), options);
    };
    const masr::ops::CudaScanInputs f = inputs(false), r = inputs(true);
    const at::Tensor dout = torch::randn({s.b, s.d, s.l}, a);
    const at::Tensor ckf = masr::ops::cuda_scan_forward(f, true).checkpoints;
    const at::Tensor ckr = masr::ops::cuda_scan_forward(r, true).checkpoints;
    const Timing two = time_cuda([&] {
      masr::ops::cuda_scan_forward(f, false);
      masr::ops::cuda_scan_forward(r, false);
    });
    const Timing one = time_cuda([&] { masr::ops::cuda_scan_forward_pair(f, r, false); });
    const Timing two_b = time_cuda([&] {
      masr::ops::cuda_scan_backward(f, ckf, dout);
      masr::ops::cuda_scan_backward(r, ckr, dout);
    });
    const Timing one_b =
        time_cuda([&] { masr::ops::cuda_scan_backward_pair(f, ckf, dout, r, ckr, dout); });
    char name[64];
    std::snprintf(name, sizeof(name), "%lld %lld %lld %lld", (long long)s.b, (long long)s.d,
                  (long long)s.l, (long long)s.n);
    std::printf("%-22s %12.4f %12.4f %12.4f %12.4f\n", name, two.median, one.median, two_b.median,
                one_b.median);
    CHECK(one.median > 0);
  }
}
// What the Mamba block's causal depthwise conv1d + SiLU costs on the GPU through LibTorch, next to
// the scan at the same shape: the measurement behind the fused-kernel decision (docs/kernels.md).
// The input is laid out as in the block: a channel slice of in_proj's (B, T, 2D) output.
TEST_CASE("CUDA causal depthwise conv1d + SiLU timing: LibTorch and the fused kernels",
          "[.cuda-bench]") {
  REQUIRE(cuda_ready());
  const int64_t b = 16, d = 1024, l = 750, k = 4;
  const auto o = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const at::Tensor xz = torch::randn({b, l, 2 * d}, o).transpose(1, 2);
  const at::Tensor x = xz.narrow(1, 0, d).detach().requires_grad_(true);
  const at::Tensor w = torch::randn({d, 1, k}, o.dtype(at::kFloat)).requires_grad_(true);
  const at::Tensor bias = torch::randn({d}, o.dtype(at::kFloat)).requires_grad_(true);
  const at::Tensor g = torch::randn({b, d, l}, o);
  // Bytes a fused kernel must move: x and u forward; x, du, dx backward (2 bytes each).
  const double bdl = double(b * d * l), floor_fwd = 4 * bdl / 4.16e12 * 1e3;
  const double floor_both = floor_fwd + 6 * bdl / 4.16e12 * 1e3;
  std::printf("\nconv1d(k %lld, depthwise, causal) + SiLU, B %lld D %lld L %lld bf16 "
              "(DRAM floor: forward %.4f ms, forward + backward %.4f ms)\n",
              (long long)k, (long long)b, (long long)d, (long long)l, floor_fwd, floor_both);
  for (const bool fused : {false, true}) {
    auto forward = [&] {
      // LibTorch as the block ran it before the fused kernels: conv1d in bf16, then SiLU.
      return fused ? masr::ops::causal_conv1d_silu(x, w, bias, false)
                   : masr::ops::causal_conv1d_silu_reference(x, w.to(at::kBFloat16),
                                                             bias.to(at::kBFloat16), false);
    };
    const Timing fwd = time_cuda([&] {
      torch::NoGradGuard no_grad;
      (void)forward();
    });
    const Timing both = time_cuda([&] { forward().backward(g); });
    // The same with the gradient in time-major memory order (as x_proj's backward gives it).
    const at::Tensor g_tm = g.transpose(1, 2).contiguous().transpose(1, 2);
    const Timing both_tm = time_cuda([&] { forward().backward(g_tm); });
    std::printf("  %-8s forward %.4f ms (p10-p90 %.4f-%.4f), forward + backward %.4f ms "
                "(%.4f-%.4f); with a time-major gradient %.4f ms\n",
                fused ? "fused" : "LibTorch", fwd.median, fwd.p10, fwd.p90, both.median, both.p10,
                both.p90, both_tm.median);
    CHECK(both.median > 0);
  }
}
#endif
