#!/usr/bin/env bash
# recipes/synth/gpu_session.sh — one lease of the GPU machine (one H200, 16 cores, no network) for
# the bundled S2S model of recipes/synth/bundle.sh: unpack the synthesizers, synthesize the corpus
# while mamba-asr builds, train DETACHED for $MINUTES (continuing from the weights an earlier
# session brought back, when there are any), and bring back the weights in float16 as files under
# 16 MiB with the logs. docs/recipes.md ("Across GPU sessions") gives the device-call sequence.
#
# Here (the development machine, Debian 12):
#   gpu_session.sh pack         the payload: $SYNTH_SET/debs (the training synthesizers; made with
#                               `scripts/synth_deps.sh subset` when missing) and the previous
#                               weights in $PREV (asr.fp16.masr, lm.fp16.masr), cut into folders
#                               .synthdeps/carry/N, each small enough to travel in call N beside the
#                               tracked tree (and .devdeps in call 1); prints the device calls
#   gpu_session.sh unpack DIR   the files one call brought back (files_at): joins the weight parts,
#                               checks SHA256SUMS, keeps the run in out/gpu-session/runs/STAMP and
#                               the weights in $PREV for the next pack
# There (the command of a device call, from the repository root):
#   gpu_session.sh start        takes this call's carried pieces, starts the build (bench/gpu_train.sh
#                               build, .devdeps carried in this call) and the session driver below,
#                               detached (setsid nohup), logging to /tmp/gpu-session.log
#   gpu_session.sh poll [SECS]  takes this call's carried pieces, waits up to SECS (default 540) for
#                               the end, prints the progress and copies results (or, before the end,
#                               the logs) into $OUT
#   gpu_session.sh collect      copies the results (or the logs so far) into $OUT
#   gpu_session.sh stop         ends training now as if its time were up (SIGALRM to the `timeout`
#                               that bundle.sh runs it under: a checkpoint, averaging, then the
#                               results; with no finished epoch there is nothing to average, so
#                               no weights come back); before training: no training
#
# The driver, in order: wait for every synthesizer piece, `scripts/synth_deps.sh install` into
# /tmp/gpu-session/synthdeps/root, bundle.sh `corpus`, `heldout` and `text`; then the previous
# weights, when carried, and bundle.sh `train` (ASR + LM beside it on the GPU, each started from the
# previous weights with --init-model when there are any, each averaged into model.masr);
# then `mamba-asr convert --weights fp16`, the parts, a quick CTC-greedy / attention check on
# held-out voices and the logs, into /tmp/gpu-session/results (at most 8 files: what $OUT returns).
# Everything it writes lives under /tmp/gpu-session, outside the tree, because every device call
# replaces the tree and removes the ignored folders it does not carry.
#
# Warm start: a whole checkpoint (fp32 weights + Adam moments, about 140 MB for this model) cannot
# travel, the float16 weights can. When the payload carries them, both trainings get
# `--init-model FILE` (appended to bundle.sh's ASR_ARGS and LM_ARGS): a run without a checkpoint
# starts from the file's weights and normalizer statistics, with a fresh optimizer and Noam
# schedule, and the ASR run writes the file's tokenizer into save/ (docs/training.md, "Checkpoints
# and resuming"). The LM trains with the ASR run's tokenizer (bundle.sh: --tokenizer_file), which is
# then the previous ASR model's; `train` does not compare it with the LM file's own, so the driver
# takes the previous LM only when the two files' tokenizers are the same bytes (else the LM starts
# from scratch). After training, each warm-started run's log must hold "(--init-model); a fresh
# optimizer and schedule". When the weights do not arrive whole (then training starts from
# scratch), the LM's tokenizer differs (then the LM does) or a log lacks that line, the summary says
# WARM START FAILED; REQUIRE_WARM=1 makes the session fail instead. A previous model that does not fit the hparams (other
# sizes in ASR_ARGS) is refused by `train`, naming the file: that training fails. A fresh run's
# first optimizer step goes at the optimizer's lr of the hparams (SpeechBrain's order: Noam sets
# its lr after each step), for the LM 0.35, about 500 times its Noam peak; in a CPU trial that one
# step took a warm LM's valid loss from 13.7 to 86. `train --init-model` therefore runs a warm
# start's first step at Noam's step-1 rate instead (the earlier driver set rate 0 through
# --overrides; this one has not been tried since). The learning rate warms up again to its peak (lr_adam; lower it with ASR_ARGS="--lr_adam X" if
# that is too much for a trained model). Keep SEED the same across sessions: it decides which
# speakers are held out for valid/test (HOURS may change).
#
# Tried so far only on the 2-core development machine (SKIP_BUILD=1, DEVICE=cpu, a 2-layer model
# through ASR_ARGS, 0.3 h, the LM on 600 sentences through LM_ARGS): pack, start, poll (pieces, the
# previous weights' last one too, held back to a later call), finish, collect, unpack and a second
# session with REQUIRE_WARM=1 whose ASR and LM started from the first's fp16 weights (--init-model);
# `stop` only with the earlier made-checkpoint warm start. Not yet on the GPU machine, so the GPU
# timings below are estimates.
#
# Time budget of one session (30 minutes of device time; estimates unless marked measured):
#   machine start, before call 1's command runs           1-2 min (estimate)
#   staging calls (pack prints how many)                  ~0.3 min each (estimate), beside the build
#   build (bench/gpu_train.sh build), beside the rest     202-244 s (measured 2026-11-26, H100)
#   synthesizers unpacked (28 MB of .deb)                 16 s (measured 2026-11-26)
#   corpus, HOURS=20 (~15,000 utterances) on 12 jobs      ~3 min: 102 utterances/s were measured on
#                                                         16 jobs beside the build (2026-11-26:
#                                                         23,049 utterances, 30.7 h, in 226 s)
#   heldout (2 x HELDOUT_UTTS=2000) + text                ~1 min (estimate from the same rate)
#   training                                              MINUTES (14)
#   averaging, fp16, quick check, packing                 ~1-2 min (estimate)
# so about 9-11 minutes besides the training; MINUTES=14 leaves a few minutes of margin.
#
# Environment (start): HOURS (20), MINUTES (14), SEED (1234), TEXT_OFFSET (0: bundle.sh's; give
# each session of one model a new one for new training sentences), JOBS (12 synthesis processes),
# WORKERS (12 loader workers), HELDOUT_UTTS (2000), DEVICE (cuda), ASR_ARGS, LM_ARGS (more train
# options, as bundle.sh takes them), QUICK_EVAL_UTTS (300), EVAL (0; 1: bundle.sh eval as well),
# REQUIRE_WARM (0; 1: fail when previous weights were carried and a training did not start from
# them), PAYLOAD_WAIT_S (900: how long the driver waits for carried pieces),
# VARIANTS (a variants file of recipes/synth/variants.sh, relative to the tree or absolute, e.g.
# recipes/synth/variants-learn.tsv: instead of bundle.sh train, those trainings side by side for
# MINUTES each, VARIANT_WORKERS (2) loader workers each, round-robin over the machine's GPUs (GPUS: at
# most that many); their table goes into summary.md, their
# logs into logs.tar.gz; KEEP (best: the ASR variant with the lowest WER on the held-out accents,
# and the best LM variant when they share a tokenizer; or a variant's name) says whose weights come
# back, as the bundle's would, with the held-out check; a variant's `--init-model @PREV_ASR@`
# continues the previous session's ASR weights when they came), TRAIN_AFTER (a path: training waits until it exists,
# e.g. a benchmark sharing the lease that creates it when it is done with the GPU; synthesis does
# not wait),
# SKIP_BUILD (set: no build, MASR_BIN as it is: built by another job of the lease or, for trials
# without a GPU, on the CPU), MASR_BIN (the build's: $SESSION_DIR/src/build-cuda/bin/mamba-asr;
# with SKIP_BUILD, the tree's build-cuda/bin/mamba-asr), PART_MIB (15: the size of the weight parts), SESSION_DIR
# (/tmp/gpu-session), SESSION_LOG (/tmp/gpu-session.log).
# pack: SYNTH_SET (.synthdeps/train), PREV (out/gpu-session/prev, git-ignored; when it holds no
# weights and PREV is not set, the tracked models/conmamba-s2s-synth-en/model.masr), PREV_LM (1; 0: leave
# the LM out), CARRY_LIMIT_MIB (64), CARRY_MARGIN_MIB (6: a first call planned at 63.0 of 64 MiB
# was refused as too large on 2026-11-29, one at 58.0 went through; the device counts more than
# the bytes). unpack: PREV, RUNS (out/gpu-session/runs).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"  # the tree this copy of the script is in
SHIP_NAME=conmamba-s2s-synth-en  # models/ folder of the S2S model the sessions train
S="${SESSION_DIR:-/tmp/gpu-session}"
LOG="${SESSION_LOG:-/tmp/gpu-session.log}"
MASR_LD=/opt/deps/usr/lib/x86_64-linux-gnu  # .devdeps/env.sh unpacks the build's libraries there
# Never carried for training: flite (its voices awb, rms, slt are reserved for evaluation, and
# bundle.sh trains on none of flite's), the reserved festival voice, and WordNet (bundle.sh's
# text is fortunes, anarchism and KJV).
EXCLUDED="flite libflite1 festvox-us-slt-hts wordnet-base"
RESERVED_RE='^(flite|libflite1|festvox-us-slt-hts)$'

usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "gpu_session: $*" >&2; exit 1; }
now() { date -u +%H:%M:%S; }

check_no_reserved() {  # MANIFEST: no package reserved for evaluation may be in a training set
  local bad
  bad=$(cut -f1 "$1" | grep -E "$RESERVED_RE" || true)
  [[ -z $bad ]] || die "$1 lists packages reserved for evaluation: $(echo $bad); use scripts/synth_deps.sh subset"
}

# ---------------------------------------------------------------------------------------------
# Here: the payload

pack() {
  cd "$root"
  local set="${SYNTH_SET:-.synthdeps/train}" prev="${PREV:-out/gpu-session/prev}"
  [[ -f .devdeps/env.sh ]] || die ".devdeps is missing: bash ../shared/device/prepare.sh"
  if [[ ! -f $set/debs/MANIFEST ]]; then
    [[ -f .synthdeps/debs/MANIFEST ]] || die "no .synthdeps/debs: run scripts/synth_deps.sh download first"
    # shellcheck disable=SC2086
    scripts/synth_deps.sh subset .synthdeps "$set" $EXCLUDED
  fi
  check_no_reserved "$set/debs/MANIFEST"
  # The weights a session keeps live in the repository (models/$SHIP_NAME, tracked: out/ does not
  # outlive the checkout). With no out/gpu-session/prev, pack starts from them; move models/ out of
  # the tree after this first pack, then pack again (the second one finds $prev).
  local shipped="models/$SHIP_NAME/model.masr"
  if [[ -z ${PREV:-} && ! -f $prev/asr.fp16.masr && -f $shipped ]]; then
    mkdir -p "$prev" && cp "$shipped" "$prev/asr.fp16.masr" && echo "$shipped" > "$prev/FROM"
    echo "gpu_session: previous weights taken from $shipped" >&2
  fi
  [[ -f $prev/asr.fp16.masr ]] && echo "gpu_session: previous weights: $prev" >&2 ||
    echo "gpu_session: no $prev/asr.fp16.masr: the session trains from scratch" >&2
  # The tracked models travel with every call unless moved out of the tree for the session.
  [[ -d models ]] && echo "gpu_session: models/ ($(du -sh models | cut -f1)) is in the tree and goes with every" \
    "call: move it out for the session (mv models /elsewhere; back afterwards) and pack again for fewer calls" >&2
  /usr/bin/python3 - "$set" "$prev" "${PREV_LM:-1}" "${CARRY_LIMIT_MIB:-64}" "${CARRY_MARGIN_MIB:-6}" <<'PY'
import hashlib, os, shutil, subprocess, sys, tarfile, tempfile, time
set_dir, prev, prev_lm, limit_mib, margin_mib = sys.argv[1:]
MiB = 1 << 20

def tree_bytes():  # what every call sends: tracked and untracked-not-ignored files, and shared/
    names = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                           capture_output=True).stdout.split(b"\0")
    total = sum(os.lstat(n).st_size for n in names if n and os.path.lexists(n))
    return total + folder_bytes("shared")

