#!/usr/bin/env bash
# bench/gpu_train.sh — GPU training measurements of mamba-asr next to the Python reference, in one
# call on the GPU machine (the device tool's `run`), for bench/results/ and docs/training.md.
#
#   bash bench/gpu_train.sh STAGE...
#
# Stages (run in the order given; each appends to $OUT/summary.txt):
#   build     configure + build mamba-asr (build-cuda/), and the reference's scan extension
#             (BUILD_TESTS=1: test_masr too)
#   cudatests test_masr "[.cuda]" (needs BUILD_TESTS=1 at build), then again with the off-by-default
#             switches on (SWITCH_TESTS=0 skips that)
#   step      bench train-step --profile vs ref_train_step.py: ConMamba-L S2S bf16 16 x 30 s as
#             A/B pairs (PAIRS, default 2), then ConMamba-S S2S and ConMamba-L CTC once each
#   stepL     the ConMamba-L S2S pairs alone (stepSC: the other two models, one pair each)
#   shapesum  the synthetic step at each batch shape of a scale run's last epoch (SHAPES_RUN,
#             default new1: bench train-step --shapes-from), summed, against that epoch's time
#   memab     peak memory and speed of the ConMamba-L S2S step: the reference, the graph with the
#             optimizer inside (also on two streams, MASR_COMPUTE_STREAM=0) and outside
#             (MASR_GRAPH_OPTIMIZER=0), PAIRS rounds; op by op once on one stream, once on two
#   graphab   the ConMamba-L S2S step op by op (MASR_CUDA_GRAPHS=0) against CUDA-graph replay,
#             PAIRS pairs, and once each at the scale corpus's mean batch
#   stepab    the ConMamba-L S2S step of this tree against .base's binary, PAIRS pairs
#   stepswitch  the same against this tree with its A/B switches off (OLD_ENV), then one switch
#             off at a time (scale runs "oldN": N GPUs with every switch off)
#   parity    fp32 losses of 20 steps from the reference's initial weights and batch, no dropout
#   epoch     real training on compressed files (.benchdata: Opus + CSVs), one GPU, --profile 30
#   ddp       the same on two GPUs (--nproc 2)
#   stepshape bench train-step at the real batches' shape (96 x 4.3 s)
#   ddplongsb  ddplong with --speechbrain-batch-order (SpeechBrain's batch order)
#   epochlong, ddplong, stepshapelong (also at the corpus's 5 tokens/s), epochlongexp (with
#             PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): the same on .benchdata/train_long.csv (utterances of
#             LibriSpeech-like length, 16 s on average: bench/make_benchdata.sh) and its shape
#   loader    bench loader on .benchdata's Opus files, 1-16 workers
#   ckpt      the ConMamba-L S2S step with and without --activation-checkpointing
#   trace     a Kineto trace of 3 ConMamba-L S2S bf16 steps, summarized by kernel, with the
#             operators that launch the tensor copies
#   reftrace  the same Kineto trace of the reference's step (bench/ref_trace.py), summarized
#   scale     data-parallel scaling on $DATA (default .ddpdata: train_long.csv + valid.csv from
#             bench/make_benchdata.sh) listed COPIES times: the runs of SCALE_RUNS, each
#             NAME = new|base + 1|2|4|NxM (GPUs; NxM = N*M ranks started torchrun-style as N
#             "nodes" of M, each node on its share of the CPUs and GPUs; eagerN: CUDA graphs
#             off, firstN: graphs from the first batch, lazyN: no captures of the shapes seen
#             so far when captures start, goutN: the optimizer outside the graph, garN: the
#             ranks' all-reduce and the update inside each graph (MASR_GRAPH_ALLREDUCE=1),
#             nopadN: batches of new shapes captured, not padded into held graphs (MASR_GRAPH_PAD=0),
#             mcostN: rounds costed at manifest durations (MASR_TRAINED_COSTS=0), noaheadN: no
#             captures of an epoch's predicted shapes at its start (MASR_GRAPH_AHEAD=0),
#             oldN: every A/B switch off); base runs the binary
#             built from .base/ (the code before a change, `git archive`d there). WORKERS loader
#             workers per rank (default 8); a steady-state profile of batches 51-80 on every rank;
#             bench/ddp_profile.py summarizes; everything lands in $OUT/scale.tar.gz.
#             SCALE_EPOCHS epochs per run (default 1; more: EPOCH_BATCHES, the batches of an
#             epoch on one GPU, puts the profile in the last epoch); RUN_TIMEOUT=S stops each
#             run after S seconds (not the NxM ones)
#   graphepochs  GRAPH_EPOCHS (3) epochs of one-GPU training on $DATA (GRAPH_COPIES listings, 10)
#             with CUDA graphs (from the second epoch, train's default) and with MASR_CUDA_GRAPHS=0
#   realtrace one GPU of real training on $DATA (TRACE_COPIES listings, default 5) with a Kineto
#             trace of batches 51-53 and the step profile of 51-80, then the synthetic step at
#             the corpus's mean shape (SHAPE_BATCH x SHAPE_SECONDS) fixed, over 8 shapes, and
#             over 8 shapes with ragged lengths (traced), each summarized by kernel
#   stepshapescale  bench train-step at the scale corpus's mean batch shape (SHAPE_BATCH x
#             SHAPE_SECONDS, default 33 x 14.3 s, 5 tokens/s)
#
# Needs: .devdeps (../shared/device/prepare.sh), .ref (../shared/pyref/stage.sh) and, for epoch
# and ddp, .benchdata/{opus/,train.csv,valid.csv} and train_long.csv (bench/make_benchdata.sh); name them in carry.
# Name them in every call's carry: an ignored folder a call does not carry is gone there (build
# outputs such as build-cuda/ stay). Each call's $OUT is new and empty: read earlier results from
# /tmp (the stages keep their runs there) or from the archive this script leaves in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
# MASR_BIN: a binary built earlier in the lease (e.g. gpu_session.sh's,
# /tmp/gpu-session/src/build-cuda/bin/mamba-asr), so that the stages run without the build stage.
BIN=${MASR_BIN:-$PWD/build-cuda/bin/mamba-asr}
BIN_BASE=$PWD/.base/build-cuda/bin/mamba-asr
PAIRS=${PAIRS:-2}
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
ref_result() { grep -o '"audio_s_per_s": [0-9.]*\|"peak_MiB": [0-9.]*\|"median_ms": [0-9.]*' "$1" | tr '\n' ' '; }
our_result() { grep -o '"median_s":[0-9.e-]*\|"throughput_per_s":[0-9.e+-]*\|"peak_bytes":[0-9.e+]*\|"p10_s":[0-9.e-]*\|"p90_s":[0-9.e-]*' "$1" | tr '\n' ' '; }

