// lib/runtime/autocast.h
// Mixed precision for the forward pass: bf16 or fp16 autocast on CUDA (torch.autocast), nothing
// on CPU, where the recipes' `precision` falls back to fp32.
#pragma once

#include <ATen/core/TensorBody.h>

#include "runtime/precision.h"

namespace masr::runtime {

class AutocastGuard {
 public:
  // Only enables autocast for a CUDA device and bf16/fp16.
  AutocastGuard(const at::Device& device, Precision precision);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;
  bool active() const { return active_; }

 private:
  bool active_ = false;
  bool previous_enabled_ = false;
};

// Turns CUDA autocast off for a scope and back to what it was after (the features of a bf16 step
// are computed in float32).
class AutocastSuspend {
 public:
  AutocastSuspend();
  ~AutocastSuspend();
  AutocastSuspend(const AutocastSuspend&) = delete;
  AutocastSuspend& operator=(const AutocastSuspend&) = delete;

 private:
  bool was_enabled_ = false;
};

}  // namespace masr::runtime
