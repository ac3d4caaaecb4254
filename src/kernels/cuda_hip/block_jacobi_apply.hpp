// The block-Jacobi apply for the GPU backends (and the emulated one), written
// once: y_i = E_i x_i (or E_i^T x_i) over the interleaved block storage of
// apbjacobi (block_jacobi.hpp: column j of the blocks of a group together).
// One thread per row: each output entry sums over its block's columns in
// increasing order, as the reference backend does, so the result is bitwise
// the reference's in every format.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/block_jacobi.hpp"
#include "petscmp/core/host_device.hpp"
#include "row_sum.hpp"

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

// Row `row` of group g: its block i and its row `out` in the block, by a
// 32-bit division where it fits (a 64-bit one is a long sequence on GPUs).
PETSCMP_HOST_DEVICE inline void block_position(const BlockGroupView &g, std::int64_t row, std::int64_t &i,
                                               std::int64_t &out)
{
  const std::int64_t n = g.block_size, local = row - g.row_begin;
  if (local <= 0xffffffff) {
    const std::uint32_t l = static_cast<std::uint32_t>(local), q = l / static_cast<std::uint32_t>(n);
    i   = q;
    out = l - q * static_cast<std::uint32_t>(n);
  } else {
    i   = local / n;
    out = local % n;
  }
}

// Row `row` of the apply, its block's inverse read as S.
template <typename S>
PETSCMP_HOST_DEVICE inline double block_jacobi_row(const BlockGroupView &g, const unsigned char *values,
                                                   std::int64_t row, const double *x, bool transpose)
{
  const std::int64_t n = g.block_size, nb = g.nblocks;
  std::int64_t i, out;
  block_position(g, row, i, out);
  const std::int64_t base = g.row_begin + i * n;
  const auto E = make_range(reinterpret_cast<const S *>(values + g.byte_offset), static_cast<std::size_t>(nb * n * n));
  // entry (r, c) of block i is E[(c nb + i) n + r]: entry k of this row's sum
  // at first + k step (the row of the block, or its column for the transpose)
  const std::int64_t first = transpose ? (out * nb + i) * n : i * n + out, step = transpose ? 1 : nb * n;
  const double *xb = x + base;
  double sum       = 0.0;
  std::int64_t k   = 0;
  // loads first, then the sums in order (row_sum.hpp); twice the batch for
  // 16-bit values, whose loads bring a quarter of fp64's bytes each
  constexpr int batch = sizeof(S) <= 2 ? 2 * kRowBatch : kRowBatch;
  for (; k + batch <= n; k += batch) {
    double e[batch], xv[batch];
    PETSCMP_DEVICE_UNROLL
    for (int j = 0; j < batch; ++j) {
      e[j]  = E[static_cast<std::size_t>(first + (k + j) * step)];
      xv[j] = xb[k + j];
    }
    PETSCMP_DEVICE_UNROLL
    for (int j = 0; j < batch; ++j)
      sum += e[j] * xv[j];
  }
  for (; k < n; ++k)
    sum += E[static_cast<std::size_t>(first + k * step)] * xb[k];
  return sum;
}

// One launch per format present (block_formats_present): a kernel that
// switched on the format of every row held the registers of all six formats'
// loops (80 on an H200, a third of the threads resident), and the fp16 apply
// ran at half fp64's speed. A launch has threads only for the windows of
// kChunkRows rows (aligned) that hold rows of its format; a thread returns
// where its row is of another. When every launch scanned every row, storage
// of three formats in long runs applied at 0.5x (3x3 blocks) and 0.74x (8x8)
// of the fp64 apply's speed on an H200; chunks of only the format's rows left
// most lanes idle where formats alternate block by block.
inline constexpr int kChunkRows = 64;
struct RowChunk {
  std::int64_t first  = 0; // first row: a multiple of kChunkRows
  std::int32_t rows   = 0; // kChunkRows, fewer at the end of the matrix
  std::int32_t unused = 0;
};

