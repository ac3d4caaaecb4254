#!/usr/bin/env bash
# Runs a command and checks its output (stdout and stderr together).
#   expect_output.sh [-p REGEX]... [-a REGEX]... [-c N:REGEX]... [-f] -- COMMAND [ARGS...]
#     -p REGEX    some line must match (grep -E)
#     -a REGEX    no line may match
#     -c N:REGEX  exactly N lines must match
#     -f          the command must fail (nonzero exit); default: it must succeed
#     -i          ignore the exit code (the patterns alone decide)
# Prints FAIL lines and exits 1 on any mismatch.
set -u
present=() absent=() counts=() mustfail=0
while [ $# -gt 0 ]; do
  case "$1" in
    -p) present+=("$2"); shift 2 ;;
    -a) absent+=("$2"); shift 2 ;;
    -c) counts+=("$2"); shift 2 ;;
    -f) mustfail=1; shift ;;
    -i) mustfail=2; shift ;;
    --) shift; break ;;
    *) echo "expect_output.sh: unknown argument $1"; exit 2 ;;
  esac
done
out=$("$@" 2>&1)
rc=$?
fail=0
echo "$out" | head -c 20000
echo "---- checks (exit code $rc) ----"
if [ $mustfail -eq 1 ] && [ $rc -eq 0 ]; then echo "FAIL: the command succeeded, expected an error"; fail=1; fi
if [ $mustfail -eq 0 ] && [ $rc -ne 0 ]; then echo "FAIL: the command exited with $rc"; fail=1; fi
for re in "${present[@]+"${present[@]}"}"; do
  if ! grep -Eq -- "$re" <<<"$out"; then echo "FAIL: no line matches '$re'"; fail=1; else echo "ok: found '$re'"; fi
done
for re in "${absent[@]+"${absent[@]}"}"; do
  if grep -Eq -- "$re" <<<"$out"; then echo "FAIL: a line matches '$re':"; grep -E -- "$re" <<<"$out" | head -5; fail=1; else echo "ok: no '$re'"; fi
done
for spec in "${counts[@]+"${counts[@]}"}"; do
  n=${spec%%:*} re=${spec#*:}
  got=$(grep -Ec -- "$re" <<<"$out")
  if [ "$got" != "$n" ]; then echo "FAIL: $got lines match '$re', expected $n"; fail=1; else echo "ok: $n lines match '$re'"; fi
done
exit $fail
