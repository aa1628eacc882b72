// lib/runtime/autocast.cpp
// at::autocast switches; the device-generic API replaced the *_gpu_* one in LibTorch 2.4.
#include "runtime/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace masr::runtime {
namespace {

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool cuda_autocast_enabled() { return at::autocast::is_autocast_enabled(at::kCUDA); }
void set_cuda_autocast(bool on, at::ScalarType dtype) {
  at::autocast::set_autocast_dtype(at::kCUDA, dtype);
  at::autocast::set_autocast_enabled(at::kCUDA, on);
}
void set_cuda_autocast_enabled(bool on) { at::autocast::set_autocast_enabled(at::kCUDA, on); }
#else
bool cuda_autocast_enabled() { return at::autocast::is_enabled(); }
void set_cuda_autocast(bool on, at::ScalarType dtype) {
  at::autocast::set_autocast_gpu_dtype(dtype);
  at::autocast::set_enabled(on);
}
void set_cuda_autocast_enabled(bool on) { at::autocast::set_enabled(on); }
#endif

}  // namespace

AutocastGuard::AutocastGuard(const at::Device& device, Precision precision) {
  if (!device.is_cuda() || !is_mixed(precision)) return;
  previous_enabled_ = cuda_autocast_enabled();
  set_cuda_autocast(true, precision == Precision::kFp16 ? at::kHalf : at::kBFloat16);
  active_ = true;
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  set_cuda_autocast(previous_enabled_, at::kBFloat16);
  at::autocast::clear_cache();
}

AutocastSuspend::AutocastSuspend() : was_enabled_(cuda_autocast_enabled()) {
  if (was_enabled_) set_cuda_autocast_enabled(false);
}

AutocastSuspend::~AutocastSuspend() {
  if (was_enabled_) set_cuda_autocast_enabled(true);
}

}  // namespace masr::runtime
