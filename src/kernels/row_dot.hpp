// The dot product of one stored row with x, in the summation order PETSc's
// SeqAIJ uses. Shared by the backends so the order is defined once.
#pragma once

#include <cstdint>

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/compact_csr.hpp"
#include "row_sum.hpp"

namespace petscmp {

// The columns of one row of a shifted slice, indexed as a gathered slice's
// are (entry e at e * kSliceRows): the slice's column of entry e plus the
// row's lane.
struct ShiftedColumns {
  const std::int32_t *slice_cols;
  std::int32_t lane;
  std::int64_t operator[](std::int64_t at) const { return slice_cols[at / kSliceRows] + lane; }
};

// The columns of one row of a narrow slice, indexed as a gathered slice's
// are: the slice's base column plus the row's 16-bit offset of each entry.
struct NarrowColumns {
  const std::uint16_t *offsets; // the slice's offsets, from the row's lane
  std::int32_t base;
  std::int64_t operator[](std::int64_t at) const { return std::int64_t{base} + offsets[at]; }
};

// The columns of one row of a patched slice, indexed as a gathered slice's
// are: PatchedSlice's column of entry at / kSliceRows in the row's lane.
struct PatchedColumns {
  PatchedSlice slice;
  int lane;
  std::int64_t operator[](std::int64_t at) const { return slice.column(at / kSliceRows, lane); }
};

// Calls fn(columns, x) for node nd of a node block: the node's column list
// (16-bit offsets, or 32-bit columns when wide) and the x they index (x shifted
// by the node's base column for offsets).
template <typename X, typename Fn>
inline void with_node_columns(const RowBlock &block, const NodeInfo &nd, X *x, Fn &&fn)
{
  const unsigned char *at = block.node_cols.as<unsigned char>() + nd.indices;
  if (nd.wide)
    fn(reinterpret_cast<const std::int32_t *>(at), x);
  else
    fn(reinterpret_cast<const std::uint16_t *>(at), x + nd.col_base);
}

// Row r of node nd: row_dot over its values (stride nd.rows) and the node's
// shared columns (stride 1).
template <SumOrder Order, typename Storage, typename ColIndex>
inline double node_row_dot(double sum, reduced_range<Storage> node_vals, int r, int rows, const ColIndex *cols,
                           std::int64_t n, const double *x)
{
  auto term = [&](std::int64_t k) { return node_vals[k * rows + r] * x[cols[k]]; };
  if constexpr (Order == SumOrder::sequential) {
    for (std::int64_t k = 0; k < n; ++k)
      sum += term(k);
  } else {
    std::int64_t k = 0;
    for (; k + 1 < n; k += 2)
      sum += term(k) + term(k + 1);
    if (k < n) sum += term(k);
  }
  return sum;
}

// Calls fn(cols, first value index, stride, length) for block row k of a
// row-wise (CSR-order or sliced) block: entry e's value is at first + e *
// stride and its column is cols[e * stride] (cols: a pointer, or
// ShiftedColumns / NarrowColumns / PatchedColumns for a shifted / narrow /
// patched slice). A sliced block never reads the master
// (rowptr and master_cols may be null).
template <typename Index, typename Fn>
inline void with_row_entries(const RowBlock &block, const Index *rowptr, const Index *master_cols, std::int64_t k,
                             Fn &&fn)
{
  if (block.sliced()) {
    const std::int64_t q = k / kSliceRows, lane = k % kSliceRows, n = block.row_lengths[static_cast<std::size_t>(k)];
    const std::int64_t first       = block.value_index(k, 0, 0);
    const std::int32_t *slice_cols = block.cols.data() + block.slice_col_offsets[q];
    if (block.shifted_slice(q))
      fn(ShiftedColumns{slice_cols, static_cast<std::int32_t>(lane)}, first, std::int64_t{kSliceRows}, n);
    else if (block.narrow_slice(q))
      fn(NarrowColumns{block.narrow_offsets(q) + lane, block.narrow_base(q)}, first, std::int64_t{kSliceRows}, n);
    else if (block.patched_slice(q))
      fn(PatchedColumns{block.patched_columns(q), static_cast<int>(lane)}, first, std::int64_t{kSliceRows}, n);
    else
      fn(slice_cols + lane, first, std::int64_t{kSliceRows}, n);
    return;
  }
  const std::int64_t row = block.row(k), start = rowptr[row], n = rowptr[row + 1] - start;
  fn(master_cols + start, block.value_index(k, 0, start), std::int64_t{1}, n);
}

// init + block row k's products, its values read at `read` segments (split
// storage; other blocks ignore it), in the sum order of every backend: what a
// whole product at that read level gives this row, bit for bit. Rows with
// their own read level are recomputed with it (spmv_row_levels).
template <typename Index>
inline double block_row_product(const RowBlock &block, const Index *rowptr, const Index *master_cols, SumOrder order,
                                int read, std::int64_t k, const double *x, double init)
{
  double sum = init;
  dispatch_block_values(block, read, [&](auto tag) {
    using S         = typename decltype(tag)::type;
    const auto vals = make_range(values_of<S>(block), static_cast<std::size_t>(block.stored_count()));
    dispatch_order(order, [&](auto o) {
      constexpr SumOrder O = decltype(o)::value;
      if (block.node_layout()) {
        const NodeInfo &nd = block.nodes[static_cast<std::size_t>(block.node_of(k))];
        const auto node_vals =
            vals.subrange(static_cast<std::size_t>(nd.values), static_cast<std::size_t>(nd.length) * nd.rows);
        with_node_columns(block, nd, x, [&](auto cols, const double *xs) {
          sum = node_row_dot<O>(init, node_vals, static_cast<int>(k - nd.first), nd.rows, cols, nd.length, xs);
        });
        return;
      }
      with_row_entries(block, rowptr, master_cols, k,
                       [&](auto cols, std::int64_t first, std::int64_t stride, std::int64_t n) {
                         sum = row_dot<O>(init, vals.subrange(first, n * stride), cols, n, x, stride);
                       });
    });
  });
  return sum;
}

// row_dot over values already converted to fp64 (a pointer the accessor's
// read_n returned): the same sum, bitwise.
template <SumOrder Order, typename ColIndex>
inline double row_dot_values(double sum, const double *v, const ColIndex *cols, std::int64_t n, const double *x)
{
  if constexpr (Order == SumOrder::sequential) {
    for (std::int64_t k = 0; k < n; ++k)
      sum += v[k] * x[cols[k]];
  } else {
    std::int64_t k = 0;
    for (; k + 1 < n; k += 2)
      sum += v[k] * x[cols[k]] + v[k + 1] * x[cols[k + 1]];
    if (k < n) sum += v[k] * x[cols[k]];
  }
  return sum;
}

// R rows of equal length n at once, R independent accumulators: row i's sum is
// exactly row_dot_values(sum[i], v[i], cols[i], n, x); only the rows' operations
// are interleaved (R dependence chains instead of one), never reordered within a row.
template <int R, SumOrder Order, typename ColIndex>
inline void rows_dot_values(double *sum, const double *const *v, const ColIndex *const *cols, std::int64_t n,
                            const double *x)
{
  double s[R];
  for (int i = 0; i < R; ++i)
    s[i] = sum[i];
  if constexpr (Order == SumOrder::sequential) {
    for (std::int64_t k = 0; k < n; ++k)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        s[i] += v[i][k] * x[cols[i][k]];
  } else {
    std::int64_t k = 0;
    for (; k + 1 < n; k += 2)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        s[i] += v[i][k] * x[cols[i][k]] + v[i][k + 1] * x[cols[i][k + 1]];
    if (k < n)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        s[i] += v[i][k] * x[cols[i][k]];
  }
  for (int i = 0; i < R; ++i)
    sum[i] = s[i];
}

} // namespace petscmp
