// lib/train/data_parallel.h
// The seam where data-parallel training plugs in: a rank's share of the batches, gradient
// all-reduce after backward, and reductions of logged scalars. Single-process training uses the
// identity implementation; a c10d (NCCL/Gloo) implementation can replace it without touching
// the trainer. Only rank 0 writes logs and checkpoints.
#pragma once

#include <vector>

#include <ATen/Tensor.h>

namespace masr::train {

class DataParallel {
 public:
  virtual ~DataParallel() = default;
  virtual int rank() const { return 0; }
  virtual int world_size() const { return 1; }
  // Averages the gradients of `parameters` over the ranks (before clipping and the step).
  virtual void average_gradients(const std::vector<at::Tensor>& /*parameters*/) {}
  // Sums a scalar over the ranks (losses, audio seconds, error counts).
  virtual double sum(double value) { return value; }
  bool is_main() const { return rank() == 0; }
};

}  // namespace masr::train