source .devdeps/env.sh
# Debian's Catch2 CMake package names /usr/include; its headers were unpacked under /opt/deps.
export CPLUS_INCLUDE_PATH=/opt/deps/usr/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
export TORCH_EXTENSIONS_DIR=/tmp/ext MAX_JOBS=8

stage_build() {
  nvidia-smi -L | tee -a "$OUT/summary.txt"
  if [[ -d .ref && -z ${NO_REF:-} ]]; then
    # Detached: the build stage does not wait for it (the reference's first import waits on
    # its lock instead), and it survives the end of a call.
    setsid bash -c "python3 -c \"import sys; sys.path.insert(0,'.ref/scripts'); import refcompat; refcompat.load_selective_scan()\" \
       > '$OUT/ext.log' 2>&1; echo \"ext rc=\$?\" >> '$OUT/ext.log'" < /dev/null &
  else
    echo "ext: not built (no .ref or NO_REF set)" > "$OUT/ext.log"
  fi
  local base_pid=""
  if [[ -d .base ]]; then  # the code before the change, for same-call before/after runs
    (cd .base && cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DTORCH_CUDA_ARCH_LIST=9.0 \
       -DTorch_DIR="$(python3 -c 'import os, torch; print(os.path.join(torch.utils.cmake_prefix_path, "Torch"))')" \
       -DMASR_BUILD_TESTS=OFF > "$OUT/base-cmake.log" 2>&1 && cmake --build build-cuda --target mamba-asr \
       > "$OUT/base-build.log" 2>&1; echo "base build rc=$?" >> "$OUT/base-build.log") &
    base_pid=$!
  fi
  local t0=$SECONDS
  local torch_dir
  torch_dir=$(python3 -c 'import os, torch; print(os.path.join(torch.utils.cmake_prefix_path, "Torch"))' 2>/dev/null | tail -1)
  echo "python3: $(command -v python3); Torch_DIR=$torch_dir; CMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH" >> "$OUT/summary.txt"
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DTORCH_CUDA_ARCH_LIST=9.0 \
        -DTorch_DIR="$torch_dir" -DMASR_BUILD_TESTS=${BUILD_TESTS:+ON} > "$OUT/cmake.log" 2>&1 &&
    cmake --build build-cuda --target mamba-asr ${BUILD_TESTS:+test_masr} > "$OUT/build.log" 2>&1
  local rc=$?
  # test_masr's post-link test listing (catch_discover_tests) may fail there; the binary stands.
  if [[ $rc -ne 0 && -n "${BUILD_TESTS:-}" && -x build-cuda/tests/test_masr && -x $BIN ]] &&
     grep -q 'Error running test executable' "$OUT/build.log"; then
    summary "build: test discovery after linking test_masr failed (ignored)"; rc=0
  fi
  summary "build rc=$rc in $((SECONDS - t0)) s"
  [[ $rc -eq 0 ]] || { grep -B2 -A12 'error' "$OUT/build.log" | head -80; exit 1; }
  [[ -n $base_pid ]] && wait "$base_pid"
  summary "ext: $(tail -1 "$OUT/ext.log" 2>/dev/null || echo 'building (detached)')"
  [[ -d .base ]] && tail -1 "$OUT/base-build.log" | tee -a "$OUT/summary.txt"
  return 0
}

stage_cudatests() {
  local t0=$SECONDS
  CUDA_VISIBLE_DEVICES=0 build-cuda/tests/test_masr "[.cuda]" > "$OUT/cudatests.log" 2>&1
  summary "cudatests rc=$? in $((SECONDS - t0)) s: $(tail -2 "$OUT/cudatests.log" | tr '\n' ' ')"
  grep -B4 -A14 'FAILED' "$OUT/cudatests.log" | head -120
  # The switches still off by default, on: the same tests through their paths
  # (SWITCH_TESTS=0 skips them when device time is short).
  [[ ${SWITCH_TESTS:-1} == 0 ]] && return 0
  t0=$SECONDS
  CUDA_VISIBLE_DEVICES=0 MASR_CTC_FROM_LOGITS=1 build-cuda/tests/test_masr "[.cuda]" > "$OUT/cudatests-ctcl.log" 2>&1
  summary "cudatests MASR_CTC_FROM_LOGITS=1 rc=$? in $((SECONDS - t0)) s: $(tail -2 "$OUT/cudatests-ctcl.log" | tr '\n' ' ')"
  grep -B4 -A14 'FAILED' "$OUT/cudatests-ctcl.log" | head -60
}

ours_step() {  # name hparams precision batch seconds [extra]
  CUDA_VISIBLE_DEVICES=0 "$BIN" --device cuda bench train-step --hparams "$2" --precision "$3" \
    --batch "$4" --seconds "$5" --warmup 3 --repeat 20 --profile --json "${@:6}" \
    > "$OUT/$1.json" 2> "$OUT/$1.err"
  summary "ours $1: $(our_result "$OUT/$1.json")"
}

ref_step() {  # name hparams batch seconds [extra]
  CUDA_VISIBLE_DEVICES=0 python3 .ref/scripts/ref_train_step.py --hparams "$2" --batch "$3" \
    --seconds "$4" --warmup 3 --repeat 20 --json "$OUT/$1.json" "${@:5}" > "$OUT/$1.log" 2>&1
  summary "ref  $1: $(ref_result "$OUT/$1.json")"
}

stage_stepL() {
  local L=.ref/mamba_asr/hparams
  for i in $(seq 1 "$PAIRS"); do
    ref_step "ref-s2s-L-$i" $L/S2S/conmamba_large.yaml 16 30
    ours_step "ours-s2s-L-$i" hparams/S2S/conmamba_large.yaml bf16 16 30
  done
  grep -A40 'train-step profile' "$OUT/ours-s2s-L-1.err" | tee -a "$OUT/summary.txt"
}

