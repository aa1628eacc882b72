// lib/ops/benchmarks.h
// Benchmarks of the kernels in lib/ops, registered with `mamba-asr bench` (runtime/benchmark.h).
#pragma once

namespace masr::ops {

// Registers "scan": the CPU selective scan, forward and forward+backward, at ConMamba-S and
// ConMamba-L layer shapes.
void register_ops_benchmarks();

}  // namespace masr::ops
