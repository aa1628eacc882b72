#!/usr/bin/env bash
# bench/detached.sh — long GPU measurements across device calls. A call lasts at most 10 minutes
# and the machine goes back 30 s after one ends, so long work runs detached (setsid) and later
# calls, each made within 30 s of the previous one's end, wait for it and bring its results back.
#
#   bash bench/detached.sh start 'COMMANDS'   # runs COMMANDS (bash) detached, from this tree
#   bash bench/detached.sh poll [SECONDS]     # waits up to SECONDS (default 540) for the end,
#                                             # copies the log, /tmp/gpu-out's summary and files
#                                             # (gpu-out-now.tar.gz) and /tmp/scale to $OUT
#
# COMMANDS run with .devdeps/env.sh sourced and OUT=/tmp/gpu-out (gpu_train.sh's results, kept
# between calls; PACK=0). The log is /tmp/detached.log; its last line is "DETACHED DONE rc=N".
# They run in a snapshot of the tree, /tmp/masr-tree (its build-cuda/ kept from one start to the
# next, so a second start rebuilds only what changed): every device call replaces the tree it
# arrives in, and a build reading that tree fails when a later call lands in the middle of it
# (2026-11-29: "ops/selective_scan_cuda_kernels.h: No such file or directory" 41 s into a build).
# The binary is /tmp/masr-tree/build-cuda/bin/mamba-asr (for gpu_session.sh: SKIP_BUILD=1 MASR_BIN=...).
# Example (the 2026-11-28 scaling session, 4 GPUs):
#   bash bench/detached.sh start 'BUILD_TESTS=1 NO_REF=1 bash bench/gpu_train.sh build cudatests &&
#     DATA=.ddpdata SCALE_EPOCHS=3 EPOCH_BATCHES=446 COPIES=20 \
#     SCALE_RUNS="new1 new2 new4 eager1 eager4 eager2" bash bench/gpu_train.sh scale'
#   bash bench/detached.sh poll 540        # in this call and the next ones
set -uo pipefail
log=/tmp/detached.log
case "${1:-}" in
  start)
    [[ -n ${2:-} ]] || { echo "detached.sh start: give the commands to run" >&2; exit 2; }
    if [[ -f /tmp/detached.pid ]] && kill -0 "$(cat /tmp/detached.pid)" 2>/dev/null; then
      echo "detached.sh: a run is still going (pid $(cat /tmp/detached.pid)); poll it" >&2; exit 2
    fi
    # A copy of the carried data outside the tree: the next call's transfer replaces the tree.
    [[ -d .ddpdata ]] && rm -rf /tmp/ddpdata-keep && cp -r .ddpdata /tmp/ddpdata-keep
    mkdir -p /tmp/gpu-out /tmp/masr-tree
    # The snapshot: every file of this tree but its builds and .git (the build's version falls
    # back to what the tree says without it), over the previous snapshot and its build folder.
    tar --exclude=./build --exclude=./build-cuda --exclude=./.git --exclude=./out -cf - . |
      tar -xf - -C /tmp/masr-tree ||
      { echo "detached.sh: could not copy the tree to /tmp/masr-tree" >&2; exit 1; }
    setsid nohup bash -c "cd /tmp/masr-tree && source .devdeps/env.sh && export OUT=/tmp/gpu-out PACK=0 &&
      echo \"DETACHED START \$(date -u +%T)\" && { $2 ; }; echo \"DETACHED DONE rc=\$? \$(date -u +%T)\"" \
      > "$log" 2>&1 < /dev/null &
    echo $! > /tmp/detached.pid
    echo "detached.sh: started (pid $!), log $log"
    ;;
  poll)
    end=$((SECONDS + ${2:-540}))
    while ((SECONDS < end)) && ! grep -q '^DETACHED DONE' "$log" 2>/dev/null; do sleep 5; done
    if [[ -n ${OUT:-} && -d ${OUT:-/nonexistent} ]]; then
      cp "$log" "$OUT/" 2>/dev/null
      cp /tmp/gpu-out/summary.txt "$OUT/" 2>/dev/null
      [[ -d /tmp/scale ]] && tar -czf "$OUT/scale-now.tar.gz" --exclude='save' --exclude='*.masr' \
        --exclude='*.ckpt' -C /tmp scale 2>/dev/null
      # the stages' own files (shapesum-*.json, profiles), without the big ones
      tar -czf "$OUT/gpu-out-now.tar.gz" --exclude='*.masr' --exclude='*.ckpt' --exclude='*.tar.gz' \
        -C /tmp gpu-out 2>/dev/null
    fi
    tail -c 6000 "$log"
    grep -q '^DETACHED DONE' "$log" 2>/dev/null && echo "detached.sh: done" || echo "detached.sh: still running"
    ;;
  *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
