// lib/ops/fast_math.h
// Branch-free exp, log1p, softplus and sigmoid that the compiler can vectorize inside
// `#pragma omp simd` loops: float uses Cephes-style polynomials, double calls libm (exact path).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__GNUC__)
#define MASR_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define MASR_ALWAYS_INLINE inline
#endif

namespace masr::ops::fastmath {

MASR_ALWAYS_INLINE float bits_to_float(int32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

MASR_ALWAYS_INLINE int32_t float_to_bits(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// exp(x) = 2^k * e^r with k = round(x / ln 2) and |r| <= ln 2 / 2: returns the degree-6
// polynomial for e^r (Cephes expf coefficients) and sets k (an integer in float). V is float or
// a GCC vector of floats (selective_scan_cpu_n16.h): the same operations, lane by lane. Inputs
// are clamped to [-87.3, 88.3], so that below -87.3 exp gives ~1e-38 instead of a denormal.
template <typename V>
MASR_ALWAYS_INLINE V exp_reduced(V x, V& k) {
  const V lo = V{} - 87.3f, hi = V{} + 88.3f;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  // Round to nearest by adding 1.5 * 2^23: no call to a rounding function, so it vectorizes.
  k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  V r = x - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

// e^x to about 2 ulp: exp_reduced's polynomial times 2^k.
MASR_ALWAYS_INLINE float exp(float x) {
  float k;
  const float p = exp_reduced(x, k);
  return p * bits_to_float((static_cast<int32_t>(k) + 127) << 23);
}

// log(x) for positive normal x: x = 2^e * m, m in [sqrt(1/2), sqrt(2)); Cephes logf polynomial.
MASR_ALWAYS_INLINE float log(float x) {
  const int32_t bits = float_to_bits(x);
  float e = static_cast<float>((bits >> 23) - 126);
  float m = bits_to_float((bits & 0x007fffff) | 0x3f000000);  // in [0.5, 1)
  // low = 1 when m < sqrt(1/2): then use 2m (and e - 1). Arithmetic rather than ?:, which GCC
  // turns into a branch (and no vectorization) when log follows exp.
  const float low = static_cast<float>(m < 0.707106781186547524f);
  e = e - low;
  m = m + m * low - 1.0f;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y += -2.12194440e-4f * e;
  y += -0.5f * z;
  return m + y + 0.693359375f * e;
}

// log(1 + w) for w in [0, 1], accurate for tiny w too: log(u) * w / (u - 1) with u = 1 + w
// cancels the rounding of u (Goldberg's trick).
MASR_ALWAYS_INLINE float log1p_unit(float w) {
  const float u = 1.0f + w;
  const float d = u - 1.0f;
  // Both sides computed and selected, so that the loop stays free of branches and vectorizes.
  const float ratio = w / (d > 0.0f ? d : 1.0f);
  const float l = log(u) * ratio;
  return d > 0.0f ? l : w;
}

// softplus as torch.nn.functional.softplus (beta 1, threshold 20): x > 20 ? x : log1p(exp(x)),
// written as max(x, 0) + log1p(exp(-|x|)) so that exp never overflows. Above 20 the second
// term is below 2.1e-9, less than half an ulp of x, so the sum is exactly x as with the
// threshold, and the loop needs no select on an expensive value (GCC would branch on it).
MASR_ALWAYS_INLINE float softplus(float x) {
  return (x > 0.0f ? x : 0.0f) + log1p_unit(exp(-std::fabs(x)));
}
MASR_ALWAYS_INLINE double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

MASR_ALWAYS_INLINE float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }
MASR_ALWAYS_INLINE double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// d softplus / dx, with torch's threshold: exactly 1 above 20.
template <typename T>
MASR_ALWAYS_INLINE T softplus_grad(T x) {
  return x > T(20) ? T(1) : sigmoid(x);
}

MASR_ALWAYS_INLINE double exp(double x) { return std::exp(x); }

}  // namespace masr::ops::fastmath
