#!/usr/bin/env bash
# make bench-gpu: the device SpMV benchmark of a CUDA build (bench/bench_gpu.cu)
# on a machine with an NVIDIA GPU; output also in BUILD/bench-gpu-results.txt.
#   bash bench/run_gpu.sh [BUILD]          (BENCH_GPU_ARGS="-n27 100 -fem 40 -reps 5" for a quick run)
set -euo pipefail
build=${1:-build-gpu}
exe=$build/bench/bench_gpu
[ -x "$exe" ] || { echo "bench/run_gpu.sh: $exe not found (make check-gpu-build on a machine with nvcc)" >&2; exit 1; }
# shellcheck disable=SC2086
"$exe" ${BENCH_GPU_ARGS:-} | tee "$build/bench-gpu-results.txt"
