#!/usr/bin/env python3
"""Kernel-level summary of a Chrome trace written by `mamba-asr bench train-step --trace FILE`
(or torch.profiler's export_chrome_trace): GPU kernel time by kernel, per step, and how busy the
GPU was. Usage: bench/trace_summary.py TRACE.json [STEPS] [TOP]"""
import collections
import json
import re
import sys

path = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
top = int(sys.argv[3]) if len(sys.argv) > 3 else 40
events = json.load(open(path))
events = events.get("traceEvents", events) if isinstance(events, dict) else events
kernels = [e for e in events if e.get("cat") in ("kernel", "Kernel") and "dur" in e]
copies = [e for e in events if e.get("cat") in ("gpu_memcpy", "gpu_memset") and "dur" in e]
if not kernels:
    sys.exit("no kernel events in " + path)
start = min(e["ts"] for e in kernels + copies)
end = max(e["ts"] + e["dur"] for e in kernels + copies)
busy = sum(e["dur"] for e in kernels + copies)


def short(name):
    name = re.sub(r"\(anonymous namespace\)::", "", name)
    name = re.sub(r"\b\d+\b", "N", name)  # launch bounds, vector sizes
    name = name.replace("at::native::", "").replace("void ", "")
    return name[:150]


def totals(events, key):
    """{key: [summed duration, count]} over events."""
    out = collections.defaultdict(lambda: [0.0, 0])
    for e in events:
        t = out[key(e)]
        t[0] += e["dur"]
        t[1] += 1
    return out


by = totals(kernels, lambda e: short(e["name"]))
print(f"{len(kernels) / steps:.0f} kernels per step, {busy / steps / 1e3:.2f} ms of GPU work per step "
      f"over {(end - start) / steps / 1e3:.2f} ms ({100 * busy / (end - start):.0f} % busy); "
      f"copies/memsets {sum(e['dur'] for e in copies) / steps / 1e3:.2f} ms per step")
print(f"{'ms/step':>8} {'share':>6} {'calls':>6}  kernel")
for name, (dur, n) in sorted(by.items(), key=lambda kv: -kv[1][0])[:top]:
    print(f"{dur / steps / 1e3:8.3f} {100 * dur / busy:5.1f}% {n / steps:6.0f}  {name}")

# The host side: CUDA runtime/driver calls (launches, allocations, synchronizations) and the
# longest CPU operators, per step. A host that spends its step in cudaMalloc/cudaFree or in
# synchronizations paces the GPU; launches alone cost a few microseconds each.
runtime = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and "dur" in e]
if runtime:
    rt = totals(runtime, lambda e: e["name"])
    print(f"\nCUDA runtime/driver calls: {sum(v[0] for v in rt.values()) / steps / 1e3:.2f} ms per step")
    print(f"{'ms/step':>8} {'calls':>7}  call")
    for name, (dur, n) in sorted(rt.items(), key=lambda kv: -kv[1][0])[:15]:
        print(f"{dur / steps / 1e3:8.3f} {n / steps:7.0f}  {name}")
ops = [e for e in events if e.get("cat") == "cpu_op" and "dur" in e]
if ops:
    # Time the GPU sat idle between kernels, split by gap length: many short gaps are launch
    # latency; a few long ones are the host stopping (a sync, an allocation, the data).
    ev = sorted(kernels + copies, key=lambda e: e["ts"])
    gaps = [b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(ev, ev[1:])]
    gaps = [g for g in gaps if g > 0]
    for lo, hi in ((0, 10), (10, 100), (100, 1000), (1000, 1e12)):
        sel = [g for g in gaps if lo <= g < hi]
        print(f"GPU idle gaps {lo:>5}-{hi if hi < 1e12 else 'inf':>5} us: {len(sel) / steps:7.0f} per step, "
              f"{sum(sel) / steps / 1e3:7.2f} ms per step")
    top_ops = totals(ops, lambda e: e["name"])
    print(f"\nCPU operators (inclusive time, nested ops counted in each): top 15 per step")
    for name, (dur, n) in sorted(top_ops.items(), key=lambda kv: -kv[1][0])[:15]:
        print(f"{dur / steps / 1e3:8.3f} {n / steps:7.0f}  {name[:120]}")

# Which operators launch the kernels whose names match ATTRIBUTE (default: the tensor copies):
# each kernel's launch (cuda_runtime event, same correlation id) lies inside a stack of CPU
# operators on its thread; kernels are grouped by the innermost DEPTH operators of that stack
# with their input shapes (recorded when the trace was taken with shapes).
attribute = re.compile(sys.argv[4] if len(sys.argv) > 4 else r"copy|_to_copy|nchwToNhwc|transpose")
depth = int(sys.argv[5]) if len(sys.argv) > 5 else 4


def stacks_of_launches(ops, runtime):
    """{correlation id: [innermost op, ..., outermost op]} for every runtime call."""
    by_thread = collections.defaultdict(list)
    for e in ops:
        by_thread[(e.get("pid"), e.get("tid"))].append(("op", e["ts"], -e["dur"], e))
    for e in runtime:
        by_thread[(e.get("pid"), e.get("tid"))].append(("rt", e["ts"], 0, e))
    out = {}
    for items in by_thread.values():
        items.sort(key=lambda i: (i[1], i[2], i[0] == "rt"))
        stack = []
        for kind, ts, _, e in items:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= ts:
                stack.pop()
            if kind == "op":
                stack.append(e)
            else:
                corr = e.get("args", {}).get("correlation")
                if corr is not None:
                    out[corr] = list(reversed(stack))
    return out


def op_label(e):
    dims = e.get("args", {}).get("Input Dims")
    shapes = ",".join("x".join(str(d) for d in s) for s in dims if s) if dims else ""
    return e["name"].replace("autograd::engine::evaluate_function: ", "") + (f"[{shapes}]" if shapes else "")


if ops and runtime:
    launched_by = stacks_of_launches(ops, runtime)
    chosen = [k for k in kernels if attribute.search(k["name"])]
    groups = totals(chosen, lambda k: " < ".join(
        op_label(o) for o in launched_by.get(k.get("args", {}).get("correlation"), [])[:depth]) or "(no operator)")
    print(f"\nKernels matching /{attribute.pattern}/: {sum(k['dur'] for k in chosen) / steps / 1e3:.2f} ms per step, "
          f"by the operators that launched them (innermost first)")
    for name, (dur, n) in sorted(groups.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{dur / steps / 1e3:8.3f} {n / steps:6.1f}  {name[:300]}")
