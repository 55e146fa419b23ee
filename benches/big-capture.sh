# Sourced by the whole-binary benchmarks: builds the release binary and the >= 2 GB capture they read,
# made from a real fixture (time-shifted copies with distinct client addresses), once.
# Takes the scripts' arguments [FIXTURE] [SIZE_GB] (defaults: fixtures/err1146-storm.pcap 2.1); sets SRC,
# SIZE, DIR (BENCH_DIR, default /tmp/pcapsleuth-bench), BIG, BYTES, PACKETS and P, the pcapsleuth binary
# measured: PCAPSLEUTH if set (another build, e.g. to compare two commits), else this checkout's release build.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SRC=${1:-fixtures/err1146-storm.pcap}
SIZE=${2:-2.1}
DIR=${BENCH_DIR:-/tmp/pcapsleuth-bench}
mkdir -p "$DIR"
BIG="$DIR/$(basename "${SRC%.*}")-${SIZE}g.pcap"
if [ ! -f "$BIG" ]; then
  cargo build -q --release --example make_bench_capture
  target/release/examples/make_bench_capture "$SRC" "$BIG" "$SIZE"
fi
if [ -n "${PCAPSLEUTH:-}" ]; then
  P=$PCAPSLEUTH
else
  cargo build -q --release
  P=target/release/pcapsleuth
fi
BYTES=$(stat -c %s "$BIG")
PACKETS=$("$P" flows --json "$BIG" | python3 -c 'import json,sys; print(json.load(sys.stdin)["capture"]["counts"]["packets"])')