def folder_bytes(d):
    return sum(os.lstat(os.path.join(p, f)).st_size for p, _, fs in os.walk(d) for f in fs)

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

tree, devdeps = tree_bytes(), folder_bytes(".devdeps")
limit, margin = int(float(limit_mib) * MiB), int(float(margin_mib) * MiB)
room_first, room = limit - tree - devdeps - margin, limit - tree - margin
print(f"pack: tree {tree / MiB:.1f} MiB, .devdeps {devdeps / MiB:.1f} MiB, limit {limit / MiB:.0f} MiB "
      f"(margin {margin / MiB:.1f}): {max(room_first, 0) / MiB:.1f} MiB of payload in call 1, "
      f"{room / MiB:.1f} MiB in each later call", file=sys.stderr)
if room < MiB:
    sys.exit("pack: the tree leaves no room for a payload; carry less or make the tree smaller")

tmp = tempfile.mkdtemp(prefix="gpu-pack-")
streams = []  # (name, path, kind)
debs = os.path.join(tmp, "debs.tar")
with tarfile.open(debs, "w") as t:
    t.add(os.path.join(set_dir, "debs"), arcname="debs")
streams.append(("debs", debs, "tar"))
files = [f for f in ("asr.fp16.masr", "lm.fp16.masr", "FROM")
         if os.path.exists(os.path.join(prev, f)) and (f != "lm.fp16.masr" or prev_lm == "1")]
if "asr.fp16.masr" in files:
    path = os.path.join(tmp, "prev.tar.xz")
    with tarfile.open(path, "w:xz", preset=1) as t:
        for f in files:
            t.add(os.path.join(prev, f), arcname=f)
    streams.append(("prev", path, "tar.xz"))

carry = os.path.join(".synthdeps", "carry")
shutil.rmtree(carry, ignore_errors=True)
pid = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + os.urandom(3).hex()
lines = [f"id\t{pid}"]
pieces, call, left = [], 1, room_first
for name, path, kind in streams:
    size = os.path.getsize(path)
    lines.append(f"stream\t{name}\t{size}\t{sha256(path)}\t{kind}")
    offset, index = 0, 0
    with open(path, "rb") as f:
        while offset < size:
            if left <= 0:
                call, left = call + 1, room
            n = min(left, size - offset)
            piece = f"{name}.{index:03d}"
            d = os.path.join(carry, str(call))
            os.makedirs(d, exist_ok=True)
            data = f.read(n)
            with open(os.path.join(d, piece), "wb") as out:
                out.write(data)
            lines.append(f"piece\t{call}\t{name}\t{index}\t{piece}\t{n}\t{hashlib.sha256(data).hexdigest()}")
            offset, index, left = offset + n, index + 1, left - n
shutil.rmtree(tmp)
calls = call
for c in range(1, calls + 1):
    os.makedirs(os.path.join(carry, str(c)), exist_ok=True)
    with open(os.path.join(carry, str(c), "PAYLOAD"), "w") as f:
        f.write("\n".join(lines) + "\n")

plan = [f"# payload {pid}: {', '.join(n for n, _, _ in streams)}; {calls} staging call(s)",
        "# device calls, one right after the other (the machine goes back 30 s after a call ends):"]
for c in range(1, calls + 1):
    carry_list = ([".devdeps"] if c == 1 else []) + [f".synthdeps/carry/{c}"]
    cmd = ("HOURS=20 MINUTES=14 bash recipes/synth/gpu_session.sh start && "
           "bash recipes/synth/gpu_session.sh poll 15") if c == 1 else "bash recipes/synth/gpu_session.sh poll 15"
    plan.append(f"call {c}: carry {carry_list!r}  command: {cmd}")
plan.append("then:    carry []  command: bash recipes/synth/gpu_session.sh poll 570   (timeout_s 600), "
            "again until it prints 'gpu_session: done'; then gpu_session.sh unpack FILES_AT here")
with open(os.path.join(carry, "PLAN.txt"), "w") as f:
    f.write("\n".join(plan) + "\n")
for c in range(1, calls + 1):
    d = os.path.join(carry, str(c))
    n = folder_bytes(d) + (devdeps if c == 1 else 0)
    print(f"pack: call {c}: {n / MiB:.1f} MiB carried, {(tree + n) / MiB:.1f} MiB with the tree",
          file=sys.stderr)
print("\n".join(plan))
PY
}

