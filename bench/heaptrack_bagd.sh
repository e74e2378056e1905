#!/bin/bash
# bagd under heaptrack, for the benchmark scripts' --bagd (ingest_compare.py, reweight_bench.py):
#   BAGD_REAL=build-bench/bgpd/bagd HEAPTRACK_OUT=/tmp/ht.bagd \
#     python3 bench/ingest_compare.py --daemons bagd --workloads W2 --runs 1 --bagd bench/heaptrack_bagd.sh
#   heaptrack_print -f /tmp/ht.bagd.zst --print-peaks 1 -M /tmp/ht.massif
# The labs stop the daemon with SIGTERM and kill what is left in the namespace a few seconds
# later; heaptrack writes its file only when bagd exits on its own, so the TERM is passed on to
# bagd itself and this script waits for heaptrack to finish. (The figures the script prints for
# such a run are this wrapper's, not bagd's: read the heaptrack file.)
set -u
real=$(readlink -f "${BAGD_REAL:-$(dirname "$0")/../build/bgpd/bagd}")
out=${HEAPTRACK_OUT:-/tmp/ht.bagd}
rm -f "$out".*
heaptrack -o "$out" "$real" "$@" &
ht=$!
trap 'pkill -TERM -f "^$real " ; wait $ht; exit 0' TERM INT
wait $ht
