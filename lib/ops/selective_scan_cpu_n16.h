// lib/ops/selective_scan_cpu_n16.h
// The inner time loops of the float scan for state size 16 (every Mamba layer here), written
// with 16-lane GCC vector types: the state stays in registers and the sum over n is a shuffle
// tree. Included only by selective_scan_cpu.cpp, inside functions compiled per instruction set.
#pragma once

#include <cstdint>
#include <cstring>

#include "ops/fast_math.h"
#include "ops/selective_scan_cpu.h"

// These helpers are always inlined into callers compiled for one instruction set, so the ABI of
// passing 64-byte vectors (what -Wpsabi warns about) never crosses a call.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace masr::ops::cpu::n16 {

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

MASR_ALWAYS_INLINE v16f load(const float* p) {
  v16f v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

MASR_ALWAYS_INLINE void store(float* p, v16f v) { std::memcpy(p, &v, sizeof(v)); }

MASR_ALWAYS_INLINE float sum(v16f v) {
  const v8f a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const v4f b =
      __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
  return (b[0] + b[2]) + (b[1] + b[3]);
}

// fastmath::exp on 16 lanes (same polynomial, same clamping).
MASR_ALWAYS_INLINE v16f exp(v16f x) {
  v16f k;
  const v16f p = fastmath::exp_reduced(x, k);
  const v16i bits = (__builtin_convertvector(k, v16i) + 127) << 23;
  v16f scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

// Forward over one row's valid frames: y[t] = sum_n C h + skip u (before gating).
MASR_ALWAYS_INLINE void forward_row(const float* u, const float* dt, const float* A_row,
                                    const float* Bb, const float* Cb, float skip, int64_t len,
                                    bool reverse, float* y) {
  const v16f A = load(A_row);
  v16f h = {};
  for (int64_t step = 0; step < len; ++step) {
    const int64_t t = reverse ? len - 1 - step : step;
    const float dt_t = dt[t], u_t = u[t];
    h = exp(dt_t * A) * h + (dt_t * u_t) * load(Bb + t * 16);
    y[t] = sum(h * load(Cb + t * 16)) + skip * u_t;
  }
}

// Forward recompute for backward: also keeps every state (H, (len + 1) x 16, H[0] = 0) and decay.
MASR_ALWAYS_INLINE void recompute_row(const float* u, const float* dt, const float* A_row,
                                      const float* Bb, const float* Cb, float skip, int64_t len,
                                      bool reverse, float* y, float* H, float* decay) {
  const v16f A = load(A_row);
  v16f h = {};
  store(H, h);
  for (int64_t step = 0; step < len; ++step) {
    const int64_t t = reverse ? len - 1 - step : step;
    const float dt_t = dt[t], u_t = u[t];
    const v16f a = exp(dt_t * A);
    h = a * h + (dt_t * u_t) * load(Bb + t * 16);
    store(decay + step * 16, a);
    store(H + (step + 1) * 16, h);
    y[t] = sum(h * load(Cb + t * 16)) + skip * u_t;
  }
}

// The reverse-time adjoint (see backward_adjoint in selective_scan_cpu.cpp).
MASR_ALWAYS_INLINE void adjoint_row(const float* u, const float* dt, const float* dy,
                                    const float* A_row, const float* Bb, const float* Cb,
                                    float skip, int64_t len, bool reverse, const float* H,
                                    const float* decay, float* dBb, float* dCb, float* du,
                                    float* ddelta, float* dA_out, float* dskip_out) {
  const v16f A = load(A_row);
  v16f g = {}, dA = {};
  float dskip = 0.0f;
  for (int64_t step = len - 1; step >= 0; --step) {
    const int64_t t = reverse ? len - 1 - step : step;
    const float dt_t = dt[t], dy_t = dy[t], u_t = u[t];
    const v16f a = load(decay + step * 16);
    const v16f B = load(Bb + t * 16);
    const v16f dh = dy_t * load(Cb + t * 16) + g;
    const v16f dlog = dh * load(H + step * 16) * a;
    dA += dlog * dt_t;
    store(dBb + t * 16, load(dBb + t * 16) + dh * (dt_t * u_t));
    store(dCb + t * 16, load(dCb + t * 16) + dy_t * load(H + (step + 1) * 16));
    g = a * dh;
    const float sum_a = sum(dlog * A), sum_b = sum(dh * B);
    ddelta[t] = sum_a + sum_b * u_t;
    du[t] = skip * dy_t + sum_b * dt_t;
    dskip += dy_t * u_t;
  }
  store(dA_out, dA);
  *dskip_out = dskip;
}

}  // namespace masr::ops::cpu::n16
