// lib/train/c10d_data_parallel.cpp
// The c10d DataParallel. Written against LibTorch 1.13 (Debian, Gloo) and 2.x (pip, NCCL); the
// calls used are the same in both: TCPStore(host, TCPStoreOptions), ProcessGroup{Gloo,NCCL}(store,
// rank, size, Options::create()), allreduce(std::vector<at::Tensor>&) -> Work::wait().
#include "train/c10d_data_parallel.h"

#include <cstdlib>
#include <mutex>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if defined(MASR_WITH_GLOO)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(MASR_WITH_NCCL)
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "runtime/device.h"
#include "train/gradient_buckets.h"

namespace masr::train {
namespace {

constexpr int64_t kBucketBytes = 25 * 1024 * 1024;  // DDP's bucket_cap_mb default

int env_int(const char* name, std::optional<int> fallback, int min, int max) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    if (fallback) return *fallback;
    throw_config_error(std::string("data parallel: environment variable ") + name +
                       " is not set (torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, "
                       "MASTER_PORT; or use mamba-asr train --nproc N)");
  }
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < min || value > max) {
    throw_config_error(std::string("data parallel: ") + name + "='" + text +
                       "' is not an integer in [" + std::to_string(min) + ", " +
                       std::to_string(max) + "]");
  }
  return static_cast<int>(value);
}

// A process group of either backend; `Group` is ProcessGroupGloo or ProcessGroupNCCL.
template <typename Group>
class C10dDataParallel : public DataParallel {
 public:
  C10dDataParallel(c10::intrusive_ptr<Group> group, const ParallelEnv& env, at::Device device)
      : group_(std::move(group)), env_(env), device_(device) {}

  int rank() const override { return env_.rank; }
  int world_size() const override { return env_.world_size; }

  void prepare_backward(const std::vector<at::Tensor>& parameters, bool completes_step) override {
    ensure_buckets(parameters);
    buckets_->release();
    if (completes_step) buckets_->arm();
  }

  void average_gradients(const std::vector<at::Tensor>& parameters) override {
    ensure_buckets(parameters);  // when no backward announced itself
    buckets_->finish();
  }

  double sum(double value) override {
    at::Tensor t = at::full({1}, value, at::TensorOptions().dtype(at::kDouble).device(device_));
    launch_sum(t)();
    return t.cpu().item<double>();
  }

  void sum_tensors(const std::vector<at::Tensor>& tensors) override {
    std::vector<at::Tensor> staged;
    std::vector<std::function<void()>> waits;
    for (const at::Tensor& t : tensors) {
      staged.push_back(t.device() == device_ && t.is_contiguous() ? t : t.to(device_).contiguous());
      waits.push_back(launch_sum(staged.back()));
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      waits[i]();
      if (!staged[i].is_same(tensors[i])) tensors[i].copy_(staged[i]);
    }
  }

 private:
  std::function<void()> launch_sum(const at::Tensor& t) {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    std::vector<at::Tensor> tensors{t};
    auto work = group_->allreduce(tensors);  // c10d::ProcessGroup::Work (1.13) or c10d::Work
    return [work] { work->wait(); };
  }

  c10::intrusive_ptr<Group> group_;
  ParallelEnv env_;
  at::Device device_;
  std::mutex launch_mutex_;

  void ensure_buckets(const std::vector<at::Tensor>& parameters) {
    if (buckets_ && same_parameters(parameters, bucket_parameters_)) return;
    buckets_.reset();
    bucket_parameters_ = parameters;
    buckets_ = std::make_unique<GradientBuckets>(
        parameters, kBucketBytes, env_.world_size,
        [this](const at::Tensor& flat) { return launch_sum(flat); });
  }

  std::vector<at::Tensor> bucket_parameters_;
  std::unique_ptr<GradientBuckets> buckets_;
};

[[maybe_unused]] c10::intrusive_ptr<c10d::Store> connect_store(const ParallelEnv& env) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(env.master_port);
  options.isServer = env.rank == 0;
  options.numWorkers = static_cast<size_t>(env.world_size);
  options.waitWorkers = true;
  options.timeout = std::chrono::seconds(300);
  try {
    return c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  } catch (const std::exception& e) {
    throw_io_error("data parallel: rank " + std::to_string(env.rank) +
                   " cannot reach the TCPStore at " + env.master_addr + ":" +
                   std::to_string(env.master_port) + " (MASTER_ADDR:MASTER_PORT): " + e.what());
  }
}

}  // namespace