unpack() {
  local src="${1:-}" prev="${PREV:-$root/out/gpu-session/prev}"
  [[ -d $src ]] || die "unpack DIR: give the folder the device call's files came back in"
  [[ -f $src/SHA256SUMS ]] || die "$src/SHA256SUMS is missing: that call did not bring back results"
  local run m
  run="${RUNS:-$root/out/gpu-session/runs}/$(date -u +%Y%m%dT%H%M%SZ)"
  mkdir -p "$run"
  cp -- "$src"/* "$run/"
  for m in asr lm; do
    compgen -G "$run/$m.fp16.masr.[0-9]" >/dev/null || continue
    cat "$run/$m.fp16.masr."[0-9] > "$run/$m.fp16.masr"
    rm -f "$run/$m.fp16.masr."[0-9]
  done
  (cd "$run" && grep -E ' (asr|lm)\.fp16\.masr$' SHA256SUMS | sha256sum -c -) || die "checksums differ in $run"
  [[ -f $run/asr.fp16.masr ]] || die "no ASR weights came back ($run)"
  mkdir -p "$prev"
  rm -f "$prev/asr.fp16.masr" "$prev/lm.fp16.masr"
  cp "$run/asr.fp16.masr" "$prev/"
  [[ -f $run/lm.fp16.masr ]] && cp "$run/lm.fp16.masr" "$prev/"
  echo "$run" > "$prev/FROM"
  echo "gpu_session: results in $run; the next pack carries $prev" >&2
  echo "gpu_session: to keep them beyond this checkout: cp $prev/asr.fp16.masr" \
    "models/$SHIP_NAME/model.masr (with models/ back in the tree), update its README and commit" >&2
  [[ -f $run/summary.md ]] && cat "$run/summary.md"
  return 0
}

# ---------------------------------------------------------------------------------------------
# There: the carried pieces

payload_id() { awk -F'\t' '$1 == "id" {print $2}' "$1"; }

receive() {  # this call's .synthdeps/carry/N/ pieces into $S/inbox (checked, atomically)
  mkdir -p "$S/inbox"
  local d kind call stream name sha got=0
  for d in "$root"/.synthdeps/carry/*/; do
    [[ -f $d/PAYLOAD ]] || continue
    if [[ -f $S/inbox/PAYLOAD ]]; then
      if [[ $(payload_id "$d/PAYLOAD") != "$(payload_id "$S/inbox/PAYLOAD")" ]]; then
        echo "gpu_session: $d is from another pack than the pieces received before; skipped" >&2
        continue
      fi
    else
      cp "$d/PAYLOAD" "$S/inbox/PAYLOAD"
    fi
    while IFS=$'\t' read -r kind call stream _ name _ sha; do
      [[ $kind == piece && -f $d/$name && ! -f $S/inbox/$name ]] || continue
      if [[ $(sha256sum < "$d/$name" | cut -d' ' -f1) == "$sha" ]]; then
        cp "$d/$name" "$S/inbox/.$name.tmp" && mv "$S/inbox/.$name.tmp" "$S/inbox/$name"
        got=$((got + 1))
      else
        echo "gpu_session: $d$name does not match its checksum; not taken" >&2
      fi
    done < "$d/PAYLOAD"
  done
  ((got == 0)) || echo "gpu_session: received $got piece(s)" >&2
  return 0
}

has_stream() { [[ -f $S/inbox/PAYLOAD ]] && awk -F'\t' -v s="$1" '$1 == "stream" && $2 == s {f = 1} END {exit !f}' "$S/inbox/PAYLOAD"; }

missing_pieces() {  # "name (call N)" for each piece of stream $1 (or of all streams) not received
  [[ -f $S/inbox/PAYLOAD ]] || { echo "all (no piece received yet)"; return; }
  local kind call stream name
  while IFS=$'\t' read -r kind call stream _ name _; do
    [[ $kind == piece && ( -z ${1:-} || $stream == "$1" ) && ! -f $S/inbox/$name ]] && echo "$name (call $call)"
  done < "$S/inbox/PAYLOAD"
  return 0
}

wait_stream() {  # wait_stream NAME SECONDS: every piece of NAME received
  local end=$((SECONDS + $2)) missing said=-60
  while :; do
    missing=$(missing_pieces "$1")
    [[ -z $missing ]] && return 0
    ((SECONDS < end)) || { echo "gpu_session: still missing after $2 s: $(echo $missing)"; return 1; }
    if ((SECONDS - said >= 60)); then
      echo "[$(now)] waiting for carried pieces of '$1': $(echo $missing)"
      said=$SECONDS
    fi
    sleep 5
  done
}

assemble() {  # assemble NAME DEST: join, check and extract a stream
  local kind name sha type file="$S/$1.bin"
  read -r kind name _ sha type < <(awk -F'\t' -v s="$1" '$1 == "stream" && $2 == s' "$S/inbox/PAYLOAD")
  awk -F'\t' -v s="$1" '$1 == "piece" && $3 == s {print $4 "\t" $5}' "$S/inbox/PAYLOAD" | sort -n |
    cut -f2 | while read -r p; do cat "$S/inbox/$p"; done > "$file"
  [[ $(sha256sum < "$file" | cut -d' ' -f1) == "$sha" ]] || { echo "gpu_session: stream $1 does not match its checksum"; return 1; }
  mkdir -p "$2"
  case "$type" in
    tar) tar -xf "$file" -C "$2" ;;
    tar.xz)  # Python's lzma: the image may have no xz program
      /usr/bin/python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$file" "$2" ;;
  esac
  rm -f "$file"
}

# ---------------------------------------------------------------------------------------------
# There: the driver (detached)

masr() { LD_LIBRARY_PATH="$MASR_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$BIN" "$@"; }

# bundle.sh with this session's settings; the synthesizers' Python without the build's libraries.
bundle() {
  env -u LD_LIBRARY_PATH OUT="$S/bundle" SYNTHDEPS="$S/synthdeps" MASR_SYNTH_ROOT="$S/synthdeps/root" \
    HOURS="$HOURS" SEED="$SEED" TEXT_OFFSET="$TEXT_OFFSET" JOBS="$JOBS" WORKERS="$WORKERS" HELDOUT_UTTS="$HELDOUT_UTTS" \
    MINUTES="$MINUTES" DEVICE="$DEVICE" MASR_BIN="$BIN" TEST_UTTS="$QUICK_EVAL_UTTS" \
    ASR_ARGS="${ASR_ARGS:-}" LM_ARGS="${LM_ARGS:-}" bash "$root/recipes/synth/bundle.sh" "$@"
}

phase() { echo "PHASE $1 $(now) t=$((SECONDS - T0))s${2:+ $2}"; }

