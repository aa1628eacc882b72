// lib/ops/selective_scan_cuda_kernels.cu
// CUDA selective scan, forward and backward: one block per (utterance, 32 channels), one lane per
// channel, one warp per group of 4 states; time in chunks of kChunk steps (docs/kernels.md).
//
// Per chunk the block stages delta (after bias and softplus), delta*u, u, B and C in shared
// memory, each warp runs the recurrence of its 4 states for its 32 channels in registers, and the
// per-frame sums over states and the z gating are done by the whole block. Padding frames get
// delta = 0 (decay 1, no input), so they never touch the state. The backward pass walks chunks
// last to first from the forward's checkpoints (the state after every second chunk; the state
// before an even chunk is recomputed from the one before it) and reduces dB/dC over channels without atomics
// (warp shuffles, then one partial per block, then a fixed-order sum): results are bitwise
// reproducible.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ops/selective_scan_cuda_kernels.h"

namespace masr::ops::cuda {
namespace {

constexpr int kChunk = 16;  // steps per chunk
// The forward keeps the state after chunks 0, 2, 4, ... (every 2 * kChunk steps): half the
// memory of one per chunk (for ConMamba-L at 16 x 30 s, 590 MB of a training step's activations),
// for one extra chunk recurrence per two chunks in the backward pass.
constexpr int kCheckpointChunks = 2;
static_assert(kCheckpointChunks == 2, "scan_backward_body recomputes one unkept state per chunk");
constexpr int kRows = 32;   // channels per block (one per lane)
constexpr int kStates = 4;  // states per thread
constexpr int kMaxWarps = 16;
constexpr int kPitch =
    kRows + 1;  // odd pitch: column writes by consecutive steps hit distinct banks
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// 2^x in one MUFU instruction (relative error ~2^-22).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// torch.nn.functional.softplus with threshold 20, as max(x, 0) + log1p(exp(-|x|)) from the
// special-function unit: log(1 + y) by __logf for y >= 1e-2, by its series below (where __logf's
// absolute error, ~2^-21, would be a large relative error of a tiny softplus). Relative error
// ~1e-6 against log1pf(expf(x)), at a fraction of the instructions (docs/kernels.md, v3).
__device__ __forceinline__ float softplus(float x) {
  if (x > 20.f) return x;
  const float y = __expf(-fabsf(x));
  const float l = y < 1e-2f ? y * (1.f - y * (0.5f - y * (1.f / 3.f))) : __logf(1.f + y);
  return fmaxf(x, 0.f) + l;
}
__device__ __forceinline__ float sigmoid(float x) { return __fdividef(1.f, 1.f + __expf(-x)); }
// softplus'(x) = sigmoid(x) = 1 - exp(-softplus(x)), from dt = softplus(x): a series below 1e-2
// (where 1 - __expf would lose the relative precision), relative error ~1e-5 above.
__device__ __forceinline__ float softplus_grad(float dt) {
  return dt < 1e-2f ? dt * (1.f - dt * (0.5f - dt * (1.f / 6.f))) : 1.f - __expf(-dt);
}
// This warp's 4 entries of a B or C row in shared memory (16-byte aligned: rows are W * 4
// floats and the arrays start at multiples of 16 bytes), in one load.
__device__ __forceinline__ float4 state_quad(const float* row, int w) {
  return *reinterpret_cast<const float4*>(row + w * kStates);
}
__device__ __forceinline__ float quad_at(const float4& q, int i) {
  return i == 0 ? q.x : i == 1 ? q.y : i == 2 ? q.z : q.w;
}
// Element (b, r, t) of a tensor laid out as `s` says (RowStrides).
__device__ __forceinline__ int64_t at_frame(const RowStrides& s, int64_t b, int64_t r, int64_t t) {
  return b * s.batch + r * s.row + t;
}

template <int W>
struct FwdSmem {
  float dt[kChunk][kPitch], dtu[kChunk][kPitch], u[kChunk][kPitch];
  float B[kChunk][W * kStates], C[kChunk][W * kStates];
  float yp[kChunk][W][kPitch];  // per-warp partial sums over states
};

template <int W>
struct BwdSmem {
  float dt[kChunk][kPitch], dtu[kChunk][kPitch], u[kChunk][kPitch];
  float dy[kChunk][kPitch], z[kChunk][kPitch];
  float B[kChunk][W * kStates], C[kChunk][W * kStates];
  float pa[kChunk][W][kPitch];  // partial y (recompute), then partial sum_n dh*h*a*A
  float pb[kChunk][W][kPitch];  // partial sum_n dh*B
  float dbias[kRows];
  float D[kRows], bias[kRows];  // the block's D and delta_bias (0 where absent)
};

// Where step `step` of utterance b lies in time, or -1 past its length.
__device__ __forceinline__ int frame_of(const ScanParams& p, int len, int step) {
  if (step >= len) return -1;
  return p.reverse ? len - 1 - step : step;
}

// One thread's share of a chunk, raw from global memory: element q is (row j, step k) with
// j * kChunk + k = threadIdx.x + q * blockDim.x; B/C element q is (state n, step k) likewise.
// Fetched one chunk ahead so that the loads are in flight while the current chunk is scanned.
// The values stay in the input type until they are staged: converting right after the load
// would stall on it at once (v2 did: bf16 ran slower than fp32); a raw register is only waited
// for where it is used, one chunk later.
template <typename T, int W>
struct ChunkRegs {
  static constexpr int kPer = kRows * kChunk / (32 * W);
  T u[kPer], delta[kPer], z[kPer], dout[kPer];
  T B[2], C[2];  // W * kStates * kChunk / (32 * W) = 2
};

// A thread's elements keep their channel from chunk to chunk: its delta_bias and D values are
// loaded once, not once per chunk (each such load stalled the staging and the output loop).
template <int W>
struct RowConstants {
  float bias[ChunkRegs<float, W>::kPer], D[ChunkRegs<float, W>::kPer];
};

template <int W>
__device__ __forceinline__ RowConstants<W> load_row_constants(const ScanParams& p, int64_t d0) {
  RowConstants<W> rc;
#pragma unroll
  for (int q = 0; q < ChunkRegs<float, W>::kPer; ++q) {
    const int64_t d = d0 + (threadIdx.x + q * 32 * W) / kChunk;
    rc.bias[q] = p.bias && d < p.channels ? p.bias[d] : 0.f;
    rc.D[q] = p.D && d < p.channels ? p.D[d] : 0.f;
  }
  return rc;
}

__device__ __forceinline__ int row_of(int q, int threads) {
  return (threadIdx.x + q * threads) / kChunk;
}
__device__ __forceinline__ int step_of(int q, int threads) {
  return (threadIdx.x + q * threads) % kChunk;
}

template <typename T, int W>
__device__ __forceinline__ void fetch_chunk(const ScanParams& p, const T* dout,
                                            const RowStrides& dout_s, int64_t b, int64_t d0, int c,
                                            int len, ChunkRegs<T, W>& r) {
  const int64_t Dn = p.channels;
  const int N = static_cast<int>(p.state);
  const T* u = static_cast<const T*>(p.u);
  const T* delta = static_cast<const T*>(p.delta);
  const T* z = static_cast<const T*>(p.z);
  const T zero = from_float<T>(0.f);
#pragma unroll
  for (int q = 0; q < ChunkRegs<T, W>::kPer; ++q) {
    const int j = row_of(q, 32 * W), k = step_of(q, 32 * W);
    const int t = c >= 0 ? frame_of(p, len, c * kChunk + k) : -1;
    const bool ok = d0 + j < Dn && t >= 0;
    const int64_t d = d0 + j;
    r.u[q] = ok ? u[at_frame(p.u_s, b, d, t)] : zero;
    r.delta[q] = ok ? delta[at_frame(p.delta_s, b, d, t)] : zero;
    r.z[q] = ok && z ? z[at_frame(p.z_s, b, d, t)] : zero;
    r.dout[q] = ok && dout ? dout[at_frame(dout_s, b, d, t)] : zero;
  }
  const T* Bp = static_cast<const T*>(p.B);
  const T* Cp = static_cast<const T*>(p.C);
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const int n = row_of(q, 32 * W), k = step_of(q, 32 * W);
    const int t = c >= 0 ? frame_of(p, len, c * kChunk + k) : -1;
    const bool ok = n < N && t >= 0;
    r.B[q] = ok ? Bp[at_frame(p.B_s, b, n, t)] : zero;
    r.C[q] = ok ? Cp[at_frame(p.C_s, b, n, t)] : zero;
  }
}

// Writes a fetched chunk to shared memory: dt (after bias and softplus), dt*u, u, B, C; zeros
// past the length (dt = 0: decay 1 and no input, so padding never reaches the state).
template <typename T, int W, typename S>
__device__ __forceinline__ void stage_chunk(const ScanParams& p, const ChunkRegs<T, W>& r,
                                            const RowConstants<W>* rc, const float* shared_bias,
                                            S& s, int64_t d0, int c, int len) {
#pragma unroll
  for (int q = 0; q < ChunkRegs<T, W>::kPer; ++q) {
    const int j = row_of(q, 32 * W), k = step_of(q, 32 * W);
    const bool ok = d0 + j < p.channels && frame_of(p, len, c * kChunk + k) >= 0;
    // rc: the forward's biases in registers; the backward, whose registers are all taken, reads
    // them from shared memory.
    float dt = to_float(r.delta[q]) + (rc ? rc->bias[q] : shared_bias[j]);
    if (p.softplus) dt = softplus(dt);
    dt = ok ? dt : 0.f;
    const float u = to_float(r.u[q]);
    s.dt[k][j] = dt;
    s.dtu[k][j] = dt * u;
    s.u[k][j] = u;
  }
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const int n = row_of(q, 32 * W), k = step_of(q, 32 * W);
    s.B[k][n] = to_float(r.B[q]);
    s.C[k][n] = to_float(r.C[q]);
  }
}

