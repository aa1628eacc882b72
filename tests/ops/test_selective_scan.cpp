// tests/ops/test_selective_scan.cpp
// The fused CPU selective scan against a plain float64 loop (forward), finite differences and the
// tensor-op reference (gradients), per-utterance padding, and odd shapes.
#include <catch2/catch.hpp>

#include <string>

#include "ops/selective_scan_cpu.h"
#include "scan_test_util.h"

using masr::test::ScanCase;
using masr::test::ScanInputSet;

namespace {

const char* const kNames[] = {"u", "delta", "A", "B", "C", "D", "z", "delta_bias"};

at::Tensor fast(const ScanInputSet& s, const ScanCase& c) { return masr::test::run_fast(s, c); }
at::Tensor reference(const ScanInputSet& s, const ScanCase& c) {
  return masr::test::run_reference(s, c);
}

std::string describe(const ScanCase& c) {
  return std::string(c.reverse ? "reverse" : "forward") + (c.use_z ? " z" : "") +
         (c.use_D ? " D" : "") + (c.use_bias ? " bias" : "") + (c.softplus ? " softplus" : "") +
         (c.use_lengths ? " lengths" : "") + " B=" + std::to_string(c.batch) +
         " D=" + std::to_string(c.channels) + " L=" + std::to_string(c.time) +
         " N=" + std::to_string(c.state);
}

// Every on/off combination of z, D, delta_bias, softplus and lengths, in both directions.
std::vector<ScanCase> all_option_cases() {
  std::vector<ScanCase> cases;
  for (int mask = 0; mask < 64; ++mask) {
    ScanCase c;
    c.use_z = mask & 1;
    c.use_D = mask & 2;
    c.use_bias = mask & 4;
    c.softplus = mask & 8;
    c.use_lengths = mask & 16;
    c.reverse = mask & 32;
    cases.push_back(c);
  }
  return cases;
}

}  // namespace

TEST_CASE("selective_scan float64 forward matches a plain loop to 1e-10", "[scan]") {
  uint64_t seed = 1;
  for (const ScanCase& c : all_option_cases()) {
    INFO(describe(c));
    const ScanInputSet s = masr::test::random_scan_inputs(c, at::kDouble, seed++);
    const at::Tensor out = fast(s, c);
    CHECK(out.scalar_type() == at::kDouble);
    CHECK(masr::test::relative_error(out, masr::test::plain_scan(s, c)) <= 1e-10);
  }
}

TEST_CASE("selective_scan gradients match central finite differences (float64)", "[scan]") {
  uint64_t seed = 100;
  for (const ScanCase& base : all_option_cases()) {
    if (!(base.use_z == base.use_D && base.use_D == base.use_bias)) continue;  // 16 cases
    ScanCase c = base;
    c.batch = 2, c.channels = 2, c.time = 5, c.state = 3;
    INFO(describe(c));
    const ScanInputSet s = masr::test::random_scan_inputs(c, at::kDouble, seed++);
    const at::Tensor weight = torch::randn({c.batch, c.channels, c.time}, at::kDouble);
    const auto grads = masr::test::scan_gradients(s, c, weight, fast);
    const double eps = 1e-6;
    ScanInputSet probe = s;
    auto inputs = probe.differentiable();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i]->defined()) continue;
      INFO("gradient of " << kNames[i]);
      const at::Tensor original = inputs[i]->clone();
      at::Tensor numeric = torch::zeros_like(original);
      auto flat = numeric.view({-1});
      for (int64_t k = 0; k < original.numel(); ++k) {
        double f[2];
        for (int side = 0; side < 2; ++side) {
          *inputs[i] = original.clone();
          inputs[i]->view({-1})[k] += side ? -eps : eps;
          f[side] = (fast(probe, c) * weight).sum().item<double>();
        }
        flat[k] = (f[0] - f[1]) / (2 * eps);
      }
      *inputs[i] = original;
      CHECK(masr::test::relative_error(grads[i], numeric, 1e-3) <= 1e-6);
    }
  }
}

