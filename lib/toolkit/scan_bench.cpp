// lib/toolkit/scan_bench.cpp
// The "scan" benchmark: the fused CPU selective scan (z, D, delta_bias, softplus, per-utterance
// lengths all on) at ConMamba-like layer shapes, in G state-updates (B*D*L*N) per second.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

#include "core/string_printf.h"
#include "ops/selective_scan.h"
#include "ops/selective_scan_cpu.h"
#include "runtime/benchmark.h"
#include "toolkit/benchmarks.h"

namespace masr::toolkit {
namespace {

// Measures lib/ops: its names unqualified.
using namespace ops;  // NOLINT(build/namespaces)

struct ScanShape {
  const char* name;
  int64_t batch, channels, time, state;
};

// Inputs as a Mamba layer makes them: A = -exp(A_log) with A_log = log(1..N), delta a logit
// around softplus^-1(0.01), full lengths.
std::vector<at::Tensor> scan_inputs(const ScanShape& s, bool grad) {
  at::manual_seed(0);
  const int64_t b = s.batch, d = s.channels, l = s.time, n = s.state;
  std::vector<at::Tensor> t = {
      torch::randn({b, d, l}),                              // u
      torch::randn({b, d, l}) * 0.5,                        // delta
      -torch::arange(1, n + 1, at::kFloat).repeat({d, 1}),  // A
      torch::randn({b, n, l}),                              // B
      torch::randn({b, n, l}),                              // C
      torch::ones({d}),                                     // D
      torch::randn({b, d, l}),                              // z
      torch::full({d}, -4.6f),                              // delta_bias
  };
  for (auto& x : t) x.requires_grad_(grad);
  return t;
}

runtime::BenchResult bench_shape(const ScanShape& s, bool backward,
                                 const runtime::BenchSettings& settings) {
  const auto in = scan_inputs(s, backward);
  const at::Tensor lengths = torch::full({s.batch}, s.time, at::kLong);
  const at::Tensor grad = torch::randn({s.batch, s.channels, s.time});
  auto fn = [&] {
    if (backward) {
      const at::Tensor out =
          selective_scan(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], lengths);
      out.backward(grad);
    } else {
      at::NoGradGuard no_grad;
      selective_scan(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], lengths);
    }
  };
  const std::string name = std::string("scan/") + s.name + (backward ? "/fwd+bwd" : "/fwd");
  // Process CPU time over wall time shows how much of the cores the run really had (other
  // processes on a shared machine make the wall-clock median pessimistic).
  const std::clock_t cpu_start = std::clock();
  const auto wall_start = std::chrono::steady_clock::now();
  runtime::BenchResult r = runtime::measure(name, settings, fn);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  const int threads = at::get_num_threads();
  r.work = static_cast<double>(s.batch * s.channels * s.time * s.state);
  r.work_unit = "state-updates";
  r.note = string_printf(
      "B=%lld D=%lld L=%lld N=%lld fp32 %s, %d thread(s): %.3f G/s/core, cpu/wall %.2f",
      static_cast<long long>(s.batch), static_cast<long long>(s.channels),
      static_cast<long long>(s.time), static_cast<long long>(s.state), cpu::scan_isa(), threads,
      r.throughput() / 1e9 / threads, wall > 0 ? cpu / wall : 0.0);
  return r;
}

std::vector<runtime::BenchResult> run_scan_benchmarks(const runtime::BenchSettings& settings) {
  const ScanShape shapes[] = {{"conmamba-s", 4, 288, 500, 16}, {"conmamba-l", 2, 1024, 750, 16}};
  std::vector<runtime::BenchResult> results;
  for (const auto& shape : shapes) {
    for (bool backward : {false, true}) results.push_back(bench_shape(shape, backward, settings));
  }
  return results;
}

}  // namespace

void register_scan_bench() {
  runtime::register_benchmark(
      {"scan",
       "CPU selective scan (z, D, delta_bias, softplus), forward and forward+backward at "
       "ConMamba-S (B=4 D=288 L=500 N=16) and ConMamba-L (B=2 D=1024 L=750 N=16) shapes; "
       "throughput in state updates (B*D*L*N per pass)",
       run_scan_benchmarks});
}

}  // namespace masr::toolkit