// A * log2(e) (for exp2) and A of this thread's states; 0 for padded states and channels.
__device__ __forceinline__ void load_A(const ScanParams& p, int64_t d, int w, float* A, float* A2) {
#pragma unroll
  for (int i = 0; i < kStates; ++i) {
    const int n = w * kStates + i;
    A[i] = (d < p.channels && n < p.state) ? p.A[d * p.state + n] : 0.f;
    A2[i] = A[i] * kLog2e;
  }
}

__host__ __device__ __forceinline__ int64_t checkpoint_slots(int64_t time) {
  const int64_t chunks = (time + kChunk - 1) / kChunk;
  return (chunks + kCheckpointChunks - 1) / kCheckpointChunks;
}

// Where the state after chunk c (c a multiple of kCheckpointChunks) is kept.
__device__ __forceinline__ int64_t checkpoint_index(const ScanParams& p, int64_t b, int c, int n,
                                                    int64_t d) {
  return ((b * checkpoint_slots(p.time) + c / kCheckpointChunks) * p.state + n) * p.channels + d;
}

// Zeros frames [len, time) of rows d0..d0+31 of utterance b in x (laid out as xs says).
template <typename T>
__device__ void zero_padding(const ScanParams& p, T* x, const RowStrides& xs, int64_t b, int64_t d0,
                             int len) {
  if (x == nullptr) return;
  const int pad = static_cast<int>(p.time) - len;
  for (int e = threadIdx.x; e < kRows * pad; e += blockDim.x) {
    const int64_t d = d0 + e / pad;
    if (d < p.channels) x[at_frame(xs, b, d, len + e % pad)] = from_float<T>(0.f);
  }
}

