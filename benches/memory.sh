#!/usr/bin/env bash
# Peak RSS against capture size: the same shape of capture (time-shifted copies of a real fixture with
# distinct client addresses, benches/make_bench_capture.rs, a few connections open at a time) at two sizes,
# through the commands whose memory must follow the open flows and the size of their output, not the
# capture's bytes. Prints each command's peak RSS at both sizes and its growth per GB of capture; `rate`
# and `mysql` are the yardstick of what does not grow. Not a timed test: memory does not depend on how
# busy the machine is. Exits 1 when a command grows more than MAX_MB_PER_GB (default 25) per GB. The
# smaller size is past what `load` keeps in memory before its scratch file (8 MB of requests, about 330 MB
# of this capture), so the figure is the growth, not that ramp. What `report` still grows by here is
# output-sized: this capture's seconds grow with its bytes, and `rate` and `rt` keep figures per interval.
#
# usage: benches/memory.sh [FIXTURE] [SMALL_GB] [LARGE_GB]   (defaults: fixtures/err1146-storm.pcap 0.5 1.5)
#   MEMORY_DIR: where the captures are built and kept (default /tmp/pcapsleuth-memory)
#   PCAPSLEUTH: the binary measured (default: this checkout's release build)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=${1:-fixtures/err1146-storm.pcap}
SMALL=${2:-0.5}
LARGE=${3:-1.5}
DIR=${MEMORY_DIR:-/tmp/pcapsleuth-memory}
MAX=${MAX_MB_PER_GB:-25}
mkdir -p "$DIR"
cargo build -q --release --example make_bench_capture
if [ -n "${PCAPSLEUTH:-}" ]; then
  P=$PCAPSLEUTH
else
  cargo build -q --release
  P=target/release/pcapsleuth
fi
files=()
for size in "$SMALL" "$LARGE"; do
  f="$DIR/$(basename "${SRC%.*}")-${size}g.pcap"
  [ -f "$f" ] || target/release/examples/make_bench_capture "$SRC" "$f" "$size" >&2
  files+=("$f")
done
commands=("rate" "mysql" "load" "load --json" "report" "report --json")
rss() { # peak RSS in MB of one run of "$@"
  /usr/bin/time -f "%M" -o "$DIR/rss" "$@" > /dev/null 2> /dev/null || true
  awk '{printf "%.0f", $1 / 1024}' "$DIR/rss"
}
bytes=()
for f in "${files[@]}"; do bytes+=("$(stat -c %s "$f")"); done
printf '%-14s %12s %12s %10s\n' command "RSS MB (${SMALL} GB)" "RSS MB (${LARGE} GB)" "MB per GB"
status=0
for c in "${commands[@]}"; do
  small=$(rss $P $c "${files[0]}")
  large=$(rss $P $c "${files[1]}")
  per_gb=$(awk -v a="$small" -v b="$large" -v x="${bytes[0]}" -v y="${bytes[1]}" \
    'BEGIN { printf "%.0f", (b - a) / ((y - x) / 1e9) }')
  flag=""
  if [ "$per_gb" -gt "$MAX" ]; then
    flag="  grows with the capture"
    status=1
  fi
  printf '%-14s %12s %12s %10s%s\n' "$c" "$small" "$large" "$per_gb" "$flag"
done
exit $status
