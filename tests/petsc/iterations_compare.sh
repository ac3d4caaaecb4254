#!/usr/bin/env bash
# Runs a tutorial twice (reference options, then test options) and compares the result lines
# ("... iterations I true_residual R ..."): the test run may take at most PCT percent more
# iterations than the reference, and both true residuals must be below MAXRES. PCT "exact": the iteration
# counts and the printed true residuals must be the same (MAXRES unused), and the test output must match
# EXPECT when given.
#   iterations_compare.sh PCT MAXRES "REFERENCE COMMAND" "TEST COMMAND" [EXPECT]
set -u
pct=$1 maxres=$2 refcmd=$3 testcmd=$4 expect=${5:-}
field() { echo "$1" | awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' | tail -1; }
ref=$(bash -c "$refcmd" 2>&1) || { echo "FAIL: reference run failed"; echo "$ref"; exit 1; }
out=$(bash -c "$testcmd" 2>&1) || { echo "FAIL: test run failed"; echo "$out"; exit 1; }
echo "reference: $(echo "$ref" | grep iterations)"
echo "test:      $(echo "$out" | grep iterations)"
ri=$(field "$ref" iterations) ti=$(field "$out" iterations)
rr=$(field "$ref" true_residual) tr=$(field "$out" true_residual)
[ -n "$ri" ] && [ -n "$ti" ] && [ -n "$rr" ] && [ -n "$tr" ] || { echo "FAIL: no result line"; exit 1; }
if [ -n "$expect" ] && ! echo "$out" | grep -qE "$expect"; then echo "FAIL: the test run does not print '$expect'"; exit 1; fi
if [ "$pct" = exact ]; then
  [ "$ri" = "$ti" ] && [ "$rr" = "$tr" ] || { echo "FAIL: the figures differ"; exit 1; }
  echo "identical figures"
  exit 0
fi
awk -v ri="$ri" -v ti="$ti" -v p="$pct" -v rr="$rr" -v tr="$tr" -v m="$maxres" 'BEGIN {
  growth = 100.0 * (ti - ri) / ri
  printf "iterations %d -> %d (%+.1f%%, allowed %+.1f%%); true residual %s -> %s (allowed %s)\n", ri, ti, growth, p, rr, tr, m
  if (growth > p || rr + 0 > m + 0 || tr + 0 > m + 0) { print "FAIL: outside the allowed range"; exit 1 }
}'
