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

// ---- warp-per-row parts (long rows, sell_copy.hpp) --------------------------
// A warp of kWarpLanes threads sums a group of `group` long rows (1, or
// kWarpRowGroup: WarpRows in device.hpp), in two phases per chunk of
// kWarpLanes entries, so the emulated backend can run them one after the
// other: every lane multiplies its entry of the chunk in each of the group's
// rows (warp_group_products), then lane j adds row j's products to its sum in
// the row's order (warp_group_add). Each product is rounded alone in both
// orders, so the sum is bitwise row_dot's. With one row a warp, one lane adds
// each chunk while 31 wait: ncu on an H200 showed 9.9 active lanes a warp and
// the kernel bound by issue and L2 at 0.86x cuSPARSE's fp64 SpMV (long-row
// matrix); a group of kWarpRowGroup rows shares those adds among 8 lanes.
inline constexpr int kWarpLanes    = 32;
inline constexpr int kWarpRowGroup = 8;
// A row's chunk of products in shared memory, padded by one so that the group's
// lanes reading their rows' products fall in different banks.
inline constexpr int kProductStride = kWarpLanes + 1;

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

// The number of rows in group g of `group` rows, and the rows themselves (rows[0..count)).
PETSCMP_HOST_DEVICE inline int warp_group_size(const SellPartView &p, std::int64_t g, int group)
{
  const std::int64_t left = p.lanes - g * group;
  return static_cast<int>(left < group ? left : group);
}
PETSCMP_HOST_DEVICE inline void warp_group_rows(const SellPartView &p, std::int64_t g, int group, int count,
                                                WarpRow *rows)
{
  for (int j = 0; j < count; ++j)
    rows[j] = warp_row(p, g * group + j);
}
PETSCMP_HOST_DEVICE inline std::int64_t longest_row(const WarpRow *rows, int count)
{
  std::int64_t longest = 0;
  for (int j = 0; j < count; ++j)
    longest = rows[j].n > longest ? rows[j].n : longest;
  return longest;
}

// Phase 1, lane `lane` of group g's warp: its entry c + lane of each row j, at
// products[j * kProductStride + lane] (0 past the row's end, never added).
template <typename S, bool Narrow>
PETSCMP_HOST_DEVICE inline void warp_group_products(const SellPartView &p, std::int64_t g, int group,
                                                    const WarpRow *rows, int count, std::int64_t c, int lane,
                                                    const double *x, double *products)
{
  for (int j = 0; j < count; ++j)
    products[j * kProductStride + lane] = warp_row_product<S, Narrow>(p, g * group + j, rows[j], c + lane, x);
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

// Phase 2, lane j of the group: row j's sum plus its products of the chunk at
// entry c (products: row j's slots), in the row's order.
template <SumOrder Order>
PETSCMP_HOST_DEVICE inline double warp_group_add(double sum, const WarpRow &w, std::int64_t c, const double *products)
{
  if (w.row < 0 || c >= w.n) return sum;
  return add_products<Order>(sum, products, w.n - c < kWarpLanes ? w.n - c : kWarpLanes);
}

} // namespace petscmp
