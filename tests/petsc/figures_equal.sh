#!/usr/bin/env bash
# Runs a program twice (reference command, then test command) and compares the result lines
# ("... iterations I true_residual R ..." of tutorials/ex2 and ex3): the iteration counts and the
# printed true residuals must be the same (lossless storage: the same solve, bit for bit).
#   figures_equal.sh "REFERENCE COMMAND" "TEST COMMAND" [REGEX the test output must match]
set -u
refcmd=$1 testcmd=$2 expect=${3:-}
field() { echo "$1" | awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' | tail -1; }
ref=$(bash -c "$refcmd" 2>&1) || { echo "FAIL: reference run failed"; echo "$ref"; exit 1; }
out=$(bash -c "$testcmd" 2>&1) || { echo "FAIL: test run failed"; echo "$out"; exit 1; }
echo "reference: $(echo "$ref" | grep iterations)"
echo "test:      $(echo "$out" | grep iterations)"
ri=$(field "$ref" iterations) ti=$(field "$out" iterations)
rr=$(field "$ref" true_residual) tr=$(field "$out" true_residual)
[ -n "$ri" ] && [ -n "$ti" ] && [ -n "$rr" ] && [ -n "$tr" ] || { echo "FAIL: no result line"; exit 1; }
[ "$ri" = "$ti" ] && [ "$rr" = "$tr" ] || { echo "FAIL: the figures differ"; exit 1; }
if [ -n "$expect" ] && ! echo "$out" | grep -qE "$expect"; then echo "FAIL: the test run does not print '$expect'"; exit 1; fi
echo "identical figures"
