// lib/train/data_parallel.cpp
// The gather every DataParallel gets from its sum: each rank fills its own row of a zero tensor.
#include "train/data_parallel.h"

#include <ATen/ATen.h>

namespace masr::train {

at::Tensor DataParallel::all_gather(const at::Tensor& local) {
  std::vector<int64_t> shape{world_size()};
  shape.insert(shape.end(), local.sizes().begin(), local.sizes().end());
  at::Tensor all = at::zeros(shape, local.options());
  all[rank()].copy_(local);
  // A sum of rows that are zero everywhere but on their owner: exact, and one collective that
  // Gloo and NCCL both have (an all_gather would need a list of output tensors per backend).
  if (world_size() > 1) sum_tensors({all});
  return all;
}

}  // namespace masr::train
