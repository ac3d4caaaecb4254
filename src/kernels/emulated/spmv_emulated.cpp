// The emulated GPU backend: the kernels of cuda_hip/ compiled as C++ and run by
// a host loop over the blocks and threads of the launch a GPU would get. It
// lets a machine without a GPU (CI) test the device kernels' code bitwise
// against the reference backend, under the sanitizers too.
#include <algorithm>

#include "../cuda_hip/block_jacobi_apply.hpp"
#include "../cuda_hip/dispatch.hpp"
#include "../device.hpp"

namespace petscmp {
namespace emulated {

namespace {

// The launch a GPU backend makes (kThreadsPerBlock threads per block), block
// by block, thread by thread.
template <typename Thread> void launch(std::int64_t threads, Thread &&thread)
{
  const std::int64_t blocks = (threads + kThreadsPerBlock - 1) / kThreadsPerBlock;
  for (std::int64_t block = 0; block < blocks; ++block)
    for (int t = 0; t < kThreadsPerBlock; ++t)
      thread(block * kThreadsPerBlock + t);
}

SellPartView view_of(const SellPart &p, int slice_rows)
{
  SellPartView v;
  v.lanes         = p.slices * slice_rows;
  v.slice_rows    = slice_rows;
  v.rows          = p.rows.data();
  v.lengths       = p.lengths.data();
  v.slice_offsets = p.slice_offsets.data();
  v.cols          = p.cols.data();
  v.narrow_cols   = p.narrow_cols.data();
  v.slice_base    = p.slice_base.data();
  v.values        = p.values.as<unsigned char>();
  v.plane_stride  = p.plane_stride;
  return v;
}

} // namespace

// A warp-per-row part: each group's chunks, the lanes' products (phase 1) and
// then the group's lanes' sums (phase 2), as a warp of the GPU backends runs them.
template <typename S, SumOrder O, bool Narrow>
void warp_rows(const SellPartView &v, int group, const double *x, const double *z, double *y)
{
  for (std::int64_t g = 0; g * group < v.lanes; ++g) {
    WarpRow rows[kWarpRowGroup];
    const int count = warp_group_size(v, g, group);
    warp_group_rows(v, g, group, count, rows);
    const std::int64_t longest = longest_row(rows, count);
    double products[kWarpRowGroup * kProductStride], sums[kWarpRowGroup];
    for (int j = 0; j < count; ++j)
      sums[j] = rows[j].row >= 0 && z ? z[rows[j].row] : 0.0;
    for (std::int64_t c = 0; c < longest; c += kWarpLanes) {
      for (int lane = 0; lane < kWarpLanes; ++lane)
        warp_group_products<S, Narrow>(v, g, group, rows, count, c, lane, x, products);
      for (int j = 0; j < count; ++j)
        sums[j] = warp_group_add<O>(sums[j], rows[j], c, products + j * kProductStride);
    }
    for (int j = 0; j < count; ++j)
      if (rows[j].row >= 0) y[rows[j].row] = sums[j];
  }
}

void spmv(const SellCopy &A, int read, const double *x, const double *z, double *y, WarpRows how)
{
  const int group = how == WarpRows::grouped ? kWarpRowGroup : 1;
  for (const SellPart &part : A.parts) {
    const SellPartView v = view_of(part, A.rows_per_slice(part));
    dispatch_part(part.format, part.segments, read, A.order, part.narrow(), [&](auto tag, auto order, auto narrow) {
      using S              = typename decltype(tag)::type;
      constexpr SumOrder O = decltype(order)::value;
      constexpr bool N     = decltype(narrow)::value;
      if (part.warp_rows)
        warp_rows<S, O, N>(v, group, x, z, y);
      else
        launch(v.lanes, [&](std::int64_t lane) { sell_spmv_thread<S, O, N>(v, lane, x, z, y); });
    });
  }
}

void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose, ApplyRows how)
{
  const std::vector<BlockGroupView> groups  = block_group_views(M);
  const std::vector<std::int32_t> row_group = block_row_groups(M);
  const BlockJacobiView v{M.nrows, row_group.data(), groups.data(), M.values.as<unsigned char>()};
  for (Format format : block_formats_present(M))
    dispatch_format(format, [&](auto tag) {
      using S                             = typename decltype(tag)::type;
      const std::vector<RowChunk> windows = block_format_chunks(M, format);
      const ChunkList chunks              = chunk_list(windows, windows.data(), M.nrows);
      const std::int64_t n                = chunks.count;
      if constexpr (reads_pairs_v<S>)
        if (block_jacobi_pairs(format, transpose, how == ApplyRows::pairs)) {
          launch(n * kChunkRows / 2, [&](std::int64_t t) { block_jacobi_pair_thread<S>(v, format, chunks, t, x, y); });
          return;
        }
      if (how == ApplyRows::two)
        launch(n * kChunkRows / 2,
               [&](std::int64_t t) { block_jacobi_chunk_thread<S, 2>(v, format, chunks, t, x, y, transpose); });
      else
        launch(n * kChunkRows,
               [&](std::int64_t t) { block_jacobi_chunk_thread<S, 1>(v, format, chunks, t, x, y, transpose); });
    });
}

} // namespace emulated
} // namespace petscmp
