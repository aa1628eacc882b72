// lib/train/local_launcher.h
// `mamba-asr train --nproc N`: runs N ranks of the same command on this machine, as torchrun
// --standalone does, with the environment variables c10d_data_parallel.h reads.
#pragma once

#include <string>
#include <vector>

namespace masr::train {

// Starts `argv` (argv[0]: the executable) N times with RANK=LOCAL_RANK=r, WORLD_SIZE=N,
// MASTER_ADDR=127.0.0.1 and a free MASTER_PORT; forwards SIGINT/SIGTERM to the ranks and waits.
// Returns 0 when every rank succeeded, 130 when every rank stopped on a signal. When a rank
// fails the others are terminated and a masr::Error names the rank and its exit status.
int run_local_ranks(int nproc, const std::vector<std::string>& argv);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and released).
int free_local_port();

}  // namespace masr::train
