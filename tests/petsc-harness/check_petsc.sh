#!/usr/bin/env bash
# make check-petsc: PETSc's own test harness (gmakefile.test from Debian's
# libpetsc3.18-dev-examples) on its KSP and SNES tutorials, run three times:
#   base      without the plugin,
#   lossless  with -dll_append libpetscmp.so -mat_type aijmp -dm_mat_type aijmp,
#   fp32      the same with -mat_aijmp_storage fp32,
#   ellmp     with -mat_type ellmp -dm_mat_type ellmp (lossless; only on request).
#   split4    lossless's with -mat_aijmp_storage split4 (every segment read: identical figures; on request).
# compare.py then counts, for every test that passes in the base run, whether
# the lossless run printed identical solver figures, and whether the fp32 run
# ended without a crash or a PETSc error.
#
# usage: check_petsc.sh BUILD_DIR [full|quick] [PASSES]
#   full   every test of ksp/ksp/tutorials, ksp/pc/tutorials, snes/tutorials
#   quick  the tests listed in quick.txt (part of make check)
#   PASSES which passes to run (default "base lossless fp32"); a pass already
#          run is reused when its directory holds a finished tap log and
#          CHECK_PETSC_RERUN is unset.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: check_petsc.sh BUILD_DIR [full|quick]}" && pwd)
suite=${2:-full}
passes=${3:-"base lossless fp32"}
lib="$build/src/libpetscmp.so"
[ -f "$lib" ] || { echo "check-petsc: $lib is missing; run make first" >&2; exit 2; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# every mpiexec of the harness (PETSCMPIEXEC replaces PETSc's MPIEXEC in its run scripts) with its own Open MPI
# session directory: launches side by side must not race on the shared one (see own_mpi_session.sh)
export PETSCMPIEXEC="$here/own_mpi_session.sh ${PETSCMPIEXEC:-mpiexec --oversubscribe}"
PETSC_DIR=${PETSC_DIR:-$(pkg-config --variable=prefix petsc 2>/dev/null || true)}
[ -d "$PETSC_DIR/include" ] || PETSC_DIR=/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real
examples="$PETSC_DIR/share/petsc/examples"
if [ ! -f "$examples/gmakefile.test" ]; then
  echo "check-petsc: installing libpetsc3.18-dev-examples (PETSc's test harness and tutorials)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends libpetsc3.18-dev-examples >/dev/null
fi

work=${CHECK_PETSC_WORK:-$build/check-petsc-$suite}
testdir="$work/testdir"
mkdir -p "$work/lib"
# the passes load a snapshot of the library, so a rebuild during a pass changes nothing
cp -L "$lib" "$work/lib/libpetscmp.so"
lib="$work/lib/libpetscmp.so"
hmake() { make -s -f "$examples/gmakefile.test" PETSC_DIR="$PETSC_DIR" PETSC_ARCH= TESTDIR="$testdir" "$@"; }

# 1. The test list and the run script of each test (generating the scripts).
if [ "$suite" = quick ]; then
  grep -v '^#' "$here/quick.txt" | awk 'NF{print $1}' > "$work/requested.txt"
else
  : > "$work/requested.txt"
  for g in 'ksp_ksp_tutorials-*' 'ksp_pc_tutorials-*' 'snes_tutorials-*'; do
    hmake print-test search="$g" | tr ' ' '\n' | awk NF >> "$work/requested.txt"
  done
fi
hmake print-test search=none >/dev/null 2>&1 || true   # makes sure the scripts exist
grep -r --include='run*.sh' -H "^label=" "$testdir" | sed -E "s/^(.*):label='(.*)'$/\2 \1/" > "$work/scripts.txt"

# 2. Tests left out, with the reason (our options would override theirs, or retype MFFD).
python3 "$here/compare.py" select --requested "$work/requested.txt" --scripts "$work/scripts.txt" \
  --out "$work/selected.txt" --left-out "$work/left_out.txt"
echo "check-petsc ($suite): $(wc -l < "$work/selected.txt") tests selected, $(wc -l < "$work/left_out.txt") left out (reasons in $work/left_out.txt)"
jobs=${CHECK_PETSC_JOBS:-$(nproc)}

# 3. The passes. Each keeps its tap log and every test's output (*.tmp, *.err).
run_pass() {
  local name=$1 extra=$2 list=${3:-$work/selected.txt} dest="$work/pass-$1"
  local search; search=$(tr '\n' ' ' < "$list")
  if [ -z "${CHECK_PETSC_RERUN:-}" ] && [ -f "$dest/tap.log" ]; then echo "check-petsc: pass $name reused ($dest)"; return; fi
  rm -rf "$dest"; mkdir -p "$dest"
  echo "check-petsc: pass $name${extra:+ with $extra}"
  local start=$SECONDS
  # the harness exits nonzero when a test fails; compare.py judges the results
  if [ -n "$extra" ]; then
    hmake -j"$jobs" test gmakesearch="$search" EXTRA_OPTIONS="$extra" TIMEOUT="${CHECK_PETSC_TIMEOUT:-120}" > "$dest/harness.log" 2>&1 || true
  else
    hmake -j"$jobs" test gmakesearch="$search" TIMEOUT="${CHECK_PETSC_TIMEOUT:-120}" > "$dest/harness.log" 2>&1 || true
  fi
  python3 "$here/compare.py" collect --selected "$list" --scripts "$work/scripts.txt" --dest "$dest"
  cp "$testdir/test__tap.log" "$dest/tap.log"
  echo "check-petsc: pass $name took $((SECONDS - start)) s"
}
plugin="-dll_append $lib -mat_type aijmp -dm_mat_type aijmp"
for p in $passes; do
  case $p in
    base) run_pass base "" ;;
    lossless) run_pass lossless "$plugin" ;;
    fp32) run_pass fp32 "$plugin -mat_aijmp_storage fp32" ;;
    ellmp) run_pass ellmp "-dll_append $lib -mat_type ellmp -dm_mat_type ellmp" ;;
    split4) run_pass split4 "$plugin -mat_aijmp_storage split4" ;;
    *) echo "check-petsc: unknown pass $p" >&2; exit 2 ;;
  esac
done

# 4. A test that fails a check is run again without the plugin: plain, CHECK_PETSC_BASE_RERUNS
#    times (default 5: does it vary from run to run? Some vary in a few runs of ten only, e.g. ex49_7's
#    pipelined reductions on 4 ranks), with -mat_type aij -dm_mat_type aij (do the type options alone
#    change it?), and with PETSc's own AIJ subclass aijperm (does PETSc stop every AIJ subclass there?).
python3 "$here/compare.py" suspects --work "$work" --out "$work/suspects.txt"
if [ -s "$work/suspects.txt" ]; then
  rm -rf "$work"/pass-base[0-9]*
  for i in $(seq 2 $((1 + ${CHECK_PETSC_BASE_RERUNS:-5}))); do
    CHECK_PETSC_RERUN=1 run_pass "base$i" "" "$work/suspects.txt"
  done
  CHECK_PETSC_RERUN=1 run_pass control "-mat_type aij -dm_mat_type aij" "$work/suspects.txt"
  CHECK_PETSC_RERUN=1 run_pass subclass "-mat_type aijperm -dm_mat_type aijperm" "$work/suspects.txt"
fi

# 5. The verdict.
python3 "$here/compare.py" report --work "$work" --suite "$suite"
