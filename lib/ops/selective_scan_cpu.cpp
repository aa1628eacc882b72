// lib/ops/selective_scan_cpu.cpp
// Loops of the fused CPU selective scan: one (batch, channel) row per task, time sequential,
// the state dimension innermost and vectorized (see docs/kernels.md for the cost model).
//
// Built with -fopenmp (at::parallel_for and `omp simd`) and -ffp-contract=fast; the float
// kernels are compiled three times (AVX-512, AVX2+FMA, baseline) and picked at run time.
#include "ops/selective_scan_cpu.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/fast_math.h"
#include "ops/selective_scan_cpu_n16.h"

namespace masr::ops::cpu {
namespace {

namespace fm = fastmath;

// dt[t] = softplus(delta[t] + bias) (or without softplus) for the row's valid frames.
template <typename T>
MASR_ALWAYS_INLINE void row_delta(const ScanInputs<T>& in, const T* delta, T bias, int64_t len,
                                  T* dt) {
  if (in.softplus) {
#pragma omp simd
    for (int64_t t = 0; t < len; ++t) dt[t] = fm::softplus(delta[t] + bias);
  } else {
#pragma omp simd
    for (int64_t t = 0; t < len; ++t) dt[t] = delta[t] + bias;
  }
}

// Scratch of one forward task: dt (time) and h (state).
// The time loop of one row for any state size (h: state scratch).
template <typename T>
MASR_ALWAYS_INLINE void forward_steps(const ScanInputs<T>& in, const T* u, const T* dt, const T* A,
                                      const T* Bb, const T* Cb, T skip, int64_t len, T* h, T* y) {
  const int64_t N = in.state;
  for (int64_t n = 0; n < N; ++n) h[n] = T(0);
  for (int64_t step = 0; step < len; ++step) {
    const int64_t t = in.reverse ? len - 1 - step : step;
    const T dt_t = dt[t], dtu = dt_t * u[t];
    const T* Bn = Bb + t * N;
    const T* Cn = Cb + t * N;
    T acc = T(0);
#pragma omp simd reduction(+ : acc)
    for (int64_t n = 0; n < N; ++n) {
      h[n] = fm::exp(dt_t * A[n]) * h[n] + dtu * Bn[n];
      acc += Cn[n] * h[n];
    }
    y[t] = acc + skip * u[t];
  }
}

// kN: the state size when known at compile time (a power of two), 0 when not.
template <typename T, int kN>
MASR_ALWAYS_INLINE void forward_rows(const ScanInputs<T>& in, T* out, int64_t begin, int64_t end,
                                     T* scratch) {
  const int64_t L = in.time, N = kN > 0 ? kN : in.state;
  T* dt = scratch;
  T* h = scratch + L;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t b = row / in.channels, d = row % in.channels;
    const int64_t len = in.lengths[b];
    const T* u = in.u + row * L;
    T* y = out + row * L;
    row_delta(in, in.delta + row * L, in.bias ? in.bias[d] : T(0), len, dt);
    const T* A = in.A + d * N;
    const T* Bb = in.B + b * L * N;
    const T* Cb = in.C + b * L * N;
    const T skip = in.D ? in.D[d] : T(0);
    if constexpr (kN == 16 && std::is_same_v<T, float>) {
      n16::forward_row(u, dt, A, Bb, Cb, skip, len, in.reverse, y);
    } else {
      forward_steps(in, u, dt, A, Bb, Cb, skip, len, h, y);
    }
    if (in.z != nullptr) {
      const T* z = in.z + row * L;
#pragma omp simd
      for (int64_t t = 0; t < len; ++t) y[t] *= z[t] * fm::sigmoid(z[t]);
    }
    for (int64_t t = len; t < L; ++t) y[t] = T(0);
  }
}

// Pointers into one backward task's scratch (see backward_scratch_size).
template <typename T>
struct BackwardScratch {
  T *dt, *y, *dy, *g, *dA, *H, *decay;
};

template <typename T>
int64_t backward_scratch_size(const ScanInputs<T>& in) {
  return 3 * in.time + 2 * in.state + (2 * in.time + 1) * in.state;
}

template <typename T>
BackwardScratch<T> split_scratch(const ScanInputs<T>& in, T* base) {
  const int64_t L = in.time, N = in.state;
  BackwardScratch<T> s;
  s.dt = base;
  s.y = s.dt + L;
  s.dy = s.y + L;
  s.g = s.dy + L;
  s.dA = s.g + N;
  s.H = s.dA + N;               // (L + 1) x N: H[0] = 0, H[step + 1] = state after `step`
  s.decay = s.H + (L + 1) * N;  // L x N: exp(dt A) at each step
  return s;
}

// Recomputes the row's states (kept whole: len x N per task, no per-row storage in forward) and
// the pre-gate output y, then turns dout into dy (and dz).
template <typename T, int kN>
MASR_ALWAYS_INLINE void backward_recompute(const ScanInputs<T>& in, const ScanGrads<T>& gr,
                                           const T* dout, int64_t row, int64_t len,
                                           const BackwardScratch<T>& s) {
  const int64_t L = in.time, N = in.state;
  const int64_t b = row / in.channels, d = row % in.channels;
  const T* u = in.u + row * L;
  const T* A = in.A + d * N;
  const T skip = in.D ? in.D[d] : T(0);
  if constexpr (kN == 16 && std::is_same_v<T, float>) {
    n16::recompute_row(u, s.dt, A, in.B + b * L * 16, in.C + b * L * 16, skip, len, in.reverse,
                       s.y, s.H, s.decay);
  } else {
    for (int64_t n = 0; n < N; ++n) s.H[n] = T(0);
    for (int64_t step = 0; step < len; ++step) {
      const int64_t t = in.reverse ? len - 1 - step : step;
      const T dt_t = s.dt[t], dtu = dt_t * u[t];
      const T* Bn = in.B + (b * L + t) * N;
      const T* Cn = in.C + (b * L + t) * N;
      const T* hp = s.H + step * N;
      T* hc = s.H + (step + 1) * N;
      T* a = s.decay + step * N;
      T acc = T(0);
#pragma omp simd reduction(+ : acc)
      for (int64_t n = 0; n < N; ++n) {
        a[n] = fm::exp(dt_t * A[n]);
        hc[n] = a[n] * hp[n] + dtu * Bn[n];
        acc += Cn[n] * hc[n];
      }
      s.y[t] = acc + skip * u[t];
    }
  }
  const T* dout_row = dout + row * L;
  if (in.z != nullptr) {
    const T* z = in.z + row * L;
    T* dz = gr.dz + row * L;
#pragma omp simd
    for (int64_t t = 0; t < len; ++t) {
      const T sg = fm::sigmoid(z[t]);
      dz[t] = dout_row[t] * s.y[t] * sg * (T(1) + z[t] * (T(1) - sg));
      s.dy[t] = dout_row[t] * z[t] * sg;
    }
    for (int64_t t = len; t < L; ++t) dz[t] = T(0);
  } else {
    for (int64_t t = 0; t < len; ++t) s.dy[t] = dout_row[t];
  }
}

// The reverse-time adjoint of one row: with dh_s = dy_s C_s + a_{s+1} dh_{s+1},
//   dA += dh_s h_{s-1} a_s dt_s,  ddt_s = sum_n dh_s h_{s-1} a_s A + u_s sum_n dh_s B_s,
//   du_s = D dy_s + dt_s sum_n dh_s B_s,  dB_s += dh_s dt_s u_s,  dC_s += dy_s h_s.
template <typename T, int kN>
MASR_ALWAYS_INLINE void backward_adjoint(const ScanInputs<T>& in, const ScanGrads<T>& gr,
                                         int64_t row, int64_t len, const BackwardScratch<T>& s,
                                         T* dBt, T* dCt) {
  const int64_t L = in.time, N = in.state;
  const int64_t b = row / in.channels, d = row % in.channels;
  const T* u = in.u + row * L;
  const T* A = in.A + d * N;
  const T skip = in.D ? in.D[d] : T(0);
  T* du = gr.du + row * L;
  T* ddelta = gr.ddelta + row * L;
  if constexpr (kN == 16 && std::is_same_v<T, float>) {
    n16::adjoint_row(u, s.dt, s.dy, A, in.B + b * L * 16, in.C + b * L * 16, skip, len,
                     in.reverse, s.H, s.decay, dBt + b * L * 16, dCt + b * L * 16, du, ddelta,
                     gr.dA_rows + row * 16, gr.dD_rows + row);
    return;
  }
  for (int64_t n = 0; n < N; ++n) s.g[n] = s.dA[n] = T(0);
  T dskip = T(0);
  for (int64_t step = len - 1; step >= 0; --step) {
    const int64_t t = in.reverse ? len - 1 - step : step;
    const T dt_t = s.dt[t], dy = s.dy[t], dtu = dt_t * u[t];
    const T* Bn = in.B + (b * L + t) * N;
    const T* Cn = in.C + (b * L + t) * N;
    T* dBn = dBt + (b * L + t) * N;
    T* dCn = dCt + (b * L + t) * N;
    const T* hp = s.H + step * N;
    const T* hc = s.H + (step + 1) * N;
    const T* a = s.decay + step * N;
    T* g = s.g;
    T* dA = s.dA;
    T sum_a = T(0), sum_b = T(0);
#pragma omp simd reduction(+ : sum_a, sum_b)
    for (int64_t n = 0; n < N; ++n) {
      const T dh = dy * Cn[n] + g[n];
      const T dlog = dh * hp[n] * a[n];  // d loss / d (dt A[n])
      sum_a += dlog * A[n];
      dA[n] += dlog * dt_t;
      sum_b += dh * Bn[n];
      dBn[n] += dh * dtu;
      dCn[n] += dy * hc[n];
      g[n] = a[n] * dh;
    }
    ddelta[t] = sum_a + sum_b * u[t];
    du[t] = skip * dy + sum_b * dt_t;
    dskip += dy * u[t];
  }
  for (int64_t n = 0; n < N; ++n) gr.dA_rows[row * N + n] = s.dA[n];
  gr.dD_rows[row] = dskip;
}

template <typename T, int kN>
MASR_ALWAYS_INLINE void backward_rows(const ScanInputs<T>& in, const T* dout,
                                      const ScanGrads<T>& gr, int64_t begin, int64_t end,
                                      T* scratch, T* dBt, T* dCt) {
  const int64_t L = in.time;
  const BackwardScratch<T> s = split_scratch(in, scratch);
  for (int64_t row = begin; row < end; ++row) {
    const int64_t b = row / in.channels, d = row % in.channels;
    const int64_t len = in.lengths[b];
    const T* delta = in.delta + row * L;
    const T bias = in.bias ? in.bias[d] : T(0);
    row_delta(in, delta, bias, len, s.dt);
    backward_recompute<T, kN>(in, gr, dout, row, len, s);
    backward_adjoint<T, kN>(in, gr, row, len, s, dBt, dCt);
    T* ddelta = gr.ddelta + row * L;
    if (in.softplus) {
#pragma omp simd
      for (int64_t t = 0; t < len; ++t) ddelta[t] *= fm::softplus_grad(delta[t] + bias);
    }
    T dbias = T(0);
    for (int64_t t = 0; t < len; ++t) dbias += ddelta[t];
    gr.dbias_rows[row] = dbias;
    T* du = gr.du + row * L;
    for (int64_t t = len; t < L; ++t) du[t] = ddelta[t] = T(0);
  }
}

// ---- instruction-set dispatch for the float kernels ----

using ForwardFn = void (*)(const ScanInputs<float>&, float*, int64_t, int64_t, float*);
using BackwardFn = void (*)(const ScanInputs<float>&, const float*, const ScanGrads<float>&,
                            int64_t, int64_t, float*, float*, float*);

#define MASR_SCAN_VARIANT(SUFFIX, TARGET)                                                    \
  TARGET void forward_rows_##SUFFIX(const ScanInputs<float>& in, float* out, int64_t begin,  \
                                    int64_t end, float* scratch) {                           \
    if (in.state == 16)                                                                      \
      forward_rows<float, 16>(in, out, begin, end, scratch);                                 \
    else                                                                                     \
      forward_rows<float, 0>(in, out, begin, end, scratch);                                  \
  }                                                                                          \
  TARGET void backward_rows_##SUFFIX(const ScanInputs<float>& in, const float* dout,         \
                                     const ScanGrads<float>& gr, int64_t begin, int64_t end, \
                                     float* scratch, float* dBt, float* dCt) {               \
    if (in.state == 16) {                                                                    \
      backward_rows<float, 16>(in, dout, gr, begin, end, scratch, dBt, dCt);                 \
    } else {                                                                                 \
      backward_rows<float, 0>(in, dout, gr, begin, end, scratch, dBt, dCt);                  \
    }                                                                                        \
  }

