#!/usr/bin/env python3
"""Throughput and per-rank step profiles of `mamba-asr train` runs, one line per run, for the
data-parallel scaling tables (bench/gpu_train.sh, stage scale).

    bench/ddp_profile.py RUN_DIR [RUN_DIR...]

RUN_DIR is a run's output folder (or a folder holding its log.jsonl, profile.json and
profile-rank<R>.json). For each run it prints:
- windows: the median of log.jsonl's 10-step audio_sec_per_sec windows after step 20, times the
  world size (the window counts rank 0's audio; ranks get the same number of batches);
- epoch: the epoch record's train_audio_per_sec (every rank's audio over the epoch's wall time);
- per rank, from the profiled steps: median step, median compute (the step without data wait and
  collectives), median collectives wait, and the steps' mean wait for the slowest rank
  (max over ranks of compute minus this rank's compute, step by step);
- with CUDA graphs (train/cuda_graph_step.h), per rank the profiled steps by kind: replayed (a
  "replay" phase), captured (a "capture" phase) or eager (neither), each with its median step.
"""
import glob
import json
import os
import statistics
import sys


def median(values):
    return statistics.median(values) if values else float("nan")


def run_summary(path):
    rows = []
    log = os.path.join(path, "log.jsonl")
    records = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    steps = [r for r in records if r.get("kind") == "step"]
    epochs = [r for r in records if r.get("kind") == "epoch"]
    profiles = {}
    for name in glob.glob(os.path.join(path, "profile*.json")):
        p = json.load(open(name))
        profiles[p.get("rank", 0)] = p
    world = max([p.get("world_size", 1) for p in profiles.values()] or [1])
    windows = [r["audio_sec_per_sec"] for r in steps if r.get("step", 0) > 20]
    out = {
        "run": os.path.basename(path.rstrip("/")),
        "world_size": world,
        "windows": len(windows),
        "window_median": median(windows) * world,
        "window_min": min(windows) * world if windows else float("nan"),
        "window_max": max(windows) * world if windows else float("nan"),
        "epoch_audio_per_sec": epochs[-1].get("train_audio_per_sec", float("nan")) if epochs else float("nan"),
        "epoch_seconds": epochs[-1].get("train_seconds", float("nan")) if epochs else float("nan"),
        "ranks": {},
    }
    compute = {}
    for rank, p in sorted(profiles.items()):
        per = p.get("per_step_ms", {})
        step = per.get("step", [])
        n = len(step)
        col = lambda name: per.get(name, [0.0] * n)
        data, coll = col("data"), col("collectives")
        comp = [s - d - c for s, d, c in zip(step, data, coll)]
        compute[rank] = comp
        out["ranks"][rank] = {
            "steps": n,
            "step_ms": median(step),
            "host_ms": median(per.get("step_host", [])),
            "data_ms": median(data),
            "compute_ms": median(comp),
            "collectives_ms": median(coll),
            "normalize_ms": median(col("normalize")),
            "backward_ms": median(col("backward")),
        }
        if "replay" in per or "capture" in per:
            kinds = {"replayed": [], "captured": [], "eager": []}
            for k in range(n):
                kind = ("captured" if col("capture")[k] > 0 else
                        "replayed" if col("replay")[k] > 0 else "eager")
                kinds[kind].append(step[k])
            out["ranks"][rank]["step_kinds"] = {
                kind: {"steps": len(v), "step_ms": median(v)} for kind, v in kinds.items() if v}
        threads = p.get("threads_per_step_ms")
        if threads:  # profiles written since 2026-11-28 (Linux): CPU run and run-queue wait
            for key in ("training_run", "training_cpu_wait", "autograd_run", "autograd_cpu_wait"):
                out["ranks"][rank][key + "_ms"] = median(threads.get(key, []))
    if len(compute) > 1:
        n = min(len(c) for c in compute.values())
        for rank, comp in compute.items():
            waits = [max(c[k] for c in compute.values()) - comp[k] for k in range(n)]
            out["ranks"][rank]["wait_for_slowest_ms"] = statistics.fmean(waits) if waits else 0.0
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    results = [run_summary(p) for p in sys.argv[1:]]
    for r in results:
        print(f"{r['run']}: {r['world_size']} rank(s); windows after step 20: {r['windows']}, "
              f"median {r['window_median']:.0f} audio-s/s ({r['window_min']:.0f}-{r['window_max']:.0f}); "
              f"epoch {r['epoch_audio_per_sec']:.0f} audio-s/s over {r['epoch_seconds']:.1f} s")
        for rank, q in sorted(r["ranks"].items()):
            wait = q.get("wait_for_slowest_ms")
            print(f"  rank {rank}: {q['steps']} profiled steps, step {q['step_ms']:.1f} ms "
                  f"(host {q['host_ms']:.1f}), data {q['data_ms']:.2f}, compute {q['compute_ms']:.1f} "
                  f"(normalize {q['normalize_ms']:.2f}, backward {q['backward_ms']:.1f}), "
                  f"collectives {q['collectives_ms']:.2f}"
                  + (f", mean wait for the slowest {wait:.2f} ms" if wait is not None else ""))
            if "step_kinds" in q:
                print("          steps: " + ", ".join(
                    f"{kind} {v['steps']} (median {v['step_ms']:.1f} ms)"
                    for kind, v in q["step_kinds"].items()))
            if "training_run_ms" in q:
                print(f"          CPU per step: training thread ran {q['training_run_ms']:.1f} ms, "
                      f"waited for a CPU {q['training_cpu_wait_ms']:.2f}; autograd thread ran "
                      f"{q['autograd_run_ms']:.1f}, waited {q['autograd_cpu_wait_ms']:.2f}")
    print("JSON " + json.dumps(results))


if __name__ == "__main__":
    main()