// The window of kChunkRows rows from row `first` (a multiple of kChunkRows).
PETSCMP_HOST_DEVICE inline RowChunk window_at(std::int64_t first, std::int64_t nrows)
{
  return {first, static_cast<std::int32_t>(nrows - first < kChunkRows ? nrows - first : kChunkRows), 0};
}

// Host side: the windows of kChunkRows rows that hold rows of `format`. Where
// that is every window of the matrix (storage of one format), none: the
// kernels then number the windows themselves (chunk_of) and read no list.
inline std::vector<RowChunk> block_format_chunks(const BlockJacobiStorage &M, Format format)
{
  std::vector<RowChunk> chunks;
  for (const BlockGroup &g : M.groups) {
    if (g.format != format) continue;
    const std::int64_t end = g.row_begin + std::int64_t{g.nblocks} * g.block_size;
    for (std::int64_t first = g.row_begin / kChunkRows * kChunkRows; first < end; first += kChunkRows)
      if (chunks.empty() || chunks.back().first != first) // groups ascend in rows: a window's groups one after another
        chunks.push_back(window_at(first, M.nrows));
  }
  // in any order of the groups, each window once
  std::sort(chunks.begin(), chunks.end(), [](const RowChunk &a, const RowChunk &b) { return a.first < b.first; });
  chunks.erase(std::unique(chunks.begin(), chunks.end(),
                           [](const RowChunk &a, const RowChunk &b) { return a.first == b.first; }),
               chunks.end());
  if (static_cast<std::int64_t>(chunks.size()) == (M.nrows + kChunkRows - 1) / kChunkRows) chunks.clear();
  return chunks;
}

// The windows of a launch: a list, or (chunks == nullptr) every window of
// the matrix, numbered: one dependent load less for each thread (with every
// window listed, storage of one format applied 6-22% slower on an H200 than
// with the kernel that numbered its rows, in two runs).
struct ChunkList {
  const RowChunk *chunks = nullptr;
  std::int64_t count     = 0;
};
inline ChunkList chunk_list(const std::vector<RowChunk> &chunks, const RowChunk *stored, std::int64_t nrows)
{
  if (chunks.empty()) return {nullptr, (nrows + kChunkRows - 1) / kChunkRows};
  return {stored, static_cast<std::int64_t>(chunks.size())};
}
PETSCMP_HOST_DEVICE inline RowChunk chunk_of(const ChunkList &list, std::int64_t c, std::int64_t nrows)
{
  return list.chunks ? list.chunks[c] : window_at(c * kChunkRows, nrows);
}

// Thread t of the launch over the windows of `format` (blocks read as S), R
// rows a thread: kChunkRows / R threads a window, thread l taking its rows l,
// l + kChunkRows / R, ... (each load of a warp still one stretch of rows);
// every sum before any store, so the R rows' loads overlap.
template <typename S, int R>
PETSCMP_HOST_DEVICE inline void block_jacobi_chunk_thread(const BlockJacobiView &M, Format format,
                                                          const ChunkList &chunks, std::int64_t t, const double *x,
                                                          double *y, bool transpose)
{
  constexpr int threads = kChunkRows / R;
  const std::int64_t c  = t / threads;
  if (c >= chunks.count) return;
  const std::int32_t lane = static_cast<std::int32_t>(t - c * threads);
  const RowChunk chunk    = chunk_of(chunks, c, M.nrows);
  bool mine[R];
  double sums[R];
  PETSCMP_DEVICE_UNROLL
  for (int j = 0; j < R; ++j) {
    const std::int64_t row = chunk.first + lane + j * threads;
    mine[j]                = false;
    if (lane + j * threads >= chunk.rows) continue;
    const BlockGroupView &g = M.groups[M.row_group[row]];
    mine[j]                 = g.format == format;
    if (mine[j]) sums[j] = block_jacobi_row<S>(g, M.values, row, x, transpose);
  }
  PETSCMP_DEVICE_UNROLL
  for (int j = 0; j < R; ++j)
    if (mine[j]) y[chunk.first + lane + j * threads] = sums[j];
}