// Utterance b of scan p (the kernels below run one or two scans per launch).
template <typename T, int W>
__device__ __forceinline__ void scan_forward_body(const ScanParams& p, const ScanForwardIO& io,
                                                  int64_t b) {
  extern __shared__ float4 smem_raw[];
  FwdSmem<W>& s = *reinterpret_cast<FwdSmem<W>*>(smem_raw);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t d0 = int64_t(blockIdx.x) * kRows, d = d0 + lane;
  const int len = static_cast<int>(p.lengths[b]);
  const int64_t Dn = p.channels;
  float A[kStates], A2[kStates], h[kStates];
  load_A(p, d, w, A, A2);
#pragma unroll
  for (int i = 0; i < kStates; ++i) h[i] = 0.f;
  const T* z = static_cast<const T*>(p.z);
  T* out = static_cast<T*>(io.out);
  (void)A;
  const int chunks = (len + kChunk - 1) / kChunk;
  const RowConstants<W> rc = load_row_constants<W>(p, d0);
  ChunkRegs<T, W> cur, next;
  const RowStrides none;
  fetch_chunk<T, W>(p, nullptr, none, b, d0, 0, len, cur);
  for (int c = 0; c < chunks; ++c) {
    stage_chunk<T, W>(p, cur, &rc, nullptr, s, d0, c, len);
    __syncthreads();
    fetch_chunk<T, W>(p, nullptr, none, b, d0, c + 1 < chunks ? c + 1 : -1, len, next);
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      const float dt = s.dt[k][lane], dtu = s.dtu[k][lane];
      const float4 Bk = state_quad(s.B[k], w), Ck = state_quad(s.C[k], w);
      float y = 0.f;
#pragma unroll
      for (int i = 0; i < kStates; ++i) {
        h[i] = fmaf(exp2_approx(dt * A2[i]), h[i], dtu * quad_at(Bk, i));
        y = fmaf(quad_at(Ck, i), h[i], y);
      }
      s.yp[k][w][lane] = y;
    }
    if (io.checkpoints != nullptr && d < Dn && c % kCheckpointChunks == 0) {
#pragma unroll
      for (int i = 0; i < kStates; ++i) {
        const int n = w * kStates + i;
        if (n < p.state) io.checkpoints[checkpoint_index(p, b, c, n, d)] = h[i];
      }
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < ChunkRegs<T, W>::kPer; ++q) {
      const int j = row_of(q, 32 * W), k = step_of(q, 32 * W);
      const int t = frame_of(p, len, c * kChunk + k);
      if (d0 + j >= Dn || t < 0) continue;
      float y = rc.D[q] * s.u[k][j];
#pragma unroll
      for (int v = 0; v < W; ++v) y += s.yp[k][v][j];
      const float zq = to_float(cur.z[q]);
      if (z != nullptr) y *= zq * sigmoid(zq);
      out[at_frame(io.out_s, b, d0 + j, t)] = from_float<T>(p.out_scale * y);
    }
    __syncthreads();
    cur = next;
  }
  zero_padding(p, out, io.out_s, b, d0, len);
}

