// The SELL-C copy for thread-per-row kernels (sell_copy.hpp).
#include "petscmp/core/sell_copy.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "petscmp/core/omp.hpp"

namespace petscmp {

namespace {

// One row of a CPU block, as the SELL copy reads it: where its stored values
// are (first + e * stride) and entry e's column.
struct RowSource {
  const RowBlock *block = nullptr;
  std::int64_t k        = 0; // block row
  std::int64_t length   = 0;
  std::int64_t node     = 0; // node layout: the node holding block row k
};

template <typename Index> std::int64_t row_length(const RowBlock &b, const Index *rowptr, std::int64_t k)
{
  if (b.node_layout()) return b.nodes[static_cast<std::size_t>(b.node_of(k))].length;
  if (b.sliced()) return b.row_lengths[static_cast<std::size_t>(k)];
  return rowptr[b.row(k) + 1] - rowptr[b.row(k)];
}

// Where one row's entries are in its block: value e at word first + e *
// stride (of each plane, for split storage), column e read by column(e).
template <typename Index> struct SourceRow {
  std::int64_t first = 0, stride = 1, n = 0;
  // columns: 32-bit (cols32) or 16-bit (cols16) indices col_stride apart plus
  // shift, or the master's (master)
  const std::int32_t *cols32  = nullptr;
  const std::uint16_t *cols16 = nullptr;
  const Index *master         = nullptr;
  const RowBlock *patched     = nullptr; // a row of a patched slice: block row k's columns (slice_column)
  std::int64_t k              = 0;
  std::int64_t col_stride = 1, shift = 0;
  std::int64_t column(std::int64_t e) const
  {
    if (patched) return patched->slice_column(k, e);
    if (cols32) return shift + cols32[e * col_stride];
    if (cols16) return shift + cols16[e * col_stride];
    return static_cast<std::int64_t>(master[e]);
  }
};

template <typename Index> SourceRow<Index> source_row(const RowSource &s, const Index *rowptr, const Index *master_cols)
{
  SourceRow<Index> r;
  const RowBlock &b = *s.block;
  r.n               = s.length;
  if (r.n == 0) return r;
  if (b.node_layout()) {
    const NodeInfo &nd      = b.nodes[static_cast<std::size_t>(s.node)];
    const unsigned char *at = b.node_cols.as<unsigned char>() + nd.indices;
    r.first                 = nd.values + (s.k - nd.first);
    r.stride                = nd.rows;
    if (nd.wide)
      r.cols32 = reinterpret_cast<const std::int32_t *>(at);
    else {
      r.cols16 = reinterpret_cast<const std::uint16_t *>(at);
      r.shift  = nd.col_base;
    }
    return r;
  }
  if (b.sliced()) {
    const std::int64_t q = s.k / kSliceRows, lane = s.k % kSliceRows,
                       at = b.slice_col_offsets[static_cast<std::size_t>(q)];
    r.first               = b.slice_offsets[static_cast<std::size_t>(q)] + lane;
    r.stride              = kSliceRows;
    if (b.shifted_slice(q)) {
      r.cols32 = b.cols.data() + at;
      r.shift  = lane;
    } else if (b.narrow_slice(q)) {
      r.cols16     = b.narrow_offsets(q) + lane;
      r.shift      = b.narrow_base(q);
      r.col_stride = kSliceRows;
    } else if (b.patched_slice(q)) {
      r.patched = &b;
      r.k       = s.k;
    } else {
      r.cols32     = b.cols.data() + at + lane;
      r.col_stride = kSliceRows;
    }
    return r;
  }
  const std::int64_t start = rowptr[b.row(s.k)];
  r.first                  = b.value_index(s.k, 0, start);
  r.master                 = master_cols + start;
  return r;
}

// Calls fn(Word{}) with the unsigned type of `word` bytes (the bytes of one stored value, or of one plane's segment).
template <typename Fn> void dispatch_word(std::size_t word, Fn &&fn)
{
  switch (word) {
  case 1:
    return fn(std::uint8_t{});
  case 2:
    return fn(std::uint16_t{});
  case 4:
    return fn(std::uint32_t{});
  default:
    return fn(std::uint64_t{});
  }
}

// Copies the columns of one row: narrow (16-bit offsets from base, out16) or 32-bit (out32), C apart.
template <typename Index, typename Out>
void copy_columns(const SourceRow<Index> &r, std::int64_t base, Out *out, std::int64_t C)
{
  if (r.patched)
    for (std::int64_t e = 0; e < r.n; ++e)
      out[e * C] = static_cast<Out>(r.column(e) - base);
  else if (r.cols32)
    for (std::int64_t e = 0; e < r.n; ++e)
      out[e * C] = static_cast<Out>(r.shift + r.cols32[e * r.col_stride] - base);
  else if (r.cols16)
    for (std::int64_t e = 0; e < r.n; ++e)
      out[e * C] = static_cast<Out>(r.shift + r.cols16[e * r.col_stride] - base);
  else
    for (std::int64_t e = 0; e < r.n; ++e)
      out[e * C] = static_cast<Out>(static_cast<std::int64_t>(r.master[e]) - base);
}

// The part's slices, its rows' entries copied bit for bit: the values of every
// plane, the columns as 16-bit offsets from each slice's smallest column where
// every slice's columns lie within 2^16 of it (a row's columns ascend: its
// first and last bound them), else 32-bit. Slices are filled independently
// (threads > 1: OpenMP threads).
template <typename Index>
SellPart make_part(const std::vector<RowSource> &by_row, const std::vector<std::int32_t> &part_rows,
                   const Index *rowptr, const Index *master_cols, int C, Format format, int segments, int threads)
{
  SellPart p;
  p.format              = format;
  p.segments            = segments;
  const std::int64_t nr = static_cast<std::int64_t>(part_rows.size());
  p.slices              = (nr + C - 1) / C;
  // the source of the part's i-th row
  auto source = [&](std::int64_t i) {
    return &by_row[static_cast<std::size_t>(part_rows[static_cast<std::size_t>(i)])];
  };
  const std::size_t lanes = static_cast<std::size_t>(p.slices * C);
  p.rows.assign(lanes, -1);
  p.lengths.assign(lanes, 0);
  p.slice_offsets.assign(static_cast<std::size_t>(p.slices + 1), 0);
  std::vector<std::int32_t> base(static_cast<std::size_t>(p.slices), 0);
  bool narrow = true;
  for (std::int64_t q = 0; q < p.slices; ++q) {
    std::int64_t width = 0, lo = std::numeric_limits<std::int64_t>::max(), hi = -1;
    for (std::int64_t l = 0; l < C && q * C + l < nr; ++l) {
      const std::int64_t i                   = q * C + l;
      const RowSource &s                     = *source(i);
      p.rows[static_cast<std::size_t>(i)]    = part_rows[static_cast<std::size_t>(i)];
      p.lengths[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(s.length);
      width                                  = std::max(width, s.length);
      if (s.length > 0) {
        const SourceRow<Index> r = source_row(s, rowptr, master_cols);
        lo                       = std::min(lo, r.column(0));
        hi                       = std::max(hi, r.column(r.n - 1));
      }
    }
    p.slice_offsets[static_cast<std::size_t>(q + 1)] = p.slice_offsets[static_cast<std::size_t>(q)] + width * C;
    if (hi >= 0) {
      base[static_cast<std::size_t>(q)] = static_cast<std::int32_t>(lo);
      narrow                            = narrow && hi - lo <= std::numeric_limits<std::uint16_t>::max();
    }
  }
  const std::int64_t stored = p.stored();
  const std::size_t word    = segments > 1 ? 8 / static_cast<std::size_t>(segments) : format_bytes(format);
  const int planes          = segments > 1 ? segments : 1;
  p.plane_stride            = segments > 1 ? stored : 0;
  // every element is written once below, padding included (no zeroing pass: fresh pages are touched once)
  if (narrow) {
    p.narrow_cols.allocate(static_cast<std::size_t>(stored));
    p.slice_base = std::move(base);
  } else {
    p.cols.allocate(static_cast<std::size_t>(stored));
  }
  p.values.resize_uninitialized(static_cast<std::size_t>(stored) * word * planes);
  (void)threads;
  dispatch_word(word, [&](auto word_type) {
    using Word = decltype(word_type);
    Word *out  = p.values.as<Word>();
    PETSCMP_OMP(omp parallel for num_threads(threads) schedule(static, 256) if (threads > 1))
    for (std::int64_t q = 0; q < p.slices; ++q) {
      const std::int64_t from  = p.slice_offsets[static_cast<std::size_t>(q)];
      const std::int64_t width = (p.slice_offsets[static_cast<std::size_t>(q + 1)] - from) / C;
      for (std::int64_t l = 0; l < C; ++l) {
        const std::int64_t first = from + l;
        std::int64_t n           = 0; // the row's entries; the rest of its lane is padding: value 0, column 0
        if (q * C + l < nr) {
          const RowSource &s = *source(q * C + l);
          if (s.length > 0) { // (a row of no block has no block to read)
            const SourceRow<Index> r = source_row(s, rowptr, master_cols);
            const Word *in           = s.block->values.as<Word>();
            for (int plane = 0; plane < planes; ++plane) { // the value's bytes as stored: no conversion
              const Word *src = in + plane * s.block->plane_stride + r.first;
              Word *dst       = out + plane * stored + first;
              for (std::int64_t e = 0; e < r.n; ++e)
                dst[e * C] = src[e * r.stride];
            }
            if (narrow)
              copy_columns(r, p.slice_base[static_cast<std::size_t>(q)], p.narrow_cols.data() + first, C);
            else
              copy_columns(r, 0, p.cols.data() + first, C);
            n = r.n;
          }
        }
        for (std::int64_t e = n; e < width; ++e) {
          for (int plane = 0; plane < planes; ++plane)
            out[plane * stored + first + e * C] = 0;
          if (narrow)
            p.narrow_cols[static_cast<std::size_t>(first + e * C)] = 0;
          else
            p.cols[static_cast<std::size_t>(first + e * C)] = 0;
        }
      }
    }
  });
  return p;
}

// Where each row of A is stored (rows of no block: an empty row of an empty block).
template <typename Index> std::vector<RowSource> row_sources(const CompactCsr &A, const Index *rowptr)
{
  static const RowBlock empty_block;
  std::vector<RowSource> by_row(static_cast<std::size_t>(A.nrows), RowSource{&empty_block, 0, 0});
  for (const RowBlock &b : A.blocks) {
    std::int64_t node = 0; // (nodes follow the block rows: walked, not searched)
    for (std::int64_t k = 0; k < b.row_count(); ++k) {
      if (b.node_layout())
        while (k >= b.nodes[static_cast<std::size_t>(node)].first + b.nodes[static_cast<std::size_t>(node)].rows)
          ++node;
      const std::int64_t length =
          b.node_layout() ? b.nodes[static_cast<std::size_t>(node)].length : row_length(b, rowptr, k);
      by_row[static_cast<std::size_t>(b.row(k))] = {&b, k, length, node};
    }
  }
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
SellCopy make_sell_copy(const CompactCsr &A, const Index *rowptr, const Index *cols, int slice_rows, int threads)
{
  check_copyable(A, slice_rows);
  SellCopy c;
  c.nrows      = A.nrows;
  c.ncols      = A.ncols;
  c.order      = A.order;
  c.slice_rows = slice_rows;
  c.nnz        = A.stats.nnz;
  // one part per storage type, rows in ascending order within it; rows of no block are empty: they join the first
  // part with no entries
  struct Group {
    Format format;
    int segments;
    std::vector<std::int32_t> short_rows, long_rows; // long rows: a part of their own (slices of one row, a warp each)
  };
  std::vector<Group> groups;
  std::vector<std::uint16_t> group_of(static_cast<std::size_t>(A.nrows), 0);
  for (const RowBlock &b : A.blocks) {
    const int segments = b.segments > 1 ? b.segments : 0;
    std::size_t g      = 0;
    while (g < groups.size() && !(groups[g].format == b.format && groups[g].segments == segments))
      ++g;
    if (g == groups.size()) groups.push_back({b.format, segments, {}, {}});
    for (std::int64_t k = 0; k < b.row_count(); ++k)
      group_of[static_cast<std::size_t>(b.row(k))] = static_cast<std::uint16_t>(g);
  }
  if (groups.empty()) groups.push_back({Format::fp64, 0, {}, {}});
  const std::vector<RowSource> by_row = row_sources(A, rowptr);
  for (std::int64_t i = 0; i < A.nrows; ++i) {
    Group &g = groups[group_of[static_cast<std::size_t>(i)]];
    (by_row[static_cast<std::size_t>(i)].length > kWarpRowLength ? g.long_rows : g.short_rows)
        .push_back(static_cast<std::int32_t>(i));
  }
  std::vector<std::uint16_t>().swap(group_of);
  for (const Group &g : groups) {
    if (!g.short_rows.empty() || g.long_rows.empty())
      c.parts.push_back(make_part(by_row, g.short_rows, rowptr, cols, slice_rows, g.format, g.segments, threads));
    if (!g.long_rows.empty()) {
      c.parts.push_back(make_part(by_row, g.long_rows, rowptr, cols, 1, g.format, g.segments, threads));
      c.parts.back().warp_rows = true;
    }
  }
  return c;
}

template <typename Index>
SellCopy make_sell_transpose(const CompactCsr &A, const Index *rowptr, const Index *cols, int read, int slice_rows,
                             int threads)
{
  check_copyable(A, slice_rows);
  const std::vector<RowSource> by_row = row_sources(A, rowptr);
  // A^T in CSR: column j of A with its rows in ascending order, values as products read them
  std::vector<Index> t_rowptr(static_cast<std::size_t>(A.ncols + 1), 0);
  for (const RowSource &s : by_row) {
    const SourceRow<Index> r = source_row(s, rowptr, cols);
    for (std::int64_t e = 0; e < r.n; ++e)
      ++t_rowptr[static_cast<std::size_t>(r.column(e) + 1)];
  }
  for (std::int64_t j = 0; j < A.ncols; ++j)
    t_rowptr[static_cast<std::size_t>(j + 1)] += t_rowptr[static_cast<std::size_t>(j)];
  const std::size_t nnz = static_cast<std::size_t>(t_rowptr.back());
  std::vector<Index> t_cols(nnz), next(t_rowptr.begin(), t_rowptr.end() - 1);
  std::vector<double> t_vals(nnz);
  for (std::int64_t i = 0; i < A.nrows; ++i) {
    const RowSource &s = by_row[static_cast<std::size_t>(i)];
    if (s.length == 0) continue;
    const SourceRow<Index> r = source_row(s, rowptr, cols);
    dispatch_block_values(*s.block, read, [&](auto tag) {
      using S        = typename decltype(tag)::type;
      const auto val = values_of<S>(*s.block);
      for (std::int64_t e = 0; e < r.n; ++e) {
        const std::size_t to = static_cast<std::size_t>(next[static_cast<std::size_t>(r.column(e))]++);
        t_cols[to]           = static_cast<Index>(i);
        t_vals[to]           = decode(val[r.first + e * r.stride]);
      }
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
  opts.threads        = threads;
  const CompactCsr AT = build_compact_csr(t, opts);
  return make_sell_copy(AT, t.rowptr, t.cols, slice_rows, threads);
}

template SellCopy make_sell_copy<std::int32_t>(const CompactCsr &, const std::int32_t *, const std::int32_t *, int,
                                               int);
template SellCopy make_sell_copy<std::int64_t>(const CompactCsr &, const std::int64_t *, const std::int64_t *, int,
                                               int);

} // namespace petscmp

namespace petscmp {
template SellCopy make_sell_transpose<std::int32_t>(const CompactCsr &, const std::int32_t *, const std::int32_t *, int,
                                                    int, int);
template SellCopy make_sell_transpose<std::int64_t>(const CompactCsr &, const std::int64_t *, const std::int64_t *, int,
                                                    int, int);
} // namespace petscmp
