#!/usr/bin/env bash
# Whole-binary benchmark of the inputs beyond one mapped file, on the >= 2 GB capture of benches/big-capture.sh:
#  * gzip and zstd: pcapsleuth reading the compressed file, next to the decompressor alone (`zcat`, `zstdcat`
#    into /dev/null: one core's inflate / zstd speed, the floor the issue sets) and to
#    `zcat | tcpdump -r -` with the FIN/RST filter, and pcapsleuth on the decompressed stream from a pipe;
#  * a rotated set: the capture cut into 100 MB files (as `tcpdump -C 100` writes them), read as one capture,
#    next to the single file.
# Rates are in MB/s of the file as stored (compressed bytes for .gz/.zst) and of the capture (uncompressed),
# with packets/s and peak RSS (/usr/bin/time), from the wall time; then the CPU seconds (user + system, all
# processes of the row, pipes included) and the capture's MB per CPU second, which holds still when the
# machine is shared and wall times are not. Best of RUNS (default 3) runs.
#
# usage: benches/inputs.sh [FIXTURE] [SIZE_GB]     (defaults: fixtures/err1146-storm.pcap 2.1)
set -euo pipefail
. "$(dirname "$0")/big-capture.sh"
[ -f "$BIG.gz" ] || gzip -1 -c "$BIG" > "$BIG.gz"
[ -f "$BIG.zst" ] || zstd -q -3 -T0 -c "$BIG" > "$BIG.zst"
if [ ! -d "$DIR/rotated" ]; then
  $P split "$BIG" --megabytes 100 -o "$DIR/rotated" 2> /dev/null
fi
echo "capture: $BIG, $BYTES bytes, $PACKETS packets, $(nproc) cores"
echo "  gzip -1: $(stat -c %s "$BIG.gz") bytes; zstd -3: $(stat -c %s "$BIG.zst") bytes; rotated: $(ls "$DIR/rotated" | wc -l) files"
RUNS=${RUNS:-3}
# run NAME STORED_BYTES CMD...: best wall time of RUNS, with the peak RSS of that run.
run() {
  local name=$1 stored=$2; shift 2
  local best= best_rss= best_cpu=
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %M %U %S" -o "$DIR/time" bash -c "$*" > /dev/null 2> /dev/null || true
    read -r secs rss user sys < <(tail -n 1 "$DIR/time")
    if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best=$secs; best_rss=$rss; fi
    cpu=$(awk "BEGIN{print $user + $sys}")
    if [ -z "$best_cpu" ] || awk "BEGIN{exit !($cpu < $best_cpu)}"; then best_cpu=$cpu; fi
  done
  awk -v n="$name" -v s="$best" -v st="$stored" -v b="$BYTES" -v p="$PACKETS" -v r="$best_rss" -v c="$best_cpu" \
    'BEGIN{printf "%-50s %6.2f s  stored %5.0f MB/s  capture %5.0f MB/s  %5.2f Mpkt/s  RSS %4d MB  cpu %6.2f s  %5.0f MB/cpu-s\n", n, s, st/s/1e6, b/s/1e6, p/s/1e6, r/1024, c, b/c/1e6}'
}
FLT="'tcp[tcpflags] & (tcp-fin|tcp-rst) != 0'"
GZ=$(stat -c %s "$BIG.gz"); ZST=$(stat -c %s "$BIG.zst")
cat "$BIG" "$BIG.gz" "$BIG.zst" > /dev/null   # all runs read from the page cache
run "pcapsleuth first-reset big.pcap" "$BYTES" "$P first-reset $BIG"
run "tcpdump -r big.pcap (FIN/RST filter)" "$BYTES" "tcpdump -n -r $BIG $FLT"
echo "gzip:"
run "zcat > /dev/null (one core's inflate)" "$GZ" "zcat $BIG.gz"
run "pcapsleuth first-reset big.pcap.gz" "$GZ" "$P first-reset $BIG.gz"
run "pcapsleuth first-reset --no-mysql big.pcap.gz" "$GZ" "$P first-reset --no-mysql $BIG.gz"
run "pcapsleuth report big.pcap.gz" "$GZ" "$P report $BIG.gz"
run "zcat | tcpdump -r - (FIN/RST filter)" "$GZ" "zcat $BIG.gz | tcpdump -n -r - $FLT"
echo "zstd:"
run "zstdcat > /dev/null (one core's zstd)" "$ZST" "zstdcat $BIG.zst"
run "pcapsleuth first-reset big.pcap.zst" "$ZST" "$P first-reset $BIG.zst"
run "pcapsleuth first-reset --no-mysql big.pcap.zst" "$ZST" "$P first-reset --no-mysql $BIG.zst"
run "pcapsleuth report big.pcap.zst" "$ZST" "$P report $BIG.zst"
run "zstdcat | tcpdump -r - (FIN/RST filter)" "$ZST" "zstdcat $BIG.zst | tcpdump -n -r - $FLT"
run "zstdcat | pcapsleuth first-reset -" "$ZST" "zstdcat $BIG.zst | $P first-reset -"
echo "rotated set ($(ls "$DIR/rotated" | wc -l) files of 100 MB):"
run "pcapsleuth first-reset DIR" "$BYTES" "$P first-reset $DIR/rotated"
run "pcapsleuth report DIR" "$BYTES" "$P report $DIR/rotated"
run "pcapsleuth report big.pcap (the same, one file)" "$BYTES" "$P report $BIG"
run "pcapsleuth extract DIR --port 1 (reads all, writes none)" "$BYTES" "$P extract $DIR/rotated --port 1 -o $DIR/extract.pcap"
run "pcapsleuth extract big.pcap.zst --port 1" "$ZST" "$P extract $BIG.zst --port 1 -o $DIR/extract.pcap"
rm -f "$DIR/extract.pcap"