tokenizer_of() {  # tokenizer_of MODEL.masr OUT: the tokenizer.model section (checksum checked)
  /usr/bin/python3 - "$1" "$2" <<'PY'
import struct, sys, zlib
src, dst = sys.argv[1:]
b = open(src, "rb").read()
if b[:8] != b"MASRMODL" or b[-8:] != b"MASR_END":
    sys.exit(f"{src}: not a model file")
if zlib.crc32(b[:-12]) != struct.unpack_from("<I", b, len(b) - 12)[0]:
    sys.exit(f"{src}: checksum mismatch")
count, at = struct.unpack_from("<I", b, 12)[0], 16
for _ in range(count):
    n = struct.unpack_from("<I", b, at)[0]
    name = b[at + 4:at + 4 + n].decode()
    size = struct.unpack_from("<Q", b, at + 4 + n)[0]
    at += 12 + n
    if name == "tokenizer.model":
        open(dst, "wb").write(b[at:at + size])
        sys.exit(0)
    at += size
sys.exit(f"{src}: no tokenizer.model section")
PY
}

# warm_start: the previous session's weights (carried in the stream "prev") for both trainings,
# given to them with --init-model (WARM_ASR, WARM_LM: the files, or empty). Returns 1 when weights
# were carried but cannot be used (REQUIRE_WARM=1: the session fails; else what fails starts from
# scratch).
warm_start() {
  local prev="$S/prev"
  WARM_ASR="" WARM_LM=""
  if has_stream prev; then
    if ! { wait_stream prev "$PAYLOAD_WAIT_S" && assemble prev "$prev"; }; then
      echo "WARM START FAILED: the previous weights did not arrive whole; training starts from scratch"
      return 1
    fi
  fi
  [[ -f $prev/asr.fp16.masr ]] || { echo "warm start: no previous weights; training starts from scratch"; return 0; }
  WARM_ASR="$prev/asr.fp16.masr"
  echo "warm start: the ASR model from $WARM_ASR (--init-model; its tokenizer comes along)"
  [[ -f $prev/lm.fp16.masr ]] || { echo "warm start: no previous LM; the LM starts from scratch"; return 0; }
  # The LM trains with the ASR run's tokenizer (bundle.sh: --tokenizer_file), which --init-model
  # makes the previous ASR model's; `train` does not compare it with the LM file's own, so the
  # previous LM is taken only when it was trained with that same tokenizer.
  if tokenizer_of "$prev/asr.fp16.masr" "$prev/asr.tokenizer" && tokenizer_of "$prev/lm.fp16.masr" "$prev/lm.tokenizer" &&
     cmp -s "$prev/asr.tokenizer" "$prev/lm.tokenizer"; then
    WARM_LM="$prev/lm.fp16.masr"
    echo "warm start: the LM from $WARM_LM (--init-model; the tokenizer stays the ASR model's)"
  else
    echo "WARM START FAILED: the previous LM's tokenizer is not the previous ASR model's; the LM starts from scratch"
    return 1
  fi
}

# warm_args FILE OPTIMIZER_KEY USER_ARGS: the train options of a warm start from FILE: --init-model.
# (train itself runs a warm start's first step at the schedule's step-1 rate rather than the
# hparams' raw lr, which for the LM is 0.35; OPTIMIZER_KEY and USER_ARGS are no longer used.)
warm_args() {
  printf ' --init-model %s' "$1"
}

# warm_check: each training given --init-model logged that it started from it.
warm_check() {
  local line='(--init-model); a fresh optimizer and schedule' ok=0
  if [[ -n $WARM_ASR ]] && ! grep -qF "$line" "$S/bundle/asr/train.log" 2>/dev/null; then
    echo "WARM START FAILED: $S/bundle/asr/train.log lacks '$line'"; ok=1
  fi
  if [[ -n $WARM_LM ]] && ! grep -qF "$line" "$S/bundle/lm_train.log" 2>/dev/null; then
    echo "WARM START FAILED: $S/bundle/lm_train.log lacks '$line'"; ok=1
  fi
  return "$ok"
}

wait_build() {
  [[ -n ${SKIP_BUILD:-} ]] && { [[ -x $BIN ]] || echo "gpu_session: SKIP_BUILD is set and $BIN is missing"; [[ -x $BIN ]]; return; }
  while [[ ! -f $S/build/rc ]]; do sleep 5; done
  [[ $(cat "$S/build/rc") == 0 && -x $BIN ]]
}

# quick_eval NAME CSV ARGS...: one decode of the first QUICK_EVAL_UTTS utterances, a table row
quick_eval() {
  local name="$1" csv="$2" q="$S/quick"; shift 2
  [[ -f $csv ]] || return 0
  mkdir -p "$q"
  head -n $((QUICK_EVAL_UTTS + 1)) "$csv" > "$q/$name.csv"
  if masr --device "$DEVICE" decode --model "$S/bundle/asr/model.masr" "$@" "$q/$name.csv" \
      > "$q/$name.txt" 2> "$q/$name.log"; then
    printf '| %s | %s | %s | %s |\n' "$name" \
      "$(sed -n 's/^%WER \([0-9.]*\) .*/\1/p' "$q/$name.log" | tail -1)" \
      "$(sed -n 's/^%CER \([0-9.]*\) .*/\1/p' "$q/$name.log" | tail -1)" "$(($(wc -l < "$q/$name.csv") - 1))"
  else
    echo "| $name | failed: $(tail -1 "$q/$name.log") | | |"
  fi
}

