// Reading a compact copy row by row, for matrices whose compact values are the
// only copy (ellmp): such a copy must not lean on a master CSR, so every block
// stores its own column indices (sliced or node layout, or an entry split).
// The rows are decoded to fp64 exactly (decoding never rounds), so what these
// functions return is what the products multiply by.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "petscmp/core/compact_csr.hpp"

namespace petscmp {

// Whether the copy holds its own column indices everywhere: products and row
// reads then need nothing but the copy (StorageOptions::own_indices asks the
// builder for such a copy).
bool self_contained(const CompactCsr &c);

// Where each row of a row-wise copy is stored: its block and its position in
// the block. Made once per copy, when rows are read one at a time.
class CompactRowMap {
public:
  CompactRowMap() = default;
  explicit CompactRowMap(const CompactCsr &c);
  bool empty() const { return where_.empty(); }
  // The row's block, or -1 when no block holds it (an empty row).
  std::int64_t block_of(std::int64_t row) const { return where_[row] < 0 ? -1 : where_[row] >> kPositionBits; }
  std::int64_t position_of(std::int64_t row) const { return where_[row] & ((std::int64_t{1} << kPositionBits) - 1); }

private:
  static constexpr int kPositionBits = 40;
  std::vector<std::int64_t> where_;
};

// Reads a copy's rows in ascending order, each at most once, without a row
// map (8 bytes a row, a seventh of a byte per nonzero of a 7-point stencil):
// each block's next row is kept, the blocks in a heap by that row. A copy with
// rows sorted by length (sort_window) is read through a row map.
class CompactRowReader {
public:
  explicit CompactRowReader(const CompactCsr &c);
  // Row `row`'s columns and fp64 values in column order (cols and vals resized).
  template <typename Index> void read(std::int64_t row, std::vector<Index> &cols, std::vector<double> &vals);

private:
  const CompactCsr &copy_;
  CompactRowMap map_;                                       // (rows out of order only)
  std::vector<std::int64_t> next_;                          // per block: its next block row
  std::vector<std::pair<std::int64_t, std::int64_t>> heap_; // (row, block), least row on top
};

// Entries stored in one row (padding excluded).
std::int64_t compact_row_length(const CompactCsr &c, const CompactRowMap &map, std::int64_t row);
// The row's columns and fp64 values in column order; cols and vals hold compact_row_length entries.
template <typename Index>
void read_compact_row(const CompactCsr &c, const CompactRowMap &map, std::int64_t row, Index *cols, double *vals);

// The entries of every row: lengths[row] for each of c.nrows rows.
template <typename Index> void compact_row_lengths(const CompactCsr &c, Index *lengths);
// The whole matrix in CSR order: rowptr from compact_row_lengths (prefix sums),
// cols and vals filled (nnz entries each). Either may be null (the values or the pattern only).
// rows >= 0: only rows [0, rows) are written (the others are not touched).
template <typename Index>
void read_compact_csr(const CompactCsr &c, const Index *rowptr, Index *cols, double *vals, std::int64_t rows = -1);

// Whether the copy stores exactly csr's pattern (row lengths and columns; the
// values are not compared): one pass over the column indices.
template <typename Index> bool compact_has_pattern(const CompactCsr &c, const CsrView<Index> &csr);

// d[i] = the stored entry (i, i + col_shift), 0 where the row has none.
void compact_diagonal(const CompactCsr &c, std::int64_t col_shift, double *d);

// Makes every stored value 0 (formats and layout kept: 0 is exact in each).
void zero_compact_values(CompactCsr &c);

// Gives the memory of a copy's values back to the system as its rows are read
// for the last time (a reassembly: the rows go into an assembly matrix, and the
// values are written anew when it is stored). operator()(rows): rows [0, rows)
// were read; the 2 MiB pages holding only values of units (nodes, slices)
// whose rows all lie below are given back, and read as zeros from then on
// (whole huge pages: written again, they are huge pages again). Blocks of
// split storage or with rows sorted by length (sort_window) keep their values.
// The copy's values are undefined afterwards until they are all rewritten (a
// value-only refill or a new build); its layout and indices are untouched,
// unless with_indices: then the units' column indices go back too (4 KiB
// pages, as they will not be written again), and the copy is marked
// indices_released from the start (a copy of zeros reopened, as a DM's
// preallocation leaves it: its layout is not worth its indices' memory on
// top of the assembly matrix; the new values are stored by a new build).
class CompactValuesRelease {
public:
  explicit CompactValuesRelease(CompactCsr &c, bool with_indices = false);
  void operator()(std::int64_t rows);

private:
  CompactCsr &copy_;
  bool with_indices_;
  std::vector<std::int64_t> next_unit_; // per block: the first unit not yet given back
};

// Whether the copy holds a pattern without values: built from values that
// were all +0 (every value byte zero), as a DM assembles a matrix before the
// application's values. False for a copy zero_compact_values zeroed (its
// layout was made for the values before, which the next ones likely fit:
// MatZeroEntries in a Newton loop), and for split storage and entry split
// (not looked at).
bool compact_holds_a_pattern(const CompactCsr &c);

// Bytes the copy occupies in memory (values, indices, block bookkeeping).
std::int64_t compact_memory_bytes(const CompactCsr &c);

} // namespace petscmp
