// The sum of one row's products in the order PETSc's SeqAIJ uses, written once
// for every backend: the CPU kernels, the emulated GPU backend and the CUDA and
// HIP kernels compile this same function, so a row sums bit for bit alike
// everywhere (with contraction off: -ffp-contract=off, nvcc -fmad=false).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/host_device.hpp"
#include "petscmp/core/sum_order.hpp"

namespace petscmp {

// Calls fn(std::integral_constant-like tag) for the runtime summation order.
template <typename Fn> inline void dispatch_order(SumOrder order, Fn &&fn)
{
  if (order == SumOrder::paired)
    fn(std::integral_constant<SumOrder, SumOrder::paired>{});
  else
    fn(std::integral_constant<SumOrder, SumOrder::sequential>{});
}

// sum + sum_k vals[k s] * x[cols[k s]], k in [0, n), s = stride (1 in CSR
// order, kSliceRows in a slice); cols is a pointer, ShiftedColumns or NarrowColumns.
template <SumOrder Order, typename Storage, typename Columns>
PETSCMP_HOST_DEVICE inline double row_dot(double sum, reduced_range<Storage> vals, Columns cols, std::int64_t n,
                                          const double *x, std::int64_t stride = 1)
{
  if constexpr (Order == SumOrder::sequential) {
    for (std::int64_t k = 0; k < n; ++k)
      sum += vals[k * stride] * x[cols[k * stride]];
  } else { // PETSc's inode kernels: pairs of products, then the odd one
    std::int64_t k = 0;
    for (; k + 1 < n; k += 2)
      sum += vals[k * stride] * x[cols[k * stride]] + vals[(k + 1) * stride] * x[cols[(k + 1) * stride]];
    if (k < n) sum += vals[k * stride] * x[cols[k * stride]];
  }
  return sum;
}

// Two adjacent 16-bit values read by one 32-bit load (p 4-byte aligned): the
// block-Jacobi row-pair kernel of the GPU backends (two rows of a block).
// Whether values stored as S can be read two at a time: plain 16-bit values
// (fp16, bf16, fp11_4, split4's heads).
template <typename S> inline constexpr bool reads_pairs_v = sizeof(S) == 2 && std::is_pointer_v<storage_pointer_t<S>>;
template <typename S> struct StoragePair {
  S first, second;
};
template <typename S> PETSCMP_HOST_DEVICE inline StoragePair<S> load_pair(const S *p)
{
  static_assert(sizeof(S) == 2, "pairs are read as one 32-bit word of two 16-bit values");
  std::uint32_t w;
#if defined(PETSCMP_DEVICE_PASS)
  w = *reinterpret_cast<const std::uint32_t *>(p);
#else
  std::memcpy(&w, p, sizeof w);
#endif
  return {S{static_cast<std::uint16_t>(w & 0xffffu)}, S{static_cast<std::uint16_t>(w >> 16)}};
}

// row_dot for one GPU thread: the values and x entries of a batch of entries
// are loaded before any of them is summed, so a thread has that many loads in
// flight instead of waiting one memory latency (a column, then x) per entry;
// on an H200 the one-entry-at-a-time loop ran the narrow formats below 40% of
// the copy bandwidth. Batches of 16 entries for 16-bit values (bf16 SpMV 1.15x
// faster than with 8), then of 8, then the rest one entry at a time: a masked
// last batch was measured 1.3-2x slower (lossless 1.3x, fp16 1.8x: its
// predicated loads doubled the registers). The sums are row_dot's, in the same
// order (batches are even, so the paired order's pairs stay whole).
inline constexpr int kRowBatch = 8;
// Sums the full batches of Batch entries from entry k on; returns where they end.
template <int Batch, SumOrder Order, typename Storage, typename Columns>
PETSCMP_HOST_DEVICE inline std::int64_t sum_full_batches(double &sum, reduced_range<Storage> vals, Columns cols,
                                                         std::int64_t k, std::int64_t n, const double *x,
                                                         std::int64_t stride)
{
  for (; k + Batch <= n; k += Batch) {
    double v[Batch], xv[Batch];
    PETSCMP_DEVICE_UNROLL
    for (int j = 0; j < Batch; ++j) {
      v[j]  = vals[(k + j) * stride];
      xv[j] = x[cols[(k + j) * stride]];
    }
    PETSCMP_DEVICE_UNROLL
    for (int j = 0; j < Batch; j += 2) {
      if constexpr (Order == SumOrder::sequential) {
        sum += v[j] * xv[j];
        sum += v[j + 1] * xv[j + 1];
      } else {
        sum += v[j] * xv[j] + v[j + 1] * xv[j + 1];
      }
    }
  }
  return k;
}
template <SumOrder Order, typename Storage, typename Columns>
PETSCMP_HOST_DEVICE inline double row_dot_batched(double sum, reduced_range<Storage> vals, Columns cols, std::int64_t n,
                                                  const double *x, std::int64_t stride)
{
  std::int64_t k = 0;
  if constexpr (sizeof(Storage) <= 2) k = sum_full_batches<2 * kRowBatch, Order>(sum, vals, cols, k, n, x, stride);
  k = sum_full_batches<kRowBatch, Order>(sum, vals, cols, k, n, x, stride);
  if constexpr (Order == SumOrder::sequential) {
    for (; k < n; ++k)
      sum += vals[k * stride] * x[cols[k * stride]];
  } else {
    for (; k + 1 < n; k += 2)
      sum += vals[k * stride] * x[cols[k * stride]] + vals[(k + 1) * stride] * x[cols[(k + 1) * stride]];
    if (k < n) sum += vals[k * stride] * x[cols[k * stride]];
  }
  return sum;
}

} // namespace petscmp
