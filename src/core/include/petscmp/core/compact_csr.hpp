// The compact (mixed-precision) copy of a CSR matrix and the one builder that
// makes it. Format selection for every storage mode lives in storage_builder.cpp
// and nowhere else.
//
// Layout. The master fp64 CSR (row pointers, column indices) stays where it is
// (in PETSc's SeqAIJ); the compact copy stores only the values, grouped in
// row blocks of one format each, so kernels never branch per entry:
//  - run layout: each block is a contiguous range of rows [row_begin, row_end)
//    whose values lie contiguously; the column indices and row pointers of the
//    master are read as they are. Chosen when precision changes rarely.
//  - grouped layout (the thesis's row-wise split with rows clustered by
//    precision): each block lists its rows and the offsets of their values.
//    Chosen when the runs of one precision hold fewer than kMinRunNonzeros
//    nonzeros on average (below; or fewer than min_run_rows rows, when set),
//    or when most rows are empty (the off-diagonal block of an MPI matrix).
//  - entry split (Ahmad et al.): two CSR matrices with their own indices, one
//    with the fp32 entries and one with the fp64 entries.
// Either row-wise layout may then be sliced (SELL-8, as PETSc's AIJSELL keeps a
// sliced shadow of an AIJ matrix): the block's rows in slices of kSliceRows
// consecutive block rows, each slice padded to its longest row and stored
// column-major, with its own 32-bit column indices. Entry j of the rows of a
// slice are then 8 adjacent values and 8 adjacent columns, which SIMD kernels
// read with one load, one conversion and one gather, each row still summed in
// its own order. Chosen (layout `automatic`) when padding adds at most
// kMaxSlicePadding of the block's nonzeros.
// A slice is *shifted* when its 8 rows have one length and the columns of row
// r are those of the slice's first row plus r (stencil rows in row order: a
// band). It stores one column per entry, not 8, and a kernel reads the 8 x
// entries of an entry with one plain load instead of a gather (slow on many
// CPUs, AMD Zen among them). Any other slice is *narrow* when its columns lie
// within 2^16 of its smallest one (rows of a mesh numbered with locality): it
// stores that base column and a 16-bit offset per entry, half the index bytes
// of a 32-bit column per entry (which the others keep). A slice is *patched*
// when it is shifted but for a few entries of a few rows (a stencil's slice
// that holds a grid line's first or last point, whose row lacks a neighbour):
// each entry keeps the column of a shifted slice and a mask of the rows whose
// column differs, and those few columns are stored apart. A kernel reads the
// x entries of the other rows with one masked plain load and fetches the few
// others one by one, where a gather costs as much as 8 loads.
// Or the rows may be stored in nodes (the register-blocked BCSR idea, as in
// PETSc's inodes): consecutive rows with the same column pattern share one
// list of column indices, 16-bit offsets from a base column where they fit,
// and their values are interleaved column by column, so a kernel loads each x
// entry once per node and updates all the node's rows with one SIMD
// instruction, each row still summed in its own order. Chosen (layout
// `automatic`) when the block's nodes hold kMinNodeRows rows on average.
// Split storage (modes split2 and split4) keeps every layout and stores the
// fp64 values of each block as segment planes (segments.hpp): a product reads
// the first planes only (CompactCsr::read_segments), or all of them and gets
// the exact values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "petscmp/core/big_buffer.hpp"
#include "petscmp/core/formats.hpp"
#include "petscmp/core/segments.hpp"
#include "petscmp/core/sum_order.hpp"