// ---- row pairs (the apply, not its transpose; 16-bit blocks of even size) ---
// Rows out and out + 1 of a block (out even) have their entries side by side
// in the interleaved storage: one thread reads both with one 32-bit load per
// column, so a warp's load is a whole 128-byte line instead of half of one,
// and sums each row alone, in the same order as block_jacobi_row.
// Rows row0 and row0 + 1 (row0 even in its group, same block) into y.
template <typename S>
PETSCMP_HOST_DEVICE inline void block_jacobi_rows_paired(const BlockGroupView &g, const unsigned char *values,
                                                         std::int64_t row0, const double *x, double *y)
{
  const std::int64_t n = g.block_size, step = std::int64_t{g.nblocks} * n;
  std::int64_t i, out;
  block_position(g, row0, i, out);
  const S *E       = reinterpret_cast<const S *>(values + g.byte_offset) + i * n + out;
  const double *xb = x + g.row_begin + i * n;
  double s0 = 0.0, s1 = 0.0;
  std::int64_t k = 0;
  for (; k + kRowBatch <= n; k += kRowBatch) { // loads first, then each row's sum in order
    StoragePair<S> e[kRowBatch];
    double xv[kRowBatch];
    PETSCMP_DEVICE_UNROLL
    for (int j = 0; j < kRowBatch; ++j) {
      e[j]  = load_pair(E + (k + j) * step);
      xv[j] = xb[k + j];
    }
    PETSCMP_DEVICE_UNROLL
    for (int j = 0; j < kRowBatch; ++j) {
      s0 += decode(e[j].first) * xv[j];
      s1 += decode(e[j].second) * xv[j];
    }
  }
  for (; k < n; ++k) {
    const StoragePair<S> e = load_pair(E + k * step);
    s0 += decode(e.first) * xb[k];
    s1 += decode(e.second) * xb[k];
  }
  y[row0]     = s0;
  y[row0 + 1] = s1;
}

// Thread t of a row-pair launch over the windows of `format` (16-bit), two
// rows a thread: rows 2l and 2l + 1 of its window, as a pair where they are
// one (same group, even block size, 2l even in the group), else each alone.
template <typename S>
PETSCMP_HOST_DEVICE inline void block_jacobi_pair_thread(const BlockJacobiView &M, Format format,
                                                         const ChunkList &chunks, std::int64_t t, const double *x,
                                                         double *y)
{
  constexpr int threads = kChunkRows / 2;
  const std::int64_t c  = t / threads;
  if (c >= chunks.count) return;
  const std::int32_t at = 2 * static_cast<std::int32_t>(t - c * threads);
  const RowChunk chunk  = chunk_of(chunks, c, M.nrows);
  if (at >= chunk.rows) return;
  const std::int64_t row0 = chunk.first + at;
  const std::int32_t g0   = M.row_group[row0];
  const std::int32_t g1   = at + 1 < chunk.rows ? M.row_group[row0 + 1] : -1;
  const BlockGroupView &g = M.groups[g0];
  if (g1 == g0 && g.format == format && g.block_size % 2 == 0 && (row0 - g.row_begin) % 2 == 0) {
    block_jacobi_rows_paired<S>(g, M.values, row0, x, y);
    return;
  }
  if (g.format == format) y[row0] = block_jacobi_row<S>(g, M.values, row0, x, false);
  if (g1 >= 0 && M.groups[g1].format == format)
    y[row0 + 1] = block_jacobi_row<S>(M.groups[g1], M.values, row0 + 1, x, false);
}

// Whether the apply reads the blocks of `format` by row pairs.
inline bool block_jacobi_pairs(Format format, bool transpose, bool paired_rows)
{
  return paired_rows && !transpose && format_bytes(format) == 2;
}

// The formats the storage's groups use, each once.
inline std::vector<Format> block_formats_present(const BlockJacobiStorage &M)
{
  bool seen[kFormatCount] = {};
  for (const BlockGroup &g : M.groups)
    seen[static_cast<int>(g.format)] = true;
  std::vector<Format> formats;
  for (int f = 0; f < kFormatCount; ++f)
    if (seen[f]) formats.push_back(static_cast<Format>(f));
  return formats;
}

} // namespace petscmp
