#!/bin/bash
# bagd under heaptrack, for the benchmark scripts' --bagd (ingest_compare.py, reweight_bench.py):
#   BAGD_REAL=$PWD/build-bench/bgpd/bagd HEAPTRACK_OUT=/tmp/ht.bagd \
#     python3 bench/ingest_compare.py --daemons bagd --workloads W2 --runs 1 --bagd bench/heaptrack_bagd.sh
# BAGD_REAL is required (an absolute path): the scripts run a private copy of this wrapper.
#   heaptrack_print -f /tmp/ht.bagd.zst --print-peaks 1 -M /tmp/ht.massif
# The labs stop the daemon with SIGTERM and kill what is left in the namespace a few seconds
# later; heaptrack writes its file only when bagd exits on its own, so the TERM is passed on to
# bagd itself and this script waits for heaptrack to finish. (The figures the script prints for
# such a run are this wrapper's, not bagd's: read the heaptrack file.)
set -u
if [ -z "${BAGD_REAL:-}" ] || [ ! -x "$BAGD_REAL" ]; then
  echo "heaptrack_bagd.sh: set BAGD_REAL to the bagd binary (absolute path)" >&2
  exit 2
fi
real=$(readlink -f "$BAGD_REAL")
out=${HEAPTRACK_OUT:-/tmp/ht.bagd}
rm -f "$out".*
heaptrack -o "$out" "$real" "$@" &
ht=$!
trap 'pkill -TERM -f "^$real " ; wait $ht; exit 0' TERM INT
wait $ht