# The A/B switches of this tree (docs/training.md): every one off.
OLD_ENV="MASR_GRAD_SLICES=0 MASR_CONV_MODULE_MATMUL=0 MASR_CUDA_GRAPHS=0 MASR_GRAPH_OPTIMIZER=0 MASR_COMPUTE_STREAM=0"

# The ConMamba-L S2S step with every A/B switch off and on, in PAIRS alternating pairs (no .base
# build needed), then with one switch off at a time.
stage_stepswitch() {
  local i
  for i in $(seq 1 "$PAIRS"); do
    (export $OLD_ENV; ours_step "old-s2s-L-$i" hparams/S2S/conmamba_large.yaml bf16 16 30)
    ours_step "new-s2s-L-$i" hparams/S2S/conmamba_large.yaml bf16 16 30
  done
  (export MASR_CONV_MODULE_MATMUL=0; ours_step noconvmm-s2s-L hparams/S2S/conmamba_large.yaml bf16 16 30)
  (export MASR_CUDA_GRAPHS=0; ours_step nograph-s2s-L hparams/S2S/conmamba_large.yaml bf16 16 30)
  grep -A40 'train-step profile' "$OUT/new-s2s-L-1.err" | tee -a "$OUT/summary.txt"
}

# Peak memory and speed of the ConMamba-L S2S step (16 x 30 s, bf16) against the reference, in
# PAIRS rounds of: the reference, the graph with the optimizer's update inside (the default for
# one GPU), the same on two streams (MASR_COMPUTE_STREAM=0: op-by-op steps on the default stream,
# captures on another, each with its cuBLAS workspaces), the graph with the update outside
# (MASR_GRAPH_OPTIMIZER=0: flat gradient buffers); then op by op (MASR_CUDA_GRAPHS=0) once on one
# stream and once on the default stream.
stage_memab() {
  local L=.ref/mamba_asr/hparams i
  for i in $(seq 1 "$PAIRS"); do
    ref_step "ref-s2s-L-$i" $L/S2S/conmamba_large.yaml 16 30
    ours_step "whole-s2s-L-$i" hparams/S2S/conmamba_large.yaml bf16 16 30
    (export MASR_COMPUTE_STREAM=0; ours_step "twos-s2s-L-$i" hparams/S2S/conmamba_large.yaml bf16 16 30)
    (export MASR_GRAPH_OPTIMIZER=0; ours_step "gout-s2s-L-$i" hparams/S2S/conmamba_large.yaml bf16 16 30)
  done
  (export MASR_CUDA_GRAPHS=0; ours_step eager-s2s-L hparams/S2S/conmamba_large.yaml bf16 16 30)
  (export MASR_CUDA_GRAPHS=0 MASR_COMPUTE_STREAM=0; ours_step eager-twos-s2s-L hparams/S2S/conmamba_large.yaml bf16 16 30)
  grep -A40 'train-step profile' "$OUT/whole-s2s-L-1.err" | tee -a "$OUT/summary.txt"
  # Where the memory goes (MASR_MEMLOG=1: the allocator at each phase of the first steps), and
  # what the cuBLAS workspaces hold (none: CUBLAS_WORKSPACE_CONFIG=:0:0), graph and op by op.
  local v
  for v in "memlog-whole MASR_MEMLOG=1" "memlog-twos MASR_MEMLOG=1 MASR_COMPUTE_STREAM=0" \
           "memlog-eager MASR_MEMLOG=1 MASR_CUDA_GRAPHS=0" "nows-whole CUBLAS_WORKSPACE_CONFIG=:0:0"; do
    set -- $v
    (export "${@:2}"; CUDA_VISIBLE_DEVICES=0 "$BIN" --device cuda bench train-step \
       --hparams hparams/S2S/conmamba_large.yaml --precision bf16 --batch 16 --seconds 30 \
       --warmup 2 --repeat 3 --json > "$OUT/$1.json" 2> "$OUT/$1.err")
    summary "ours $1: $(our_result "$OUT/$1.json")"
    grep '^memory ' "$OUT/$1.err" | head -12 | tee -a "$OUT/summary.txt"
  done
}

# The real epoch against the synthetic step at its own batch shapes: bench train-step
# --shapes-from a scale run's batch_shapes.tsv (its last epoch's shapes on rank 0; SHAPES_RUN,
# default new1) with that run's resolved hparams; the sum of batches x median step, set against the
# epoch's step time in the run's last epoch line.
stage_shapesum() {
  local run=${SHAPES_RUN:-new1}
  CUDA_VISIBLE_DEVICES=0 "$BIN" --device cuda bench train-step --hparams "/tmp/scale/$run/hyperparams.yaml" \
    --precision bf16 --shapes-from "/tmp/scale/$run/batch_shapes.tsv" --warmup 2 --repeat 3 --json \
    > "$OUT/shapesum-$run.json" 2> "$OUT/shapesum-$run.err"
  summary "shapesum $run rc=$?: $(grep -c '"same_shape":1' "$OUT/shapesum-$run.json") shapes matched, $(grep -c '"same_shape":0' "$OUT/shapesum-$run.json") not"
  grep '"train-step/shapes-from"' "$OUT/shapesum-$run.json" | tee -a "$OUT/summary.txt"
  grep '^epoch [0-9]*:' "/tmp/scale/$run.log" | tail -1 | tee -a "$OUT/summary.txt"
}

# The ConMamba-L S2S step op by op (MASR_CUDA_GRAPHS=0) and replayed as a CUDA graph, in PAIRS
# alternating pairs, then the same at the scale corpus's mean batch (30 x 15.8 s, 5 tokens/s).
stage_graphab() {
  local i
  for i in $(seq 1 "$PAIRS"); do
    (export MASR_CUDA_GRAPHS=0; ours_step eager-s2s-L-$i hparams/S2S/conmamba_large.yaml bf16 16 30)
    ours_step graph-s2s-L-$i hparams/S2S/conmamba_large.yaml bf16 16 30
  done
  (export MASR_CUDA_GRAPHS=0; ours_step eager-s2s-L-b30 hparams/S2S/conmamba_large.yaml bf16 30 15.8 --tokens-per-second 5)
  ours_step graph-s2s-L-b30 hparams/S2S/conmamba_large.yaml bf16 30 15.8 --tokens-per-second 5
  grep -A40 'train-step profile' "$OUT/graph-s2s-L-1.err" | tee -a "$OUT/summary.txt"
}

