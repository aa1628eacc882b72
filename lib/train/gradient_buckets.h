// lib/train/gradient_buckets.h
// Gradient all-reduce in buckets overlapped with the backward pass, as PyTorch DDP's Reducer
// does: a bucket's reduction starts as soon as backward has produced all of its gradients.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/Tensor.h>

namespace masr::train {

// Design (one instance per rank, over the same parameter list on every rank):
// - Parameters that require grad are grouped, in reverse order (backward produces the last
//   layers' gradients first), into buckets of about `bucket_bytes` (DDP's 25 MB), each with one
//   flat buffer; a bucket holds one dtype and device.
// - A hook on each parameter (Tensor::register_hook) acts only during the backward that
//   completes an accumulation (arm()): it writes p.grad (earlier micro-batches) + the incoming
//   gradient into the parameter's slice of the flat buffer. When a bucket is full its all-reduce
//   is launched; buckets are launched strictly in index order (a full bucket waits for the
//   earlier ones), so every rank issues the same collectives in the same order even when
//   gradients arrive in a different order.
// - finish() fills the slots no hook filled (p.grad, or zeros when undefined), launches the
//   remaining buckets and a small "used" count per parameter, waits, divides by the world size
//   and makes p.grad a view of the parameter's slice of its bucket (no copy back). A parameter
//   that got no gradient on any rank keeps an undefined grad, as in one process (optimizers skip
//   it). release(), before every backward, takes p.grad off the bucket where an optimizer left
//   it there (zeroed in place rather than set to none). Without arm() (an epoch's last,
//   partial accumulation) finish() reduces everything at once.
class GradientBuckets {
 public:
  // Starts an in-place sum over the ranks of `flat`; returns a function that waits for it.
  using LaunchSum = std::function<std::function<void()>(const at::Tensor& flat)>;

  GradientBuckets(std::vector<at::Tensor> parameters, int64_t bucket_bytes, int world_size,
                  LaunchSum launch);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Before every backward pass: no p.grad may still be a bucket slice (see above).
  void release();
  // The next backward pass completes the accumulation: reduce its buckets as they fill.
  void arm();
  // Averages the gradients over the ranks into p.grad (see above).
  void finish();

  size_t bucket_count() const;
  // Buckets launched so far in this step (from hooks, before finish()).
  size_t launched() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// True when `parameters` are the same tensors, in the same order, as `other`.
bool same_parameters(const std::vector<at::Tensor>& parameters,
                     const std::vector<at::Tensor>& other);

}  // namespace masr::train
