// The block-Jacobi apply for the GPU backends (and the emulated one), written
// once: y_i = E_i x_i (or E_i^T x_i) over the interleaved block storage of
// apbjacobi (block_jacobi.hpp: column j of the blocks of a group together).
// One thread per row: each output entry sums over its block's columns in
// increasing order, as the reference backend does, so the result is bitwise
// the reference's in every format.
#pragma once

#include <cstdint>
#include <vector>

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/block_jacobi.hpp"
#include "petscmp/core/host_device.hpp"

namespace petscmp {

struct BlockGroupView {
  std::int64_t row_begin   = 0;
  std::int64_t byte_offset = 0;
  std::int32_t block_size  = 0;
  std::int32_t nblocks     = 0;
  Format format            = Format::fp64;
};

// The storage as the kernel sees it: the groups, the group of every row and
// the values (host or device memory).
struct BlockJacobiView {
  std::int64_t nrows            = 0;
  const std::int32_t *row_group = nullptr;
  const BlockGroupView *groups  = nullptr;
  const unsigned char *values   = nullptr;
};

// Host side: the group views and the group of every row.
inline std::vector<BlockGroupView> block_group_views(const BlockJacobiStorage &M)
{
  std::vector<BlockGroupView> v;
  for (const BlockGroup &g : M.groups)
    v.push_back({g.row_begin, g.byte_offset, g.block_size, g.nblocks, g.format});
  return v;
}
inline std::vector<std::int32_t> block_row_groups(const BlockJacobiStorage &M)
{
  std::vector<std::int32_t> row_group(static_cast<std::size_t>(M.nrows), 0);
  for (std::size_t k = 0; k < M.groups.size(); ++k) {
    const BlockGroup &g    = M.groups[k];
    const std::int64_t end = g.row_begin + std::int64_t{g.nblocks} * g.block_size;
    for (std::int64_t r = g.row_begin; r < end; ++r)
      row_group[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(k);
  }
  return row_group;
}

// Row `row` of the apply, its block's inverse read as S.
template <typename S>
PETSCMP_HOST_DEVICE inline double block_jacobi_row(const BlockGroupView &g, const unsigned char *values,
                                                   std::int64_t row, const double *x, bool transpose)
{
  const std::int64_t n = g.block_size, nb = g.nblocks, local = row - g.row_begin;
  const std::int64_t i = local / n, out = local % n, base = g.row_begin + i * n;
  const auto E = make_range(reinterpret_cast<const S *>(values + g.byte_offset), static_cast<std::size_t>(nb * n * n));
  double sum   = 0.0;
  for (std::int64_t k = 0; k < n; ++k) // entry (r, c) of block i is E[(c nb + i) n + r]
    sum += (transpose ? E[static_cast<std::size_t>((out * nb + i) * n + k)]
                      : E[static_cast<std::size_t>((k * nb + i) * n + out)]) *
           x[base + k];
  return sum;
}

PETSCMP_HOST_DEVICE inline void block_jacobi_thread(const BlockJacobiView &M, std::int64_t row, const double *x,
                                                    double *y, bool transpose)
{
  if (row >= M.nrows) return;
  const BlockGroupView &g = M.groups[M.row_group[row]];
  double v;
  switch (g.format) { // one format per group: threads of a warp diverge only where groups meet
  case Format::fp32:
    v = block_jacobi_row<float>(g, M.values, row, x, transpose);
    break;
  case Format::fp16:
    v = block_jacobi_row<fp16_t>(g, M.values, row, x, transpose);
    break;
  case Format::bf16:
    v = block_jacobi_row<bf16_t>(g, M.values, row, x, transpose);
    break;
  case Format::fp11_20:
    v = block_jacobi_row<fp11_20_t>(g, M.values, row, x, transpose);
    break;
  case Format::fp11_4:
    v = block_jacobi_row<fp11_4_t>(g, M.values, row, x, transpose);
    break;
  default:
    v = block_jacobi_row<double>(g, M.values, row, x, transpose);
    break;
  }
  y[row] = v;
}

} // namespace petscmp
