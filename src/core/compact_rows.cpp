// Row reads of self-contained compact copies (see compact_rows.hpp).
#include "petscmp/core/compact_rows.hpp"

#include <algorithm>
#include <functional>
#include <cstdint>
#include <cstring>

namespace petscmp {

namespace {

void require_self_contained(const RowBlock &b)
{
  if (!b.sliced() && !b.node_layout())
    throw StorageError("petscmp: this compact copy reads its column indices from a CSR master it does not hold");
}

// fn(col, value_index) for every entry of block row k, in column order.
template <typename Fn> void for_each_entry(const RowBlock &b, std::int64_t k, Fn &&fn)
{
  require_self_contained(b);
  if (b.node_layout()) {
    const NodeInfo &nd      = b.nodes[b.node_of(k)];
    const std::int64_t r    = k - nd.first;
    const unsigned char *at = b.node_cols.as<unsigned char>() + nd.indices;
    for (std::int64_t e = 0; e < nd.length; ++e) {
      const std::int64_t col = nd.wide ? std::int64_t{reinterpret_cast<const std::int32_t *>(at)[e]}
                                       : nd.col_base + std::int64_t{reinterpret_cast<const std::uint16_t *>(at)[e]};
      fn(col, nd.values + e * nd.rows + r);
    }
    return;
  }
  const std::int64_t n = b.row_lengths[static_cast<std::size_t>(k)];
  for (std::int64_t e = 0; e < n; ++e)
    fn(b.slice_column(k, e), b.value_index(k, e, 0));
}

std::int64_t block_row_length(const RowBlock &b, std::int64_t k)
{
  require_self_contained(b);
  return b.node_layout() ? b.nodes[b.node_of(k)].length : b.row_lengths[static_cast<std::size_t>(k)];
}

// fn(value) with the block's stored value at index i decoded to fp64 (split
// storage: every segment, the exact value).
template <typename Fn> void with_decoder(const RowBlock &b, Fn &&fn)
{
  dispatch_block_values(b, 0, [&](auto tag) {
    using S           = typename decltype(tag)::type;
    const auto values = values_of<S>(b);
    fn([values](std::int64_t i) { return decode(values[i]); });
  });
}

// Entries (col, value) of row i of both parts of an entry split, merged in column order.
template <typename Fn> void for_each_split_entry(const CompactCsr &c, std::int64_t i, Fn &&fn)
{
  const SplitPart &a = c.split[0];
  const SplitPart *b = c.split.size() > 1 ? &c.split[1] : nullptr;
  auto value         = [](const SplitPart &p, std::int64_t at) {
    return dispatch_format(p.format, [&](auto tag) {
      using S = typename decltype(tag)::type;
      return decode(p.values.as<S>()[at]);
    });
  };
  std::int64_t ea = a.rowptr[i], eb = b ? b->rowptr[i] : 0;
  const std::int64_t enda = a.rowptr[i + 1], endb = b ? b->rowptr[i + 1] : 0;
  while (ea < enda || eb < endb) {
    if (eb >= endb || (ea < enda && a.cols[ea] < b->cols[eb])) {
      fn(std::int64_t{a.cols[ea]}, value(a, ea));
      ++ea;
    } else {
      fn(std::int64_t{b->cols[eb]}, value(*b, eb));
      ++eb;
    }
  }
}

} // namespace

bool self_contained(const CompactCsr &c)
{
  if (c.entry_split()) return true;
  return std::all_of(c.blocks.begin(), c.blocks.end(),
                     [](const RowBlock &b) { return b.row_count() == 0 || b.sliced() || b.node_layout(); });
}

CompactRowMap::CompactRowMap(const CompactCsr &c) : where_(static_cast<std::size_t>(c.nrows), -1)
{
  for (std::size_t blk = 0; blk < c.blocks.size(); ++blk) {
    const RowBlock &b = c.blocks[blk];
    for (std::int64_t k = 0; k < b.row_count(); ++k)
      where_[static_cast<std::size_t>(b.row(k))] = (static_cast<std::int64_t>(blk) << kPositionBits) | k;
  }
}

CompactRowReader::CompactRowReader(const CompactCsr &c) : copy_(c), next_(c.blocks.size(), 0)
{
  if (c.entry_split()) return;
  if (!c.rows_in_order()) {
    map_ = CompactRowMap(c);
    return;
  }
  for (std::size_t blk = 0; blk < c.blocks.size(); ++blk)
    if (c.blocks[blk].row_count() > 0) heap_.emplace_back(c.blocks[blk].row(0), static_cast<std::int64_t>(blk));
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
}

template <typename Index>
void CompactRowReader::read(std::int64_t row, std::vector<Index> &cols, std::vector<double> &vals)
{
  if (copy_.entry_split() || !map_.empty()) {
    const std::int64_t n = compact_row_length(copy_, map_, row);
    cols.resize(static_cast<std::size_t>(n));
    vals.resize(static_cast<std::size_t>(n));
    if (n) read_compact_row(copy_, map_, row, cols.data(), vals.data());
    return;
  }
  const auto advance = [&](std::int64_t blk, std::int64_t k) { // block blk's next block row is k
    next_[static_cast<std::size_t>(blk)] = k;
    const RowBlock &b                    = copy_.blocks[static_cast<std::size_t>(blk)];
    if (k < b.row_count()) {
      heap_.emplace_back(b.row(k), blk);
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
    }
  };
  cols.clear();
  vals.clear();
  while (!heap_.empty() && heap_.front().first <= row) {
    const auto [at, blk] = heap_.front();
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    heap_.pop_back();
    const RowBlock &b = copy_.blocks[static_cast<std::size_t>(blk)];
    std::int64_t k    = next_[static_cast<std::size_t>(blk)];
    if (at == row) {
      with_decoder(b, [&](auto value) {
        for_each_entry(b, k, [&](std::int64_t col, std::int64_t i) {
          cols.push_back(static_cast<Index>(col));
          vals.push_back(value(i));
        });
      });
      ++k;
    } else // rows not asked for: skipped (a block's rows ascend)
      while (k < b.row_count() && b.row(k) < row)
        ++k;
    advance(blk, k);
    if (at == row) break;
  }
}

std::int64_t compact_row_length(const CompactCsr &c, const CompactRowMap &map, std::int64_t row)
{
  if (c.entry_split()) {
    std::int64_t n = 0;
    for (const SplitPart &p : c.split)
      n += p.rowptr[row + 1] - p.rowptr[row];
    return n;
  }
  const std::int64_t blk = map.block_of(row);
  return blk < 0 ? 0 : block_row_length(c.blocks[blk], map.position_of(row));
}

template <typename Index>
void read_compact_row(const CompactCsr &c, const CompactRowMap &map, std::int64_t row, Index *cols, double *vals)
{
  if (c.indices_released) throw StorageError("petscmp: the column indices of this copy were given back");
  std::int64_t n = 0;
  if (c.entry_split()) {
    for_each_split_entry(c, row, [&](std::int64_t col, double v) {
      cols[n]   = static_cast<Index>(col);
      vals[n++] = v;
    });
    return;
  }
  const std::int64_t blk = map.block_of(row);
  if (blk < 0) return;
  const RowBlock &b = c.blocks[blk];
  with_decoder(b, [&](auto value) {
    for_each_entry(b, map.position_of(row), [&](std::int64_t col, std::int64_t at) {
      cols[n]   = static_cast<Index>(col);
      vals[n++] = value(at);
    });
  });
}

template <typename Index> void compact_row_lengths(const CompactCsr &c, Index *lengths)
{
  std::fill(lengths, lengths + c.nrows, Index{0});
  if (c.entry_split()) {
    for (const SplitPart &p : c.split)
      for (std::int64_t i = 0; i < c.nrows; ++i)
        lengths[i] += static_cast<Index>(p.rowptr[i + 1] - p.rowptr[i]);
    return;
  }
  for (const RowBlock &b : c.blocks)
    for (std::int64_t k = 0; k < b.row_count(); ++k)
      lengths[b.row(k)] = static_cast<Index>(block_row_length(b, k));
}

template <typename Index>
void read_compact_csr(const CompactCsr &c, const Index *rowptr, Index *cols, double *vals, std::int64_t rows)
{
  if (cols && c.indices_released) throw StorageError("petscmp: the column indices of this copy were given back");
  const std::int64_t end = rows < 0 ? c.nrows : std::min(rows, c.nrows);
  if (c.entry_split()) {
    for (std::int64_t i = 0; i < end; ++i) {
      std::int64_t at = rowptr[i];
      for_each_split_entry(c, i, [&](std::int64_t col, double v) {
        if (cols) cols[at] = static_cast<Index>(col);
        if (vals) vals[at] = v;
        ++at;
      });
    }
    return;
  }
  for (const RowBlock &b : c.blocks)
    with_decoder(b, [&](auto value) {
      for (std::int64_t k = 0; k < b.row_count(); ++k) {
        if (b.row(k) >= end) continue;
        std::int64_t at = rowptr[b.row(k)];
        for_each_entry(b, k, [&](std::int64_t col, std::int64_t vi) {
          if (cols) cols[at] = static_cast<Index>(col);
          if (vals) vals[at] = value(vi);
          ++at;
        });
      }
    });
}

template <typename Index> bool compact_has_pattern(const CompactCsr &c, const CsrView<Index> &csr)
{
  if (c.indices_released) return false; // (unknown: no columns to compare)
  const std::int64_t nnz = csr.nrows ? static_cast<std::int64_t>(csr.rowptr[csr.nrows]) : 0;
  if (c.nrows != csr.nrows || c.ncols != csr.ncols || c.stats.nnz != nnz) return false;
  if (c.entry_split()) {
    for (std::int64_t i = 0; i < c.nrows; ++i) {
      std::int64_t at = csr.rowptr[i];
      bool same       = true;
      for_each_split_entry(
          c, i, [&](std::int64_t col, double) { same = same && at < csr.rowptr[i + 1] && csr.cols[at++] == col; });
      if (!same || at != csr.rowptr[i + 1]) return false;
    }
    return true;
  }
  // every stored row as long as csr's and with its columns; as the totals agree, the rows no block holds are empty
  for (const RowBlock &b : c.blocks)
    for (std::int64_t k = 0; k < b.row_count(); ++k) {
      const std::int64_t row = b.row(k);
      std::int64_t at        = csr.rowptr[row];
      if (block_row_length(b, k) != csr.rowptr[row + 1] - at) return false;
      bool same = true;
      for_each_entry(b, k, [&](std::int64_t col, std::int64_t) { same = same && csr.cols[at++] == col; });
      if (!same) return false;
    }
  return true;
}

void compact_diagonal(const CompactCsr &c, std::int64_t col_shift, double *d)
{
  std::fill(d, d + c.nrows, 0.0);
  if (c.entry_split()) {
    for (std::int64_t i = 0; i < c.nrows; ++i)
      for_each_split_entry(c, i, [&](std::int64_t col, double v) {
        if (col == i + col_shift) d[i] = v;
      });
    return;
  }
  for (const RowBlock &b : c.blocks)
    with_decoder(b, [&](auto value) {
      for (std::int64_t k = 0; k < b.row_count(); ++k) {
        const std::int64_t row = b.row(k);
        for_each_entry(b, k, [&](std::int64_t col, std::int64_t vi) {
          if (col == row + col_shift) d[row] = value(vi);
        });
      }
    });
}

void zero_compact_values(CompactCsr &c)
{
  for (RowBlock &b : c.blocks)
    if (b.values.size()) std::memset(b.values.buffer().data(), 0, b.values.size());
  for (SplitPart &p : c.split)
    if (p.values.size()) std::memset(p.values.buffer().data(), 0, p.values.size());
  for (FormatStats &f : c.stats.per_format)
    f.max_relative_error = 0.0;
  c.stats.errors_measured = true;
  c.zeroed                = true;
}

CompactValuesRelease::CompactValuesRelease(CompactCsr &c, bool with_indices)
    : copy_(c), with_indices_(with_indices && c.rows_in_order()), next_unit_(c.blocks.size(), 0)
{
  if (with_indices_) copy_.indices_released = true;
}

bool compact_holds_a_pattern(const CompactCsr &c)
{
  if (c.entry_split() || c.zeroed) return false;
  for (const RowBlock &b : c.blocks) {
    if (b.segments || (b.nnz > 0 && !b.values.size())) return false;
    const unsigned char *v = b.values.as<unsigned char>();
    const std::size_t n    = b.values.size();
    std::size_t i          = 0;
    for (; i + 8 <= n; i += 8) { // (8 bytes at a time: a copy of zeros is read whole)
      std::uint64_t word;
      std::memcpy(&word, v + i, 8);
      if (word) return false;
    }
    for (; i < n; ++i)
      if (v[i]) return false;
  }
  return true;
}

void CompactValuesRelease::operator()(std::int64_t rows)
{
  if (!copy_.rows_in_order()) return; // (rows of a unit out of order: kept)
  for (std::size_t j = 0; j < copy_.blocks.size(); ++j) {
    RowBlock &b = copy_.blocks[j];
    if (b.segments || !(b.sliced() || b.node_layout()) || !b.values.size()) continue;
    const std::int64_t units = b.unit_count();
    std::int64_t &next       = next_unit_[j];
    const std::int64_t first = next;
    while (next < units && b.row(b.unit_end(next) - 1) < rows) // (a block's rows ascend)
      ++next;
    if (next == first) continue;
    const auto value_at = [&](std::int64_t unit) { // where unit's values start, in stored values
      if (unit == units) return b.stored_count();
      return b.node_layout() ? b.nodes[unit].values : b.slice_offsets[unit];
    };
    const std::size_t bytes = format_bytes(b.format);
    unsigned char *values   = b.values.as<unsigned char>();
    // whole huge pages, from the one where the last call stopped (its bytes before were read then), never before
    // the buffer: the values written again come back as huge pages
    const std::uintptr_t from =
        reinterpret_cast<std::uintptr_t>(values + value_at(first) * bytes) & ~((std::uintptr_t(1) << 21) - 1);
    discard_huge_pages(std::max(values, reinterpret_cast<unsigned char *>(from)), values + value_at(next) * bytes);
    if (!with_indices_) continue;
    if (b.node_layout()) {
      const unsigned char *indices = b.node_cols.as<unsigned char>();
      const std::int64_t end = next == units ? static_cast<std::int64_t>(b.node_cols.size()) : b.nodes[next].indices;
      discard_pages(indices + b.nodes[first].indices, indices + end);
    } else
      discard_pages(b.cols.data() + b.slice_col_offsets[first], b.cols.data() + b.slice_col_offsets[next]);
  }
}

std::int64_t compact_memory_bytes(const CompactCsr &c)
{
  std::int64_t bytes = static_cast<std::int64_t>(sizeof(CompactCsr));
  for (const RowBlock &b : c.blocks) {
    bytes += static_cast<std::int64_t>(sizeof(RowBlock) + b.values.size() + b.node_cols.size());
    bytes += static_cast<std::int64_t>(b.rows.capacity() * sizeof(std::int32_t) +
                                       b.value_offsets.capacity() * sizeof(std::int64_t));
    bytes +=
        static_cast<std::int64_t>((b.slice_offsets.capacity() + b.slice_col_offsets.capacity()) * sizeof(std::int64_t));
    bytes +=
        static_cast<std::int64_t>(b.row_lengths.size() * sizeof(std::int32_t) + b.cols.size() * sizeof(std::int32_t));
    bytes += static_cast<std::int64_t>(b.nodes.capacity() * sizeof(NodeInfo));
  }
  for (const SplitPart &p : c.split)
    bytes += static_cast<std::int64_t>(p.rowptr.capacity() * sizeof(std::int64_t) +
                                       p.cols.capacity() * sizeof(std::int32_t) + p.values.size());
  return bytes;
}

#define PETSCMP_INSTANTIATE_COMPACT_ROWS(Index)                                                                        \
  template void read_compact_row<Index>(const CompactCsr &, const CompactRowMap &, std::int64_t, Index *, double *);   \
  template void CompactRowReader::read<Index>(std::int64_t, std::vector<Index> &, std::vector<double> &);              \
  template void compact_row_lengths<Index>(const CompactCsr &, Index *);                                               \
  template void read_compact_csr<Index>(const CompactCsr &, const Index *, Index *, double *, std::int64_t);           \
  template bool compact_has_pattern<Index>(const CompactCsr &, const CsrView<Index> &);
PETSCMP_INSTANTIATE_COMPACT_ROWS(std::int32_t)
PETSCMP_INSTANTIATE_COMPACT_ROWS(std::int64_t)
#undef PETSCMP_INSTANTIATE_COMPACT_ROWS

} // namespace petscmp
