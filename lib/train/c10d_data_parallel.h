// lib/train/c10d_data_parallel.h
// Data-parallel training over a c10d process group (Gloo on the CPU, NCCL on CUDA), set up from
// torchrun's environment variables: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "runtime/device.h"
#include "train/data_parallel.h"

namespace masr::train {

struct ParallelEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int local_world_size = 1;  // ranks on this host (LOCAL_WORLD_SIZE; 1 when unset)
};

// The torchrun variables (and LOCAL_WORLD_SIZE, which torchrun and --nproc set), or nullopt when WORLD_SIZE is unset. Throws a masr::Error naming the
// variable when one is malformed or out of range.
std::optional<ParallelEnv> parallel_env_from_environment();

// Joins the process group (rank 0 serves the TCPStore at MASTER_ADDR:MASTER_PORT) on `device`
// (resolved): Gloo for the CPU, NCCL for CUDA. Throws a masr::Error when this build lacks that
// backend.
std::shared_ptr<DataParallel> make_c10d_data_parallel(const ParallelEnv& env,
                                                      const runtime::DeviceChoice& device);

// Which backends this build has, e.g. "gloo" or "gloo, nccl" or "none".
std::string c10d_backends();

}  // namespace masr::train
