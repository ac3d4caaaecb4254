#!/usr/bin/env bash
# The contraction gate: the device code of the GPU kernels must multiply and
# add doubles as two rounded operations, never as one fused multiply-add, or
# lossless products would differ from AIJ's in the last bit.
#   no_contraction.sh ptx FILE...     (nvcc --ptx)
#   no_contraction.sh amdgcn FILE...  (hipcc --offload-device-only -S)
# Passes when the files hold kernels with fp64 multiplies and adds and no fp64
# fused multiply-add; prints the counts either way.
set -euo pipefail
kind=$1
shift
count() { cat "$@" | grep -cE "$pattern" || true; }
case "$kind" in
ptx)
  pattern='^\.(visible|weak) \.entry|^\.entry'; kernels=$(count "$@")
  pattern='(mul|add)\.rn\.f64'; arithmetic=$(count "$@")
  pattern='fma\.rn\.f64|mad\.(rn\.)?f64'; fused=$(count "$@")
  ;;
amdgcn)
  pattern='^\s*\.amdhsa_kernel '; kernels=$(count "$@")
  pattern='v_(mul|add)_f64'; arithmetic=$(count "$@")
  pattern='v_fma_f64|v_fmac_f64|v_fma_mix|v_mad_f64'; fused=$(count "$@")
  ;;
*)
  echo "usage: $0 ptx|amdgcn FILE..." >&2
  exit 2
  ;;
esac
echo "$kind: $kernels kernels, $arithmetic fp64 multiplies and adds, $fused fp64 fused multiply-adds"
if [ "$kernels" -eq 0 ] || [ "$arithmetic" -eq 0 ]; then
  echo "no kernels with fp64 arithmetic in the files: nothing was checked" >&2
  exit 1
fi
if [ "$fused" -ne 0 ]; then
  echo "fused multiply-adds in the device code: lossless products would not be bitwise AIJ's" >&2
  exit 1
fi
