#!/usr/bin/env bash
# make bench: three sections, serial and on 2 ranks; the output also goes to $BUILD/bench-results.txt.
#   matmult: bench/bench_matmult   (MatMult: AIJ, SELL, every aijmp mode; 7-pt, 27-pt and a bs-3 FEM matrix)
#   pc:      bench/bench_pcapply   (block-Jacobi setup and apply: apbjacobi against VPBJACOBI and PBJACOBI)
#   cg:      tutorials/ex2 CG solves (3D elasticity): AIJ+VPBJACOBI (30- and 3-row blocks), AIJ+apbjacobi (both),
#            aijmp (lossless, fp32)+apbjacobi
#   sor:     bench/bench_sor       (MatSOR: ellmp's sweeps on its stored rows against SeqAIJ's; serial only)
#   bash bench/run.sh [BUILD] [MPIEXEC]
#   BENCH_SECTIONS="pc cg" BENCH_CG_N=40 bash bench/run.sh build          # a subset, a small solve
#   BENCH_ARGS="-n7 100 -n27 60 -reps 3" BENCH_PC_ARGS="-rows 300000 -small_rows 600000" ...  # quick runs
#   BENCH_SOR_ARGS="-n7 100 -fem 30 -omega 1.2"
# Default sizes hold >= 1.5 GB of matrix data per matrix (tens of minutes, ~8 GB of memory).
set -euo pipefail
build=${1:-build}
mpiexec=${2:-mpiexec --oversubscribe}
out="$build/bench-results.txt"
sections=${BENCH_SECTIONS:-matmult pc cg sor}
for exe in bench/bench_matmult bench/bench_pcapply bench/bench_sor tutorials/ex2; do
  [ -x "$build/$exe" ] || { echo "bench/run.sh: $build/$exe not found; build first (make build)" >&2; exit 1; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# petscmp uses one OpenMP thread per rank unless OMP_NUM_THREADS is set: leave it unset,
# so that PETSc's types and petscmp's all run one thread per rank.
unset OMP_NUM_THREADS
lib=$(cd "$build/src" && pwd)/libpetscmp.so
# ex2 n=80: 1.54M unknowns, 1.47 GB of AIJ data; 3n = 240 is a multiple of the 30-row blocks
cg_n=${BENCH_CG_N:-80}
cg_rounds=${BENCH_CG_ROUNDS:-1}
cg() { # one ex2 solve; prints its result line
  $mpiexec -n "$1" "$build/tutorials/ex2" -n "$cg_n" -dll_append "$lib" "${@:2}" | grep '^problem'
}
{
  echo "# petscmp bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) cores, commit $(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "# sections: $sections; BENCH_ARGS: ${BENCH_ARGS:-(none)}; BENCH_PC_ARGS: ${BENCH_PC_ARGS:-(none)}; BENCH_CG_N: $cg_n; BENCH_SOR_ARGS: ${BENCH_SOR_ARGS:-(none)}"
  for np in 1 2; do
    for s in $sections; do
      case $s in
        matmult) echo "## MatMult, $np rank(s)"; $mpiexec -n $np "$build/bench/bench_matmult" ${BENCH_ARGS:-} ;;
        pc) echo "## block-Jacobi setup and apply, $np rank(s)"; $mpiexec -n $np "$build/bench/bench_pcapply" ${BENCH_PC_ARGS:-} ;;
        sor)
          # serial: on several ranks ellmp's SOR is MPIAIJ's local sweeps over the same serial kernel
          [ "$np" -eq 1 ] || continue
          echo "## MatSOR, ellmp on its stored rows against SeqAIJ, serial"
          "$build/bench/bench_sor" ${BENCH_SOR_ARGS:--n7 260 -n27 160} ;;
        cg)
          echo "## CG solve, 3D elasticity (tutorials/ex2 -n $cg_n, rtol 1e-8), $np rank(s), $cg_rounds round(s) in alternating order"
          variants=("-pc_type vpbjacobi -set_variable_blocks 30"
                    "-pc_type vpbjacobi -set_variable_blocks 3"
                    "-pc_type apbjacobi"
                    "-pc_type apbjacobi -pc_apbjacobi_blocks matblocksize"
                    "-pc_type apbjacobi -dm_mat_type aijmp"
                    "-pc_type apbjacobi -dm_mat_type aijmp -mat_aijmp_storage fp32")
          for ((r = 0; r < cg_rounds; r++)); do
            for ((k = 0; k < ${#variants[@]}; k++)); do
              j=$(( r % 2 ? ${#variants[@]} - 1 - k : k ))
              # shellcheck disable=SC2086
              echo "$(cg $np ${variants[$j]})  [${variants[$j]}]"
            done
          done ;;
      esac
      echo
    done
  done
} 2>&1 | tee "$out"
echo "bench results written to $out"
