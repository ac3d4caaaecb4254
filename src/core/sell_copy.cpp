// The SELL-C copy for thread-per-row kernels (sell_copy.hpp).
#include "petscmp/core/sell_copy.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace petscmp {

namespace {

// One row of a CPU block, as the SELL copy reads it: where its stored values
// are (first + e * stride) and entry e's column.
struct RowSource {
  const RowBlock *block = nullptr;
  std::int64_t k        = 0; // block row
  std::int64_t length   = 0;
};

// Calls fn(e, value_index, column) for every entry of block row k.
template <typename Index, typename Fn>
void for_each_entry(const RowBlock &b, const Index *rowptr, const Index *master_cols, std::int64_t k, Fn &&fn)
{
  if (b.node_layout()) {
    const NodeInfo &nd      = b.nodes[static_cast<std::size_t>(b.node_of(k))];
    const unsigned char *at = b.node_cols.as<unsigned char>() + nd.indices;
    for (std::int64_t e = 0; e < nd.length; ++e) {
      const std::int64_t col = nd.wide ? std::int64_t{reinterpret_cast<const std::int32_t *>(at)[e]}
                                       : std::int64_t{nd.col_base} + reinterpret_cast<const std::uint16_t *>(at)[e];
      fn(e, nd.values + e * nd.rows + (k - nd.first), col); // (value_index would look the node up per entry)
    }
    return;
  }
  if (b.sliced()) {
    const std::int64_t n = b.row_lengths[static_cast<std::size_t>(k)];
    for (std::int64_t e = 0; e < n; ++e)
      fn(e, b.value_index(k, e, 0), b.slice_column(k, e));
    return;
  }
  const std::int64_t start = rowptr[b.row(k)], n = rowptr[b.row(k) + 1] - start;
  for (std::int64_t e = 0; e < n; ++e)
    fn(e, b.value_index(k, e, start), std::int64_t{master_cols[start + e]});
}

template <typename Index> std::int64_t row_length(const RowBlock &b, const Index *rowptr, std::int64_t k)
{
  if (b.node_layout()) return b.nodes[static_cast<std::size_t>(b.node_of(k))].length;
  if (b.sliced()) return b.row_lengths[static_cast<std::size_t>(k)];
  return rowptr[b.row(k) + 1] - rowptr[b.row(k)];
}

// Stores the part's columns as 16-bit offsets from each slice's smallest
// column when every slice's columns lie within 2^16 of it.
void narrow_columns(SellPart &p, int C)
{
  std::vector<std::int32_t> base(static_cast<std::size_t>(p.slices), 0);
  for (std::int64_t q = 0; q < p.slices; ++q) {
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = -1;
    for (std::int64_t l = q * C; l < (q + 1) * C; ++l) {
      const std::int64_t first = p.slice_offsets[static_cast<std::size_t>(q)] + l % C;
      for (std::int64_t e = 0; e < p.lengths[static_cast<std::size_t>(l)]; ++e) {
        const std::int64_t col = p.cols[static_cast<std::size_t>(first + e * C)];
        lo                     = std::min(lo, col);
        hi                     = std::max(hi, col);
      }
    }
    if (hi < 0) continue; // no entries
    if (hi - lo > std::numeric_limits<std::uint16_t>::max()) return;
    base[static_cast<std::size_t>(q)] = static_cast<std::int32_t>(lo);
  }
  p.narrow_cols.assign(p.cols.size(), 0);
  for (std::int64_t q = 0; q < p.slices; ++q)
    for (std::int64_t l = q * C; l < (q + 1) * C; ++l) {
      const std::int64_t first = p.slice_offsets[static_cast<std::size_t>(q)] + l % C;
      for (std::int64_t e = 0; e < p.lengths[static_cast<std::size_t>(l)]; ++e) {
        const std::size_t at = static_cast<std::size_t>(first + e * C);
        p.narrow_cols[at]    = static_cast<std::uint16_t>(p.cols[at] - base[static_cast<std::size_t>(q)]);
      }
    }
  p.slice_base = std::move(base);
  std::vector<std::int32_t>().swap(p.cols);
}

template <typename Index>
SellPart make_part(std::vector<RowSource> &&sources, const std::vector<std::int64_t> &source_rows, const Index *rowptr,
                   const Index *master_cols, int C, Format format, int segments)
{
  SellPart p;
  p.format                = format;
  p.segments              = segments;
  const std::int64_t nr   = static_cast<std::int64_t>(sources.size());
  p.slices                = (nr + C - 1) / C;
  const std::size_t lanes = static_cast<std::size_t>(p.slices * C);
  p.rows.assign(lanes, -1);
  p.lengths.assign(lanes, 0);
  p.slice_offsets.assign(static_cast<std::size_t>(p.slices + 1), 0);
  for (std::int64_t q = 0; q < p.slices; ++q) {
    std::int64_t width = 0;
    for (std::int64_t l = 0; l < C && q * C + l < nr; ++l) {
      const std::int64_t i                   = q * C + l;
      p.rows[static_cast<std::size_t>(i)]    = static_cast<std::int32_t>(source_rows[static_cast<std::size_t>(i)]);
      p.lengths[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(sources[static_cast<std::size_t>(i)].length);
      width                                  = std::max(width, sources[static_cast<std::size_t>(i)].length);
    }
    p.slice_offsets[static_cast<std::size_t>(q + 1)] = p.slice_offsets[static_cast<std::size_t>(q)] + width * C;
  }
  const std::int64_t stored = p.stored();
  const std::size_t word    = segments > 1 ? 8 / static_cast<std::size_t>(segments) : format_bytes(format);
  const int planes          = segments > 1 ? segments : 1;
  p.plane_stride            = segments > 1 ? stored : 0;
  p.cols.assign(static_cast<std::size_t>(stored), 0);
  p.values.resize(static_cast<std::size_t>(stored) * word * planes); // zeros: the padding's values
  unsigned char *out = p.values.as<unsigned char>();
  for (std::int64_t i = 0; i < nr; ++i) {
    const RowSource &s       = sources[static_cast<std::size_t>(i)];
    const std::int64_t first = p.slice_offsets[static_cast<std::size_t>(i / C)] + i % C;
    const unsigned char *in  = s.block->values.as<unsigned char>();
    if (s.length == 0) continue; // (a row of no block has no block to read)
    for_each_entry(*s.block, rowptr, master_cols, s.k, [&](std::int64_t e, std::int64_t at, std::int64_t col) {
      const std::int64_t to                = first + e * C;
      p.cols[static_cast<std::size_t>(to)] = static_cast<std::int32_t>(col);
      for (int plane = 0; plane < planes; ++plane) // the value's bytes as stored: no conversion
        std::memcpy(out + (plane * stored + to) * static_cast<std::int64_t>(word),
                    in + (plane * s.block->plane_stride + at) * static_cast<std::int64_t>(word), word);
    });
  }
  narrow_columns(p, C);
  return p;
}

// Where each row of A is stored (rows of no block: an empty row of an empty block).
template <typename Index> std::vector<RowSource> row_sources(const CompactCsr &A, const Index *rowptr)
{
  static const RowBlock empty_block;
  std::vector<RowSource> by_row(static_cast<std::size_t>(A.nrows), RowSource{&empty_block, 0, 0});
  for (const RowBlock &b : A.blocks)
    for (std::int64_t k = 0; k < b.row_count(); ++k)
      by_row[static_cast<std::size_t>(b.row(k))] = {&b, k, row_length(b, rowptr, k)};
  return by_row;
}

void check_copyable(const CompactCsr &A, int slice_rows)
{
  if (A.entry_split()) throw StorageError("petscmp: an entry split has no SELL copy for the GPU backends");
  if (A.nrows > std::numeric_limits<std::int32_t>::max() || A.ncols > std::numeric_limits<std::int32_t>::max())
    throw StorageError("petscmp: the SELL copy needs fewer than 2^31 rows and columns");
  if (slice_rows < 1) throw StorageError("petscmp: the SELL copy needs slices of at least one row");
}

} // namespace

std::int64_t SellCopy::bytes() const
{
  std::int64_t total = 0;
  for (const SellPart &p : parts)
    total += static_cast<std::int64_t>(p.values.size() + p.cols.size() * 4 + p.narrow_cols.size() * 2 +
                                       p.slice_base.size() * 4 + p.rows.size() * 8 + p.slice_offsets.size() * 8);
  return total;
}

template <typename Index>
SellCopy make_sell_copy(const CompactCsr &A, const Index *rowptr, const Index *cols, int slice_rows)
{
  check_copyable(A, slice_rows);
  SellCopy c;
  c.nrows      = A.nrows;
  c.ncols      = A.ncols;
  c.order      = A.order;
  c.slice_rows = slice_rows;
  c.nnz        = A.stats.nnz;
  // one part per storage type, rows in ascending order within it
  struct Group {
    Format format;
    int segments;
    std::vector<RowSource> sources;
    std::vector<std::int64_t> rows;
  };
  std::vector<Group> groups;
  std::vector<std::int64_t> owner(static_cast<std::size_t>(A.nrows), -1);
  for (const RowBlock &b : A.blocks) {
    const int segments = b.segments > 1 ? b.segments : 0;
    std::size_t g      = 0;
    while (g < groups.size() && !(groups[g].format == b.format && groups[g].segments == segments))
      ++g;
    if (g == groups.size()) groups.push_back({b.format, segments, {}, {}});
    for (std::int64_t k = 0; k < b.row_count(); ++k)
      owner[static_cast<std::size_t>(b.row(k))] = static_cast<std::int64_t>(g);
  }
  if (groups.empty()) groups.push_back({Format::fp64, 0, {}, {}});
  // rows of no block are empty: they join the first part with no entries
  const std::vector<RowSource> by_row = row_sources(A, rowptr);
  for (std::int64_t i = 0; i < A.nrows; ++i) {
    std::int64_t g    = owner[static_cast<std::size_t>(i)];
    const RowSource s = by_row[static_cast<std::size_t>(i)];
    if (g < 0) g = 0;
    groups[static_cast<std::size_t>(g)].sources.push_back(s);
    groups[static_cast<std::size_t>(g)].rows.push_back(i);
  }
  for (Group &g : groups) {
    // long rows to a part of their own (slices of one row, a warp each)
    std::vector<RowSource> short_sources, long_sources;
    std::vector<std::int64_t> short_rows, long_rows;
    for (std::size_t i = 0; i < g.rows.size(); ++i) {
      const bool is_long = g.sources[i].length > kWarpRowLength;
      (is_long ? long_sources : short_sources).push_back(g.sources[i]);
      (is_long ? long_rows : short_rows).push_back(g.rows[i]);
    }
    if (!short_rows.empty() || long_rows.empty())
      c.parts.push_back(
          make_part(std::move(short_sources), short_rows, rowptr, cols, slice_rows, g.format, g.segments));
    if (!long_rows.empty()) {
      c.parts.push_back(make_part(std::move(long_sources), long_rows, rowptr, cols, 1, g.format, g.segments));
      c.parts.back().warp_rows = true;
    }
  }
  return c;
}

template <typename Index>
SellCopy make_sell_transpose(const CompactCsr &A, const Index *rowptr, const Index *cols, int read, int slice_rows)
{
  check_copyable(A, slice_rows);
  const std::vector<RowSource> by_row = row_sources(A, rowptr);
  // A^T in CSR: column j of A with its rows in ascending order, values as products read them
  std::vector<Index> t_rowptr(static_cast<std::size_t>(A.ncols + 1), 0);
  for (const RowSource &s : by_row)
    if (s.length > 0)
      for_each_entry(*s.block, rowptr, cols, s.k, [&](std::int64_t, std::int64_t, std::int64_t col) {
        ++t_rowptr[static_cast<std::size_t>(col + 1)];
      });
  for (std::int64_t j = 0; j < A.ncols; ++j)
    t_rowptr[static_cast<std::size_t>(j + 1)] += t_rowptr[static_cast<std::size_t>(j)];
  const std::size_t nnz = static_cast<std::size_t>(t_rowptr.back());
  std::vector<Index> t_cols(nnz), next(t_rowptr.begin(), t_rowptr.end() - 1);
  std::vector<double> t_vals(nnz);
  for (std::int64_t i = 0; i < A.nrows; ++i) {
    const RowSource &s = by_row[static_cast<std::size_t>(i)];
    if (s.length == 0) continue;
    dispatch_block_values(*s.block, read, [&](auto tag) {
      using S        = typename decltype(tag)::type;
      const auto val = values_of<S>(*s.block);
      for_each_entry(*s.block, rowptr, cols, s.k, [&](std::int64_t, std::int64_t at, std::int64_t col) {
        const std::size_t to = static_cast<std::size_t>(next[static_cast<std::size_t>(col)]++);
        t_cols[to]           = static_cast<Index>(i);
        t_vals[to]           = decode(val[at]);
      });
    });
  }
  CsrView<Index> t;
  t.nrows  = static_cast<Index>(A.ncols);
  t.ncols  = static_cast<Index>(A.nrows);
  t.rowptr = t_rowptr.data();
  t.cols   = t_cols.data();
  t.values = t_vals.data();
  // Lossless storage of those values: each row of A^T in the narrowest format that holds every one exactly (the
  // builder's lossless choice), summed in AIJ's transpose order (sequential, rows of A ascending).
  StorageOptions opts;
  opts.mode           = StorageMode::lossless;
  opts.order          = SumOrder::sequential;
  opts.layout         = Layout::csr;
  const CompactCsr AT = build_compact_csr(t, opts);
  return make_sell_copy(AT, t.rowptr, t.cols, slice_rows);
}

template SellCopy make_sell_copy<std::int32_t>(const CompactCsr &, const std::int32_t *, const std::int32_t *, int);
template SellCopy make_sell_copy<std::int64_t>(const CompactCsr &, const std::int64_t *, const std::int64_t *, int);

} // namespace petscmp

namespace petscmp {
template SellCopy make_sell_transpose<std::int32_t>(const CompactCsr &, const std::int32_t *, const std::int32_t *, int,
                                                    int);
template SellCopy make_sell_transpose<std::int64_t>(const CompactCsr &, const std::int64_t *, const std::int64_t *, int,
                                                    int);
} // namespace petscmp