// Grid rows [0, p0.batch) scan p0, the rest p1 (BiMamba's second direction; p1.batch = 0 when
// there is none). Each path reads its own parameters straight from the kernel arguments.
template <typename T, int W>
__global__ void __launch_bounds__(32 * W)
    scan_forward_kernel(ScanParams p0, ScanForwardIO io0, ScanParams p1, ScanForwardIO io1) {
  const int64_t row = blockIdx.y;
  if (row < p0.batch) {
    scan_forward_body<T, W>(p0, io0, row);
  } else {
    scan_forward_body<T, W>(p1, io1, row - p0.batch);
  }
}

// Sums 8 values over the 32 lanes of a warp with 9 shuffles (reduce-scatter, then all-reduce):
// lane l ends with the total of value ((l >> 2) & 7). The order is fixed: deterministic.
__device__ __forceinline__ float warp_sum8(const float (&v)[8], int lane) {
  float a[4], b2[2];
  const bool hi16 = lane & 16, hi8 = lane & 8, hi4 = lane & 4;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float send = hi16 ? v[q] : v[q + 4], keep = hi16 ? v[q + 4] : v[q];
    a[q] = keep + __shfl_xor_sync(0xffffffffu, send, 16);
  }
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const float send = hi8 ? a[q] : a[q + 2], keep = hi8 ? a[q + 2] : a[q];
    b2[q] = keep + __shfl_xor_sync(0xffffffffu, send, 8);
  }
  const float send = hi4 ? b2[0] : b2[1], keep = hi4 ? b2[1] : b2[0];
  float r = keep + __shfl_xor_sync(0xffffffffu, send, 4);
  r += __shfl_xor_sync(0xffffffffu, r, 2);
  r += __shfl_xor_sync(0xffffffffu, r, 1);
  return r;
}

// Whether the state at the start of chunk c was kept (or is the zero state, c = 0).
__device__ __forceinline__ bool start_state_kept(int c) {
  return c == 0 || (c - 1) % kCheckpointChunks == 0;
}

// The state at the start of chunk c where start_state_kept(c): the checkpoint after chunk c - 1,
// or zeros for c = 0.
__device__ __forceinline__ void load_start_state(const ScanParams& p, const float* checkpoints,
                                                 int64_t b, int64_t d, int c, float* h0) {
  const int w = threadIdx.x >> 5;
#pragma unroll
  for (int i = 0; i < kStates; ++i) {
    const int n = w * kStates + i;
    h0[i] = (c > 0 && d < p.channels && n < p.state)
                ? checkpoints[checkpoint_index(p, b, c - 1, n, d)]
                : 0.f;
  }
}

