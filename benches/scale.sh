#!/usr/bin/env bash
# Scale benchmark: captures whose size is in their count of connections or statements rather than in their
# bytes (benches/make_scale_captures.rs builds them), through every analysing command, with each run's wall
# time, CPU seconds (user + system), peak RSS and output size. These are the shapes where time or memory
# could grow faster than the capture (a walk over every other attempt per attempt, state kept per closed
# connection, a table row per distinct statement, a cell per interval of a long capture); the targets: peak
# RSS at most 300 MB for the 500,000-statement and the 1,000,000-attempt captures, every command linear
# (or n log n) in time, and the same peak RSS for 3 and 12 days of one query a second (`trickle`).
#
# usage: benches/scale.sh [COMMAND_FILTER]   (a regular expression on "capture command"; default: all)
#   SCALE_DIR: where the captures are built and kept (default /tmp/pcapsleuth-scale, ~600 MB)
#   PCAPSLEUTH: the binary measured (default: this checkout's release build)
#   TIMEOUT: seconds a run may take before it is stopped and reported as such (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${SCALE_DIR:-/tmp/pcapsleuth-scale}
TIMEOUT=${TIMEOUT:-600}
FILTER=${1:-.}
mkdir -p "$DIR"
cargo build -q --release --example make_scale_captures
if [ -n "${PCAPSLEUTH:-}" ]; then
  P=$PCAPSLEUTH
else
  cargo build -q --release
  P=target/release/pcapsleuth
fi
captures=("attempts 200000" "closed 200000" "statements 500000" "attempts 1000000" "trickle 259200"
  "trickle 1036800")
for c in "${captures[@]}"; do
  set -- $c
  f="$DIR/$1-$2.pcap"
  [ -f "$f" ] || target/release/examples/make_scale_captures "$1" "$2" "$f"
done
commands=(
  "first-reset" "flows" "flows --json" "mysql" "mysql --json" "rt" "rate" "report" "report --json"
  "compare" "export" "rt --per-interval" "load"
)
printf '%-18s %-14s %9s %9s %9s %11s %5s\n' capture command "wall s" "CPU s" "RSS MB" "out bytes" exit
for c in "${captures[@]}"; do
  set -- $c
  name="$1-$2"
  f="$DIR/$name.pcap"
  cat "$f" > /dev/null   # every run reads from the page cache
  for cmd in "${commands[@]}"; do
    [[ "$name $cmd" =~ $FILTER ]] || continue
    case "$cmd" in
      compare) args=(compare "$f" "$f") ;;
      export) rm -rf "$DIR/export"; args=(export "$f" --parquet "$DIR/export") ;;
      *) read -ra args <<< "$cmd"; args+=("$f") ;;
    esac
    rc=0
    /usr/bin/time -f "%e %U %S %M" -o "$DIR/time" timeout "$TIMEOUT" "$P" "${args[@]}" \
      > "$DIR/out" 2> /dev/null || rc=$?
    read -r wall user sys rss < <(tail -n 1 "$DIR/time")
    [ "$rc" = 124 ] && rc="timed out"
    awk -v n="$name" -v c="$cmd" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" \
      -v o="$(stat -c %s "$DIR/out")" -v e="$rc" \
      'BEGIN { printf "%-18s %-14s %9.2f %9.2f %9d %11d %5s\n", n, c, w, u + s, r / 1024, o, e }'
  done
done
rm -rf "$DIR/export" "$DIR/out" "$DIR/time"
