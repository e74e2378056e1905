#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each, in parallel, starting from (and adding to)
# a scratch copy of the checked-in corpus. Crashes land in tests/fuzz/artifacts/.
# usage: tests/fuzz/run_fuzzers.sh BUILD_DIR SECONDS
set -euo pipefail
build=${1:-build-fuzz}
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/artifacts"
pids=()
for t in decode_message bagctl_decode session bfd_packet; do
  work=$(mktemp -d "/tmp/bagd-fuzz-$t.XXXXXX")
  cp "$here/corpus/$t/"* "$work/"
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$here/artifacts/$t-" -print_final_stats=1 "$work" > "$build/fuzz_$t.log" 2>&1 &
  pids+=($!)
  echo "fuzz_$t: corpus $work, log $build/fuzz_$t.log"
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
for t in decode_message bagctl_decode session bfd_packet; do
  echo "== fuzz_$t"; grep -E "^(stat::|Done|#[0-9]+ *DONE)|ERROR|SUMMARY" "$build/fuzz_$t.log" | tail -8
done
exit $rc
