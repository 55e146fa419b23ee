#!/usr/bin/env bash
# Whole-binary benchmark on a >= 2 GB capture built from a real fixture (time-shifted copies with distinct
# client addresses): pcapsleuth's commands against tcpdump's BPF filter for FIN/RST and tshark, with wall
# time, throughput and peak RSS. Needs tcpdump and tshark (apt-get install tcpdump tshark).
#
# usage: benches/run.sh [FIXTURE] [SIZE_GB]     (defaults: fixtures/err1146-storm.pcap 2.1)
set -euo pipefail
. "$(dirname "$0")/big-capture.sh"
cat "$BIG" > /dev/null   # all runs read from the page cache
echo "capture: $BIG, $BYTES bytes, $PACKETS packets, $(nproc) cores"
RUNS=3
run() {
  local name=$1; shift
  local best=
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %M" -o "$DIR/time" "$@" > /dev/null 2> /dev/null || true
    read -r secs rss < <(tail -n 1 "$DIR/time")
    if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best=$secs; best_rss=$rss; fi
  done
  awk -v n="$name" -v s="$best" -v b="$BYTES" -v p="$PACKETS" -v r="$best_rss" \
    'BEGIN{printf "%-44s %7.2f s  %5.2f GB/s  %6.1f Mpkt/s  peak RSS %4d MB\n", n, s, b/s/1e9, p/s/1e6, r/1024}'
}
P=target/release/pcapsleuth
run "pcapsleuth first-reset" $P first-reset "$BIG"
run "pcapsleuth first-reset --no-mysql" $P first-reset --no-mysql "$BIG"
run "pcapsleuth mysql" $P mysql "$BIG"
run "pcapsleuth report" $P report "$BIG"
run "pcapsleuth first-reset -j 1" $P first-reset -j 1 "$BIG"
run "tcpdump -n 'tcp[tcpflags] & (fin|rst) != 0'" tcpdump -n -r "$BIG" 'tcp[tcpflags] & (tcp-fin|tcp-rst) != 0'
# tshark is too slow for the whole file: time it once on the first 200 MB and report its rate.
RUNS=1
rm -rf "$DIR/pieces"
$P split "$BIG" --megabytes 200 -o "$DIR/pieces" 2> /dev/null
HEAD=$(ls "$DIR/pieces"/* | head -n 1)
mv "$HEAD" "$DIR/head.pcap"; rm -rf "$DIR/pieces"
BYTES_ALL=$BYTES; BYTES=$(stat -c %s "$DIR/head.pcap")
PACKETS=$(target/release/pcapsleuth flows --json "$DIR/head.pcap" | python3 -c 'import json,sys; print(json.load(sys.stdin)["capture"]["counts"]["packets"])')
run "tshark -Y 'tcp.flags.fin==1||tcp.flags.reset==1' (200 MB)" tshark -r "$DIR/head.pcap" -Y 'tcp.flags.fin==1 || tcp.flags.reset==1'
run "tshark -Y mysql.error_code (200 MB)" tshark -r "$DIR/head.pcap" -Y 'mysql.error_code'
BYTES=$BYTES_ALL