namespace petscmp {

enum class StorageMode : std::uint8_t {
  lossless, // per row, narrowest of fp16/bf16/fp32/fp64 that holds every value exactly
  fp32,     // uniform lossy formats (rows that would overflow/underflow stay wider)
  fp16,
  bf16,
  fp11_20,
  fp11_4,
  tolerance,  // per row, narrowest format with relative error <= tolerance for every entry
  rowsplit,   // thesis row-wise split: fp32 rows by a range test, else fp64
  entrysplit, // Ahmad et al. entry-wise split: |a| < range in fp32, else fp64
  split2,     // every value exact, as 2 segment planes of 32 bits (CPMS): products may read the first only
  split4      // every value exact, as 4 segment planes of 16 bits: products may read the first 1, 2, 3 or all
};
inline constexpr int kStorageModeCount = 11;
const char *storage_mode_name(StorageMode m);
bool parse_storage_mode(const char *name, StorageMode *m);
// True when the mode may change matrix values (everything but lossless).
// (A split mode stores the exact values; a product that reads fewer than all
// segments is lossy: see CompactCsr::read_segments.)
inline bool storage_mode_is_lossy(StorageMode m)
{
  return m != StorageMode::lossless && m != StorageMode::split2 && m != StorageMode::split4;
}
// The segments a split mode cuts each value into (0: not a split mode).
inline int storage_mode_segments(StorageMode m)
{
  return m == StorageMode::split2 ? 2 : m == StorageMode::split4 ? 4 : 0;
}

// How the rows of a block are laid out in memory (not a change of values).
enum class Layout : std::uint8_t {
  automatic, // nodes where rows share patterns, else sliced when the padding is small, else CSR order
  csr,       // values in the master's row order, indices read from the master
  sliced,    // always sliced (an error when the block has 2^31 columns or more)
  node       // always nodes (of one row where no neighbour shares the pattern)
};
inline constexpr int kLayoutCount = 4;
const char *layout_name(Layout l);
bool parse_layout(const char *name, Layout *l);

// A run must hold at least this many nonzeros on average for the run layout
// (by default; StorageOptions::min_run_rows may ask for a number of rows
// instead). Each block costs a product about 1 us on its own (its value,
// index and node streams start cold: a few DRAM latencies), while the grouped
// layout costs a row list and slices that a row of another format interrupts.
// Measured on Zen 4 (fp16, one fp32 row every L rows, products by the openmp
// backend, runs / grouped time): 27-point stencil, 1.7M rows, L = 1000 1.19,
// 2000 1.13, 4000 0.97; FEM nodes of 3 rows of 81 entries, 648k rows, L = 500
// 1.07, 1000 1.02, 2000 0.99. Break-even near 100000 nonzeros a run for both,
// where a threshold in rows (1024 before) would differ threefold. On Zen 5,
// L = 100 took 31.7 ms in 18001 runs and 14.5 ms grouped.
inline constexpr std::int64_t kMinRunNonzeros = 100000;
// StorageOptions::min_run_rows default: the run threshold is kMinRunNonzeros.
inline constexpr std::int64_t kRunsByNonzeros = -1;

struct StorageOptions {
  StorageMode mode      = StorageMode::lossless;
  double tolerance      = 1e-3; // tolerance mode: bound on each entry's relative error
  double range_factor   = 0.1;  // rowsplit: r = range_factor * mean |a|
  double row_fraction   = 0.99; // rowsplit: fraction of a row's values inside (-r, r)
  double range          = 1.0;  // entrysplit: |a| < range goes to fp32
  double mean_abs_value = -1.0; // rowsplit: mean |a| over the whole matrix (all ranks); < 0: computed from the parts
  SumOrder order        = SumOrder::sequential;
  Layout layout         = Layout::automatic;
  // shortest average run of one format kept as run blocks, in nonempty rows (tests lower it); kRunsByNonzeros:
  // kMinRunNonzeros nonzeros
  std::int64_t min_run_rows = kRunsByNonzeros;
  int threads               = 1; // OpenMP threads that write the values (build and refill); the result is the same
  // Every block stores its own column indices (nodes or slices, never CSR
  // order reading a master's): the copy is the whole matrix (ellmp). Automatic
  // then slices the blocks without nodes whatever their padding.
  bool own_indices = false;
  // SELL-C-sigma's sigma: the rows of a sliced block are sorted by decreasing
  // length within windows of this many block rows (1: never; else a multiple
  // of kSliceRows), where that stores fewer padding entries and the window
  // holds no shifted slice (stencil rows stay in order: no gathers). Products
  // are unchanged bit for bit (each row is summed alone); a transposed
  // product adds the rows in the sorted order.
  int sort_window = 1;
  // Whether slices may be patched (RowBlock); false keeps such slices narrow or gathered (the tests of those kinds).
  bool patched_slices = true;
  // Split storage: leave the blocks in fp64, the caller cuts them into segments (split_blocks) once it has joined
  // them (a copy built a range of rows at a time).
  bool split_later = false;
  // Rows [k n, (k + 1) n) with one column pattern in every part (a PETSc block of n = the block size) share one
  // format: the widest any of them needs, where one of them needs it anyway (fp16 rows with an fp32 row: fp32; fp16
  // with bf16: each its own, as their join fp32 is no row's). Such a node is then stored whole, not in pieces of one
  // format each (each piece keeps its own column indices and its own walk: ex19's fp16 Jacobians swept 3x slower in
  // pieces). 0 or 1: each row alone; rowsplit always chooses per row. With MPI, n must divide every rank's first
  // row (PETSc's layouts with a block size do), so that the formats do not depend on the number of ranks.
  int format_group = 1;
};

// A read-only view of a CSR matrix (the master copy).
template <typename Index> struct CsrView {
  Index nrows = 0, ncols = 0;
  const Index *rowptr  = nullptr;
  const Index *cols    = nullptr;
  const double *values = nullptr;
  // Optional: runs of consecutive rows known to have the same columns (PETSc's
  // inodes), run_sizes[0..runs) in row order, covering every row. The node
  // layout then compares the columns of rows only across runs, not inside one;
  // the nodes are the same either way. With run_limit > 0, a run shorter than
  // it is known to be maximal (the next row has other columns: PETSc cuts its
  // inodes only at run_limit rows), and is not compared with the next one.
  const Index *run_sizes = nullptr;
  Index runs             = 0;
  Index run_limit        = 0;
};

// Whether rows i and j of csr have the same columns (a node, or a supervariable).
template <typename Index> bool same_pattern(const CsrView<Index> &csr, std::int64_t i, std::int64_t j)
{
  const Index ni = csr.rowptr[i + 1] - csr.rowptr[i], nj = csr.rowptr[j + 1] - csr.rowptr[j];
  if (ni != nj) return false;
  if (ni == 0) return true;
  const Index *ci = csr.cols + csr.rowptr[i], *cj = csr.cols + csr.rowptr[j];
  // the first column decides most rows of a stencil, without a call to memcmp
  return ci[0] == cj[0] && std::equal(ci + 1, ci + ni, cj + 1);
}

// Value bytes, 64-byte aligned so every storage type can be read in place.
class AlignedBytes {
public:
  AlignedBytes() = default;
  explicit AlignedBytes(std::size_t n) { resize(n); }
  void resize(std::size_t n) { buffer_.allocate_zeroed(n); }
  // n bytes of undefined content: the caller writes every byte a kernel reads.
  void resize_uninitialized(std::size_t n) { buffer_.allocate(n); }
  void release() { buffer_.release(); }
  std::size_t size() const { return buffer_.size(); }
  BigBuffer &buffer() { return buffer_; }
  template <typename T> T *as() { return reinterpret_cast<T *>(buffer_.data()); }
  template <typename T> const T *as() const { return reinterpret_cast<const T *>(buffer_.data()); }

private:
  BigBuffer buffer_;
};

// Rows per slice of the sliced layout: one AVX-512 register of fp64 sums.
inline constexpr int kSliceRows = 8;
// Automatic layout: slice a block when its padded size is at most this many
// times its nonzeros (padding costs bytes a product must move). 1.5, not 1.25:
// on an irregular operator (7-19 entries a row, Morton order) whose padding
// was 32% of its nonzeros, the CSR-order kernel ran at 0.51-0.71x AIJ's speed
// in cache, the sliced one at 1.13-1.26x; from memory (150^3, slices padded by
// 5%) 0.74-0.89x against 1.10-1.28x (Zen 4, 2026-11-28).
inline constexpr double kMaxSlicePadding = 1.5;
// Automatic layout (aijmp): a block padded by more than kMaxSlicePadding in
// matrix order is sliced with its rows sorted by length within windows of this
// many rows (SELL-C-sigma) where that brings the padding within the limit,
// rather than read in CSR order. On a 7-point operator with one row in 8 of 27
// entries (Morton order; the CSR-order kernel 0.57-0.66x AIJ's speed in cache,
// 0.72-0.80x from memory) windows of 256 gave 1.17-1.33x in cache and
// 1.24-1.40x from memory, 64: 1.13-1.31x and 1.20-1.34x, 32: 0.96-1.11x
// (Zen 4, 2026-11-28).
inline constexpr int kAutoSortWindow = 256;
// Automatic layout (aijmp): where sorting within windows still leaves a block
// padded by more than kMaxSlicePadding, its rows longer than kLongRowFactor
// times the block's mean length (a constraint's dense row, a hub of a graph:
// each pads its slice by 7 times its length in any order) are set apart in a
// block of their own, and the others sliced, if that brings their padding
// within the limit; else the block is read in CSR order as before.
inline constexpr double kLongRowFactor = 4.0;

// Node layout: at most this many rows per node (one AVX-512 register of fp64
// sums), and the mean node size from which `automatic` prefers nodes. (1.5, not
// 2: where a node's rows take two formats, each format's block holds pieces of
// nodes, 2 rows on average in snes ex19's Jacobian in fp16 mode; at 2 one of
// them fell just short and was sliced: 5.28 bytes a nonzero against 5.14 as
// nodes, the same product time, and inode SOR 0.6-0.7x AIJ's speed against
// 0.9-0.96x. Rows without nodes, 1 a node, stay sliced.)
inline constexpr int kMaxNodeRows = 8;
// The values of a node block are followed by this many zero values, so that a
// kernel may read 8 values from any entry with one plain load.
inline constexpr int kNodeValuePadding = 8;
inline constexpr double kMinNodeRows   = 1.5;

// One node: `rows` consecutive matrix rows (block rows first .. first+rows-1)
// with the same `length` columns. Entry e of its row r is the value at
// values + e * rows + r; its column is col_base + offset[e] (16-bit offsets at
// byte `indices` of node_cols) or, when `wide`, the 32-bit column at that byte.
struct NodeInfo {
  std::int64_t values   = 0;
  std::int64_t indices  = 0;
  std::int64_t first    = 0;
  std::int32_t length   = 0;
  std::int32_t col_base = 0;
  std::uint8_t rows     = 0;
  std::uint8_t wide     = 0;
};

// Most patches a patched slice of width w stores: fewer than 2 per entry, so
// that a kernel fetches at most 2 x entries one by one per entry on average;
// and at most 255, counted in bytes. Its columns then take fewer bytes than a
// narrow slice's (w + ceil(w / 2) + 2w < 4w + 1 elements).
inline constexpr std::int64_t max_slice_patches(std::int64_t width)
{
  return std::min<std::int64_t>(2 * width, 255);
}
// Elements of a patched slice of width w before its patches.
inline constexpr std::int64_t patched_slice_header(std::int64_t width)
{
  return width + (width + 1) / 2;
}

// The columns of a patched slice of width w, at cols + at: w base columns
// (bases), then w bytes of patch masks and w bytes of patch counts in
// ceil(w / 2) elements, then the patches. The column of entry e of lane l is
// bases[e] + l, unless bit l of masks[e] is set: then it is patches[before[e]
// + the set bits of masks[e] below l] (before[e]: the patches of entries < e).
// Lanes without an entry e have neither (a row shorter than the slice).
struct PatchedSlice {
  const std::int32_t *bases;
  const std::uint8_t *masks;
  const std::uint8_t *before;
  const std::int32_t *patches;
  PatchedSlice(const std::int32_t *cols, std::int64_t width)
      : bases(cols), masks(reinterpret_cast<const std::uint8_t *>(cols + width)), before(masks + width),
        patches(cols + patched_slice_header(width))
  {
  }
  std::int64_t column(std::int64_t e, int lane) const
  {
    const unsigned m = masks[e];
    if (!(m >> lane & 1u)) return std::int64_t{bases[e]} + lane;
    return patches[before[e] + __builtin_popcount(m & ((1u << lane) - 1u))];
  }
};

struct RowBlock {
  Format format          = Format::fp64;
  std::int64_t row_begin = 0, row_end = 0; // run layout: rows [row_begin, row_end)
  std::int64_t value_base = 0;             // run layout, CSR order: rowptr[row_begin]
  std::vector<std::int32_t> rows;          // grouped layout: the block's rows (block row k is rows[k])
  std::vector<std::int64_t> value_offsets; // grouped layout, CSR order: row k's values at [offsets[k], offsets[k+1])
  std::int64_t nnz = 0;
  AlignedBytes values;
  // Sliced: block rows 8q..8q+7 form slice q; entry e of block row k is stored
  // at slice_offsets[q] + e * kSliceRows + k % kSliceRows (q = k / kSliceRows),
  // its value. Padding entries hold value 0 and column 0 (offset 0 in a
  // narrow slice). The columns of slice q, of width w, start at
  // at = slice_col_offsets[q], and their count there says the slice's kind:
  //  - 8w (gathered): entry e of lane l = k % kSliceRows is cols[at + 8e + l];
  //  - w (shifted): it is cols[at + e] + l;
  //  - 4w + 1 (narrow): cols[at] is the base column and the 16-bit offsets
  //    follow, two per 32-bit element: the column is base + offsets[8e + l]
  //    with offsets = (const uint16_t *)(cols + at + 1) (narrow_offsets);
  //  - w + ceil(w / 2) + P, 0 <= P <= max_slice_patches(w) (patched): see
  //    PatchedSlice; its P patches are the columns of the entries whose
  //    column is not the shifted one.
  // (The four counts differ for every w > 0; a slice of width 0 has none.)
  std::vector<std::int64_t> slice_offsets;     // slices + 1
  std::vector<std::int64_t> slice_col_offsets; // slices + 1
  BigArray<std::int32_t> row_lengths;          // kSliceRows * slices; 0 past the last row
  BigArray<std::int32_t> cols;
  // Node layout: the nodes in block-row order, covering every block row, and
  // their column indices.
  std::vector<NodeInfo> nodes;
  AlignedBytes node_cols;
  // Split storage: `values` holds `segments` planes of plane_stride entries
  // each (format fp64, segments.hpp), each plane followed by at least
  // kNodeValuePadding zeros; 0: one value per entry in `format`.
  int segments              = 0;
  std::int64_t plane_stride = 0;