finish() {  # the results: at most 8 files, each under 16 MiB
  local r="$S/results" asr="$S/bundle/asr" lm="$S/bundle/lm" logs="$S/logs" m f
  rm -rf "$r" "$logs" && mkdir -p "$r" "$logs"
  for m in asr lm; do
    local src="$S/bundle/$m/model.masr"
    [[ -f $src ]] || continue
    masr convert -m "$src" -o "$S/$m.fp16.masr" --weights fp16 || continue
    split -b "${PART_MIB:-15}M" -d -a 1 "$S/$m.fp16.masr" "$r/$m.fp16.masr."
  done
  {
    echo "# GPU session $(date -u +%F), $(nvidia-smi -L 2>/dev/null | head -1)"
    echo
    echo "HOURS=$HOURS MINUTES=$MINUTES SEED=$SEED TEXT_OFFSET=$TEXT_OFFSET JOBS=$JOBS WORKERS=$WORKERS ASR_ARGS='${ASR_ARGS:-}' LM_ARGS='${LM_ARGS:-}'"
    echo; echo '```'
    grep -E '^(PHASE|WARM|warm start|make_synth_corpus: synthesized|text:|gpu_session:)' "$LOG" || true
    grep -h -F '(--init-model)' "$asr/train.log" "$S/bundle/lm_train.log" 2>/dev/null || true
    for f in train valid test; do
      [[ -f $S/bundle/data/$f.csv ]] && echo "corpus $f: $(($(wc -l < "$S/bundle/data/$f.csv") - 1)) utterances"
    done
    echo "ASR: $(tail -1 "$asr/train_log.txt" 2>/dev/null)"
    echo "LM:  $(tail -1 "$lm/train_log.txt" 2>/dev/null)"
    echo '```'
    if [[ -f $asr/model.masr ]]; then
      echo; echo "Quick check, first $QUICK_EVAL_UTTS utterances of each set (valid: held-out speakers of"
      echo "the training voices; heldout: espeak-ng en-gb-scotland and en-029, never trained on):"
      echo; echo "| decode | WER % | CER % | utterances |"; echo "|---|---|---|---|"
      quick_eval valid_greedy "$S/bundle/data/valid_small.csv" --search greedy
      quick_eval heldout_clean_greedy "$S/bundle/heldout/clean.csv" --search greedy
      quick_eval heldout_cond_greedy "$S/bundle/heldout/cond.csv" --search greedy
      quick_eval heldout_clean_s2s "$S/bundle/heldout/clean.csv" --search s2s --beam 10
      [[ -f $lm/model.masr ]] &&
        quick_eval heldout_clean_s2s_lm "$S/bundle/heldout/clean.csv" --search s2s --beam 10 --lm "$lm/model.masr"
    fi
    if [[ -f $asr/wer.md ]]; then
      echo; echo "bundle.sh eval (first $QUICK_EVAL_UTTS of each set):"; echo; cat "$asr/wer.md"
    fi
    if [[ -f $S/variants/summary.md ]]; then
      echo; echo "Variants ($VARIANTS, $MINUTES min each, side by side; recipes/synth/variants.sh):"; echo
      cat "$S/variants/summary.md"
    fi
  } > "$r/summary.md" 2>&1
  for f in "$asr"/{train.log,log.jsonl,train_log.txt,hyperparams.yaml} "$S/bundle/lm_train.log" \
           "$lm"/{log.jsonl,train_log.txt} "$S"/build/{summary.txt,build.log,cmake.log} \
           "$S/quick"/*.log "$LOG"; do
    if [[ -f $f ]]; then cp "$f" "$logs/$(echo "${f#"$S"/}" | tr '/' '_')"; fi
  done
  if [[ -d $S/variants ]]; then  # each variant's logs and curves, not its checkpoints
    for f in "$S"/variants/*/{train.log,train_log.txt,log.jsonl,variant.tsv,greedy.log,s2s.log}; do
      if [[ -f $f ]]; then cp "$f" "$logs/$(echo "${f#"$S"/}" | tr '/' '_')"; fi
    done
  fi
  tar -czf "$r/logs.tar.gz" -C "$S" logs
  # The two logs asked for most, plain, while the file count allows (at most 8 come back).
  for f in "$asr/log.jsonl" "$asr/train.log"; do
    if [[ -f $f && $(ls "$r" | wc -l) -lt 7 && $(stat -c %s "$f") -lt 15000000 ]]; then cp "$f" "$r/"; fi
  done
  if (($(ls "$r" | wc -l) + 1 > 8)); then  # with SHA256SUMS; a call returns 8 files
    echo "WARNING: $(($(ls "$r" | wc -l) + 1)) result files, of which a call returns 8: make the parts larger (PART_MIB, at most 15)" |
      tee -a "$r/summary.md"
  fi
  (cd "$S" && for m in asr lm; do if [[ -f $m.fp16.masr ]]; then sha256sum "$m.fp16.masr"; fi; done
   cd "$r" && sha256sum -- *) > "$S/SHA256SUMS.tmp"
  mv "$S/SHA256SUMS.tmp" "$r/SHA256SUMS"
  ls -l "$r"
}

driver() {  # the phases, then the results of whatever exists
  T0=$SECONDS WARM_ASR='' WARM_LM=''
  local rc=0
  phases || rc=$?
  phase finish "(phases rc=$rc)"
  finish
  phase end
  return "$rc"
}

phases() {
  echo "gpu_session: driver $(date -u) in $root (repository $REPO)"
  local sid
  read -r _ _ _ _ _ sid _ < /proc/$$/stat  # the session id (no ps: the image may lack procps)
  echo "$sid" > "$S/driver.sid"
  if [[ -z ${SKIP_BUILD:-} ]]; then
    phase build "(detached: bench/gpu_train.sh build, log $S/build/)"
    mkdir -p "$S/build"
    ( cd "$S/src" && OUT="$S/build" NO_REF=1 bash bench/gpu_train.sh build > "$S/build/stdout.log" 2>&1
      echo $? > "$S/build/rc" ) &
  fi
  phase payload "(waiting for the synthesizers' pieces)"
  wait_stream debs "$PAYLOAD_WAIT_S" || return 1
  assemble debs "$S/synthdeps" || return 1
  check_no_reserved "$S/synthdeps/debs/MANIFEST"
  phase deps
  env -u LD_LIBRARY_PATH "$root/scripts/synth_deps.sh" install "$S/synthdeps" || return 1
  phase corpus "(HOURS=$HOURS, JOBS=$JOBS)"
  bundle corpus || return 1
  phase heldout
  bundle heldout || return 1
  phase text
  bundle text || return 1
  if [[ -n ${TRAIN_AFTER:-} ]]; then  # the GPU is another job's until it creates this file
    phase train-after "(waiting for $TRAIN_AFTER)"
    while [[ ! -e $TRAIN_AFTER && ! -f $S/STOP ]]; do sleep 5; done
  fi
  phase build-wait
  wait_build || { echo "gpu_session: the build failed: $S/build/"; tail -30 "$S/build/stdout.log"; return 1; }
  phase warm-start
  if ! warm_start && [[ ${REQUIRE_WARM:-0} == 1 ]]; then return 1; fi
  if [[ -f $S/STOP ]]; then
    phase train "skipped: stop was asked before training"
  elif [[ -n ${VARIANTS:-} ]]; then
    phase variants "($VARIANTS, MINUTES=$MINUTES each, side by side)"
    LD_LIBRARY_PATH="$MASR_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" MINUTES="$MINUTES" DEVICE="$DEVICE" \
      MASR_BIN="$BIN" WORKERS="${VARIANT_WORKERS:-2}" KEEP="${KEEP:-best}" PREV_ASR="${WARM_ASR:-}" \
      bash "$root/recipes/synth/variants.sh" "$VARIANTS" "$S/bundle/data" "$S/variants" ||
      echo "gpu_session: variants.sh failed"
    keep_variants
  else
    phase train "(MINUTES=$MINUTES, detached from every call)"
    LD_LIBRARY_PATH="$MASR_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      OUT="$S/bundle" MINUTES="$MINUTES" DEVICE="$DEVICE" MASR_BIN="$BIN" WORKERS="$WORKERS" \
      ASR_ARGS="${ASR_ARGS:-}${WARM_ASR:+$(warm_args "$WARM_ASR" Adam "${ASR_ARGS:-}")}" \
      LM_ARGS="${LM_ARGS:-}${WARM_LM:+$(warm_args "$WARM_LM" optimizer "${LM_ARGS:-}")}" \
      bash "$root/recipes/synth/bundle.sh" train ||
      echo "gpu_session: bundle.sh train failed; the results hold what exists"
    if ! warm_check && [[ ${REQUIRE_WARM:-0} == 1 ]]; then return 1; fi
    if [[ ${EVAL:-0} == 1 && -f $S/bundle/asr/model.masr ]]; then
      phase eval
      LD_LIBRARY_PATH="$MASR_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OUT="$S/bundle" DEVICE="$DEVICE" \
        MASR_BIN="$BIN" TEST_UTTS="$QUICK_EVAL_UTTS" bash "$root/recipes/synth/bundle.sh" eval || true
    fi
  fi
}

# The variants KEEP chose (variants.sh's OUT/kept) take the bundle's places, so that finish()
# checks them on the held-out sets and brings their weights back as it does the bundle's.
keep_variants() {
  local kind name f
  [[ -f $S/variants/kept ]] || { echo "gpu_session: no variant kept"; return 0; }
  while read -r kind name; do
    mkdir -p "$S/bundle/$kind"
    for f in model.masr train_log.txt log.jsonl train.log hyperparams.yaml variant.tsv; do
      [[ -f $S/variants/$name/$f ]] && cp "$S/variants/$name/$f" "$S/bundle/$kind/"
    done
    echo "gpu_session: kept variant $name ($kind): $(cut -f5 "$S/variants/$name/variant.tsv" 2>/dev/null)"
  done < "$S/variants/kept"
}

# ---------------------------------------------------------------------------------------------

done_yet() { grep -q '^SESSION DONE' "$LOG" 2>/dev/null; }
running() { [[ -f $S/driver.pid ]] && kill -0 "$(cat "$S/driver.pid")" 2>/dev/null; }

start() {
  cd "$root"
  running && die "a session is still going (pid $(cat "$S/driver.pid")); poll it"
  [[ -n ${SKIP_BUILD:-} || -f .devdeps/env.sh ]] || die "carry .devdeps in this call (the build needs it)"
  [[ $S == /tmp/?* ]] || die "SESSION_DIR must be a folder under /tmp, not '$S'"
  rm -rf "$S" && mkdir -p "$S/tree"
  # The driver runs from a copy: later calls replace the tree under it. So does the build, from a
  # snapshot of the whole tree ($S/src; a build reading the tree itself fails when the next call
  # lands in the middle of it).
  cp -r recipes scripts hparams "$S/tree/"
  local variants=""
  if [[ -n ${VARIANTS:-} ]]; then  # the driver's own copy, as an absolute path
    [[ -f $VARIANTS ]] || die "VARIANTS: no file $VARIANTS (give it relative to $root or absolute)"
    variants="$S/tree/variants.tsv"
    cp "$VARIANTS" "$variants"
  fi
  if [[ -z ${SKIP_BUILD:-} ]]; then
    mkdir -p "$S/src"
    tar --exclude=./build --exclude=./build-cuda --exclude=./.git --exclude=./.synthdeps \
      --exclude=./.ddpdata --exclude=./models --exclude=./out --exclude=./results -cf - . |
      tar -xf - -C "$S/src" ||
      die "could not copy the tree to $S/src"
  fi
  receive
  local -a settings=(
    REPO="$root" SESSION_DIR="$S" SESSION_LOG="$LOG" HOURS="${HOURS:-20}" MINUTES="${MINUTES:-14}"
    SEED="${SEED:-1234}" TEXT_OFFSET="${TEXT_OFFSET:-0}" JOBS="${JOBS:-12}" WORKERS="${WORKERS:-12}"
    HELDOUT_UTTS="${HELDOUT_UTTS:-2000}"
    DEVICE="${DEVICE:-cuda}" QUICK_EVAL_UTTS="${QUICK_EVAL_UTTS:-300}" EVAL="${EVAL:-0}"
    REQUIRE_WARM="${REQUIRE_WARM:-0}" PAYLOAD_WAIT_S="${PAYLOAD_WAIT_S:-900}" PART_MIB="${PART_MIB:-15}"
    BIN="${MASR_BIN:-$([[ -n ${SKIP_BUILD:-} ]] && echo "$root" || echo "$S/src")/build-cuda/bin/mamba-asr}"
    SKIP_BUILD="${SKIP_BUILD:-}"
    ASR_ARGS="${ASR_ARGS:-}" LM_ARGS="${LM_ARGS:-}" TRAIN_AFTER="${TRAIN_AFTER:-}"
    VARIANTS="$variants" VARIANT_WORKERS="${VARIANT_WORKERS:-2}" KEEP="${KEEP:-best}")
  printf '%q\n' "${settings[@]}" > "$S/settings"
  # bench/detached.sh's pattern: a new session (setsid) that outlives the call, its log, a last
  # line with the exit status; not detached.sh itself, which would give the synthesizers' Python
  # the build's libraries (.devdeps/env.sh) and copies its own files into $OUT (at most 8 return).
  setsid nohup env "${settings[@]}" bash -c "echo \"SESSION START \$(date -u +%T)\";
    bash '$S/tree/recipes/synth/gpu_session.sh' driver; echo \"SESSION DONE rc=\$? \$(date -u +%T)\"" \
    > "$LOG" 2>&1 < /dev/null &
  echo $! > "$S/driver.pid"
  echo "gpu_session: started (pid $!), log $LOG, settings: $(tr '\n' ' ' < "$S/settings")"
  # Return once the build has started (a failure to configure shows in this call's output).
  if [[ -z ${SKIP_BUILD:-} ]]; then
    local end=$((SECONDS + 120))
    while ((SECONDS < end)) && [[ ! -f $S/build/cmake.log && ! -f $S/build/rc ]]; do sleep 2; done
  fi
}

digest() {  # every line may find its file missing: nothing here may fail the call
  local asr="$S/bundle/asr" missing
  echo "== gpu_session $(now): $(grep '^SESSION DONE' "$LOG" 2>/dev/null || echo running)"
  grep '^PHASE' "$LOG" 2>/dev/null | tail -3 || true
  missing=$(missing_pieces)
  [[ -z $missing ]] || echo "payload: missing $(echo $missing)"
  [[ ! -f $S/build/summary.txt ]] || echo "build: $(grep -E 'build rc' "$S/build/summary.txt" | tail -1)"
  grep -E '^(warm start|WARM)' "$LOG" 2>/dev/null | tail -4 || true
  echo "-- log tail"; tail -n 5 "$LOG" 2>/dev/null | cut -c1-300 || true
  if [[ -f $asr/train.log ]]; then
    echo "-- ASR train.log"; tail -n 3 "$asr/train.log" | cut -c1-300 || true
    echo "-- ASR epochs"; tail -n 2 "$asr/train_log.txt" 2>/dev/null | cut -c1-300 || true
    echo "-- LM epochs"; tail -n 1 "$S/bundle/lm/train_log.txt" 2>/dev/null | cut -c1-300 || true
  fi
  return 0
}

collect() {
  [[ -n ${OUT:-} ]] || die "OUT is not set (the device call sets it)"
  mkdir -p "$OUT"
  if [[ -f $S/results/SHA256SUMS ]]; then
    cp -- "$S/results/"* "$OUT/"
  else  # the progress so far, a few files only
    [[ -f $LOG ]] && tail -c 8000000 "$LOG" > "$OUT/gpu-session.log"
    local f
    for f in "$S/bundle/asr/train.log" "$S/bundle/asr/log.jsonl" "$S/bundle/asr/train_log.txt" \
             "$S/bundle/lm_train.log" "$S/build/summary.txt"; do
      [[ -f $f ]] && tail -c 8000000 "$f" > "$OUT/$(basename "$(dirname "$f")")-$(basename "$f")"
    done
  fi
  return 0
}

poll() {
  local secs="${1:-540}"
  [[ $secs =~ ^[0-9]+$ ]] || die "poll SECONDS: '$secs' is not a number"
  receive
  local end=$((SECONDS + secs))
  while ((SECONDS < end)) && ! done_yet; do sleep 5; done
  digest
  [[ -n ${OUT:-} ]] && collect
  if done_yet; then echo "gpu_session: done"; else echo "gpu_session: still running"; fi
}

stop() {
  [[ -f $S/driver.sid ]] || die "no session driver here"
  touch "$S/STOP"
  local sid st pid comm psid n=0
  sid=$(cat "$S/driver.sid")
  # SIGALRM makes `timeout` act as if its time were up: TERM to the trainer (which checkpoints),
  # exit status 124, which bundle.sh takes as the end of the budget and averages. Only the
  # `timeout` processes of the driver's session (/proc/PID/stat: pid, (comm), state, ppid, pgrp, sid).
  for st in /proc/[0-9]*/stat; do
    read -r pid comm _ _ _ psid _ < "$st" 2>/dev/null || continue
    if [[ $comm == "(timeout)" && $psid == "$sid" ]]; then kill -ALRM "$pid" && n=$((n + 1)); fi
  done
  echo "gpu_session: stop: $n training process(es) told to end; poll for the results"
}

cmd="${1:-}"
case "$cmd" in
  pack) pack ;;
  unpack) unpack "${2:-}" ;;
  start) start ;;
  poll) poll "${2:-540}" ;;
  collect) collect ;;
  stop) stop ;;
  receive) receive ;;
  driver)  # started by `start`, with its settings in the environment
    : "${BIN:?}" "${REPO:?}" "${HOURS:?}" "${MINUTES:?}" "${SEED:?}" "${TEXT_OFFSET:?}" "${JOBS:?}" "${WORKERS:?}" \
      "${HELDOUT_UTTS:?}" "${DEVICE:?}" "${QUICK_EVAL_UTTS:?}" "${PAYLOAD_WAIT_S:?}"
    cd "$root"
    driver ;;
  *) usage ;;
esac