# The ConMamba-L S2S step of this tree's binary against .base's (the code before a change), in
# PAIRS alternating pairs.
stage_stepab() {
  local i
  for i in $(seq 1 "$PAIRS"); do
    BIN=$BIN_BASE ours_step "base-s2s-L-$i" hparams/S2S/conmamba_large.yaml bf16 16 30
    ours_step "new-s2s-L-$i" hparams/S2S/conmamba_large.yaml bf16 16 30
  done
  grep -A40 'train-step profile' "$OUT/new-s2s-L-1.err" | tee -a "$OUT/summary.txt"
}

stage_stepSC() {  # ConMamba-S S2S and ConMamba-L CTC, one pair each
  local L=.ref/mamba_asr/hparams
  ref_step ref-s2s-S $L/S2S/conmamba_small.yaml 16 30
  ours_step ours-s2s-S hparams/S2S/conmamba_small.yaml bf16 16 30
  ref_step ref-ctc-L $L/CTC/conmamba_large.yaml 16 30
  ours_step ours-ctc-L hparams/CTC/conmamba_large.yaml bf16 16 30
}

stage_step() {
  local L=.ref/mamba_asr/hparams
  stage_stepL
  ref_step ref-s2s-S $L/S2S/conmamba_small.yaml 16 30
  ours_step ours-s2s-S hparams/S2S/conmamba_small.yaml bf16 16 30
  ref_step ref-ctc-L $L/CTC/conmamba_large.yaml 16 30
  ours_step ours-ctc-L hparams/CTC/conmamba_large.yaml bf16 16 30
}

stage_parity() {
  # Dropout off on both sides (the only randomness left without augmentation).
  sed 's/^transformer_dropout: .*/transformer_dropout: 0.0/' .ref/mamba_asr/hparams/S2S/conmamba_large.yaml > /tmp/ref_nodrop.yaml
  sed 's/^transformer_dropout: .*/transformer_dropout: 0.0/' hparams/S2S/conmamba_large.yaml > hparams/S2S/.parity_nodrop.yaml
  CUDA_VISIBLE_DEVICES=0 python3 .ref/scripts/ref_train_step.py --hparams /tmp/ref_nodrop.yaml --batch 4 \
    --seconds 10 --warmup 0 --repeat 20 --no-augment --fp32 --save-init /tmp/parity \
    --json "$OUT/parity-ref.json" > "$OUT/parity-ref.log" 2>&1
  CUDA_VISIBLE_DEVICES=0 "$BIN" --device cuda bench train-parity --hparams hparams/S2S/.parity_nodrop.yaml \
    --init /tmp/parity --warmup 0 --repeat 20 --json > "$OUT/parity-ours.json" 2> "$OUT/parity-ours.err"
  rm -f hparams/S2S/.parity_nodrop.yaml
  python3 - "$OUT/parity-ref.json" "$OUT/parity-ours.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
ref = json.load(open(sys.argv[1]))["losses"]
ours = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
m = ours
mine = [m[f"loss.{i}"] for i in range(len(ref)) if f"loss.{i}" in m]
worst = 0.0
for i, (a, b) in enumerate(zip(ref, mine)):
    rel = abs(a - b) / abs(a)
    worst = max(worst, rel)
    print(f"parity step {i:2d}: ref {a:.5f} ours {b:.5f} rel {rel:.2e}")
print(f"parity: {len(mine)} steps, worst relative difference {worst:.2e}")
PY
}

make_csvs() {  # copies: the 16x (or more) listing of the training CSV under new IDs
  local data=$PWD/.benchdata copies=$1
  awk -F, -v k="$copies" 'NR==1{print;next}{for(i=0;i<k;i++){o=$0; sub(/^[^,]*/, $1 "-r" i, o); print o}}' \
    .benchdata/${TRAIN_CSV:-train.csv} > /tmp/train_rep.csv
  cp .benchdata/valid.csv /tmp/valid.csv
  echo "$data"
}

train_run() {  # name nproc extra...
  local data; data=$(make_csvs "${EPOCH_COPIES:-48}")
  local out=/tmp/run-$1
  rm -rf "$out"
  local t0=$SECONDS
  "$BIN" --device cuda train hparams/S2S/conmamba_large.yaml --data_folder "$data" \
    --output_folder "$out" --train_csv /tmp/train_rep.csv --valid_csv /tmp/valid.csv \
    --number_of_epochs 1 --num_workers "${WORKERS:-6}" --precision bf16 --grad_accumulation_factor 1 \
    --output_neurons 1000 --profile "${PROFILE_STEPS:-30}" "${@:3}" > "$OUT/$1.log" 2>&1
  summary "$1: rc=$? wall $((SECONDS - t0)) s"
  cp "$out/log.jsonl" "$OUT/$1.log.jsonl" 2>/dev/null
  cp "$out/profile.json" "$OUT/$1.profile.json" 2>/dev/null
  grep -A30 'step profile' "$OUT/$1.log" | head -32 | tee -a "$OUT/summary.txt"
  python3 - "$out/log.jsonl" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1]) if '"audio_sec_per_sec"' in l]
v = [r["audio_sec_per_sec"] for r in rows if r.get("step", 0) > 20]
if v:
    print(f"  steps>20 windows: {len(v)}, audio-s/s median {statistics.median(v):.0f} "
          f"min {min(v):.0f} max {max(v):.0f} (rank 0's audio)")
PY
}

stage_loader() {  # a 4x listing, so that 16 workers reach a steady state
  awk -F, 'NR==1{print;next}{for(i=0;i<4;i++){o=$0; sub(/^[^,]*/, $1 "-r" i, o); print o}}' \
    .benchdata/train.csv > /tmp/train4.csv
  sed -i "s|\$data_root|$PWD/.benchdata|" /tmp/train4.csv
  "$BIN" bench loader --input /tmp/train4.csv --workers 1,4,8,12,16 --warmup 1 --repeat 3 \
    > "$OUT/loader.txt" 2> "$OUT/loader.err"
  tee -a "$OUT/summary.txt" < "$OUT/loader.txt"
}