MASR_SCAN_VARIANT(generic, )
#if defined(__x86_64__) && defined(__GNUC__)
#define MASR_SCAN_X86 1
MASR_SCAN_VARIANT(avx2, __attribute__((target("avx2,fma"))))
MASR_SCAN_VARIANT(avx512, __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))))
#endif

struct FloatKernels {
  ForwardFn forward = forward_rows_generic;
  BackwardFn backward = backward_rows_generic;
  const char* isa = "generic";
};

// The float kernel variants this machine can run, best first.
std::vector<FloatKernels> supported_kernels() {
  std::vector<FloatKernels> all;
#ifdef MASR_SCAN_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw")) {
    all.push_back({forward_rows_avx512, backward_rows_avx512, "avx512"});
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    all.push_back({forward_rows_avx2, backward_rows_avx2, "avx2"});
  }
#endif
  all.push_back(FloatKernels{});
  return all;
}

FloatKernels& float_kernels() {
  static FloatKernels kernels = supported_kernels().front();
  return kernels;
}

void run_forward_rows(const ScanInputs<float>& in, float* out, int64_t begin, int64_t end,
                      float* scratch) {
  float_kernels().forward(in, out, begin, end, scratch);
}
void run_forward_rows(const ScanInputs<double>& in, double* out, int64_t begin, int64_t end,
                      double* scratch) {
  forward_rows<double, 0>(in, out, begin, end, scratch);
}
void run_backward_rows(const ScanInputs<float>& in, const float* dout, const ScanGrads<float>& gr,
                       int64_t begin, int64_t end, float* scratch, float* dBt, float* dCt) {
  float_kernels().backward(in, dout, gr, begin, end, scratch, dBt, dCt);
}
void run_backward_rows(const ScanInputs<double>& in, const double* dout,
                       const ScanGrads<double>& gr, int64_t begin, int64_t end, double* scratch,
                       double* dBt, double* dCt) {
  backward_rows<double, 0>(in, dout, gr, begin, end, scratch, dBt, dCt);
}

}  // namespace