// Runs the staged chunk's recurrence on h (this thread's states), as the forward pass does.
template <typename S>
__device__ __forceinline__ void advance_chunk(const S& s, const float* A2, float* h) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    const float dt = s.dt[k][lane], dtu = s.dtu[k][lane];
    const float4 Bk = state_quad(s.B[k], w);
#pragma unroll
    for (int i = 0; i < kStates; ++i) h[i] = fmaf(exp2_approx(dt * A2[i]), h[i], dtu * quad_at(Bk, i));
  }
}

// Recomputes a chunk's states from its start state h0 (kept in registers: hs) and the per-warp
// partial outputs (s.pa).
template <int W>
__device__ __forceinline__ void recompute_chunk(BwdSmem<W>& s, const float* A2, const float* h0,
                                                float (&hs)[kChunk][kStates]) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    const float dt = s.dt[k][lane], dtu = s.dtu[k][lane];
    const float4 Bk = state_quad(s.B[k], w), Ck = state_quad(s.C[k], w);
    float y = 0.f;
#pragma unroll
    for (int i = 0; i < kStates; ++i) {
      const float prev = k ? hs[k - 1][i] : h0[i];
      hs[k][i] = fmaf(exp2_approx(dt * A2[i]), prev, dtu * quad_at(Bk, i));
      y = fmaf(quad_at(Ck, i), hs[k][i], y);
    }
    s.pa[k][w][lane] = y;
  }
}

// dout -> dy (and dz) with the recomputed pre-gate output y.
template <typename T, int W>
__device__ void gate_backward(const ScanParams& p, const ScanBackwardIO& io, BwdSmem<W>& s,
                              int64_t b, int64_t d0, int c, int len) {
  for (int e = threadIdx.x; e < kRows * kChunk; e += blockDim.x) {
    const int j = e / kChunk, k = e % kChunk;
    const int t = frame_of(p, len, c * kChunk + k);
    if (d0 + j >= p.channels || t < 0 || p.z == nullptr) continue;
    float y = s.D[j] * s.u[k][j];
#pragma unroll
    for (int v = 0; v < W; ++v) y += s.pa[k][v][j];
    const float zv = s.z[k][j], dout = s.dy[k][j], sg = sigmoid(zv);
    static_cast<T*>(io.dz)[at_frame(io.dz_s, b, d0 + j, t)] =
        from_float<T>(dout * y * sg * (1.f + zv * (1.f - sg)));
    s.dy[k][j] = dout * zv * sg;
  }
}

// du, ddelta and the per-row d(delta_bias) from the per-warp partial sums.
template <typename T, int W>
__device__ void input_grads(const ScanParams& p, const ScanBackwardIO& io, BwdSmem<W>& s, int64_t b,
                            int64_t d0, int c, int len) {
  for (int e = threadIdx.x; e < kRows * kChunk; e += blockDim.x) {
    const int j = e / kChunk, k = e % kChunk;
    const int t = frame_of(p, len, c * kChunk + k);
    float ddelta = 0.f;
    if (d0 + j < p.channels && t >= 0) {
      float sa = 0.f, sb = 0.f;
#pragma unroll
      for (int v = 0; v < W; ++v) {
        sa += s.pa[k][v][j];
        sb += s.pb[k][v][j];
      }
      const float dt = s.dt[k][j], u = s.u[k][j];
      const float du = fmaf(s.D[j], s.dy[k][j], sb * dt);
      ddelta = fmaf(sb, u, sa);
      if (p.softplus) ddelta *= softplus_grad(dt);
      static_cast<T*>(io.du)[at_frame(io.du_s, b, d0 + j, t)] = from_float<T>(du);
      static_cast<T*>(io.ddelta)[at_frame(io.ddelta_s, b, d0 + j, t)] = from_float<T>(ddelta);
    }
    // A row's kChunk (16) frames sit in 16 consecutive lanes: sum them in a fixed order.
#pragma unroll
    for (int o = kChunk / 2; o > 0; o /= 2) ddelta += __shfl_xor_sync(0xffffffffu, ddelta, o);
    if (k == 0) s.dbias[j] += ddelta;
  }
}

