#!/usr/bin/env bash
# Whole-binary benchmark on a >= 2 GB capture built from a real fixture (time-shifted copies with distinct
# client addresses): pcapsleuth's commands against tcpdump's BPF filter for FIN/RST (the yardstick of issue
# 16's targets) and tshark. Every command runs once per round and the rounds interleave them, so that a
# slow spell of a shared machine hits every command alike; the table gives each command's median wall time,
# its ratio to tcpdump's median in the same rounds, the target, throughput, and the largest peak RSS seen.
# Needs tcpdump and tshark (apt-get install tcpdump tshark).
#
# usage: benches/run.sh [FIXTURE] [SIZE_GB]     (defaults: fixtures/err1146-storm.pcap 2.1; RUNS=5 rounds;
#        PCAPSLEUTH=path/to/pcapsleuth measures that binary instead of building this checkout's)
# TSHARK=0 leaves out tshark's timing on the first 200 MB.
# ONLY: a regular expression on the command names: only those rows run (tcpdump's always does, it is the
#        yardstick). benches/shapes.sh runs the script on every shape of capture and joins the tables.
set -euo pipefail
. "$(dirname "$0")/big-capture.sh"
cat "$BIG" > /dev/null   # all runs read from the page cache
echo "capture: $BIG, $BYTES bytes, $PACKETS packets, $(nproc) cores, $(nproc) threads unless -j says"
RUNS=${RUNS:-5}
EXPORT_DIR="$DIR/export-out"
# Each row: its name, its target as a ratio to tcpdump's time ("-" for none), and its command.
names=() targets=() cmds=()
row() {
  if [ "${#names[@]}" -gt 0 ] && [ -n "${ONLY:-}" ] && ! grep -qE -- "$ONLY" <<<"$1"; then
    return
  fi
  names+=("$1"); targets+=("$2"); cmds+=("$3")
}
row "tcpdump -n 'tcp[tcpflags] & (fin|rst) != 0'" - "tcpdump -n -r $BIG 'tcp[tcpflags] & (tcp-fin|tcp-rst) != 0'"
row "pcapsleuth first-reset" 0.6 "$P first-reset $BIG"
row "pcapsleuth first-reset --no-mysql" - "$P first-reset --no-mysql $BIG"
row "pcapsleuth first-reset -j 1" - "$P first-reset -j 1 $BIG"
# As many threads as -j allows (4 x the cores): a many-core machine's batches, whose memory must stay flat.
row "pcapsleuth first-reset -j $((4 * $(nproc)))" - "$P first-reset -j $((4 * $(nproc))) $BIG"
row "pcapsleuth mysql" 1.0 "$P mysql $BIG"
row "pcapsleuth report" 1.3 "$P report $BIG"
row "pcapsleuth export --parquet" 2.0 "rm -rf $EXPORT_DIR && $P export $BIG --parquet $EXPORT_DIR"
times="$DIR/times"
: > "$times"
for round in $(seq "$RUNS"); do
  for i in "${!cmds[@]}"; do
    /usr/bin/time -f "%e %M %U %S" -o "$DIR/time" bash -c "${cmds[$i]}" > /dev/null 2> /dev/null || true
    echo "$i $(tail -n 1 "$DIR/time")" >> "$times"
  done
  echo "round $round of $RUNS done" >&2
done
median() { sort -g | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
base=$(awk '$1==0{print $2}' "$times" | median)
# "cores busy": CPU seconds (user + system) over wall seconds x cores, the median run's: what is left idle
# between phases and batches, or by a command that cannot use every core.
cores=$(nproc)
printf '\n%-38s %8s %8s %9s %7s %9s %10s %9s %6s\n' command median "CPU s" "x tcpdump" target GB/s "Mpkt/s" "peak RSS" busy
for i in "${!cmds[@]}"; do
  name=${names[$i]} target=${targets[$i]}
  med=$(awk -v i="$i" '$1==i{print $2}' "$times" | median)
  rss=$(awk -v i="$i" '$1==i && $3>m{m=$3} END{print m}' "$times")
  cpu=$(awk -v i="$i" -v s="$med" '$1==i && $2==s {print $4 + $5; exit}' "$times")
  awk -v n="$name" -v s="$med" -v t="$target" -v base="$base" -v b="$BYTES" -v p="$PACKETS" -v r="$rss" \
    -v c="${cpu:-0}" -v k="$cores" '
    BEGIN {
      ratio = s / base
      verdict = (t == "-") ? "" : (ratio <= t ? " met" : " NOT met")
      busy = (c > 0 && s > 0) ? sprintf("%5.0f%%", 100 * c / (s * k)) : "    -"
      printf "%-38s %7.2fs %8.2f %8.2fx %7s %9.2f %10.1f %6d MB %s%s\n", n, s, c, ratio, (t == "-" ? "-" : "<=" t "x"), b/s/1e9, p/s/1e6, r/1024, busy, verdict
    }'
done
rm -rf "$EXPORT_DIR"
[ "${TSHARK:-1}" = 0 ] && exit 0
# tshark is too slow for the whole file: time it once on the first 200 MB and report its rate.
rm -rf "$DIR/pieces"
$P split "$BIG" --megabytes 200 -o "$DIR/pieces" 2> /dev/null
HEAD=$(ls "$DIR/pieces"/* | head -n 1)
mv "$HEAD" "$DIR/head.pcap"; rm -rf "$DIR/pieces"
HEAD_BYTES=$(stat -c %s "$DIR/head.pcap")
for f in 'tcp.flags.fin==1 || tcp.flags.reset==1' 'mysql.error_code'; do
  /usr/bin/time -f "%e %M" -o "$DIR/time" tshark -r "$DIR/head.pcap" -Y "$f" > /dev/null 2> /dev/null || true
  read -r secs rss < <(tail -n 1 "$DIR/time")
  awk -v n="tshark -Y '$f' (200 MB)" -v s="$secs" -v b="$HEAD_BYTES" -v r="$rss" \
    'BEGIN{printf "%-50s %7.2fs %9.3f GB/s  peak RSS %d MB\n", n, s, b/s/1e9, r/1024}'
done