template <typename T>
void scan_forward(const ScanInputs<T>& in, T* out) {
  const int64_t rows = in.batch * in.channels;
  // About 64k state updates per task keeps the parallel overhead below a percent.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, in.time * in.state));
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<T> scratch(static_cast<size_t>(in.time + in.state));
    run_forward_rows(in, out, begin, end, scratch.data());
  });
}

// Rows are split into one contiguous block per thread; each block accumulates dB and dC into
// its own (batch, time, state) buffers, summed afterwards, so the result does not depend on
// scheduling (only on the thread count).
template <typename T>
void scan_backward(const ScanInputs<T>& in, const T* dout, const ScanGrads<T>& gr) {
  const int64_t rows = in.batch * in.channels;
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(rows, at::get_num_threads()));
  const int64_t bc = in.batch * in.time * in.state;
  std::vector<T> partial(static_cast<size_t>(2 * blocks * bc), T(0));
  at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
    std::vector<T> scratch(static_cast<size_t>(backward_scratch_size(in)));
    for (int64_t k = first; k < last; ++k) {
      T* dB = partial.data() + 2 * k * bc;
      run_backward_rows(in, dout, gr, k * rows / blocks, (k + 1) * rows / blocks, scratch.data(),
                        dB, dB + bc);
    }
  });
  for (int64_t i = 0; i < bc; ++i) gr.dBt[i] = gr.dCt[i] = T(0);
  for (int64_t k = 0; k < blocks; ++k) {
    const T* dB = partial.data() + 2 * k * bc;
    const T* dC = dB + bc;
    for (int64_t i = 0; i < bc; ++i) {
      gr.dBt[i] += dB[i];
      gr.dCt[i] += dC[i];
    }
  }
}

const char* scan_isa() { return float_kernels().isa; }

bool set_scan_isa(const char* isa) {
  for (const FloatKernels& k : supported_kernels()) {
    if (std::strcmp(k.isa, isa) == 0) {
      float_kernels() = k;
      return true;
    }
  }
  return false;
}

template void scan_forward<float>(const ScanInputs<float>&, float*);
template void scan_forward<double>(const ScanInputs<double>&, double*);
template void scan_backward<float>(const ScanInputs<float>&, const float*, const ScanGrads<float>&);
template void scan_backward<double>(const ScanInputs<double>&, const double*,
                                    const ScanGrads<double>&);

}  // namespace masr::ops::cpu
