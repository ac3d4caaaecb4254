#!/usr/bin/env bash
# Runs one test program (serial, no mpiexec) under valgrind memcheck. Fails on any memory error
# (invalid read/write, use of uninitialised values, bad free) and on any "definitely lost" or
# "indirectly lost" block allocated with a libpetscmp frame on its stack. OpenMPI's own
# initialisation leaks (strdup in PMIx/MCA) are ignored: they have no libpetscmp frame.
#   valgrind_check.sh <valgrind> <program> [args...]
set -u
vg=$1
shift
log=$(mktemp)
"$vg" --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=none --num-callers=50 \
      --error-exitcode=3 --log-file="$log" "$@"
rc=$?
fail=0
if [ $rc -ne 0 ]; then
  echo "FAIL: exit code $rc (3: valgrind found memory errors)"
  grep -E -A20 "Invalid|uninitialised|Mismatched|free\(\)" "$log" | head -80
  fail=1
fi
# leak records: blocks of lines from "... are definitely/indirectly lost" to the next blank record line
ours=$(awk '/are (definitely|indirectly) lost/ {rec=$0; keep=0; inrec=1; next}
            inrec && /==[0-9]+== *$/ {if (keep) print rec; inrec=0; next}
            inrec && /libpetscmp|petscmp::|AIJMP/ {keep=1}' "$log")
if [ -n "$ours" ]; then
  echo "FAIL: leaks with a libpetscmp frame:"
  echo "$ours"
  grep -E -A40 "are (definitely|indirectly) lost" "$log" | grep -B5 -A30 "libpetscmp" | head -120
  fail=1
fi
grep -E "ERROR SUMMARY|definitely lost:|indirectly lost:" "$log"
[ $fail -eq 0 ] && echo "ok: no memory errors, no leak from libpetscmp"
rm -f "$log"
exit $fail