  bool grouped() const { return !rows.empty(); }
  bool node_layout() const { return !nodes.empty(); }
  // The node holding block row k (node layout).
  std::int64_t node_of(std::int64_t k) const
  {
    std::int64_t lo = 0, hi = static_cast<std::int64_t>(nodes.size()); // nodes[lo].first <= k < nodes[hi].first
    while (hi - lo > 1) {
      const std::int64_t mid            = (lo + hi) / 2;
      (nodes[mid].first <= k ? lo : hi) = mid;
    }
    return lo;
  }
  bool sliced() const { return !slice_offsets.empty(); }
  std::int64_t row_count() const { return grouped() ? static_cast<std::int64_t>(rows.size()) : row_end - row_begin; }
  std::int64_t row(std::int64_t k) const { return grouped() ? rows[k] : row_begin + k; }
  std::int64_t slice_count() const { return sliced() ? static_cast<std::int64_t>(slice_offsets.size()) - 1 : 0; }
  std::int64_t slice_width(std::int64_t q) const { return (slice_offsets[q + 1] - slice_offsets[q]) / kSliceRows; }
  // Whether slice q is shifted: it stores one column per entry (its width).
  bool shifted_slice(std::int64_t q) const
  {
    const std::int64_t width = slice_width(q);
    return width > 0 && slice_col_offsets[q + 1] - slice_col_offsets[q] == width;
  }
  // Whether slice q is narrow: a base column and a 16-bit offset per entry.
  bool narrow_slice(std::int64_t q) const
  {
    const std::int64_t width = slice_width(q);
    return width > 0 && slice_col_offsets[q + 1] - slice_col_offsets[q] == narrow_slice_columns(width);
  }
  // 32-bit elements of a narrow slice's columns: the base and 8 offsets of 16 bits per entry.
  static std::int64_t narrow_slice_columns(std::int64_t width) { return 1 + width * kSliceRows / 2; }
  // Whether slice q is patched: more columns than a shifted slice, fewer than a narrow one.
  bool patched_slice(std::int64_t q) const
  {
    const std::int64_t width = slice_width(q), count = slice_col_offsets[q + 1] - slice_col_offsets[q];
    return width > 0 && count > width && count < narrow_slice_columns(width);
  }
  PatchedSlice patched_columns(std::int64_t q) const
  {
    return PatchedSlice(cols.data() + slice_col_offsets[q], slice_width(q));
  }
  std::int32_t narrow_base(std::int64_t q) const { return cols[slice_col_offsets[q]]; }
  const std::uint16_t *narrow_offsets(std::int64_t q) const
  {
    return reinterpret_cast<const std::uint16_t *>(cols.data() + slice_col_offsets[q] + 1);
  }
  // Stored entries, padding included (the zeros after a node block's values
  // are not entries).
  std::int64_t stored_count() const { return sliced() ? slice_offsets.back() : nnz; }
  // Where the value of entry e of block row k is stored; row_start is the
  // master's rowptr[row(k)].
  std::int64_t value_index(std::int64_t k, std::int64_t e, std::int64_t row_start) const
  {
    if (node_layout()) {
      const NodeInfo &nd = nodes[node_of(k)];
      return nd.values + e * nd.rows + (k - nd.first);
    }
    if (sliced()) return slice_offsets[k / kSliceRows] + e * kSliceRows + k % kSliceRows;
    if (grouped()) return value_offsets[k] + e;
    return row_start - value_base + e;
  }
  // The column of entry e of block row k of a sliced block.
  std::int64_t slice_column(std::int64_t k, std::int64_t e) const
  {
    const std::int64_t q = k / kSliceRows, lane = k % kSliceRows, at = slice_col_offsets[q];
    if (shifted_slice(q)) return cols[at + e] + lane;
    if (narrow_slice(q)) return std::int64_t{narrow_base(q)} + narrow_offsets(q)[e * kSliceRows + lane];
    if (patched_slice(q)) return patched_columns(q).column(e, static_cast<int>(lane));
    return cols[at + e * kSliceRows + lane];
  }
  // Distance between consecutive entries of block row k.
  std::int64_t value_stride(std::int64_t k = 0) const
  {
    return node_layout() ? nodes[node_of(k)].rows : sliced() ? kSliceRows : 1;
  }
  // The units values are written and read by: nodes, slices, or single rows,
  // in block-row order.
  std::int64_t unit_count() const
  {
    return node_layout() ? static_cast<std::int64_t>(nodes.size()) : sliced() ? slice_count() : row_count();
  }
  // The first block row of unit i, and one past its last.
  std::int64_t unit_begin(std::int64_t i) const
  {
    return node_layout() ? nodes[i].first : sliced() ? i * kSliceRows : i;
  }
  std::int64_t unit_end(std::int64_t i) const { return i + 1 < unit_count() ? unit_begin(i + 1) : row_count(); }
  // Where the values of unit i start (units' values follow each other in unit
  // order); i = unit_count(): the end of the last unit's values. rowptr: the
  // master's row pointers (the CSR order of a run block).
  template <typename Index> std::int64_t unit_value_begin(std::int64_t i, const Index *rowptr) const
  {
    const bool past = i >= unit_count();
    if (node_layout()) return past ? nnz : nodes[static_cast<std::size_t>(i)].values;
    if (sliced()) return slice_offsets[static_cast<std::size_t>(i)];
    if (past) return nnz;
    return grouped() ? value_offsets[static_cast<std::size_t>(i)] : rowptr[row(i)] - value_base;
  }
};

// One part of an entry split: a CSR matrix of its own over all rows.
struct SplitPart {
  Format format = Format::fp64;
  std::vector<std::int64_t> rowptr; // nrows + 1
  std::vector<std::int32_t> cols;
  AlignedBytes values;
};

struct FormatStats {
  std::int64_t rows = 0, nnz = 0;
  double max_relative_error = 0.0; // largest |stored - a| / |a| actually introduced (see errors_measured)
};

struct StorageStats {
  FormatStats per_format[kFormatCount];
  std::int64_t nrows = 0, nnz = 0;
  std::int64_t stored                          = 0; // values stored: nnz plus the padding of sliced blocks
  std::int64_t sliced_rows                     = 0; // rows of sliced blocks
  std::int64_t shifted_rows                    = 0; // rows of shifted slices (one column per entry of 8 rows)
  std::int64_t narrow_rows                     = 0; // rows of narrow slices (16-bit column offsets)
  std::int64_t patched_rows                    = 0; // rows of patched slices (shifted but for a few entries)
  std::int64_t node_rows                       = 0; // rows of node blocks
  std::int64_t nodes                           = 0; // nodes of node blocks
  std::int64_t wide_nodes                      = 0; // nodes whose columns span more than 16-bit offsets
  std::int64_t sorted_windows                  = 0; // windows sorted by length (sort_window or kAutoSortWindow)
  std::int64_t long_rows                       = 0; // rows set apart for their length (kLongRowFactor)
  std::int64_t nodes_of_size[kMaxNodeRows + 1] = {};
  std::int64_t value_bytes                     = 0; // bytes of stored values
  std::int64_t index_bytes = 0; // bytes of indices a MatMult reads (columns, row pointers, row lists, offsets)
  int index_size           = 4; // bytes of one master index
  // Whether per_format[].max_relative_error holds the measured changes. A
  // lossy build or refill does not track them (a quarter of a bf16 refill):
  // measure_relative_errors does, when they are asked for.
  bool errors_measured = true;
  double aij_bytes() const
  {
    return static_cast<double>(nnz) * (8 + index_size) + static_cast<double>(nrows + 1) * index_size;
  }
  double bytes() const { return static_cast<double>(value_bytes + index_bytes); }
  double max_relative_error() const;
};

struct CompactCsr {
  std::int64_t nrows = 0, ncols = 0;
  StorageMode mode          = StorageMode::lossless;
  SumOrder order            = SumOrder::sequential;
  Layout layout_option      = Layout::automatic; // the layout option it was built with
  std::int64_t min_run_rows = kRunsByNonzeros;   // and its run threshold
  bool own_indices          = false;             // and StorageOptions::own_indices
  int sort_window           = 1;                 // and StorageOptions::sort_window
  bool patched_slices       = true;              // and StorageOptions::patched_slices
  bool all_rows_covered     = true; // every row belongs to a block (run layout); else unlisted rows are empty
  // Its column indices went back to the system with its values (CompactValuesRelease of a copy of zeros): only its
  // shape and statistics remain; its layout is not reused, its pattern not compared, its columns not read.
  bool indices_released = false;
  bool zeroed           = false; // zero_compact_values made its values 0 (since its build)
  std::vector<RowBlock> blocks;  // row-wise layouts
  std::vector<SplitPart> split;  // entry split (blocks empty)
  // Split storage: the segments of each value products read, from the most
  // significant (0: all, the exact values; see segment_read_bound).
  int read_segments = 0;
  StorageStats stats;
  bool entry_split() const { return !split.empty(); }
  // Whether each block's rows ascend with its block rows (no window sorted by
  // length): its units can be read, refilled and given back in row order.
  bool rows_in_order() const { return !entry_split() && stats.sorted_windows == 0; }
};

// Calls fn(type_tag<S>{}) with the storage type products read block b as: its
// format, or for split storage the type that reads `read` segments (0: all).
template <typename Fn> decltype(auto) dispatch_block_values(const RowBlock &b, int read, Fn &&fn)
{
  if (b.segments > 1) return dispatch_segments(b.segments, read, fn);
  return dispatch_format(b.format, fn);
}
// Block b's values read as S (from dispatch_block_values): a plain pointer,
// or a segment_ptr over its planes (plane 0 alone for the head's format).
template <typename S> storage_pointer_t<S> values_of(const RowBlock &b)
{
  if constexpr (std::is_pointer_v<storage_pointer_t<S>>)
    return b.values.as<S>();
  else
    return {b.values.as<typename storage_pointer_t<S>::word>(), static_cast<std::ptrdiff_t>(b.plane_stride)};
}

class StorageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Sum of |a| and count over the finite nonzeros: the statistic rowsplit's range
// needs, to be reduced over all ranks by the caller.
struct AbsSum {
  double sum         = 0.0;
  std::int64_t count = 0;
};
template <typename Index> AbsSum abs_value_sum(const CsrView<Index> &csr);

// The format of every row, decided over all parts (an MPI matrix's diagonal and
// off-diagonal blocks hold pieces of the same rows). Not used by entrysplit.
template <typename Index>
std::vector<Format> choose_row_formats(const std::vector<CsrView<Index>> &parts, const StorageOptions &opts);

// Builds the compact copy of one part with the given row formats. The memory
// of `recycle` (a copy being replaced, may be null) is reused and its blocks
// are left empty.
template <typename Index>
CompactCsr assemble_compact_csr(const CsrView<Index> &csr, const std::vector<Format> &row_formats,
                                const StorageOptions &opts, CompactCsr *recycle = nullptr);

// The value-only rebuild: rewrites the values of `copy`, built by
// assemble_compact_csr from a matrix with csr's nonzero pattern (the caller
// knows: same nonzero state and arrays), when it was built with the same mode,
// sum order and layout option and every row with values keeps its format.
// Blocks, layout, nodes, slices and indices are kept, so the result is the one
// a full build would give, at the cost of rewriting the values. Returns false
// when any of this does not hold; copy's values are then undefined (the
// caller assembles anew, lending copy's memory).
// row_formats: from choose_row_formats over all parts (an MPI matrix).
template <typename Index>
bool refill_compact_values(const CsrView<Index> &csr, const std::vector<Format> &row_formats,
                           const StorageOptions &opts, CompactCsr &copy);
// A single-part matrix: each row's format is decided just before its values
// are written, in one pass over the values (rowsplit, whose range is a mean
// over the whole matrix, takes one more pass for that mean unless
// opts.mean_abs_value gives it).
template <typename Index>
bool refill_compact_values(const CsrView<Index> &csr, const StorageOptions &opts, CompactCsr &copy);

// Convenience: choose formats for a single matrix and assemble (any mode).
template <typename Index>
CompactCsr build_compact_csr(const CsrView<Index> &csr, const StorageOptions &opts, CompactCsr *recycle = nullptr);

// One part of a matrix whose rows are spread over several parts (an MPI
// matrix's diagonal and off-diagonal blocks), with its compact copy.
template <typename Index> struct CompactPart {
  CsrView<Index> csr;
  StorageOptions opts;   // the part's own (sum order, threads); the same row-wise mode in every part
  CompactCsr copy;       // in: the copy being replaced, whose memory is reused; out: the new copy
  bool reusable = false; // in: copy was made from csr's nonzero pattern (same nonzero state and arrays)
  bool refilled = false; // out: only copy's values were rewritten
};
// Brings the copy of every part up to date, each row in the format decided
// over all parts (choose_row_formats; rowsplit needs opts.mean_abs_value).
// Usually in one pass over the values: reusable copies are refilled and the
// others built for one guessed format, the rows checked as they are written;
// when a row needs another format, the formats are chosen first and each part
// is refilled or assembled with them.
template <typename Index> void update_compact_parts(std::vector<CompactPart<Index>> &parts);

// update_compact_parts for a matrix that has no copy to reuse, a range of rows
// at a time: each range holds about step_nnz nonzeros of all parts together
// (the first ones fewer, from step_nnz / 64 up by a quarter each) and starts
// where a run of parts[0].csr.run_sizes starts. Each range is built
// as update_compact_parts builds a whole matrix, its relative changes are
// measured, and then rows_done(r) says that rows [0, r) of every part will
// not be read again, so that the caller may give their memory back while the
// copies grow (ellmp: the peak memory of an assembly stays that of the
// assembly matrix). The copies hold what a whole build gives (values,
// formats, summation order); blocks, nodes and slices end at range ends.
// Every part needs opts.own_indices (the copies may not read the master
// afterwards). With step_nnz <= 0, or all nonzeros in one step, the whole
// matrix is one range. The parts' copies on entry are dropped first.
template <typename Index>
void build_compact_parts_by_rows(std::vector<CompactPart<Index>> &parts, std::int64_t step_nnz,
                                 const std::function<void(std::int64_t)> &rows_done);

// The value-only refill of update_compact_parts for copies whose matrix is
// given back as they are refilled (a reassembly, see
// build_compact_parts_by_rows): every part is reusable, and each range of
// rows (as there) is written into the copies, each row confirmed in its
// format as it is written; then rows_done(r) says that rows [0, r) of every
// part will not be read again. Returns false, having done nothing, where the
// copies cannot be refilled so (not reusable, entry split, split or sorted
// blocks, rowsplit without opts.mean_abs_value): update_compact_parts then.
// When a row needs another format after rows were given back, restore(i, r)
// must put rows [0, r) of part i back into its matrix (read_compact_csr of
// parts[i].copy up to row r: its new values, in the formats they kept) and
// take them as not given back; then each part is built anew a range of rows
// at a time (build_compact_parts_by_rows: rows_done is called again from the
// first range) with those rows' formats and the formats chosen for the
// others: the result is that of update_compact_parts, refilled false.
template <typename Index>
bool refill_compact_parts_by_rows(std::vector<CompactPart<Index>> &parts, std::int64_t step_nnz,
                                  const std::function<void(std::int64_t)> &rows_done,
                                  const std::function<void(std::size_t, std::int64_t)> &restore);

// Fills copy.stats.per_format[].max_relative_error, the largest relative
// change |stored - a| / |a| of an entry of each format (Inf where a value
// became Inf or 0 from a nonzero), and sets errors_measured; nothing to do
// when they are measured already. One pass over csr's values, which must be
// the values copy holds (its master, unchanged since the build or refill);
// the compact values themselves are not read (they may have been dropped).
template <typename Index> void measure_relative_errors(const CsrView<Index> &csr, CompactCsr &copy);

// Builds the entry split of one part.
template <typename Index> CompactCsr build_entry_split(const CsrView<Index> &csr, const StorageOptions &opts);

} // namespace petscmp