TEST_CASE("selective_scan float32 gradients match the tensor-op reference to 1e-4", "[scan]") {
  uint64_t seed = 200;
  for (bool reverse : {false, true}) {
    for (bool lengths : {false, true}) {
      ScanCase c;
      c.batch = 3, c.channels = 8, c.time = 40, c.state = 16;
      c.reverse = reverse;
      c.use_lengths = lengths;
      INFO(describe(c));
      const ScanInputSet s = masr::test::random_scan_inputs(c, at::kFloat, seed++);
      const at::Tensor weight = torch::randn({c.batch, c.channels, c.time});
      CHECK(masr::test::relative_error(fast(s, c), reference(s, c)) <= 1e-5);
      const auto got = masr::test::scan_gradients(s, c, weight, fast);
      const auto want = masr::test::scan_gradients(s, c, weight, reference);
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("gradient of " << kNames[i]);
        CHECK(got[i].scalar_type() == at::kFloat);
        CHECK(masr::test::relative_error(got[i], want[i]) <= 1e-4);
      }
    }
  }
}

TEST_CASE("selective_scan gives each padded utterance what it gets alone", "[scan]") {
  for (bool reverse : {false, true}) {
    ScanCase c;
    c.batch = 3, c.channels = 5, c.time = 30, c.state = 16, c.reverse = reverse;
    INFO(describe(c));
    ScanInputSet s = masr::test::random_scan_inputs(c, at::kFloat, reverse ? 301 : 300);
    s.lengths = torch::tensor({30, 17, 1}, at::kLong);
    // Padding holds garbage: it must not reach real frames in either direction.
    const at::Tensor weight = torch::randn({c.batch, c.channels, c.time});
    const at::Tensor out = fast(s, c);
    const auto grads = masr::test::scan_gradients(s, c, weight, fast);
    at::Tensor shared_sum[3] = {torch::zeros_like(s.A), torch::zeros_like(s.D),
                                torch::zeros_like(s.bias)};
    for (int64_t b = 0; b < c.batch; ++b) {
      const int64_t len = s.lengths[b].item<int64_t>();
      INFO("utterance " << b << " of length " << len);
      ScanCase one = c;
      one.batch = 1, one.time = len, one.use_lengths = false;
      ScanInputSet alone = s;
      for (at::Tensor* t : {&alone.u, &alone.delta, &alone.B, &alone.C, &alone.z}) {
        *t = t->slice(0, b, b + 1).slice(2, 0, len);
      }
      alone.lengths = at::Tensor();
      const at::Tensor w = weight.slice(0, b, b + 1).slice(2, 0, len);
      const at::Tensor expected = fast(alone, one);
      CHECK(masr::test::relative_error(out.slice(0, b, b + 1).slice(2, 0, len), expected) <= 1e-5);
      CHECK(masr::test::max_abs(out[b].slice(1, len)) == 0.0);
      const auto g = masr::test::scan_gradients(alone, one, w, fast);
      for (size_t i : {0, 1, 3, 4, 6}) {  // per-utterance inputs: u, delta, B, C, z
        INFO("gradient of " << kNames[i]);
        const at::Tensor mine = grads[i][b];
        CHECK(masr::test::relative_error(mine.slice(1, 0, len), g[i][0]) <= 1e-5);
        CHECK(masr::test::max_abs(mine.slice(1, len)) == 0.0);
      }
      shared_sum[0] += g[2], shared_sum[1] += g[5], shared_sum[2] += g[7];
    }
    CHECK(masr::test::relative_error(grads[2], shared_sum[0]) <= 1e-5);
    CHECK(masr::test::relative_error(grads[5], shared_sum[1]) <= 1e-5);
    CHECK(masr::test::relative_error(grads[7], shared_sum[2]) <= 1e-5);
  }
}