std::optional<ParallelEnv> parallel_env_from_environment() {
  if (std::getenv("WORLD_SIZE") == nullptr) return std::nullopt;
  ParallelEnv env;
  env.world_size = env_int("WORLD_SIZE", std::nullopt, 1, 1 << 16);
  env.rank = env_int("RANK", std::nullopt, 0, env.world_size - 1);
  env.local_rank = env_int("LOCAL_RANK", env.rank, 0, env.world_size - 1);
  env.local_world_size = env_int("LOCAL_WORLD_SIZE", 1, 1, env.world_size);
  if (env.local_rank >= env.local_world_size && std::getenv("LOCAL_WORLD_SIZE") != nullptr) {
    throw_config_error("data parallel: LOCAL_RANK=" + std::to_string(env.local_rank) +
                       " is not below LOCAL_WORLD_SIZE=" + std::to_string(env.local_world_size));
  }
  if (env.world_size > 1) {
    env.master_port = env_int("MASTER_PORT", std::nullopt, 1, 65535);
    const char* addr = std::getenv("MASTER_ADDR");
    if (addr == nullptr || *addr == '\0') {
      throw_config_error("data parallel: environment variable MASTER_ADDR is not set");
    }
    env.master_addr = addr;
  }
  return env;
}

std::string c10d_backends() {
  std::string out;
#if defined(MASR_WITH_GLOO)
  out += "gloo";
#endif
#if defined(MASR_WITH_NCCL)
  out += out.empty() ? "nccl" : ", nccl";
#endif
  return out.empty() ? "none" : out;
}

std::shared_ptr<DataParallel> make_c10d_data_parallel(const ParallelEnv& env,
                                                      const runtime::DeviceChoice& choice) {
  const at::Device device = runtime::torch_device(choice);
  if (device.is_cuda()) {
#if defined(MASR_WITH_NCCL)
    // This rank's GPU becomes the current one, so NCCL and CUDA contexts are created there.
    c10::cuda::set_device(device.index() >= 0 ? device.index() : 0);
    auto store = connect_store(env);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    // The gradient all-reduces run beside the backward pass: on a high-priority stream their
    // kernels get SMs as soon as they are queued instead of after the backward kernels queued
    // before them, so each bucket's reduction overlaps the rest of the backward.
    // MASR_NCCL_HIGH_PRIORITY=0 restores PyTorch's default (docs/training.md).
    options->is_high_priority_stream = !env_is("MASR_NCCL_HIGH_PRIORITY", "0");
    auto group =
        c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, options);
    return std::make_shared<C10dDataParallel<c10d::ProcessGroupNCCL>>(group, env, device);
#else
    throw_config_error(
        "data parallel: this build has no NCCL; data-parallel CUDA training needs a CUDA "
        "LibTorch and nccl.h at build time");
#endif
  }
  if (!device.is_cpu()) {
    throw_config_error("data parallel: device '" + choice.str() +
                       "' is not supported (cpu with Gloo, cuda with NCCL)");
  }
#if defined(MASR_WITH_GLOO)
  auto store = connect_store(env);
  auto options = c10d::ProcessGroupGloo::Options::create();
  // GLOO_SOCKET_IFNAME as in PyTorch; else loopback for a local run, or the interface this
  // host's name resolves to.
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  const bool local = env.master_addr == "127.0.0.1" || env.master_addr == "localhost";
  options->devices.push_back(
      ifname != nullptr && *ifname != '\0'
          ? c10d::ProcessGroupGloo::createDeviceForInterface(ifname)
          : (local ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                   : c10d::ProcessGroupGloo::createDefaultDevice()));
  options->threads = 2;
  auto group =
      c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, options);
  return std::make_shared<C10dDataParallel<c10d::ProcessGroupGloo>>(group, env, device);
#else
  throw_config_error(
      "data parallel: this build has no Gloo; data-parallel CPU training needs libgloo-dev at "
      "build time");
#endif
}

}  // namespace masr::train