template <typename T, int W>
__device__ __forceinline__ void scan_backward_body(const ScanParams& p, const ScanBackwardIO& io,
                                                   int64_t b) {
  extern __shared__ float4 smem_raw[];
  BwdSmem<W>& s = *reinterpret_cast<BwdSmem<W>*>(smem_raw);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int64_t d0 = int64_t(blockIdx.x) * kRows, d = d0 + lane;
  const int len = static_cast<int>(p.lengths[b]);
  const int64_t L = p.time, Dn = p.channels;
  const int N = static_cast<int>(p.state), blocks = gridDim.x;
  float A[kStates], A2[kStates], g[kStates], dA[kStates], h0[kStates];
  float hs[kChunk][kStates];
  load_A(p, d, w, A, A2);
#pragma unroll
  for (int i = 0; i < kStates; ++i) g[i] = dA[i] = 0.f;
  float dD = 0.f;
  if (threadIdx.x < kRows) {
    const int64_t row = d0 + threadIdx.x;
    s.dbias[threadIdx.x] = 0.f;
    s.D[threadIdx.x] = p.D && row < Dn ? p.D[row] : 0.f;
    s.bias[threadIdx.x] = p.bias && row < Dn ? p.bias[row] : 0.f;
  }
  __syncthreads();
  const T* dout = static_cast<const T*>(io.dout);
  ChunkRegs<T, W> cur, next;
  float h0_next[kStates];
  const int last = (len + kChunk - 1) / kChunk - 1;
  fetch_chunk<T, W>(p, dout, io.dout_s, b, d0, last, len, cur);
  if (last >= 0 && start_state_kept(last)) load_start_state(p, io.checkpoints, b, d, last, h0);
  for (int c = last; c >= 0; --c) {
    const bool fetched = !start_state_kept(c);
    if (fetched) {
      // The state before chunk c was not kept: run chunk c - 1 on the state kept before it.
      fetch_chunk<T, W>(p, dout, io.dout_s, b, d0, c - 1, len, next);
      stage_chunk<T, W>(p, next, nullptr, s.bias, s, d0, c - 1, len);
      load_start_state(p, io.checkpoints, b, d, c - 1, h0);
      __syncthreads();
      advance_chunk(s, A2, h0);
      __syncthreads();
    }
    stage_chunk<T, W>(p, cur, nullptr, s.bias, s, d0, c, len);
#pragma unroll
    for (int q = 0; q < ChunkRegs<T, W>::kPer; ++q) {
      const int j = row_of(q, 32 * W), k = step_of(q, 32 * W);
      s.dy[k][j] = p.out_scale * to_float(cur.dout[q]);
      s.z[k][j] = to_float(cur.z[q]);
    }
    __syncthreads();
    if (!fetched) fetch_chunk<T, W>(p, dout, io.dout_s, b, d0, c - 1, len, next);
    if (c > 0 && start_state_kept(c - 1)) load_start_state(p, io.checkpoints, b, d, c - 1, h0_next);
    recompute_chunk<W>(s, A2, h0, hs);
    __syncthreads();
    gate_backward<T, W>(p, io, s, b, d0, c, len);
    __syncthreads();
#pragma unroll
    for (int k = kChunk - 1; k >= 0; --k) {
      const float dt = s.dt[k][lane], dtu = s.dtu[k][lane], dy = s.dy[k][lane];
      const float4 Bk = state_quad(s.B[k], w), Ck = state_quad(s.C[k], w);
      float sa = 0.f, sb = 0.f, v[8];
#pragma unroll
      for (int i = 0; i < kStates; ++i) {
        const float a = exp2_approx(dt * A2[i]);
        const float dh = fmaf(dy, quad_at(Ck, i), g[i]);
        const float dlog = dh * (k ? hs[k - 1][i] : h0[i]) * a;  // d loss / d (dt * A)
        sa = fmaf(dlog, A[i], sa);
        dA[i] = fmaf(dlog, dt, dA[i]);
        sb = fmaf(dh, quad_at(Bk, i), sb);
        v[i] = dh * dtu;
        v[kStates + i] = dy * hs[k][i];
        g[i] = a * dh;
      }
      s.pa[k][w][lane] = sa;
      s.pb[k][w][lane] = sb;
      if (w == 0) dD = fmaf(dy, s.u[k][lane], dD);
      const float total = warp_sum8(v, lane);
      const int t = frame_of(p, len, c * kChunk + k);
      const int which = (lane >> 4) & 1, n = w * kStates + ((lane >> 2) & 3);
      if ((lane & 3) == 0 && t >= 0 && n < N) {
        io.workspace[(((b * blocks + blockIdx.x) * 2 + which) * L + t) * N + n] = total;
      }
    }
    __syncthreads();
    input_grads<T, W>(p, io, s, b, d0, c, len);
    __syncthreads();
    cur = next;
#pragma unroll
    for (int i = 0; i < kStates; ++i) h0[i] = h0_next[i];
  }
  if (d < Dn) {
#pragma unroll
    for (int i = 0; i < kStates; ++i) {
      const int n = w * kStates + i;
      if (n < N) io.dA_rows[(b * Dn + d) * N + n] = dA[i];
    }
    if (w == 0) {
      io.dD_rows[b * Dn + d] = dD;
      io.dbias_rows[b * Dn + d] = s.dbias[lane];
    }
  }
  zero_padding(p, static_cast<T*>(io.du), io.du_s, b, d0, len);
  zero_padding(p, static_cast<T*>(io.ddelta), io.ddelta_s, b, d0, len);
  zero_padding(p, static_cast<T*>(io.dz), io.dz_s, b, d0, len);
}