TEST_CASE("selective_scan handles odd shapes", "[scan]") {
  std::vector<ScanCase> cases;
  for (auto dims : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 1},
                                                       {2, 3, 1, 4},
                                                       {2, 1, 6, 5},
                                                       {1, 4, 6, 1},
                                                       {1, 2, 2000, 4},
                                                       {3, 2, 9, 33}}) {
    for (bool reverse : {false, true}) {
      ScanCase c;
      c.batch = dims[0], c.channels = dims[1], c.time = dims[2], c.state = dims[3];
      c.reverse = reverse;
      cases.push_back(c);
    }
  }
  uint64_t seed = 400;
  for (const ScanCase& c : cases) {
    INFO(describe(c));
    const ScanInputSet s = masr::test::random_scan_inputs(c, at::kDouble, seed++);
    CHECK(masr::test::relative_error(fast(s, c), masr::test::plain_scan(s, c)) <= 1e-10);
    const at::Tensor weight = torch::randn({c.batch, c.channels, c.time}, at::kDouble);
    const auto got = masr::test::scan_gradients(s, c, weight, fast);
    const auto want = masr::test::scan_gradients(s, c, weight, reference);
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("gradient of " << kNames[i]);
      CHECK(masr::test::relative_error(got[i], want[i]) <= 1e-9);
    }
  }
}

TEST_CASE("selective_scan zero lengths give zero output and zero gradients", "[scan]") {
  ScanCase c;
  ScanInputSet s = masr::test::random_scan_inputs(c, at::kFloat, 500);
  s.lengths = torch::tensor({0, 4}, at::kLong);
  const at::Tensor weight = torch::randn({c.batch, c.channels, c.time});
  CHECK(fast(s, c)[0].abs().max().item<float>() == 0.0f);
  const auto g = masr::test::scan_gradients(s, c, weight, fast);
  for (size_t i : {0, 1, 3, 4, 6}) {
    INFO("gradient of " << kNames[i]);
    CHECK(masr::test::max_abs(g[i][0]) == 0.0);
  }
}

TEST_CASE("selective_scan accepts non-contiguous, bfloat16 and half inputs", "[scan]") {
  ScanCase c;
  c.channels = 4, c.time = 12, c.state = 16;
  const ScanInputSet s = masr::test::random_scan_inputs(c, at::kFloat, 600);
  const at::Tensor expected = fast(s, c);
  ScanInputSet strided = s;
  strided.u = s.u.transpose(1, 2).contiguous().transpose(1, 2);
  strided.B = s.B.transpose(1, 2).contiguous().transpose(1, 2);
  REQUIRE_FALSE(strided.u.is_contiguous());
  CHECK(masr::test::relative_error(fast(strided, c), expected) == 0.0);
  for (auto dtype : {at::kBFloat16, at::kHalf}) {
    ScanInputSet low = s;
    for (at::Tensor* t : low.differentiable()) *t = t->to(dtype);
    const at::Tensor out = fast(low, c);
    CHECK(out.scalar_type() == dtype);
    const auto g = masr::test::scan_gradients(low, c, torch::ones_like(expected), fast);
    CHECK(g[0].scalar_type() == dtype);
    // The low-precision inputs are a perturbation; compare with the float scan of the same values.
    ScanInputSet up = low;
    for (at::Tensor* t : up.differentiable()) *t = t->to(at::kFloat);
    CHECK(masr::test::relative_error(out, fast(up, c)) <= 1e-2);
  }
}

TEST_CASE("selective_scan float kernels of every instruction set agree with the reference",
          "[scan]") {
  const std::string best = masr::ops::cpu::scan_isa();
  CHECK_FALSE(masr::ops::cpu::set_scan_isa("sse9"));
  CHECK(masr::ops::cpu::scan_isa() == best);
  int tried = 0;
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    if (!masr::ops::cpu::set_scan_isa(isa)) continue;
    ++tried;
    for (int64_t state : {16, 5}) {  // the 16-lane path and the generic-N path
      ScanCase c;
      c.batch = 2, c.channels = 4, c.time = 25, c.state = state, c.reverse = state == 5;
      INFO(isa << " " << describe(c));
      const ScanInputSet s = masr::test::random_scan_inputs(c, at::kFloat, 700 + state);
      const at::Tensor weight = torch::randn({c.batch, c.channels, c.time});
      CHECK(masr::test::relative_error(fast(s, c), reference(s, c)) <= 1e-5);
      const auto got = masr::test::scan_gradients(s, c, weight, fast);
      const auto want = masr::test::scan_gradients(s, c, weight, reference);
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("gradient of " << kNames[i]);
        CHECK(masr::test::relative_error(got[i], want[i]) <= 1e-4);
      }
    }
  }
  CHECK(tried >= 1);  // "generic" always exists
  REQUIRE(masr::ops::cpu::set_scan_isa(best.c_str()));
}
