#!/usr/bin/env bash
# The unmodified PETSc program ex1 (tutorials/ex1.c), run once with PETSc's AIJ and once with petscmp loaded
# by -dll_append and -dm_mat_type aijmp (lossless): the iteration count and the true residual it prints must be
# identical, and the aijmp run must really use seqaijmp/mpiaijmp.
#   ex1_compare.sh "<mpiexec and its options>" <np> <ex1> <libpetscmp.so> [ex1 options...]
set -u
mpiexec=$1 np=$2 ex=$3 lib=$4
shift 4
# shellcheck disable=SC2086
aij=$($mpiexec -n "$np" "$ex" "$@" -dm_mat_type aij 2>&1); rc1=$?
# shellcheck disable=SC2086
mp=$($mpiexec -n "$np" "$ex" "$@" -dll_append "$lib" -dm_mat_type aijmp 2>&1); rc2=$?
line_aij=$(grep '^mat_type' <<<"$aij" | head -1)
line_mp=$(grep '^mat_type' <<<"$mp" | head -1)
echo "aij:   $line_aij"
echo "aijmp: $line_mp"
fail=0
if [ $rc1 -ne 0 ] || [ -z "$line_aij" ]; then echo "FAIL: the AIJ run failed ($rc1)"; echo "$aij" | tail -30; fail=1; fi
if [ $rc2 -ne 0 ] || [ -z "$line_mp" ]; then echo "FAIL: the aijmp run failed ($rc2)"; echo "$mp" | tail -30; fail=1; fi
[ $fail -eq 0 ] || exit 1
if [ "$np" -eq 1 ]; then want_aij=seqaij want_mp=seqaijmp; else want_aij=mpiaij want_mp=mpiaijmp; fi
type_aij=$(awk '{print $2}' <<<"$line_aij")
type_mp=$(awk '{print $2}' <<<"$line_mp")
[ "$type_aij" = "$want_aij" ] || { echo "FAIL: AIJ run has mat_type $type_aij, expected $want_aij"; fail=1; }
[ "$type_mp" = "$want_mp" ] || { echo "FAIL: aijmp run has mat_type $type_mp, expected $want_mp (plugin not loaded?)"; fail=1; }
# EX1_COMPARE_ITERATIONS_ONLY=1: compare the iteration counts only (for solvers that are not reproducible)
if [ "${EX1_COMPARE_ITERATIONS_ONLY:-0}" = 1 ]; then re='iterations [0-9]+'; else re='iterations [0-9]+ +true_residual [^ ]+'; fi
res_aij=$(grep -oE "$re" <<<"$line_aij")
res_mp=$(grep -oE "$re" <<<"$line_mp")
its=$(awk '{print $2}' <<<"$res_aij")
[ -n "$res_aij" ] || { echo "FAIL: no iterations/true_residual in the AIJ output"; fail=1; }
[ "$res_aij" = "$res_mp" ] || { echo "FAIL: '$res_aij' (aij) differs from '$res_mp' (aijmp)"; fail=1; }
if [ -n "$its" ] && { [ "$its" -le 0 ] || [ "$its" -ge 5000 ]; }; then echo "FAIL: $its iterations: not converged"; fail=1; fi
[ $fail -eq 0 ] && echo "ok: identical '$res_mp'"
exit $fail
