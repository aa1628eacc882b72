#!/usr/bin/env python3
"""A Kineto (Chrome) trace of the Python reference's training step, for a kernel-by-kernel
comparison with `mamba-asr bench train-step --trace` (bench/trace_summary.py reads both).

    python3 bench/ref_trace.py TRACE.json [STEPS] -- [ref_train_step.py arguments]

Runs .ref/scripts/ref_train_step.py (../shared/pyref, staged by its stage.sh) unchanged and records
STEPS steps (default 3) after its warm-up. Each reference step ends with torch.cuda.synchronize(),
which this script counts to start and stop the profiler: the first call precedes the step loop,
call 1 + k ends step k. Only a measuring aid: nothing of the reference becomes part of mamba-asr.
"""
import runpy
import sys

import torch

if len(sys.argv) < 2 or "--" not in sys.argv:
    sys.exit(__doc__)
split = sys.argv.index("--")
trace_path = sys.argv[1]
steps = int(sys.argv[2]) if split > 2 else 3
ref_args = sys.argv[split + 1:]
warmup = 3
if "--warmup" in ref_args:
    warmup = int(ref_args[ref_args.index("--warmup") + 1])

profiler = torch.profiler.profile(
    activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA])
synchronize = torch.cuda.synchronize
calls = 0


def counting_synchronize(*args, **kwargs):
    global calls
    synchronize(*args, **kwargs)
    calls += 1
    if calls == 1 + warmup:
        profiler.start()
    elif calls == 1 + warmup + steps:
        profiler.stop()
        profiler.export_chrome_trace(trace_path)
        print(f"[ref_trace] {steps} steps written to {trace_path}", flush=True)


torch.cuda.synchronize = counting_synchronize
sys.argv = [".ref/scripts/ref_train_step.py"] + ref_args
sys.path.insert(0, ".ref/scripts")
runpy.run_path(".ref/scripts/ref_train_step.py", run_name="__main__")
