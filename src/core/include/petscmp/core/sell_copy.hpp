// The SELL-C copy of a compact matrix that thread-per-row kernels read: the
// GPU backends' layout (the thesis' ELLPACK-R in slices: C = 32 rows, one
// thread per row, entry e of the slice's rows stored next to each other, so a
// warp's reads of one entry are one coalesced transaction).
//
// It is made from a CompactCsr, never from the fp64 matrix: the formats the
// storage builder chose (the one place that decides them) are kept, and each
// stored value is copied bit for bit, whatever layout the CPU copy has (CSR
// order, slices of 8, nodes, split segments). Rows are grouped by storage
// format, one part per format, so a kernel launch decodes one type only.
// Every row of the matrix is in exactly one part (rows of no CPU block as
// empty lanes), so a product writes all of y.
//
// Long rows (more than kWarpRowLength stored entries) have parts of their own,
// one per format, summed by a warp each (32 threads load and multiply, one
// adds the products in the row's order): one thread walking thousands of
// entries would hold up its slice, and a long row in a slice of short ones
// would pad all 32 lanes to its length. Those parts are slices of one row
// (C = 1: a row's entries one after the other).
//
// Host memory only: a backend uploads the arrays as they are (cuda_hip/).
#pragma once

#include <cstdint>
#include <vector>

#include "petscmp/core/compact_csr.hpp"

namespace petscmp {

// Slice height of the GPU backends: one warp of NVIDIA hardware.
inline constexpr int kGpuSliceRows = 32;
// Rows with more stored entries than this are summed by a warp (see above).
inline constexpr std::int64_t kWarpRowLength = 256;

struct SellPart {
  Format format             = Format::fp64;
  int segments              = 0; // split storage: the values are `segments` planes of plane_stride entries
  std::int64_t plane_stride = 0;
  std::int64_t slices       = 0;
  std::vector<std::int32_t> rows;          // slices * C lanes: the lane's matrix row, -1 past the last row
  std::vector<std::int32_t> lengths;       // slices * C lanes: stored entries of the lane's row
  std::vector<std::int64_t> slice_offsets; // slices + 1: entry e of lane l of slice q at offsets[q] + e C + l
  // The column of every stored entry: 32 bits (cols), or, where the columns of
  // every slice of the part lie within 2^16 of the slice's smallest
  // (slice_base[q]; rows of a mesh numbered with locality), a 16-bit offset
  // from it (narrow_cols; cols is then empty): half the index bytes. Padding
  // entries: column 0 (offset 0), value 0.
  BigArray<std::int32_t> cols; // (in huge pages where large, as the values)
  BigArray<std::uint16_t> narrow_cols;
  std::vector<std::int32_t> slice_base;
  AlignedBytes values;    // one value per stored entry in `format` (or the segment planes)
  bool warp_rows = false; // long rows, a warp each: slices of one row
  std::int64_t stored() const { return slice_offsets.empty() ? 0 : slice_offsets.back(); }
  bool narrow() const { return !slice_base.empty(); }
};

struct SellCopy {
  std::int64_t nrows = 0, ncols = 0;
  SumOrder order = SumOrder::sequential;
  int slice_rows = kGpuSliceRows;
  std::vector<SellPart> parts;
  std::int64_t nnz = 0;
  // Rows per slice of part p: slice_rows, or 1 for warp-per-row parts.
  int rows_per_slice(const SellPart &p) const { return p.warp_rows ? 1 : slice_rows; }
  // Bytes a product reads: values, columns, row numbers and lengths.
  std::int64_t bytes() const;
};

// The SELL copy of A (rows of A's pattern: rowptr and cols are the master's,
// read for blocks in CSR order). An entry split (two CSR parts) has no row
// formats to keep: StorageError. So is a matrix with 2^31 rows or columns.
// threads > 1: the slices are filled by that many OpenMP threads (the copy is
// the same).
template <typename Index>
SellCopy make_sell_copy(const CompactCsr &A, const Index *rowptr, const Index *cols, int slice_rows = kGpuSliceRows,
                        int threads = 1);

// The SELL copy of A^T as products of A read it at `read` segments of split
// storage (0: all): a product with it is A^T x, summed as PETSc's SeqAIJ sums
// MatMultTranspose (each y_j from z_j, adding a_ij x_i for the rows i of A in
// ascending order), so bitwise the reference backend's spmv_transpose. Each
// row of A^T mixes entries of rows of A stored in different formats: it is
// stored in the narrowest format that holds all of them exactly (the builder's
// lossless choice over the values A's products read), never rounded again.
// One copy per read level.
template <typename Index>
SellCopy make_sell_transpose(const CompactCsr &A, const Index *rowptr, const Index *cols, int read = 0,
                             int slice_rows = kGpuSliceRows, int threads = 1);

} // namespace petscmp
