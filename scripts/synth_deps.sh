#!/usr/bin/env bash
# scripts/synth_deps.sh — the corpus generator's synthesizers, voices and text packages as .deb files,
# for a machine without a package archive (the GPU machine; docs/synth-corpus.md).
#
#   scripts/synth_deps.sh download [DIR]   on a Debian 12 machine with apt: fetch the .deb files of
#                                          SYNTH_PACKAGES and their dependencies into DIR/debs
#                                          (default DIR: .synthdeps), with DIR/debs/MANIFEST
#   scripts/synth_deps.sh install [DIR]    anywhere, no network, no root: extract every DIR/debs/*.deb
#                                          into the private prefix DIR/root (nothing is installed
#                                          into the system) and check that the tools start
#   scripts/synth_deps.sh check [DIR]      only the check
#   scripts/synth_deps.sh subset DIR NEW PKG...
#                                          NEW/debs = DIR/debs without the packages PKG... (e.g. flite
#                                          libflite1 to save 13 MB when flite's voices are not used)
#
# make_synth_corpus.sh finds DIR/root by itself (the repository's .synthdeps) when sox or espeak-ng
# is not on PATH; elsewhere set MASR_SYNTH_ROOT=DIR/root. The prefix's libraries are given to the
# synthesizer processes only (LD_LIBRARY_PATH of the children), never to the Python that runs them.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cmd="${1:-}"
dir="${2:-$(cd "$here/.." && pwd)/.synthdeps}"

# What the generator runs and reads (the same list as the corpus part of scripts/setup.sh).
SYNTH_PACKAGES=(
  espeak-ng sox opus-tools libgsm-tools
  festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts flite
  fortunes fortunes-min fortune-anarchism bible-kjv bible-kjv-text wordnet-base
)
# Not fetched: the C library and the compiler runtime (the host's own, newer ones serve; a private
# copy would clash with them) and packages that only integrate a service into the system (users,
# init scripts, debconf, sound-card utilities), which the synthesizers do not need to run.
SKIP='^(libc6|libgcc-s1|libstdc\+\+6|gcc-[0-9]+-base|libcrypt1|debconf|cdebconf|debconf-2\.0|dpkg|tar|perl-base|adduser|passwd|lsb-base|sysvinit-utils|init-system-helpers|install-info|sgml-base|alsa-utils|kmod|libkmod2|libpam.*|libsemanage.*|libaudit.*|libcap-ng0|libnewt0\.52|libslang2|libtextwrap1|libdebian-installer4|readline-common)$'

usage() { sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# The dependency closure of SYNTH_PACKAGES: Depends and Pre-Depends, the first alternative of each
# "a | b" group, a virtual package by its first provider; SKIP is neither fetched nor followed.
closure() {
  /usr/bin/python3 - "$SKIP" "${SYNTH_PACKAGES[@]}" <<'PY'
import re, subprocess, sys
skip = re.compile(sys.argv[1])
level, seen = list(sys.argv[2:]), set()
while level:  # one apt-cache call per level of the graph
    level = sorted({p for p in level if p not in seen and not skip.match(p)})
    seen.update(level)
    if not level:
        break
    out = subprocess.run(["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts",
                          "--no-breaks", "--no-replaces", "--no-enhances"] + level,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    nxt, in_group, i = [], False, 0
    while i < len(out):
        m = re.match(r"^ (\|| )(Pre)?Depends: (\S+)", out[i])
        if not m:
            in_group = False  # a package's name line or another field
            i += 1
            continue
        alt, name = m.group(1) == "|", m.group(3)
        providers = []
        while i + 1 < len(out) and out[i + 1].startswith("    "):
            providers.append(out[i + 1].strip())
            i += 1
        if not in_group:  # the first alternative of a group decides
            if name.startswith("<"):
                name = providers[0] if providers else None
            if name:
                nxt.append(name.split(":")[0])
        in_group = alt
        i += 1
    level = nxt
for pkg in sorted(seen):
    print(pkg)
PY
}

download() {
  command -v apt-get >/dev/null || { echo "synth_deps: download needs apt-get (a Debian 12 machine)" >&2; exit 1; }
  mkdir -p "$dir/debs"
  local packages
  mapfile -t packages < <(closure)
  echo "synth_deps: ${#packages[@]} packages into $dir/debs" >&2
  rm -f "$dir/debs/"*.deb
  local sandbox=()  # as root into a folder the _apt user cannot write: no sandbox warning
  [[ $(id -u) -eq 0 ]] && sandbox=(-o APT::Sandbox::User=root)
  (cd "$dir/debs" && apt-get download -q "${sandbox[@]}" "${packages[@]}" >/dev/null)
  (cd "$dir/debs" && for deb in *.deb; do
     printf '%s\t%s\t%s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
       "$(sha256sum "$deb" | cut -d' ' -f1)"
   done) > "$dir/debs/MANIFEST"
  echo "synth_deps: $(ls "$dir/debs/"*.deb | wc -l) files, $(du -sh "$dir/debs" | cut -f1)" >&2
}

extract() {  # extract DEB DEST: dpkg-deb where it exists, else ar + tar
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$2"
  else
    local tmp member
    tmp="$(mktemp -d)"
    (cd "$tmp" && ar x "$1")
    member=$(ls "$tmp" | grep '^data\.tar')
    case "$member" in
      *.xz) tar -xJf "$tmp/$member" -C "$2" ;;
      *.zst) zstd -dc "$tmp/$member" | tar -x -C "$2" ;;
      *) tar -xf "$tmp/$member" -C "$2" ;;
    esac
    rm -rf "$tmp"
  fi
}

