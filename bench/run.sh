#!/usr/bin/env bash
# make bench: bench/bench_matmult serial and on 2 ranks; the output also goes to
# $BUILD/bench-results.txt.
#   bash bench/run.sh [BUILD] [MPIEXEC]
#   BENCH_ARGS="-n7 100 -n27 60 -reps 3" bash bench/run.sh build   # a quick run
# Default sizes hold >= 1.5 GB of AIJ data per matrix (several minutes, ~8 GB of memory).
set -euo pipefail
build=${1:-build}
mpiexec=${2:-mpiexec --oversubscribe}
exe="$build/bench/bench_matmult"
out="$build/bench-results.txt"
[ -x "$exe" ] || { echo "bench/run.sh: $exe not found; build first (make build)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# aijmp uses one OpenMP thread per rank unless OMP_NUM_THREADS is set: leave it unset,
# so that AIJ, SELL and aijmp all run one thread per rank.
unset OMP_NUM_THREADS
args=${BENCH_ARGS:-}
{
  echo "# petscmp bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) cores, commit $(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "# BENCH_ARGS: ${args:-(none: default sizes)}"
  echo "## serial"
  $mpiexec -n 1 "$exe" $args
  echo
  echo "## 2 ranks"
  $mpiexec -n 2 "$exe" $args
} 2>&1 | tee "$out"
echo "bench results written to $out"
