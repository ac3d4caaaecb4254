#!/usr/bin/env bash
# ellmp's assembly memory against AIJ's: the peak resident memory of MatSetValues + MatAssemblyEnd and the memory the
# matrix holds afterwards, per nonzero, one process (or one mpiexec) per matrix type, on the 7-point Laplacian and the
# 3-dof FEM-like operator (bench/bench_assembly.c), and the peak of a reassembly (values added to the assembled
# matrix, same pattern: a Newton step). Memory is deterministic: one run per type.
#   bash bench/assembly_memory.sh [BUILD] [NP] [N7] [NFEM]     (defaults: build 1 220 77: 1.1-1.2 GB of AIJ)
set -euo pipefail
build=${1:-build}
np=${2:-1}
n7=${3:-220}
nfem=${4:-77}
exe="$build/bench/bench_assembly"
[ -x "$exe" ] || { echo "bench/assembly_memory.sh: $exe not found; build first" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { # problem n type options...: the first assembly and reassembly lines printed (one rank), joined
  local out
  out=$(mpiexec --oversubscribe -n "$np" "$exe" -problem "$1" -n "$2" -type "$3" "${@:4}")
  { grep -m1 '^assembly ' <<< "$out"; grep -m1 '^reassembly ' <<< "$out"; } | sed 's/^reassembly peak_MB/re_peak_MB/; s/ held_MB \([0-9.]*\) peak_bytes_per_nnz \([0-9.]*\)$/ re_held_MB \1 re_peak_bytes_per_nnz \2/' | tr '\n' ' '
}
"$exe" -n 2 | grep '^CPU' || true
printf '%-6s %-22s %10s %10s %10s %12s %12s %14s\n' problem "type (a rank of $np)" nnz peak_MB held_MB peak_B/nnz \
  held_B/nnz reass_peak_B/nnz
for p in "lap7 $n7" "fem $nfem"; do
  set -- $p
  for t in "aij" "ellmp" "ellmp -mat_ellmp_storage fp32" "ellmp -mat_ellmp_storage fp16"; do
    # shellcheck disable=SC2086
    line=$(run "$1" "$2" $t)
    awk -v p="$1" -v t="$t" '{for (i = 1; i < NF; i++) v[$i] = $(i + 1);
      printf "%-6s %-22s %10s %10s %10s %12s %12s %14s\n", p, t, v["nnz"], v["peak_MB"], v["held_MB"],
             v["peak_bytes_per_nnz"], v["held_bytes_per_nnz"], v["re_peak_bytes_per_nnz"]}' <<< "$line" |
      sed 's/ -mat_ellmp_storage / /'
  done
done
