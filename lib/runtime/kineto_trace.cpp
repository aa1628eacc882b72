// lib/runtime/kineto_trace.cpp
#include "runtime/kineto_trace.h"

#include <torch/torch.h>

#include <set>

#include "core/error.h"

#if defined(MASR_WITH_CUDA) && TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/autograd/profiler_kineto.h>
#define MASR_HAS_KINETO 1
#endif

namespace masr::runtime {

bool KinetoTrace::available() {
#ifdef MASR_HAS_KINETO
  return true;
#else
  return false;
#endif
}

void KinetoTrace::start() {
#ifdef MASR_HAS_KINETO
  if (running_) return;
  namespace prof = torch::autograd::profiler;
  // With input shapes: a step's operators can then be told apart by the batch shape they ran on.
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO,
                                                     /*report_input_shapes=*/true);
  const std::set<torch::profiler::impl::ActivityType> activities{
      torch::profiler::impl::ActivityType::CPU, torch::profiler::impl::ActivityType::CUDA};
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  running_ = true;
#else
  throw_config_error("a Kineto trace needs a CUDA build of mamba-asr on LibTorch >= 2");
#endif
}

void KinetoTrace::stop(const std::string& path) {
#ifdef MASR_HAS_KINETO
  if (!running_) return;
  running_ = false;
  torch::autograd::profiler::disableProfiler()->save(path);
#else
  (void)path;
#endif
}

KinetoTrace::~KinetoTrace() {
#ifdef MASR_HAS_KINETO
  if (!running_) return;
  try {
    torch::autograd::profiler::disableProfiler();
  } catch (...) {  // a destructor must not throw; the trace is lost either way
  }
#endif
}

}  // namespace masr::runtime