// MinBlocks: resident blocks per multiprocessor the register allocation must allow (1: none).
template <typename T, int W, int MinBlocks>
__global__ void __launch_bounds__(32 * W, MinBlocks)
    scan_backward_kernel(ScanParams p0, ScanBackwardIO io0, ScanParams p1, ScanBackwardIO io1) {
  const int64_t row = blockIdx.y;
  if (row < p0.batch) {
    scan_backward_body<T, W>(p0, io0, row);
  } else {
    scan_backward_body<T, W>(p1, io1, row - p0.batch);
  }
}

// dB, dC (batch, state, time) = the fixed-order sum of the blocks' partials; zero past lengths.
template <typename T>
__device__ __forceinline__ void reduce_dBC(const ScanParams& p, const ScanBackwardIO& io,
                                           int blocks, int64_t idx) {
  const int64_t L = p.time, N = p.state;
  if (idx >= p.batch * N * L) return;
  // Consecutive threads read consecutive states of one frame (coalesced partials).
  const int64_t n = idx % N, t = (idx / N) % L, b = idx / (N * L);
  float sum[2] = {0.f, 0.f};
  if (t < p.lengths[b]) {
    for (int k = 0; k < blocks; ++k) {
      const float* part = io.workspace + ((b * blocks + k) * 2) * L * N;
      sum[0] += part[t * N + n];
      sum[1] += part[(L + t) * N + n];
    }
  }
  static_cast<T*>(io.dB)[at_frame(io.dB_s, b, n, t)] = from_float<T>(sum[0]);
  static_cast<T*>(io.dC)[at_frame(io.dC_s, b, n, t)] = from_float<T>(sum[1]);
}

template <typename T>
__global__ void reduce_dBC_kernel(ScanParams p0, ScanBackwardIO io0, ScanParams p1,
                                  ScanBackwardIO io1, int blocks) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t first = p0.batch * p0.state * p0.time;
  if (idx < first) {
    reduce_dBC<T>(p0, io0, blocks, idx);
  } else {
    reduce_dBC<T>(p1, io1, blocks, idx - first);
  }
}

int warps_for(int64_t state) {
  int w = 1;
  while (w * kStates < state) w *= 2;
  return w;
}

template <typename T, int W>
cudaError_t launch_forward(const ScanParams& p, const ScanForwardIO& io, const ScanParams& p1,
                           const ScanForwardIO& io1, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.channels + kRows - 1) / kRows),
                  static_cast<unsigned>(p.batch + p1.batch));
  const int smem = sizeof(FwdSmem<W>);
  auto kernel = scan_forward_kernel<T, W>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  kernel<<<grid, 32 * W, smem, stream>>>(p, io, p1, io1);
  return cudaGetLastError();
}

template <typename T, int W>
cudaError_t launch_backward(const ScanParams& p, const ScanBackwardIO& io, const ScanParams& p1,
                            const ScanBackwardIO& io1, cudaStream_t stream) {
  const int blocks = static_cast<int>((p.channels + kRows - 1) / kRows);
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(p.batch + p1.batch));
  const int smem = sizeof(BwdSmem<W>);
  // More blocks than fit twice on each multiprocessor: cap the registers (128 instead of ~215,
  // a few spills) for 4 resident blocks instead of 2 (docs/kernels.md, v5). A grid that fits
  // anyway keeps the spill-free build.
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const bool capped = W == 4 && int64_t(grid.x) * grid.y > 2 * int64_t(sms);
  auto kernel =
      capped ? scan_backward_kernel<T, W, (W == 4 ? 4 : 1)> : scan_backward_kernel<T, W, 1>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  kernel<<<grid, 32 * W, smem, stream>>>(p, io, p1, io1);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  const int64_t total = (p.batch + p1.batch) * p.state * p.time;
  const int threads = 256;
  reduce_dBC_kernel<T><<<static_cast<unsigned>((total + threads - 1) / threads), threads, 0,
                         stream>>>(p, io, p1, io1, blocks);
  return cudaGetLastError();
}