check() {  # every tool the generator runs, from the prefix, on a word or two
  MASR_SYNTH_ROOT="$(cd "$dir/root" && pwd)" MASR_SYNTH_DIR="$here" /usr/bin/python3 - <<'PY'
import os, subprocess, sys, tempfile
sys.path.insert(0, os.environ["MASR_SYNTH_DIR"])
import synth_corpus as sc
tmp = tempfile.mkdtemp()
# (tool or file, the package that brings it, how to run it): a prefix made from part of the
# packages (`subset`) checks only what its MANIFEST lists.
installed = {line.split("\t")[0] for line in open(os.path.join(os.environ["MASR_SYNTH_ROOT"], ".installed"))}
checks = [
    ("espeak-ng", "espeak-ng", ["-v", "en-us", "-w", f"{tmp}/e.wav", "check"]),
    ("flite", "flite", ["-voice", "kal16", "-t", "check", "-o", f"{tmp}/f.wav"]),
    ("festival", "festival", sc.festival_cmd()[1:] + [
        "-b", "(voice_kal_diphone)",
        f'(utt.save.wave (utt.synth (Utterance Text "check")) "{tmp}/k.wav" (quote riff))']),
    ("sox", "sox", [f"{tmp}/e.wav", "-r", "8000", "-t", "raw", "-e", "signed", "-b", "16", f"{tmp}/e.raw",
             "pitch", "100", "reverb"]),
    ("toast", "libgsm-tools", ["-l", "-c", f"{tmp}/e.raw"]),
    ("opusenc", "opus-tools", ["--quiet", f"{tmp}/e.wav", f"{tmp}/f.opus"]),
    ("opusdec", "opus-tools", ["--quiet", f"{tmp}/f.opus", f"{tmp}/o.wav"]),
    ("bible", "bible-kjv", ["-p", sc.data_path("/usr/lib"), "gen1:1"]),
]
bad = 0
for name, package, args in checks:
    if package not in installed:
        print(f"synth_deps: skip {name} (package {package} not in this set)", file=sys.stderr)
        continue
    exe = sc.tool(name)
    r = subprocess.run([exe] + args, env=sc.tool_env(), capture_output=True) if exe else None
    ok = r is not None and r.returncode == 0
    bad += not ok
    why = "" if ok else ": " + (r.stderr.decode(errors="replace").strip()[:300] if r else "missing")
    print(f"synth_deps: {'ok  ' if ok else 'FAIL'} {name}{why}", file=sys.stderr)
for path, package in (("/usr/share/games/fortunes/fortunes", "fortunes"),
                      ("/usr/share/games/fortunes/anarchism", "fortune-anarchism"),
                      ("/usr/share/wordnet/data.noun", "wordnet-base"),
                      ("/usr/share/festival/voices/english/ked_diphone", "festvox-kdlpc16k"),
                      ("/usr/share/festival/voices/us/cmu_us_slt_arctic_hts", "festvox-us-slt-hts")):
    if package not in installed:
        continue
    ok = os.path.exists(sc.data_path(path))
    bad += not ok
    print(f"synth_deps: {'ok  ' if ok else 'FAIL'} {path}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

subset() {  # subset NEW PKG...: a copy of $dir/debs without some packages, for a smaller transfer
  local new="$1"; shift
  [[ -f "$dir/debs/MANIFEST" ]] || { echo "synth_deps: $dir/debs/MANIFEST is missing" >&2; exit 1; }
  rm -rf "$new/debs" && mkdir -p "$new/debs"
  local pkg version sha deb
  while IFS=$'\t' read -r pkg version sha; do
    [[ " $* " == *" $pkg "* ]] && continue
    deb=$(ls "$dir/debs/${pkg}_"*.deb | head -1)
    cp "$deb" "$new/debs/"
    printf '%s\t%s\t%s\n' "$pkg" "$version" "$sha" >> "$new/debs/MANIFEST"
  done < "$dir/debs/MANIFEST"
  echo "synth_deps: $(ls "$new/debs/"*.deb | wc -l) files, $(du -sh "$new/debs" | cut -f1) in $new/debs" >&2
}

case "$cmd" in
  download) download ;;
  subset) [[ $# -ge 3 ]] || usage; shift 2; subset "$@" ;;
  install)
    [[ -f "$dir/debs/MANIFEST" ]] || { echo "synth_deps: $dir/debs/MANIFEST is missing; run 'synth_deps.sh download' on a Debian 12 machine first" >&2; exit 1; }
    rm -rf "$dir/root.tmp"
    mkdir -p "$dir/root.tmp"
    n=0
    for deb in "$dir/debs/"*.deb; do
      extract "$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")" "$dir/root.tmp"
      n=$((n + 1))
    done
    rm -rf "$dir/root"
    mv "$dir/root.tmp" "$dir/root"
    cp "$dir/debs/MANIFEST" "$dir/root/.installed"
    echo "synth_deps: $n packages extracted into $dir/root" >&2
    check
    echo "synth_deps: use it with MASR_SYNTH_ROOT=$(cd "$dir/root" && pwd) (make_synth_corpus.sh finds the repository's .synthdeps/root by itself)" >&2
    ;;
  check) check ;;
  *) usage ;;
esac
