#!/usr/bin/env bash
# One call on a lent GPU machine (no PETSc, no compilers needed there): the GPU
# facts, the device tests, bench_gpu, then the device tests again under
# compute-sanitizer; each step under a time limit, each output also written to
# $OUT (the device tool's folder that comes back) when it is set.
#   here:  make check-gpu-build
#   there: bash tests/gpu/device_session.sh build-gpu
#          (carry build-gpu/tests/kernels/petscmp_test_device_cuda and build-gpu/bench/bench_gpu)
# Limits in seconds: TEST_S (120), BENCH_S (300), SAN_S (60); BENCH_GPU_ARGS as bench/run_gpu.sh.
set -uo pipefail
build=${1:-build-gpu}
out=${OUT:-$build}
tests=$build/tests/kernels/petscmp_test_device_cuda
bench=$build/bench/bench_gpu
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start)) s"; }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvcc --version 2>/dev/null | tail -1
  lscpu | grep 'Model name'
} 2>&1 | tee "$out/gpu.txt"
for program in "$tests" "$bench"; do
  [ -x "$program" ] || { echo "device_session: $program missing (make check-gpu-build, and carry it)" >&2; exit 1; }
  if ldd "$program" | grep -q 'not found'; then
    echo "device_session: $program lacks libraries:" >&2
    ldd "$program" | grep 'not found' >&2
    exit 1
  fi
done
status=0
echo "== device tests ($(elapsed))"
timeout "${TEST_S:-120}" "$tests" > "$out/tests.txt" 2>&1 || status=1
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests? from .* ran' "$out/tests.txt"
if grep -q '^\[  SKIPPED \]' "$out/tests.txt"; then
  echo "device_session: tests were skipped: the GPU was not usable" >&2
  status=1
fi
echo "== bench_gpu ($(elapsed))"
# shellcheck disable=SC2086
timeout "${BENCH_S:-300}" "$bench" ${BENCH_GPU_ARGS:-} 2>&1 | tee "$out/bench.txt" | grep -v 'bitwise equal to'
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$sanitizer" ]; then
  echo "== device tests under compute-sanitizer memcheck ($(elapsed))"
  timeout "${SAN_S:-60}" "$sanitizer" --tool memcheck --error-exitcode 1 "$tests" \
    --gtest_filter='*Int32/lossless:*Int32/fp16:*Int32/split4:SpmvDeviceDecode.*:BlockJacobiDevice.*:SellCopy.*' \
    > "$out/sanitizer.txt" 2>&1 || status=1
  tail -3 "$out/sanitizer.txt"
fi
echo "== done ($(elapsed)), status $status"
exit $status