stage_loaderdiag() {  # the loader on a 4x listing under process-wide settings that may matter
  awk -F, 'NR==1{print;next}{for(i=0;i<4;i++){o=$0; sub(/^[^,]*/, $1 "-r" i, o); print o}}' \
    .benchdata/train.csv > .benchdata/train4.csv
  local v
  for v in "" "OMP_NUM_THREADS=1" "OMP_NUM_THREADS=16" "MALLOC_ARENA_MAX=1" \
           "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=536870912"; do
    env $v "$BIN" bench loader --input .benchdata/train4.csv --workers 6,16 --warmup 1 --repeat 2 \
      2> /dev/null | grep '^loader' | sed "s|^|${v:-default} |" | cut -c1-140 | tee -a "$OUT/summary.txt"
  done
  rm -f .benchdata/train4.csv
}

stage_trace() {
  CUDA_VISIBLE_DEVICES=0 "$BIN" --device cuda bench train-step --hparams hparams/S2S/conmamba_large.yaml \
    --precision bf16 --batch 16 --seconds 30 --warmup 3 --repeat 6 --trace /tmp/trace.json --profile \
    > "$OUT/trace-step.txt" 2>&1
  python3 bench/trace_summary.py /tmp/trace.json 3 45 > "$OUT/trace-summary.txt"
  head -60 "$OUT/trace-summary.txt" | cut -c1-170
  sed -n '/^Kernels matching/,$p' "$OUT/trace-summary.txt" | cut -c1-300
  cp /tmp/trace.json.profile.json "$OUT/trace-profile.json"
  python3 -c "
import json; j = json.load(open('/tmp/trace.json.profile.json'))
for s in j['sync_sites']: print(s['count'], s['site'].replace(chr(10), ' | ')[:600])
" | tee -a "$OUT/summary.txt"
}

stage_reftrace() {
  CUDA_VISIBLE_DEVICES=0 python3 bench/ref_trace.py /tmp/ref-trace.json 3 -- \
    --hparams .ref/mamba_asr/hparams/S2S/conmamba_large.yaml --batch 16 --seconds 30 --warmup 3 \
    --repeat 6 > "$OUT/ref-trace-step.txt" 2>&1
  summary "reftrace: $(tail -1 "$OUT/ref-trace-step.txt" | cut -c1-200)"
  python3 bench/trace_summary.py /tmp/ref-trace.json 3 45 > "$OUT/ref-trace-summary.txt"
  head -60 "$OUT/ref-trace-summary.txt" | cut -c1-170
}

stage_stepshape() {  # the synthetic step at the real epoch's batch shape (~100 x 4 s)
  ours_step ours-s2s-L-b96x4s hparams/S2S/conmamba_large.yaml bf16 96 4.3
  grep -A20 'train-step profile' "$OUT/ours-s2s-L-b96x4s.err" | tee -a "$OUT/summary.txt"
}

stage_ckpt() {  # activation checkpointing: its cost and its memory, against the plain step
  ours_step ours-s2s-L-plain hparams/S2S/conmamba_large.yaml bf16 16 30
  { cat hparams/S2S/conmamba_large.yaml; echo "activation_checkpointing: True"; } > hparams/S2S/.ckpt.yaml
  ours_step ours-s2s-L-ckpt hparams/S2S/.ckpt.yaml bf16 16 30
  rm -f hparams/S2S/.ckpt.yaml
  grep -A16 'train-step profile' "$OUT/ours-s2s-L-ckpt.err" | tee -a "$OUT/summary.txt"
}

stage_stepshapelong() {  # the synthetic step at the joined corpus's batch shape (~30 x 16 s)
  ours_step ours-s2s-L-b30x16s hparams/S2S/conmamba_large.yaml bf16 30 16.2
  grep -A20 'train-step profile' "$OUT/ours-s2s-L-b30x16s.err" | tee -a "$OUT/summary.txt"
  # The joined corpus's transcripts: 5.0 unigram-1000 tokens per second (spm_encode count).
  ours_step ours-s2s-L-b30x16s-5tok hparams/S2S/conmamba_large.yaml bf16 30 16.2 --tokens-per-second 5
  grep -A20 'train-step profile' "$OUT/ours-s2s-L-b30x16s-5tok.err" | tee -a "$OUT/summary.txt"
}

