#!/usr/bin/env bash
# make check-gpu: the device tests of a GPU build on a machine with a GPU.
# Every test must run (a skip means the device was not usable: a failure
# here) and pass; then the same tests once more under compute-sanitizer
# (memcheck) where the toolkit has it.
#   tests/gpu/check_gpu.sh BUILD_DIR
set -uo pipefail
build=${1:-build-gpu}
status=0
ran=0
for backend in cuda hip; do
  test_program=$build/tests/kernels/petscmp_test_device_$backend
  [ -x "$test_program" ] || continue
  ran=1
  echo "== $backend: $test_program"
  out=$("$test_program" 2>&1)
  rc=$?
  echo "$out" | grep -E '^\[  (PASSED|FAILED|SKIPPED) |^no .* device|tests? from .* ran' | head -20
  if [ $rc -ne 0 ]; then status=1; fi
  if echo "$out" | grep -q '^\[  SKIPPED \]'; then
    echo "check-gpu: device tests were skipped: no usable $backend device here" >&2
    status=1
  fi
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
  if [ "$backend" = cuda ] && [ -n "$sanitizer" ]; then
    echo "== cuda under compute-sanitizer (memcheck), lossless, fp16 and split4, and the decoders"
    "$sanitizer" --tool memcheck --error-exitcode 1 "$test_program" \
      --gtest_filter='*Int32/lossless:*Int32/fp16:*Int32/split4:SpmvDeviceDecode.*' 2>&1 | tail -4 || status=1
  fi
done
if [ $ran -eq 0 ]; then
  echo "check-gpu: no device test program in $build (make check-gpu-build, or carry the build here)" >&2
  exit 1
fi
exit $status
