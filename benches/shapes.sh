#!/usr/bin/env bash
# The whole-binary benchmark (benches/run.sh) on every shape of capture, one table per shape: where the
# work is spread over many connections the engine parallelises by connection, and where one or a few
# connections carry it (a bulk resultset, a prepared-statement client, the compressed protocol) it cannot
# yet. Each capture is built from a real fixture by time-shifted copies (benches/make_bench_capture.rs),
# so a fixture of N connections gives a capture with about N at a time.
#
# usage: benches/shapes.sh            (RUNS=3 rounds per shape; ONLY defaults to mysql and first-reset;
#                                      BENCH_DIR for the ~9 GB of captures, default /tmp/pcapsleuth-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
export RUNS=${RUNS:-3} TSHARK=0 ONLY=${ONLY:-'^pcapsleuth (mysql|first-reset|report)$'}
# fixture, size in GB, and the shape it gives.
shapes=(
  "fixtures/err1146-storm.pcap 2.1 many connections at a time (4 per copy, 16k in all)"
  "fixtures/no-cap.pcap 1.9 4 sysbench connections at a time"
  "fixtures/stream-stall.pcap 1.7 one bulk resultset at a time"
  "fixtures/prepared-full.pcap 1.7 2 prepared-statement connections at a time"
  "fixtures/compressed-busy.pcap 1.7 one busy compressed-protocol connection at a time"
)
for s in "${shapes[@]}"; do
  read -r fixture size shape <<<"$s"
  echo
  echo "== $shape: $fixture x copies, $size GB"
  benches/run.sh "$fixture" "$size" 2> /dev/null
done
