# tests/scripts/checks.sh — sourced by the shell tests of tests/scripts: a scratch folder $tmp
# (removed at exit), ok/bad that print a check's outcome and count the failures, skip_without
# (exit 77, which CTest reports as skipped, when a tool is not on PATH) and checks_done (the
# summary line; exit 1 when a check failed).

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

skip_without() {  # TOOL...
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || { echo "SKIP: '$t' is missing (scripts/setup.sh installs it)"; exit 77; }
  done
}

checks_done() {  # NAME
  ((fails == 0)) || { echo "$1: $fails check(s) failed"; exit 1; }
  echo "$1: all checks passed"
}
