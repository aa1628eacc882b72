// tests/ops/test_selective_scan_errors.cpp
// Bad arguments to selective_scan are masr::Errors whose message names the argument at fault.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "core/error.h"
#include "ops/selective_scan.h"
#include "scan_test_util.h"

using masr::test::ScanCase;
using masr::test::ScanInputSet;

namespace {

// Runs the scan on `s` after `edit`, expecting a masr::Error containing every fragment.
void expect_error(const std::function<void(ScanInputSet&)>& edit,
                  const std::vector<std::string>& fragments) {
  ScanCase c;
  ScanInputSet s = masr::test::random_scan_inputs(c, at::kFloat, 7);
  edit(s);
  try {
    masr::test::run_fast(s, c);
    FAIL("selective_scan accepted the bad argument");
  } catch (const masr::Error& e) {
    CHECK(e.kind() == masr::ErrorKind::kInput);
    for (const auto& fragment : fragments) CHECK_THAT(e.what(), Catch::Contains(fragment));
  }
}

}  // namespace

TEST_CASE("selective_scan rejects wrong shapes, naming the argument", "[scan]") {
  // ScanCase defaults: batch 2, channels 3, time 7, state 4.
  expect_error([](ScanInputSet& s) { s.u = s.u[0]; }, {"u must be a (batch, channels, time)"});
  expect_error([](ScanInputSet& s) { s.delta = s.delta.slice(2, 0, 6); },
               {"delta has shape (2, 3, 6)", "(2, 3, 7)"});
  expect_error([](ScanInputSet& s) { s.A = s.A.slice(0, 0, 2); },
               {"A has shape (2, 4)", "(channels, state) = (3, 4)"});
  expect_error([](ScanInputSet& s) { s.A = s.A.view({-1}); }, {"A must be (channels, state)"});
  expect_error([](ScanInputSet& s) { s.B = s.B.slice(1, 0, 3); },
               {"B has shape (2, 3, 7)", "(batch, state, time) = (2, 4, 7)"});
  expect_error([](ScanInputSet& s) { s.C = s.C.transpose(1, 2); }, {"C has shape (2, 7, 4)"});
  expect_error([](ScanInputSet& s) { s.D = torch::ones({4}); }, {"D has shape (4)"});
  expect_error([](ScanInputSet& s) { s.z = s.z.slice(0, 0, 1); }, {"z has shape (1, 3, 7)"});
  expect_error(
      [](ScanInputSet& s) {
        s.bias = torch::ones({3, 1});
      },
      {"delta_bias has shape (3, 1)"});
  expect_error([](ScanInputSet& s) { s.C = at::Tensor(); }, {"delta, A, B and C are required"});
}

TEST_CASE("selective_scan rejects non-floating inputs and bad lengths", "[scan]") {
  expect_error([](ScanInputSet& s) { s.A = s.A.to(at::kLong); },
               {"A must be a floating-point tensor", "Long"});
  expect_error([](ScanInputSet& s) { s.u = s.u.to(at::kInt); },
               {"u must be a floating-point tensor"});
  expect_error(
      [](ScanInputSet& s) {
        s.lengths = torch::tensor({7, 8}, at::kLong);
      },
      {"lengths must lie in [0, time = 7]", "to 8"});
  expect_error(
      [](ScanInputSet& s) {
        s.lengths = torch::tensor({-1, 3}, at::kLong);
      },
      {"lengths must lie in [0, time = 7]", "from -1"});
  expect_error(
      [](ScanInputSet& s) {
        s.lengths = torch::tensor({7.0, 3.0});
      },
      {"lengths must be an integer tensor of shape (2)", "Float"});
  expect_error([](ScanInputSet& s) { s.lengths = torch::tensor({7}, at::kLong); },
               {"lengths must be an integer tensor of shape (2)"});
}

TEST_CASE("low-rank deltas: the product of the factors, and shape errors naming them", "[scan]") {
  ScanCase c;  // batch 2, channels 3, time 7, state 4
  ScanInputSet s = masr::test::random_scan_inputs(c, at::kFloat, 11);
  masr::ops::ScanDirection d;
  d.u = s.u, d.A = s.A, d.B = s.B, d.C = s.C, d.D = s.D, d.delta_bias = s.bias;
  d.delta_low = torch::randn({2, c.batch * c.time});
  d.delta_weight = torch::randn({c.channels, 2});
  // delta[b, c, t] = sum_r weight[c, r] * low[r, b * time + t].
  const at::Tensor delta = masr::ops::delta_of(d);
  const at::Tensor want = torch::einsum("cr,rbt->bct", {d.delta_weight,
                                                        d.delta_low.view({2, c.batch, c.time})});
  CHECK(delta.sizes() == want.sizes());
  CHECK(torch::allclose(delta, want, 1e-5, 1e-6));
  // Through the bidirectional scan (the CPU runs the product): as with delta given outright.
  masr::ops::ScanDirection plain = d;
  plain.delta = want;
  plain.delta_low = plain.delta_weight = at::Tensor();
  const auto [yf, yr] = masr::ops::selective_scan_bidirectional(d, d, s.z, s.lengths);
  const auto [pf, pr] = masr::ops::selective_scan_bidirectional(plain, plain, s.z, s.lengths);
  CHECK(torch::allclose(yf, pf, 1e-5, 1e-6));
  CHECK(torch::allclose(yr, pr, 1e-5, 1e-6));

  d.delta_low = torch::randn({2, c.batch * c.time - 1});
  try {
    masr::ops::selective_scan_bidirectional(d, d, s.z, s.lengths);
    FAIL("a delta_low of the wrong width was accepted");
  } catch (const masr::Error& e) {
    CHECK(e.kind() == masr::ErrorKind::kInput);
    CHECK_THAT(e.what(), Catch::Contains("delta_low (R, 14)") && Catch::Contains("(2, 13)"));
  }
}
