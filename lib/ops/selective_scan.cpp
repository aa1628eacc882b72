// lib/ops/selective_scan.cpp
// Entry point of the selective scan. Until the fused CPU kernel lands, it runs the reference.
#include "ops/selective_scan.h"

namespace masr::ops {

at::Tensor selective_scan(const at::Tensor& u, const at::Tensor& delta, const at::Tensor& A,
                          const at::Tensor& B, const at::Tensor& C, const at::Tensor& D,
                          const at::Tensor& z, const at::Tensor& delta_bias,
                          const at::Tensor& lengths, const ScanOptions& options) {
  return selective_scan_reference(u, delta, A, B, C, D, z, delta_bias, lengths, options);
}

}  // namespace masr::ops
