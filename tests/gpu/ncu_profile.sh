#!/usr/bin/env bash
# Nsight Compute profiles of the device SpMV kernels on a lent GPU (one call,
# after tests/gpu/device_session.sh): the thread-per-row kernel reading fp32
# values of the 27-point matrix, and the warp-per-row kernels of the long-row
# matrix (a row a warp, 8 rows a warp) beside cuSPARSE's CSR kernel on it.
# Each profile goes to $OUT (or BUILD) as text. The clocks are left alone
# (--clock-control none).
#   bash tests/gpu/ncu_profile.sh build-gpu         (NCU_S: time limit a profile, default 120)
set -uo pipefail
build=${1:-build-gpu}
out=${OUT:-$build}
bench=$build/bench/bench_gpu
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$ncu" ] || { echo "ncu_profile: no ncu on this machine" >&2; exit 1; }
sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats
          --section WarpStateStats --section SchedulerStats --section SourceCounters"
profile() { # name, kernel regex, launches, bench arguments...
  local name=$1 kernels=$2 count=$3
  shift 3
  echo "== ncu $name"
  # shellcheck disable=SC2086
  timeout "${NCU_S:-120}" "$ncu" --clock-control none --kernel-name-base demangled --kernel-name "regex:$kernels" \
    --launch-count "$count" $sections "$bench" "$@" > "$out/ncu_$name.txt" 2>&1
  echo "exit $?"
  grep -E '^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|L2 Hit|L1/TEX Hit|Mem Busy|Max Bandwidth|Eligible Warps|No Eligible|Warp Cycles Per Issued|Stall' \
    "$out/ncu_$name.txt" | head -80
}
profile fp32_27pt 'sell_spmv_kernel' 2 -n27 160 -fem 0 -long 0 -bj_gb 0 -reps 1 -modes fp32
profile long_rows 'warp_rows_kernel|csr' 6 -n27 0 -fem 0 -long 2 -bj_gb 0 -reps 1 -modes lossless
