// The SELL-C SpMV kernel, written once for every GPU backend: CUDA and HIP
// compile it as device code (cuda_hip/launch.hpp), the emulated backend as
// plain C++ run by a host loop over blocks and threads (emulated/). One thread
// per row: lane l of slice q sums its row alone, entries in stored order, in
// PETSc's summation order (row_sum.hpp), so a lossless product is bitwise
// AIJ's and every format's product is bitwise the CPU reference's (with
// contraction off: nvcc -fmad=false, hipcc -ffp-contract=off).
#pragma once

#include <cstdint>
#include <type_traits>

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/host_device.hpp"
#include "row_sum.hpp"

namespace petscmp {

// One part of a SellCopy (sell_copy.hpp) as a kernel sees it: plain pointers,
// into host memory (emulated) or device memory (CUDA, HIP).
struct SellPartView {
  std::int64_t lanes                = 0; // slices * slice_rows
  int slice_rows                    = 0;
  const std::int32_t *rows          = nullptr;
  const std::int32_t *lengths       = nullptr;
  const std::int64_t *slice_offsets = nullptr;
  const std::int32_t *cols          = nullptr; // 32-bit columns, or
  const std::uint16_t *narrow_cols  = nullptr; // 16-bit offsets from slice_base[q]
  const std::int32_t *slice_base    = nullptr;
  const void *values                = nullptr;
  std::int64_t plane_stride         = 0; // split storage: entries per segment plane
};

// The values from stored entry `first` on, read as S (a plain pointer, or a
// segment_ptr over split storage's planes).
template <typename S>
PETSCMP_HOST_DEVICE inline storage_pointer_t<S> part_values(const SellPartView &p, std::int64_t first)
{
  if constexpr (std::is_pointer_v<storage_pointer_t<S>>) {
    return static_cast<const S *>(p.values) + first;
  } else {
    using word = typename storage_pointer_t<S>::word;
    return storage_pointer_t<S>{static_cast<const word *>(p.values) + first,
                                static_cast<std::ptrdiff_t>(p.plane_stride)};
  }
}

// The columns of a narrow slice: its base column plus a 16-bit offset per entry.
struct OffsetColumns {
  const std::uint16_t *offsets;
  std::int64_t base;
  PETSCMP_HOST_DEVICE std::int64_t operator[](std::int64_t at) const { return base + offsets[at]; }
};

// Where lane `lane`'s entries start, and its slice q: by a 32-bit division (a
// 64-bit one is a long instruction sequence on GPUs; a part has fewer than
// 2^31 rows, so its lanes fit).
PETSCMP_HOST_DEVICE inline std::int64_t lane_first(const SellPartView &p, std::int64_t lane, std::uint32_t &q)
{
  const std::uint32_t C = static_cast<std::uint32_t>(p.slice_rows);
  q                     = static_cast<std::uint32_t>(lane) / C;
  return p.slice_offsets[q] + (static_cast<std::uint32_t>(lane) - q * C);
}

// Thread `lane` (the global thread index) of y = A x (+ z) over one part:
// y[row] = z[row] (or 0) + the row's products. z may alias y (each thread
// reads its own row's z before it writes that row of y). Narrow: the part
// stores 16-bit column offsets.
template <typename S, SumOrder Order, bool Narrow>
PETSCMP_HOST_DEVICE inline void sell_spmv_thread(const SellPartView &p, std::int64_t lane, const double *x,
                                                 const double *z, double *y)
{
  if (lane >= p.lanes) return;
  const std::int32_t row = p.rows[lane];
  if (row < 0) return; // a padding lane past the part's last row
  const std::int64_t C = p.slice_rows;
  std::uint32_t q;
  const std::int64_t first = lane_first(p, lane, q);
  const std::int64_t n     = p.lengths[lane];
  const auto vals          = make_range(part_values<S>(p, first), static_cast<std::size_t>(n * C));
  const double init        = z ? z[row] : 0.0;
  if constexpr (Narrow)
    y[row] = row_dot_batched<Order>(init, vals, OffsetColumns{p.narrow_cols + first, p.slice_base[q]}, n, x, C);
  else
    y[row] = row_dot_batched<Order>(init, vals, p.cols + first, n, x, C);
}

// ---- lane pairs (16-bit values; bench_gpu measures them, off by default) ----
// Lanes 2m and 2m + 1 of a slice store each entry side by side (values, and
// 16-bit column offsets): one thread reads both rows' entries with one 32-bit
// load each and sums each row alone in row_dot's order. Full batches of
// kRowBatch entries while both rows have them, then each row's rest by row_dot.
template <typename S, SumOrder Order, bool Narrow>
PETSCMP_HOST_DEVICE inline void sell_spmv_pair_thread(const SellPartView &p, std::int64_t t, const double *x,
                                                      const double *z, double *y)
{
  static_assert(reads_pairs_v<S>, "lane pairs read 16-bit values");
  const std::int64_t lane0 = 2 * t;
  if (lane0 >= p.lanes) return;
  if (p.slice_rows % 2 != 0) { // pairs would straddle slices: each lane alone
    sell_spmv_thread<S, Order, Narrow>(p, lane0, x, z, y);
    if (lane0 + 1 < p.lanes) sell_spmv_thread<S, Order, Narrow>(p, lane0 + 1, x, z, y);
    return;
  }
  const std::int32_t r0 = p.rows[lane0], r1 = p.rows[lane0 + 1];
  if (r0 < 0) return; // padding lanes come last: r1 is one too
  const std::int64_t C = p.slice_rows;
  std::uint32_t q;
  const std::int64_t first = lane_first(p, lane0, q); // even
  const std::int64_t n0 = p.lengths[lane0], n1 = p.lengths[lane0 + 1], both = n0 < n1 ? n0 : n1;
  const S *vals = static_cast<const S *>(p.values) + first;
  double s0 = z ? z[r0] : 0.0, s1 = z && r1 >= 0 ? z[r1] : 0.0;
  std::int64_t k = 0;
  for (; k + kRowBatch <= both; k += kRowBatch) {
    StoragePair<S> v[kRowBatch];
    double x0[kRowBatch], x1[kRowBatch];
    PETSCMP_DEVICE_UNROLL
    for (int j = 0; j < kRowBatch; ++j) {
      const std::int64_t at = (k + j) * C;
      v[j]                  = load_pair(vals + at);
      if constexpr (Narrow) {
        const StoragePair<std::uint16_t> c = load_pair(p.narrow_cols + first + at);
        x0[j]                              = x[std::int64_t{p.slice_base[q]} + c.first];
        x1[j]                              = x[std::int64_t{p.slice_base[q]} + c.second];
      } else {
        x0[j] = x[p.cols[first + at]];
        x1[j] = x[p.cols[first + at + 1]];
      }
    }
    PETSCMP_DEVICE_UNROLL
    for (int j = 0; j < kRowBatch; j += 2) {
      const double a0 = decode(v[j].first) * x0[j], b0 = decode(v[j + 1].first) * x0[j + 1];
      const double a1 = decode(v[j].second) * x1[j], b1 = decode(v[j + 1].second) * x1[j + 1];
      if constexpr (Order == SumOrder::sequential) {
        s0 += a0;
        s0 += b0;
        s1 += a1;
        s1 += b1;
      } else {
        s0 += a0 + b0;
        s1 += a1 + b1;
      }
    }
  }
  // each row's rest (k is even: the paired order's pairs stay row_dot's)
  const auto rest = [&](double sum, std::int64_t lane_offset, std::int64_t n) {
    if (k >= n) return sum;
    const auto r = make_range(vals + lane_offset + k * C, static_cast<std::size_t>((n - k) * C));
    if constexpr (Narrow)
      return row_dot<Order>(sum, r, OffsetColumns{p.narrow_cols + first + lane_offset + k * C, p.slice_base[q]}, n - k,
                            x, C);
    else
      return row_dot<Order>(sum, r, p.cols + first + lane_offset + k * C, n - k, x, C);
  };
  y[r0] = rest(s0, 0, n0);
  if (r1 >= 0) y[r1] = rest(s1, 1, n1);
}

// ---- warp-per-row parts (long rows, sell_copy.hpp) --------------------------
// A warp of kWarpLanes threads per row, in two phases per chunk of kWarpLanes
// entries, so the emulated backend can run them one after the other: every
// lane multiplies one entry (warp_row_product), then one lane adds the chunk's
// products to the row's sum in the row's order (add_products). Each product
// is rounded alone in both orders, so the sum is bitwise row_dot's.
inline constexpr int kWarpLanes = 32;

// Row r of a warp-per-row part: its matrix row (-1: none), first entry and length.
struct WarpRow {
  std::int32_t row;
  std::int64_t first, n;
};
PETSCMP_HOST_DEVICE inline WarpRow warp_row(const SellPartView &p, std::int64_t r)
{
  return {p.rows[r], p.slice_offsets[r], p.lengths[r]};
}

// Entry e's product (0 past the row's end, never added).
template <typename S, bool Narrow>
PETSCMP_HOST_DEVICE inline double warp_row_product(const SellPartView &p, std::int64_t r, const WarpRow &w,
                                                   std::int64_t e, const double *x)
{
  if (e >= w.n) return 0.0;
  const auto vals        = make_range(part_values<S>(p, w.first), static_cast<std::size_t>(w.n));
  const std::int64_t col = Narrow ? std::int64_t{p.slice_base[r]} + p.narrow_cols[w.first + e] : p.cols[w.first + e];
  return vals[static_cast<std::size_t>(e)] * x[col];
}

// sum + the first m products of a chunk, in the order of row_dot (Order).
template <SumOrder Order>
PETSCMP_HOST_DEVICE inline double add_products(double sum, const double *products, std::int64_t m)
{
  std::int64_t j = 0;
  if constexpr (Order == SumOrder::sequential) {
    for (; j < m; ++j)
      sum += products[j];
  } else { // chunks are even, so the pairs are row_dot's
    for (; j + 1 < m; j += 2)
      sum += products[j] + products[j + 1];
    if (j < m) sum += products[j];
  }
  return sum;
}

} // namespace petscmp