# Data-parallel scaling (stage scale): one run = one `train` of one epoch on the DATA corpus.
scale_run() {  # name binary nproc|2x2
  local name=$1 bin=$2 layout=$3 data=/tmp/scaledata out=/tmp/scale/$1
  rm -rf "$out"; mkdir -p /tmp/scale
  local args=(--device cuda train hparams/S2S/conmamba_large.yaml --data_folder "$data"
    --output_folder "$out" --train_csv /tmp/scale_train.csv --valid_csv "$data/valid.csv"
    --number_of_epochs "${SCALE_EPOCHS:-1}" --num_workers "${WORKERS:-8}" --precision bf16
    --grad_accumulation_factor 1 --output_neurons 1000)
  # The profiled batches: 51-80, or with SCALE_EPOCHS > 1 from the 21st batch of the last epoch
  # (EPOCH_BATCHES: the epoch's batches on one GPU).
  local ranks=$layout from=50
  [[ $layout == *x* ]] && ranks=$((${layout%x*} * ${layout#*x}))
  if ((${SCALE_EPOCHS:-1} > 1)); then
    from=$(((${SCALE_EPOCHS} - 1) * ${EPOCH_BATCHES:?EPOCH_BATCHES: the batches of one epoch on one GPU} / ranks + 20))
  fi
  if [[ $bin == "$BIN_BASE" ]]; then args+=(--profile 30); else args+=(--profile 30 --profile-from "$from"); fi
  local t0=$SECONDS rc=0
  # RUN_TIMEOUT=S: each run (not the torchrun-style ones) stopped after S seconds (rc 124), so that
  # a hung or slow run leaves the rest of the call to the next ones; its profile may be there.
  local limit=()
  [[ -n ${RUN_TIMEOUT:-} ]] && limit=(timeout -k 10 "$RUN_TIMEOUT")
  case $layout in
    1) CUDA_VISIBLE_DEVICES=0 "${limit[@]}" env ${RUN_ENV:-} "$bin" "${args[@]}" > "/tmp/scale/$name.log" 2>&1 || rc=$? ;;
    2) CUDA_VISIBLE_DEVICES=0,1 "${limit[@]}" env ${RUN_ENV:-} "$bin" "${args[@]}" --nproc 2 > "/tmp/scale/$name.log" 2>&1 || rc=$? ;;
    4) CUDA_VISIBLE_DEVICES=0,1,2,3 "${limit[@]}" env ${RUN_ENV:-} "$bin" "${args[@]}" --nproc 4 > "/tmp/scale/$name.log" 2>&1 || rc=$? ;;
    *x*)  # torchrun-style: NODES x PER ranks, each node on its share of the CPUs and GPUs
      local nodes=${layout%x*} per=${layout#*x} pids=() shares
      # Each node gets 1/NODES of the physical cores (with their hyperthreads), as a real node
      # has its own; lscpu -p lists CPU,CORE.
      shares=$(lscpu -p=CPU,CORE | grep -v '^#' | sort -t, -k2n -k1n | awk -F, -v nodes="$nodes" '
        { cpu[NR] = $1; core[NR] = $2; if (!($2 in seen)) { seen[$2] = 1; cores++ } }
        END { per = int(cores / nodes); n = 0; delete seen
              for (i = 1; i <= NR; i++) { if (!(core[i] in seen)) { seen[core[i]] = n++ }
                node = int(seen[core[i]] / per); if (node >= nodes) node = nodes - 1
                list[node] = list[node] (list[node] == "" ? "" : ",") cpu[i] }
              for (k = 0; k < nodes; k++) printf "%s ", list[k]; print "" }')
      local cpus_of=($shares) node lr
      for ((node = 0; node < nodes; node++)); do
        local gpus=""
        for ((lr = 0; lr < per; lr++)); do gpus+="${gpus:+,}$((node * per + lr))"; done
        for ((lr = 0; lr < per; lr++)); do
          RANK=$((node * per + lr)) LOCAL_RANK=$lr WORLD_SIZE=$((nodes * per)) LOCAL_WORLD_SIZE=$per \
          GROUP_RANK=$node MASTER_ADDR=127.0.0.1 MASTER_PORT=29617 CUDA_VISIBLE_DEVICES=$gpus \
            taskset -c "${cpus_of[$node]}" env ${RUN_ENV:-} "$bin" "${args[@]}" \
            > "/tmp/scale/$name.rank$((node * per + lr)).log" 2>&1 &
          pids+=($!)
        done
      done
      for p in "${pids[@]}"; do wait "$p" || rc=$?; done
      cp "/tmp/scale/$name.rank0.log" "/tmp/scale/$name.log" ;;
  esac
  summary "$name: rc=$rc wall $((SECONDS - t0)) s"
  grep -h "first optimizer step\|runs on CPUs\|CPU threads\|^epoch [0-9]*:\|CUDA graphs\|batch shapes on" "/tmp/scale/$name.log" | cut -c1-260 | tee -a "$OUT/summary.txt"
  python3 bench/ddp_profile.py "$out" | grep -v '^JSON' | tee -a "$OUT/summary.txt"
}

stage_scale() {
  # A copy outside the tree: a later call's transfer replaces the carried folders.
  local data=/tmp/scaledata
  rm -rf "$data"; cp -r "${DATA:-.ddpdata}" "$data"
  awk -F, -v k="${COPIES:-30}" 'NR==1{print;next}{for(i=0;i<k;i++){o=$0; sub(/^[^,]*/, $1 "-r" i, o); print o}}' \
    "$data/train_long.csv" > /tmp/scale_train.csv
  summary "scale corpus: $(($(wc -l < /tmp/scale_train.csv) - 1)) rows ($(($(wc -l < "$data/train_long.csv") - 1)) distinct x ${COPIES:-30}), $(awk -F, 'NR>1{s+=$2}END{printf "%.1f h", s/3600}' /tmp/scale_train.csv); $(nproc) CPUs"
  mkdir -p /tmp/scale
  { nvidia-smi topo -m; lscpu; lscpu -p=CPU,CORE,SOCKET,NODE; } > /tmp/scale/topo.txt 2>&1 || true
  local run
  for run in ${SCALE_RUNS:-new1 new2 new4 new2x2 base1 base2 base4}; do
    # new: this tree; base: .base's binary; old: this tree with every A/B switch off
    # (MASR_GRAD_SLICES, MASR_CONV_MODULE_MATMUL, MASR_CUDA_GRAPHS); eager: CUDA graphs off.
    local bin=$BIN layout=${run#new} RUN_ENV=""
    [[ $run == base* ]] && bin=$BIN_BASE layout=${run#base}
    [[ $run == old* ]] && layout=${run#old} RUN_ENV="$OLD_ENV"
    [[ $run == eager* ]] && layout=${run#eager} RUN_ENV="MASR_CUDA_GRAPHS=0"
    # first: graphs from the first batch (each shape captured when it first comes); lazy: from
    # the second epoch without capturing the shapes seen so far at its start.
    [[ $run == first* ]] && layout=${run#first} RUN_ENV="MASR_CUDA_GRAPHS=1"
    [[ $run == lazy* ]] && layout=${run#lazy} RUN_ENV="MASR_GRAPH_PRECAPTURE=0"
    # gout: the optimizer's update outside the graph (flat gradient buffers), one GPU's default
    # before 2026-11-29.
    [[ $run == gout* ]] && layout=${run#gout} RUN_ENV="MASR_GRAPH_OPTIMIZER=0"
    # gar: several ranks with the bucketed all-reduce and the update inside each graph.
    [[ $run == gar* ]] && layout=${run#gar} RUN_ENV="MASR_GRAPH_ALLREDUCE=1"
    # nopad: a batch of a shape without a graph is captured rather than padded into a held one.
    [[ $run == nopad* ]] && layout=${run#nopad} RUN_ENV="MASR_GRAPH_PAD=0"
    # noahead: no captures of an epoch's predicted new shapes at its start.
    [[ $run == noahead* ]] && layout=${run#noahead} RUN_ENV="MASR_GRAPH_AHEAD=0"
    # mcost: a step's rounds costed at the manifest's durations, not as trained.
    [[ $run == mcost* ]] && layout=${run#mcost} RUN_ENV="MASR_TRAINED_COSTS=0"
    RUN_ENV=$RUN_ENV scale_run "$run" "$bin" "$layout"
  done 2>&1
  python3 bench/ddp_profile.py /tmp/scale/*/ > /tmp/scale/summary.txt 2>&1 || true
  tar -czf "$OUT/scale.tar.gz" --exclude='save' --exclude='*.masr' --exclude='*.ckpt' -C /tmp scale 2>/dev/null
}

# Several epochs with CUDA graphs (train's default: captures from the second epoch) and op by op,
# one GPU, on $DATA listed GRAPH_COPIES times (default 10): the per-epoch figures of both, and
# each run's graph counts.
stage_graphepochs() {
  local data=/tmp/gedata run
  rm -rf "$data"; cp -r "${DATA:-.ddpdata}" "$data"
  awk -F, -v k="${GRAPH_COPIES:-10}" 'NR==1{print;next}{for(i=0;i<k;i++){o=$0; sub(/^[^,]*/, $1 "-r" i, o); print o}}' \
    "$data/train_long.csv" > /tmp/ge_train.csv
  for run in graphs eager; do
    local env=""; [[ $run == eager ]] && env="MASR_CUDA_GRAPHS=0"
    rm -rf "/tmp/ge-$run"
    CUDA_VISIBLE_DEVICES=0 env $env "$BIN" --device cuda train hparams/S2S/conmamba_large.yaml \
      --data_folder "$data" --output_folder "/tmp/ge-$run" --train_csv /tmp/ge_train.csv \
      --valid_csv "$data/valid.csv" --number_of_epochs "${GRAPH_EPOCHS:-3}" --num_workers "${WORKERS:-8}" \
      --precision bf16 --grad_accumulation_factor 1 --output_neurons 1000 > "$OUT/ge-$run.log" 2>&1
    summary "graphepochs $run rc=$?"
    grep -h '^epoch [0-9]*:\|CUDA graphs:' "$OUT/ge-$run.log" | cut -c1-220 | tee -a "$OUT/summary.txt"
    cp "/tmp/ge-$run/log.jsonl" "$OUT/ge-$run-log.jsonl" 2>/dev/null
  done
}

stage_realtrace() {
  local data=${DATA:-.ddpdata} out=/tmp/realtrace
  rm -rf "$out"
  awk -F, -v k="${TRACE_COPIES:-5}" 'NR==1{print;next}{for(i=0;i<k;i++){o=$0; sub(/^[^,]*/, $1 "-r" i, o); print o}}' \
    "$data/train_long.csv" > /tmp/rt_train.csv
  CUDA_VISIBLE_DEVICES=0 "$BIN" --device cuda train hparams/S2S/conmamba_large.yaml --data_folder "$PWD/$data" \
    --output_folder "$out" --train_csv /tmp/rt_train.csv --valid_csv "$PWD/$data/valid.csv" \
    --number_of_epochs 1 --num_workers "${WORKERS:-8}" --precision bf16 --grad_accumulation_factor 1 \
    --output_neurons 1000 --profile 30 --profile-from 50 --trace /tmp/rt.json > "$OUT/realtrace.log" 2>&1
  summary "realtrace train rc=$?: $(grep -h '^epoch 1:' "$OUT/realtrace.log" | cut -c1-200)"
  cp "$out/profile.json" "$OUT/realtrace-profile.json" 2>/dev/null
  cp "$out/log.jsonl" "$OUT/realtrace-log.jsonl" 2>/dev/null
  grep -A24 'step profile of' "$OUT/realtrace.log" | tee -a "$OUT/summary.txt"
  python3 bench/trace_summary.py /tmp/rt.json 3 60 > "$OUT/realtrace-summary.txt" 2>&1
  head -12 "$OUT/realtrace-summary.txt" | tee -a "$OUT/summary.txt"
  local b=${SHAPE_BATCH:-30} sec=${SHAPE_SECONDS:-15.8}
  ours_step synth-fixed hparams/S2S/conmamba_large.yaml bf16 "$b" "$sec" --tokens-per-second 5 --trace /tmp/sf.json
  ours_step synth-shapes hparams/S2S/conmamba_large.yaml bf16 "$b" "$sec" --tokens-per-second 5 --shapes 8
  ours_step synth-ragged hparams/S2S/conmamba_large.yaml bf16 "$b" "$sec" --tokens-per-second 5 --shapes 8 \
    --ragged --trace /tmp/sr.json
  local n
  for n in synth-fixed synth-shapes synth-ragged; do
    grep -A22 'train-step profile' "$OUT/$n.err" > "$OUT/$n-profile.txt"
  done
  python3 bench/trace_summary.py /tmp/sf.json 3 60 > "$OUT/synth-fixed-summary.txt" 2>&1
  python3 bench/trace_summary.py /tmp/sr.json 3 60 > "$OUT/synth-ragged-summary.txt" 2>&1
  head -12 "$OUT/synth-fixed-summary.txt" "$OUT/synth-ragged-summary.txt" | tee -a "$OUT/summary.txt"
  for f in /tmp/rt.json /tmp/sf.json; do gzip -c "$f" > "$OUT/$(basename "$f").gz"; done
  find "$OUT" -name '*.gz' -size +15M -delete
}

# The synthetic step at the scale corpus's mean shape: what changing shapes and padding masks
# cost (every shape seen in the warm-up, or every step a new one; ragged relative lengths of the
# audio, the transcripts or both), with Kineto traces (input shapes recorded) of the fixed and
# the ragged steps.
stage_variants() {
  local b=${SHAPE_BATCH:-30} sec=${SHAPE_SECONDS:-15.8} L=hparams/S2S/conmamba_large.yaml n
  v() {  # name [extra]
    CUDA_VISIBLE_DEVICES=0 "$BIN" --device cuda bench train-step --hparams $L --precision bf16 \
      --batch "$b" --seconds "$sec" --tokens-per-second 5 --profile --json "${@:2}" \
      > "$OUT/$1.json" 2> "$OUT/$1.err"
    summary "ours $1: $(our_result "$OUT/$1.json")"
    grep -A16 'train-step profile' "$OUT/$1.err" | grep -E 'encoder|decoder|backward|^step' | tr -s ' ' | tr '\n' ';' | tee -a "$OUT/summary.txt"; echo | tee -a "$OUT/summary.txt"
  }
  v var-fixed --warmup 8 --repeat 16 --trace /tmp/vf.json
  v var-shapes8 --warmup 8 --repeat 16 --shapes 8
  v var-shapes64 --warmup 3 --repeat 16 --shapes 64
  v var-ragged-both --warmup 8 --repeat 16 --shapes 8 --ragged both --trace /tmp/vr.json
  v var-ragged-audio --warmup 8 --repeat 16 --shapes 8 --ragged audio
  v var-ragged-tokens --warmup 8 --repeat 16 --shapes 8 --ragged tokens
  v var-ragged-fixed --warmup 8 --repeat 16 --ragged both
  for n in vf vr; do
    python3 bench/trace_summary.py /tmp/$n.json 3 60 > "$OUT/$n-summary.txt" 2>&1
    gzip -c /tmp/$n.json > "$OUT/$n.json.gz"
  done
  find "$OUT" -name '*.gz' -size +15M -delete
}

# Real one-GPU training with batches padded to the shape grid (TrainConfig::recurring_shapes,
# the CUDA default) and without it (MASR_SHAPE_GRID=0), alternated GRID_RUNS times (default
# on off off on), on a copy of $DATA outside the tree (a later call's transfer replaces carried
# folders), listed COPIES times (default 15); then the synthetic step at the mean shape.
stage_grid() {
  local data=/tmp/griddata
  rm -rf "$data"; cp -r "${DATA:-.ddpdata}" "$data"
  awk -F, -v k="${COPIES:-15}" 'NR==1{print;next}{for(i=0;i<k;i++){o=$0; sub(/^[^,]*/, $1 "-r" i, o); print o}}' \
    "$data/train_long.csv" > /tmp/grid_train.csv
  summary "grid corpus: $(($(wc -l < /tmp/grid_train.csv) - 1)) rows; $(nproc) CPUs"
  local i=0 mode
  for mode in ${GRID_RUNS:-on off off on}; do
    i=$((i + 1))
    local out=/tmp/grid/$i-$mode grid=1
    [[ $mode == off ]] && grid=0
    rm -rf "$out"
    MASR_SHAPE_GRID=$grid CUDA_VISIBLE_DEVICES=0 "$BIN" --device cuda train hparams/S2S/conmamba_large.yaml \
      --data_folder "$data" --output_folder "$out" --train_csv /tmp/grid_train.csv \
      --valid_csv "$data/valid.csv" --number_of_epochs 1 --num_workers "${WORKERS:-8}" --precision bf16 \
      --grad_accumulation_factor 1 --output_neurons 1000 --profile 30 --profile-from 100 \
      > "$OUT/grid-$i-$mode.log" 2>&1
    summary "grid $i $mode rc=$?: $(grep -h '^epoch 1:' "$OUT/grid-$i-$mode.log" | cut -c1-220)"
    grep -A22 'step profile of' "$OUT/grid-$i-$mode.log" | grep -E 'encoder|decoder|backward|^step' | tr -s ' ' | tr '\n' ';' | tee -a "$OUT/summary.txt"; echo | tee -a "$OUT/summary.txt"
    cp "$out/log.jsonl" "$OUT/grid-$i-$mode-log.jsonl" 2>/dev/null
    cp "$out/profile.json" "$OUT/grid-$i-$mode-profile.json" 2>/dev/null
  done
  ours_step grid-synth hparams/S2S/conmamba_large.yaml bf16 "${SHAPE_BATCH:-30}" "${SHAPE_SECONDS:-15.8}" \
    --tokens-per-second 5
}

stage_stepshapescale() {  # the synthetic step at the scale corpus's mean batch shape
  ours_step ours-s2s-L-shape hparams/S2S/conmamba_large.yaml bf16 "${SHAPE_BATCH:-33}" \
    "${SHAPE_SECONDS:-14.3}" --tokens-per-second 5
  grep -A22 'train-step profile' "$OUT/ours-s2s-L-shape.err" | tee -a "$OUT/summary.txt"
}

stage_epoch() { CUDA_VISIBLE_DEVICES=0 train_run epoch-1gpu 1; }
stage_epochlong() { TRAIN_CSV=train_long.csv CUDA_VISIBLE_DEVICES=0 train_run epochlong-1gpu 1; }
stage_epochlongexp() {  # the caching allocator with expandable segments (variable batch shapes)
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True TRAIN_CSV=train_long.csv CUDA_VISIBLE_DEVICES=0 \
    train_run epochlong-exp-1gpu 1
}
stage_ddplong() { TRAIN_CSV=train_long.csv CUDA_VISIBLE_DEVICES=0,1 train_run epochlong-2gpu 2 --nproc 2; }
# The same with SpeechBrain's batch order (each rank's batch from any bucket): the A/B of
# bucket_aligned_steps (docs/training.md).
stage_ddplongsb() {
  TRAIN_CSV=train_long.csv CUDA_VISIBLE_DEVICES=0,1 train_run epochlong-2gpu-sborder 2 --nproc 2 \
    --speechbrain-batch-order
}
stage_epochomp() { OMP_NUM_THREADS=16 CUDA_VISIBLE_DEVICES=0 train_run epoch-1gpu-omp16 1; }
stage_ddp() { CUDA_VISIBLE_DEVICES=0,1 train_run epoch-2gpu 2 --nproc 2; }

for stage in "$@"; do
  summary "== $stage ($(date -u +%H:%M:%S))"
  "stage_$stage"
done
# Everything in one file as well: a call brings back only a handful of the files under $OUT, and
# the next call's $OUT is a new, empty folder (PACK=0: no archive).
if [[ $# -gt 0 && ${PACK:-1} != 0 ]]; then
  tar -czf /tmp/gpu-out-pack.tar.gz --exclude='*.tar.gz' -C "$OUT" . && mv /tmp/gpu-out-pack.tar.gz "$OUT/all-$(date -u +%H%M%S).tar.gz"
fi
