// lib/train/data_parallel.h
// The seam where data-parallel training plugs in: a rank's share of the batches, gradient
// all-reduce (overlapped with backward where the implementation can), and sums over the ranks of
// logged scalars and normalizer statistics. Single-process training uses the identity
// implementation; lib/train/c10d_data_parallel.h is the c10d (Gloo/NCCL) one. Only rank 0 writes
// logs and checkpoints.
#pragma once

#include <vector>

#include <ATen/Tensor.h>

namespace masr::train {

class DataParallel {
 public:
  virtual ~DataParallel() = default;
  virtual int rank() const { return 0; }
  virtual int world_size() const { return 1; }
  // Called before each backward pass. `completes_step`: this micro-batch completes a gradient
  // accumulation (average_gradients follows), so its gradients may be reduced while backward
  // runs. Every rank makes the same calls in the same order.
  virtual void prepare_backward(const std::vector<at::Tensor>& /*parameters*/,
                                bool /*completes_step*/) {}
  // Averages the gradients of `parameters` over the ranks (before clipping and the step).
  virtual void average_gradients(const std::vector<at::Tensor>& /*parameters*/) {}
  // Sums a scalar over the ranks (losses, audio seconds, error counts).
  virtual double sum(double value) { return value; }
  // Sums tensors over the ranks in place (every rank passes the same shapes and dtypes).
  virtual void sum_tensors(const std::vector<at::Tensor>& /*tensors*/) {}
  bool is_main() const { return rank() == 0; }

  // Every rank's `local` stacked in rank order: (world_size, local.sizes()...), on local's device.
  at::Tensor all_gather(const at::Tensor& local);
};

}  // namespace masr::train
