#!/usr/bin/env bash
# make demo: (1) the same unmodified PETSc program (tutorials/ex1.c, 3D Poisson with
# CG + Jacobi) run with PETSc's AIJ and with petscmp's aijmp and ellmp loaded by
# -dll_append, serial and on 2 ranks; iterations, true residual, MatMult time and
# the matrix's memory.
# (2) 3D elasticity (tutorials/ex2) with PETSc's PCVPBJACOBI and with apbjacobi.
set -euo pipefail
build=${1:-build}
mpiexec=${2:-mpiexec --oversubscribe}
lib="$(cd "$build/src" && pwd)/libpetscmp.so"
ex="$build/tutorials/ex1"
n=${DEMO_N:-96}
common="-n $n -pc_type jacobi -ksp_rtol 1e-8"
run() { # ranks, label, options...
  local np=$1 label=$2; shift 2
  local line
  line=$($mpiexec -n "$np" "$ex" $common "$@" | grep '^mat_type')
  printf '%-5s %-22s %s\n' "$np" "$label" "$line"
}
echo "petscmp demo: 3D Poisson, ${n}^3 unknowns, CG + Jacobi, same program, same options"
echo "ranks variant                 result"
for np in 1 2; do
  run "$np" "PETSc AIJ"             -dm_mat_type aij
  run "$np" "aijmp lossless"        -dll_append "$lib" -dm_mat_type aijmp
  run "$np" "aijmp fp32 (lossy)"    -dll_append "$lib" -dm_mat_type aijmp -mat_aijmp_storage fp32
  run "$np" "ellmp lossless"        -dll_append "$lib" -dm_mat_type ellmp
  run "$np" "ellmp fp32 (lossy)"    -dll_append "$lib" -dm_mat_type ellmp -mat_ellmp_storage fp32
done
echo
echo "matrix_MB: the processes' memory growth for the matrix (creation, assembly, two products). aijmp keeps AIJ's"
echo "values and adds its compact copy; ellmp stores the compact values only (lossless here: fp16, these values are"
echo "exact in it)."
echo
echo "Lossless aijmp stores these values (6, -1) exactly in fp16: same iterations, same residual"
echo "bit for bit, fewer bytes per MatMult. What aijmp stored:"
$mpiexec -n 1 "$ex" -n 16 -dll_append "$lib" -dm_mat_type aijmp -mat_view ::ascii_info | sed -n '/aijmp storage/,/lossless:/p'

# Adaptive-precision block-Jacobi on 3D elasticity (tutorials/ex2, plain PETSc, CG): PETSc's
# PCVPBJACOBI and apbjacobi on the same 30-row blocks.
ex2="$build/tutorials/ex2"
n2=${DEMO_N2:-40}
echo
echo "petscmp demo: 3D elasticity (Q1), ${n2}^3 nodes, CG to rtol 1e-8, serial; block-Jacobi with 30-row blocks"
printf '%-34s %s\n' "PETSc PCVPBJACOBI" "$($mpiexec -n 1 "$ex2" -n "$n2" -pc_type vpbjacobi -set_variable_blocks 30 | grep '^problem')"
printf '%-34s %s\n' "petscmp apbjacobi (-dll_append)" "$($mpiexec -n 1 "$ex2" -n "$n2" -dll_append "$lib" -pc_type apbjacobi | grep '^problem')"
printf '%-34s %s\n' "petscmp aijmp fp32 + apbjacobi" "$($mpiexec -n 1 "$ex2" -n "$n2" -dll_append "$lib" -pc_type apbjacobi -dm_mat_type aijmp -mat_aijmp_storage fp32 | grep '^problem')"
echo "What apbjacobi stored:"
$mpiexec -n 1 "$ex2" -n "$n2" -dll_append "$lib" -pc_type apbjacobi -ksp_view | sed -n '/adaptive-precision/,/setup seconds/p'
