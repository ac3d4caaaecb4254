#!/usr/bin/env bash
# A PETSc tutorial run twice: without the plugin, and with -dll_append libpetscmp.so plus the given
# type options. Both runs must succeed and print the same solver figures (compare.py diff: type
# names and the plugin's own lines taken out, nothing else); the plugin run must print the
# regex given (proof that aijmp was used), unless it is empty.
#   tutorial_compare.sh "<mpiexec and options>" <np> <program> <libpetscmp.so> "<plugin options>" "<regex>" -- args...
set -u
mpiexec=$1 np=$2 ex=$3 lib=$4 plugin=$5 expect=$6
shift 6
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC2086
$mpiexec -n "$np" "$ex" "$@" > "$out/base" 2>&1; rc1=$?
# shellcheck disable=SC2086
$mpiexec -n "$np" "$ex" "$@" -dll_append "$lib" $plugin > "$out/aijmp" 2>&1; rc2=$?
fail=0
if [ $rc1 -ne 0 ]; then echo "FAIL: the run without the plugin failed ($rc1)"; tail -20 "$out/base"; fail=1; fi
if [ $rc2 -ne 0 ]; then echo "FAIL: the run with the plugin failed ($rc2)"; tail -20 "$out/aijmp"; fail=1; fi
[ $fail -eq 0 ] || exit 1
if [ -n "$expect" ] && ! grep -qE "$expect" "$out/aijmp"; then echo "FAIL: the plugin run does not print '$expect'"; fail=1; fi
python3 "$here/../petsc-harness/compare.py" diff "$out/base" "$out/aijmp" || fail=1
exit $fail
