// lib/ops/ctc_loss_cuda_kernels.cu
// The CTC loss on the GPU, lengths read on the device. Forward: the log-alpha recursion, one
// block per utterance, a thread per extended-label state, time sequential. Backward: the log-beta
// recursion the same way (writing log alpha + log beta), then the gradient, one block per
// (frame, utterance): a dense pass over the vocabulary, then one fixed-order log-sum-exp per
// label of the target. No atomics: the results are reproducible bit for bit.
#include <cuda_runtime.h>

#include <cmath>

#include "ops/ctc_loss_cuda_kernels.h"

namespace masr::ops::cuda {
namespace {

constexpr int kMaxThreads = 1024;
constexpr int kStatesPerThread = 4;
// 4001 states: within kStatesPerThread * kMaxThreads, and 3 values per state in 48 KB of shared
// memory (the default limit, no opt-in needed).
constexpr int64_t kMaxTarget = 2000;
constexpr int kGradThreads = 256;

// ctc_states() of the header, for device code (the header stays free of CUDA keywords).
__host__ __device__ __forceinline__ int64_t states_of(const CtcParams& p) {
  return 2 * p.max_target + 1;
}

struct Utterance {
  int64_t frames;  // the input length, clamped to [0, time]
  int labels;      // the target length L, clamped to [0, max_target]
  int states;      // 2 L + 1
};

__device__ Utterance utterance_of(const CtcParams& p, int64_t b) {
  const int64_t frames = p.input_lengths[b], labels = p.target_lengths[b];
  Utterance u;
  u.frames = frames < 0 ? 0 : (frames > p.time ? p.time : frames);
  u.labels = static_cast<int>(labels < 0 ? 0 : (labels > p.max_target ? p.max_target : labels));
  u.states = 2 * u.labels + 1;
  return u;
}

// The label of extended state s: the blank at even s, target label (s - 1) / 2 at odd s. A label
// outside [0, vocab) reads as the blank (so no read goes astray) and sets *bad when bad is given.
__device__ int state_label(const CtcParams& p, int64_t b, int s, int* bad) {
  if ((s & 1) == 0) return static_cast<int>(p.blank);
  const int64_t l = p.targets[b * p.max_target + (s >> 1)];
  if (l < 0 || l >= p.vocab) {
    if (bad != nullptr) *bad = 1;
    return static_cast<int>(p.blank);
  }
  return static_cast<int>(l);
}

// log(e^a + e^b + e^c) as LibTorch's CTC computes it: the maximum taken out, -inf when all are.
__device__ __forceinline__ float log_add3(float a, float b, float c) {
  const float m = fmaxf(a, fmaxf(b, c));
  if (m == -INFINITY) return -INFINITY;
  return logf(expf(a - m) + expf(b - m) + expf(c - m)) + m;
}

int threads_for(int64_t states) {
  const int64_t t = (states + 31) / 32 * 32;
  return static_cast<int>(t > kMaxThreads ? kMaxThreads : t);
}

// The shared memory of the alpha and beta recursions: the labels of the utterance's states, then
// two rows of alpha (or beta), frame t's (written) and the one before it in the recursion (read),
// alternating with t's parity.
struct RecursionRows {
  int* label;
  float* even;
  float* odd;
  __device__ float* row(int64_t t) const { return (t & 1) ? odd : even; }
  __device__ const float* previous(int64_t t) const { return (t & 1) ? even : odd; }
};

// Sets up the rows of utterance b and reads its states' labels (*bad as state_label's).
__device__ RecursionRows recursion_rows(float* shared, const CtcParams& p, int64_t b,
                                        const Utterance& u, int* bad) {
  const int64_t n = states_of(p);
  RecursionRows r{reinterpret_cast<int*>(shared), shared + n, shared + 2 * n};
  for (int s = threadIdx.x; s < u.states; s += blockDim.x) r.label[s] = state_label(p, b, s, bad);
  __syncthreads();
  return r;
}

// em[k] = lp_t[label of state threadIdx.x + k * blockDim.x]: the thread's emissions of frame t, or
// -inf past the utterance's states.
__device__ __forceinline__ void load_emissions(const float* lp_t, const int* label, int states,
                                               float* em) {
#pragma unroll
  for (int k = 0; k < kStatesPerThread; ++k) {
    const int s = threadIdx.x + k * blockDim.x;
    em[k] = s < states ? lp_t[label[s]] : -INFINITY;
  }
}

// log alpha_t(s) = lp_t(l_s) + log(a_{t-1}(s) + a_{t-1}(s-1) + [l_s != l_{s-2}] a_{t-1}(s-2)),
// a = alpha. Shared memory: the labels of the states, then two rows of alpha (t - 1 and t).
__global__ void __launch_bounds__(kMaxThreads)
    alpha_kernel(CtcParams p, float* alphas, float* nll, float* loss) {
  extern __shared__ float shared[];
  __shared__ int bad;
  const int64_t b = blockIdx.x, n = states_of(p);
  const Utterance u = utterance_of(p, b);
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  const RecursionRows rows = recursion_rows(shared, p, b, u, &bad);
  const int* label = rows.label;

  const float* lp = p.log_probs + b * p.time * p.vocab;
  float* out = alphas + b * p.time * n;
  // Each thread's emissions for the next frame, loaded one step ahead to hide their latency.
  float em[kStatesPerThread];
  if (u.frames > 0) load_emissions(lp, label, u.states, em);
  for (int64_t t = 0; t < u.frames; ++t) {
    const float* prev = rows.previous(t);
    float* cur = rows.row(t);
#pragma unroll
    for (int k = 0; k < kStatesPerThread; ++k) {
      const int s = threadIdx.x + k * blockDim.x;
      if (s >= u.states) continue;
      float a;
      if (t == 0) {
        a = s < 2 ? em[k] : -INFINITY;
      } else {
        const float a1 = s >= 1 ? prev[s - 1] : -INFINITY;
        const float a2 = (s >= 2 && label[s - 2] != label[s]) ? prev[s - 2] : -INFINITY;
        a = log_add3(prev[s], a1, a2) + em[k];
      }
      cur[s] = a;
      out[t * n + s] = a;
      if (t + 1 < u.frames) em[k] = lp[(t + 1) * p.vocab + label[s]];
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  float ll;
  if (u.frames == 0) {
    ll = u.labels == 0 ? 0.f : -INFINITY;
  } else {
    const float* last = rows.row(u.frames - 1);
    ll = log_add3(last[u.states - 1], u.labels > 0 ? last[u.states - 2] : -INFINITY, -INFINITY);
  }
  const float value = bad ? NAN : -ll;
  nll[b] = value;
  loss[b] = (p.zero_infinity && value == INFINITY) ? 0.f : value;
}

// log beta_t(s) = lp_t(l_s) + log(b_{t+1}(s) + b_{t+1}(s+1) + [l_s != l_{s+2}] b_{t+1}(s+2)),
// b = beta (LibTorch's convention: beta includes frame t's emission), written as
// ab = log alpha + log beta. First the links of the gradient's per-label sums: for each state of a
// non-blank label, the next state of that label and whether it is the label's first.
__global__ void __launch_bounds__(kMaxThreads) beta_kernel(CtcParams p, CtcGrads g) {
  extern __shared__ float shared[];
  const int64_t b = blockIdx.x, n = states_of(p);
  const Utterance u = utterance_of(p, b);
  const int blank = static_cast<int>(p.blank);
  const RecursionRows rows = recursion_rows(shared, p, b, u, nullptr);
  const int* label = rows.label;
  int32_t* next = g.links + b * n;
  int32_t* first = g.links + (p.batch + b) * n;
  for (int s = threadIdx.x; s < u.states; s += blockDim.x) {
    int following = -1, is_first = 0;
    if (label[s] != blank) {  // an odd state
      is_first = 1;
      for (int q = s - 2; q >= 1; q -= 2) {
        if (label[q] == label[s]) {
          is_first = 0;
          break;
        }
      }
      for (int q = s + 2; q < u.states; q += 2) {
        if (label[q] == label[s]) {
          following = q;
          break;
        }
      }
    }
    next[s] = following;
    first[s] = is_first;
  }
  if (u.frames == 0) return;

  const float* lp = p.log_probs + b * p.time * p.vocab;
  const float* alpha = g.alphas + b * p.time * n;
  float* ab = g.ab + b * p.time * n;
  const int64_t last = u.frames - 1;
  float em[kStatesPerThread], al[kStatesPerThread];
  load_emissions(lp + last * p.vocab, label, u.states, em);
#pragma unroll
  for (int k = 0; k < kStatesPerThread; ++k) {
    const int s = threadIdx.x + k * blockDim.x;
    al[k] = s < u.states ? alpha[last * n + s] : -INFINITY;
  }
  for (int64_t t = last; t >= 0; --t) {
    const float* prev = rows.previous(t);
    float* cur = rows.row(t);
#pragma unroll
    for (int k = 0; k < kStatesPerThread; ++k) {
      const int s = threadIdx.x + k * blockDim.x;
      if (s >= u.states) continue;
      float be;
      if (t == last) {
        be = s >= u.states - 2 ? em[k] : -INFINITY;
      } else {
        const float b1 = s + 1 < u.states ? prev[s + 1] : -INFINITY;
        const float b2 = (s + 2 < u.states && label[s + 2] != label[s]) ? prev[s + 2] : -INFINITY;
        be = log_add3(prev[s], b1, b2) + em[k];
      }
      cur[s] = be;
      ab[t * n + s] = al[k] + be;
      if (t > 0) {
        em[k] = lp[(t - 1) * p.vocab + label[s]];
        al[k] = alpha[(t - 1) * n + s];
      }
    }
    __syncthreads();
  }
}

// A block-wide maximum or sum in a fixed order (shuffles within each warp, then the warps in
// order): the same result on every run. Every thread gets thread 0's result.
__device__ float block_reduce(float v, bool maximum, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = maximum ? fmaxf(v, w) : v + w;
  }
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w) {
    r = maximum ? fmaxf(r, scratch[w]) : r + scratch[w];
  }
  __syncthreads();  // scratch is reused by the next reduction
  return r;
}

// LibTorch's gradient of one label: (e^lp - e^(lcab + nll - lp)) * grad_loss, lcab the log of
// sum alpha beta over the label's states.
__device__ __forceinline__ float label_grad(float lp, float lcab, float nll, float grad_loss) {
  return (expf(lp) - expf(lcab + nll - lp)) * grad_loss;
}

// The log-sum-exp of ab over a label's states, following the links from its first state.
__device__ float chain_logsumexp(const float* ab, const int* next, int s) {
  float m = -INFINITY;
  for (int q = s; q >= 0; q = next[q]) m = fmaxf(m, ab[q]);
  if (m == -INFINITY) return -INFINITY;
  float sum = 0.f;
  for (int q = s; q >= 0; q = next[q]) sum += expf(ab[q] - m);
  return logf(sum) + m;
}

// One block per (frame t, utterance b). Shared memory: ab, the labels and the links of the row.
__global__ void __launch_bounds__(kGradThreads) grad_kernel(CtcParams p, CtcGrads g) {
  extern __shared__ float shared[];
  __shared__ float scratch[kGradThreads / 32];
  const int64_t t = blockIdx.x, b = blockIdx.y, n = states_of(p);
  const Utterance u = utterance_of(p, b);
  const int blank = static_cast<int>(p.blank);
  const int64_t row = b * p.time + t;
  float* grad = g.grad + row * p.vocab;
  const float* lp = p.log_probs + row * p.vocab;
  const float nll = g.nll[b];
  if (t >= u.frames || (p.zero_infinity && nll == INFINITY)) {
    for (int64_t v = threadIdx.x; v < p.vocab; v += blockDim.x) grad[v] = 0.f;
    return;
  }
  const float gl = g.grad_loss[b * g.grad_loss_stride];
  // Every label as one without states (lcab = -inf), kept in LibTorch's formula so that an
  // infeasible utterance (nll = inf) without zero_infinity gives NaN as LibTorch's does. The
  // labels of the target are rewritten below, after the barriers of the reductions.
  for (int64_t v = threadIdx.x; v < p.vocab; v += blockDim.x) {
    grad[v] = label_grad(lp[v], -INFINITY, nll, gl);
  }

  float* ab = shared;
  int* label = reinterpret_cast<int*>(shared + n);
  int* next = label + n;
  const float* ab_row = g.ab + row * n;
  const int32_t* next_row = g.links + b * n;
  const int32_t* first_row = g.links + (p.batch + b) * n;
  float m = -INFINITY;
  for (int s = threadIdx.x; s < u.states; s += blockDim.x) {
    ab[s] = ab_row[s];
    label[s] = state_label(p, b, s, nullptr);
    next[s] = next_row[s];
    if (label[s] == blank) m = fmaxf(m, ab[s]);
  }
  // The blank's states (every even one, and odd ones whose target label is the blank): a
  // block-wide log-sum-exp.
  m = block_reduce(m, true, scratch);
  float sum = 0.f;
  if (m != -INFINITY) {
    for (int s = threadIdx.x; s < u.states; s += blockDim.x) {
      if (label[s] == blank) sum += expf(ab[s] - m);
    }
  }
  sum = block_reduce(sum, false, scratch);
  if (threadIdx.x == 0) {
    grad[blank] = label_grad(lp[blank], m == -INFINITY ? -INFINITY : logf(sum) + m, nll, gl);
  }
  // Each other label of the target, by the thread that holds its first state.
  for (int s = 2 * threadIdx.x + 1; s < u.states; s += 2 * blockDim.x) {
    if (first_row[s] == 0) continue;
    grad[label[s]] = label_grad(lp[label[s]], chain_logsumexp(ab, next, s), nll, gl);
  }
}

const char* launch_problem(const CtcParams& p) {
  if (p.max_target < 0 || p.max_target > kMaxTarget) return "target too long for the kernels";
  if (p.batch > 65535 || p.time > 0x7fffffff) return "batch or time too large for one launch";
  if (p.blank < 0 || p.blank >= p.vocab) return "blank outside the vocabulary";
  return nullptr;
}

const char* error_text(cudaError_t err) {
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace

int64_t ctc_max_target() { return kMaxTarget; }

const char* ctc_loss_forward(const CtcParams& p, float* alphas, float* nll, float* loss,
                             void* stream) {
  if (const char* problem = launch_problem(p)) return problem;
  if (p.batch == 0) return nullptr;
  const int64_t n = states_of(p);
  alpha_kernel<<<static_cast<unsigned>(p.batch), threads_for(n), 3 * n * sizeof(float),
                 static_cast<cudaStream_t>(stream)>>>(p, alphas, nll, loss);
  return error_text(cudaGetLastError());
}

const char* ctc_loss_backward(const CtcParams& p, const CtcGrads& g, void* stream) {
  if (const char* problem = launch_problem(p)) return problem;
  if (p.batch == 0 || p.time == 0) return nullptr;
  const int64_t n = states_of(p);
  const auto s = static_cast<cudaStream_t>(stream);
  beta_kernel<<<static_cast<unsigned>(p.batch), threads_for(n), 3 * n * sizeof(float), s>>>(p, g);
  const dim3 grid(static_cast<unsigned>(p.time), static_cast<unsigned>(p.batch));
  grad_kernel<<<grid, kGradThreads, 3 * n * sizeof(float), s>>>(p, g);
  return error_text(cudaGetLastError());
}

}  // namespace masr::ops::cuda
