#!/usr/bin/env bash
# Runs every cargo-fuzz target of the workspace (crates/*/fuzz, and fuzz/ at the top) in turn, one libFuzzer process at a time,
# from its committed seeds (seeds/<target>, only read) and its local working corpus (corpus/<target>,
# git-ignored, grows from run to run), and prints per target: executions, executions per second, coverage
# (libFuzzer's `cov`: code edges reached; `ft`: features), corpus size, and crashes.
#
#   fuzz/run-all.sh [DURATION [TARGET...]]
#
# DURATION per target: 20s (the default, what .ci/run runs), 10m, 1h. TARGETs (e.g. `session`,
# `split_invariance`) limit the run to those. FUZZ_SEED=N fixes libFuzzer's random seed (.ci/run sets 1, so
# its smoke is repeatable); otherwise each run explores anew. Needs a nightly toolchain and cargo-fuzz
# (`rustup toolchain install nightly`, `cargo install cargo-fuzz`).
#
# Exit status: 0 when no target crashed; 1 when one did (its input is in crates/<crate>/fuzz/artifacts/
# <target>/; make it a named test in crates/<crate>/tests/fuzz_regressions.rs, see the crate's fuzz
# README); 2 for a usage error or a missing tool.
set -uo pipefail
cd "$(dirname "$0")/.."

duration=${1:-20s}
shift $(( $# > 0 ? 1 : 0 ))
case $duration in
  *s) seconds=${duration%s} ;;
  *m) seconds=$(( ${duration%m} * 60 )) ;;
  *h) seconds=$(( ${duration%h} * 3600 )) ;;
  *) seconds=$duration ;;
esac
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
  echo "usage: fuzz/run-all.sh [DURATION [TARGET...]]   (DURATION per target: 20s, 10m, 1h)" >&2
  exit 2
fi
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz: needs a nightly toolchain: rustup toolchain install nightly" >&2
  exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: needs cargo-fuzz: cargo install cargo-fuzz" >&2
  exit 2
fi

# The flags every crate's fuzz README uses: inputs up to 16 KiB, 10 s per input, 2 GiB of memory.
# No leak detection: LeakSanitizer takes the destructor record glibc keeps for a thread-local of a live
# thread (__cxa_thread_atexit_impl, 32 bytes) for a leak; growing memory is caught by -rss_limit_mb.
flags=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 -detect_leaks=0
  -print_final_stats=1)
[ -n "${FUZZ_SEED:-}" ] && flags+=(-seed="$FUZZ_SEED")

# One target directory for every fuzz crate, so that what they share (libFuzzer itself, common
# dependencies) is built once; under the workspace's target/, which git ignores.
target_dir=$PWD/target/fuzz

rows=()
crashed=0
for dir in crates/*/fuzz fuzz; do
  [ -f "$dir/Cargo.toml" ] || continue
  crate=$(basename "$(dirname "$dir")")
  [ "$dir" = fuzz ] && crate=pcapsleuth
  echo "== building $dir" >&2
  build_log=$(mktemp)
  if ! (cd "$dir" && cargo +nightly fuzz build -O --target-dir "$target_dir") >"$build_log" 2>&1; then
    cat "$build_log" >&2
    echo "fuzz: $dir does not build" >&2
    exit 1
  fi
  rm -f "$build_log"
  for target in $(cd "$dir" && cargo +nightly fuzz list); do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$target"; then
      continue
    fi
    log=$(mktemp)
    mkdir -p "$dir/corpus/$target" "$dir/artifacts/$target"
    before=$(ls "$dir/artifacts/$target" | wc -l)
    corpora=("corpus/$target")
    [ -d "$dir/seeds/$target" ] && corpora+=("seeds/$target")
    echo "== $crate/$target for ${seconds}s" >&2
    (cd "$dir" && cargo +nightly fuzz run -O --target-dir "$target_dir" "$target" "${corpora[@]}" -- "${flags[@]}") \
      >"$log" 2>&1
    status=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    last=$(grep -E '#[0-9]+.*cov: [0-9]+' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+')
    ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+')
    corpus=$(ls "$dir/corpus/$target" | wc -l)
    new_artifacts=$(( $(ls "$dir/artifacts/$target" | wc -l) - before ))
    result=ok
    if [ "$status" -ne 0 ] || [ "$new_artifacts" -gt 0 ]; then
      crashed=1
      artifact=$(grep -oE "Test unit written to [^ ]+" "$log" | tail -1 | sed 's/Test unit written to //')
      result="CRASH ${artifact:-(exit $status, see below)}"
      echo "---- $crate/$target (exit $status), the end of libFuzzer's output:" >&2
      grep -vE '^#[0-9]+' "$log" | tail -40 >&2
    fi
    rows+=("$(printf '%-28s %12s %9s %7s %7s %7s  %s' "$crate/$target" "${execs:-?}" "${rate:-?}" \
      "${cov:-?}" "${ft:-?}" "$corpus" "$result")")
    rm -f "$log"
  done
done

printf '%-28s %12s %9s %7s %7s %7s  %s\n' target executions "exec/s" cov ft corpus result
printf '%s\n' "${rows[@]}"
if [ "$crashed" -ne 0 ]; then
  echo "fuzz: a target crashed: reproduce with \`cargo +nightly fuzz run -O TARGET ARTIFACT\` in its fuzz directory"
  exit 1
fi