template <typename T, typename IO, typename Launch>
cudaError_t by_warps(const ScanParams& p, Launch&& launch) {
  switch (warps_for(p.state)) {
    case 1:
      return launch(std::integral_constant<int, 1>{});
    case 2:
      return launch(std::integral_constant<int, 2>{});
    case 4:
      return launch(std::integral_constant<int, 4>{});
    case 8:
      return launch(std::integral_constant<int, 8>{});
    default:
      return launch(std::integral_constant<int, kMaxWarps>{});
  }
}

template <typename T>
cudaError_t forward_typed(const ScanParams& p, const ScanForwardIO& io, const ScanParams& p1,
                          const ScanForwardIO& io1, cudaStream_t stream) {
  return by_warps<T, ScanForwardIO>(
      p, [&](auto w) { return launch_forward<T, decltype(w)::value>(p, io, p1, io1, stream); });
}

template <typename T>
cudaError_t backward_typed(const ScanParams& p, const ScanBackwardIO& io, const ScanParams& p1,
                           const ScanBackwardIO& io1, cudaStream_t stream) {
  return by_warps<T, ScanBackwardIO>(
      p, [&](auto w) { return launch_backward<T, decltype(w)::value>(p, io, p1, io1, stream); });
}

// A second scan can share a launch when the kernels' template and grid fit both.
bool same_shape(const ScanParams& p, const ScanParams& p1) {
  return p1.batch == 0 || (p1.channels == p.channels && p1.time == p.time &&
                           p1.state == p.state && p1.dtype == p.dtype);
}

const char* error_text(cudaError_t err) {
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

template <typename T>
struct Element {
  using type = T;
};

// Checks that the two scans can share a launch, then calls launch(Element<T>) with the kernels'
// element type; an empty scan launches nothing.
template <typename Launch>
const char* launch_pair(const ScanParams& p, const ScanParams& p1, Launch&& launch) {
  if (!same_shape(p, p1)) return "the two scans of one launch differ in shape or type";
  if (p.batch + p1.batch == 0 || p.channels == 0 || p.time == 0) return nullptr;
  switch (p.dtype) {
    case ScanDtype::kFloat32:
      return error_text(launch(Element<float>()));
    case ScanDtype::kFloat16:
      return error_text(launch(Element<__half>()));
    default:
      return error_text(launch(Element<__nv_bfloat16>()));
  }
}

}  // namespace

int scan_max_state() { return kMaxWarps * kStates; }

int64_t scan_checkpoint_floats(const ScanParams& p) {
  return p.batch * checkpoint_slots(p.time) * p.state * p.channels;
}

int64_t scan_workspace_floats(const ScanParams& p) {
  return p.batch * ((p.channels + kRows - 1) / kRows) * 2 * p.time * p.state;
}

const char* scan_forward(const ScanParams& p, const ScanForwardIO& io, void* stream) {
  return scan_forward_pair(p, io, ScanParams(), ScanForwardIO(), stream);
}

const char* scan_backward(const ScanParams& p, const ScanBackwardIO& io, void* stream) {
  return scan_backward_pair(p, io, ScanParams(), ScanBackwardIO(), stream);
}

const char* scan_forward_pair(const ScanParams& p, const ScanForwardIO& io, const ScanParams& p1,
                          const ScanForwardIO& io1, void* stream) {
  return launch_pair(p, p1, [&](auto element) {
    using T = typename decltype(element)::type;
    return forward_typed<T>(p, io, p1, io1, static_cast<cudaStream_t>(stream));
  });
}

const char* scan_backward_pair(const ScanParams& p, const ScanBackwardIO& io, const ScanParams& p1,
                           const ScanBackwardIO& io1, void* stream) {
  return launch_pair(p, p1, [&](auto element) {
    using T = typename decltype(element)::type;
    return backward_typed<T>(p, io, p1, io1, static_cast<cudaStream_t>(stream));
  });
}

}  // namespace masr::ops::cuda
