// The storage builder: the only place where formats are chosen.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/compact_csr.hpp"

namespace petscmp {

namespace {

const char *const kModeNames[kStorageModeCount] = {"lossless", "fp32",      "fp16",     "bf16",      "fp11_20",
                                                   "fp11_4",   "tolerance", "rowsplit", "entrysplit"};

// Ladders, narrowest first; among equal sizes the format with more significand
// bits comes first.
const Format kLosslessLadder[]  = {Format::fp16, Format::bf16, Format::fp32, Format::fp64};
const Format kToleranceLadder[] = {Format::fp16, Format::bf16, Format::fp11_4, Format::fp32, Format::fp11_20, Format::fp64};

// The next wider format a uniform lossy mode falls back to for one row.
Format wider_format(Format f)
{
  switch (f) {
  case Format::fp16:
  case Format::bf16:
    return Format::fp32;
  case Format::fp11_4:
    return Format::fp11_20;
  default:
    return Format::fp64;
  }
}

Format uniform_format(StorageMode m)
{
  switch (m) {
  case StorageMode::fp32:
    return Format::fp32;
  case StorageMode::fp16:
    return Format::fp16;
  case StorageMode::bf16:
    return Format::bf16;
  case StorageMode::fp11_20:
    return Format::fp11_20;
  case StorageMode::fp11_4:
    return Format::fp11_4;
  default:
    return Format::fp64;
  }
}

// A row's values, possibly spread over several parts.
template <typename Index> class RowValues {
public:
  RowValues(const std::vector<CsrView<Index>> &parts, Index row) : parts_(parts), row_(row) {}
  template <typename Pred> bool all_of(Pred pred) const
  {
    for (const auto &p : parts_)
      for (Index k = p.rowptr[row_]; k < p.rowptr[row_ + 1]; ++k)
        if (!pred(p.values[k])) return false;
    return true;
  }
  std::int64_t count() const
  {
    std::int64_t n = 0;
    for (const auto &p : parts_) n += p.rowptr[row_ + 1] - p.rowptr[row_];
    return n;
  }
  template <typename Pred> std::int64_t count_if(Pred pred) const
  {
    std::int64_t n = 0;
    for (const auto &p : parts_)
      for (Index k = p.rowptr[row_]; k < p.rowptr[row_ + 1]; ++k) n += pred(p.values[k]) ? 1 : 0;
    return n;
  }

private:
  const std::vector<CsrView<Index>> &parts_;
  Index row_;
};

// Stored exactly, or rounded within the format's unit roundoff. Non-finite
// values must be stored exactly (so NaN/Inf stay what they are).
bool stores_within_roundoff(Format f, double v)
{
  const Conversion c = classify_conversion(f, v);
  return c == Conversion::exact || c == Conversion::rounded;
}

// Which of fp16, bf16 and fp32 hold every value seen so far bit for bit: the
// lossless ladder in one pass. Finite values take a fast path (one conversion
// to fp32, then bit tests and, for fp16, a hardware round trip where there is
// one); NaN and Inf take classify_conversion's definition.
struct ExactIn {
  bool fp16 = true, bf16 = true, fp32 = true;
  bool any() const { return fp32; } // fp16 and bf16 imply fp32
  void add(double v)
  {
    const float f = static_cast<float>(v);
    if (double_bits(static_cast<double>(f)) != double_bits(v)) {
      fp16 = bf16 = fp32 = false;
      return;
    }
    if (!std::isfinite(f)) {
      fp16 = fp16 && classify_conversion(Format::fp16, v) == Conversion::exact;
      bf16 = bf16 && classify_conversion(Format::bf16, v) == Conversion::exact;
      return;
    }
    bf16 = bf16 && (float_bits(f) & 0xffffu) == 0;
    if (fp16) fp16 = double_bits(decode(encode_as<fp16_t>(v))) == double_bits(v);
  }
  Format narrowest() const { return fp16 ? Format::fp16 : bf16 ? Format::bf16 : fp32 ? Format::fp32 : Format::fp64; }
};

template <typename Index> Format lossless_row_format(const RowValues<Index> &row)
{
  ExactIn exact;
  row.all_of([&exact](double v) {
    exact.add(v);
    return exact.any();
  });
  return exact.narrowest();
}

// stores_within_roundoff, with the common case decided without converting:
// a value in f's normal range is rounded within f's unit roundoff.
bool within_roundoff(Format f, double v, double lo, double hi)
{
  const double a = std::fabs(v);
  return (a >= lo && a <= hi) || stores_within_roundoff(f, v);
}

template <typename Index> Format uniform_row_format(const RowValues<Index> &row, Format f)
{
  for (; f != Format::fp64; f = wider_format(f)) {
    const double lo = min_normal(f), hi = max_finite(f);
    if (row.all_of([f, lo, hi](double v) { return within_roundoff(f, v, lo, hi); })) return f;
  }
  return Format::fp64;
}

template <typename Index> Format tolerance_row_format(const RowValues<Index> &row, double tol)
{
  for (Format f : kToleranceLadder)
    if (row.all_of([f, tol](double v) { return stores_within_roundoff(f, v) && relative_error(f, v) <= tol; }))
      return f;
  return Format::fp64;
}

// Thesis row-wise split: fp32 when at least `fraction` of the row lies in
// (-r, r) and every value fits fp32 (we also refuse rows that would underflow).
template <typename Index> Format rowsplit_row_format(const RowValues<Index> &row, double r, double fraction)
{
  const std::int64_t n = row.count();
  if (n == 0) return Format::fp64;
  const std::int64_t inside = row.count_if([r](double v) { return std::fabs(v) < r; });
  if (static_cast<double>(inside) < fraction * static_cast<double>(n)) return Format::fp64;
  return row.all_of([](double v) { return stores_within_roundoff(Format::fp32, v); }) ? Format::fp32 : Format::fp64;
}

template <typename Index> double mean_abs(const std::vector<CsrView<Index>> &parts)
{
  AbsSum total;
  for (const auto &p : parts) {
    const AbsSum s = abs_value_sum(p);
    total.sum += s.sum;
    total.count += s.count;
  }
  return total.count ? total.sum / static_cast<double>(total.count) : 0.0;
}

struct Run {
  Format format;
  std::int64_t begin, end;
};

// Runs of consecutive rows with one format; empty rows join the current run
// (leading empty rows join the first run that has values).
template <typename Index> std::vector<Run> find_runs(const CsrView<Index> &csr, const std::vector<Format> &formats)
{
  std::vector<Run> runs;
  bool has_values = false; // whether the last run holds a nonempty row
  for (Index i = 0; i < csr.nrows; ++i) {
    const bool empty = csr.rowptr[i + 1] == csr.rowptr[i];
    if (runs.empty()) {
      runs.push_back({formats[i], i, i + 1});
      has_values = !empty;
    } else if (empty || runs.back().format == formats[i]) {
      runs.back().end = i + 1;
      has_values      = has_values || !empty;
    } else if (!has_values) { // only empty rows so far: take this row's format
      runs.back().format = formats[i];
      runs.back().end    = i + 1;
      has_values         = true;
    } else {
      runs.push_back({formats[i], i, i + 1});
    }
  }
  return runs;
}

// Block shapes: which rows each block holds and where their values go in CSR
// order. The values are written afterwards, once, in the block's final layout.
template <typename Index> void shape_runs(const CsrView<Index> &csr, const std::vector<Run> &runs, CompactCsr &out)
{
  for (const Run &run : runs) {
    RowBlock block;
    block.format     = run.format;
    block.row_begin  = run.begin;
    block.row_end    = run.end;
    block.value_base = csr.rowptr[run.begin];
    block.nnz        = csr.rowptr[run.end] - csr.rowptr[run.begin];
    out.blocks.push_back(std::move(block));
  }
  out.all_rows_covered = true;
}

template <typename Index>
void shape_grouped(const CsrView<Index> &csr, const std::vector<Format> &formats, CompactCsr &out)
{
  if (csr.nrows > std::numeric_limits<std::int32_t>::max())
    throw StorageError("petscmp: more than 2^31 local rows need the grouped layout, which indexes rows in 32 bits");
  for (int fi = 0; fi < kFormatCount; ++fi) {
    const Format f = static_cast<Format>(fi);
    RowBlock block;
    block.format = f;
    block.value_offsets.push_back(0);
    for (Index i = 0; i < csr.nrows; ++i) {
      const Index n = csr.rowptr[i + 1] - csr.rowptr[i];
      if (n == 0 || formats[i] != f) continue;
      block.rows.push_back(static_cast<std::int32_t>(i));
      block.value_offsets.push_back(block.value_offsets.back() + n);
    }
    if (block.rows.empty()) continue;
    block.nnz = block.value_offsets.back();
    out.blocks.push_back(std::move(block));
  }
  out.all_rows_covered = false;
}

// Bytes of indices a product reads for one block: the master's columns and
// row pointers (CSR order, plus the row list and offsets when grouped), or
// the slices' own columns, row lengths and offsets (sliced).
template <typename Index> std::int64_t block_index_bytes(const RowBlock &b)
{
  const std::int64_t rows = b.row_count(), list = b.grouped() ? rows * 4 : 0;
  if (b.node_layout()) return static_cast<std::int64_t>(b.nodes.size() * sizeof(NodeInfo) + b.node_cols.size()) + list;
  if (b.sliced())
    return b.stored_count() * 4 + static_cast<std::int64_t>(b.row_lengths.size()) * 4 + (b.slice_count() + 1) * 8 + list;
  if (b.grouped()) return static_cast<std::int64_t>(sizeof(Index)) * b.nnz + rows * (4 + 8 + 2 * sizeof(Index));
  return static_cast<std::int64_t>(sizeof(Index)) * (b.nnz + rows + 1);
}

// Slice offsets of block b when sliced: each slice as wide as its longest row.
template <typename Index> std::vector<std::int64_t> slice_offsets_of(const CsrView<Index> &csr, const RowBlock &b)
{
  const std::int64_t nrows = b.row_count(), nslices = (nrows + kSliceRows - 1) / kSliceRows;
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(nslices) + 1, 0);
  for (std::int64_t q = 0; q < nslices; ++q) {
    std::int64_t width = 0;
    for (std::int64_t k = q * kSliceRows; k < std::min(nrows, (q + 1) * kSliceRows); ++k)
      width = std::max<std::int64_t>(width, csr.rowptr[b.row(k) + 1] - csr.rowptr[b.row(k)]);
    offsets[q + 1] = offsets[q] + width * kSliceRows;
  }
  return offsets;
}

// The nodes of block b: runs of at most kMaxNodeRows consecutive block rows
// that are consecutive matrix rows with one column pattern; each node's
// columns as 16-bit offsets from its smallest column where they fit. False
// when a column does not fit 32 bits (the node layout cannot hold the block).
template <typename Index> bool find_nodes(const CsrView<Index> &csr, const RowBlock &b, std::vector<NodeInfo> &nodes)
{
  const std::int64_t nrows = b.row_count();
  std::int64_t values = 0, indices = 0;
  nodes.clear();
  for (std::int64_t k = 0; k < nrows;) {
    const std::int64_t row = b.row(k), start = csr.rowptr[row], n = csr.rowptr[row + 1] - start;
    int s = 1;
    while (s < kMaxNodeRows && k + s < nrows && b.row(k + s) == row + s && same_pattern<Index>(csr, row, row + s)) ++s;
    NodeInfo nd;
    nd.first  = k;
    nd.rows   = static_cast<std::uint8_t>(s);
    nd.length = static_cast<std::int32_t>(n);
    nd.values = values;
    if (n > 0) {
      const auto [lo, hi] = std::minmax_element(csr.cols + start, csr.cols + start + n);
      if (*lo < 0 || *hi > std::numeric_limits<std::int32_t>::max()) return false;
      nd.col_base = static_cast<std::int32_t>(*lo);
      nd.wide     = *hi - *lo > std::numeric_limits<std::uint16_t>::max();
    }
    if (nd.wide) indices = (indices + 3) / 4 * 4;
    nd.indices = indices;
    indices += n * (nd.wide ? 4 : 2);
    values += n * s;
    nodes.push_back(nd);
    k += s;
  }
  return true;
}

// Bytes of the column indices of `nodes` (what node_cols holds).
inline std::int64_t node_index_bytes(const std::vector<NodeInfo> &nodes)
{
  if (nodes.empty()) return 0;
  const NodeInfo &last = nodes.back();
  return last.indices + static_cast<std::int64_t>(last.length) * (last.wide ? 4 : 2);
}

// |r - v| / |v| for v stored as r: relative_error(f, v) without converting again.
inline double relative_change(double v, double r)
{
  if (double_bits(r) == double_bits(v) || (std::isnan(r) && std::isnan(v))) return 0.0;
  if (!std::isfinite(r) || !std::isfinite(v) || v == 0.0) return std::numeric_limits<double>::infinity();
  return std::fabs(r - v) / std::fabs(v);
}

// worst = max(worst, relative_change(v, r)), with the division only where the
// change may exceed worst (rarely, once the largest change has been seen).
inline void note_change(double v, double r, double &worst)
{
  if (double_bits(r) == double_bits(v)) return;
  if (std::fabs(r - v) <= worst * std::fabs(v)) return; // false for NaN and Inf: decided below
  worst = std::max(worst, relative_change(v, r));
}

// Encodes n values of a row to out[0], out[stride], ...; the largest relative
// change is tracked only for lossy modes (lossless rows are exact by choice).
template <typename S>
void encode_row(const double *v, std::int64_t n, S *out, std::int64_t stride, bool track, double &worst)
{
  if (!track) {
    for (std::int64_t e = 0; e < n; ++e) out[e * stride] = encode_as<S>(v[e]);
    return;
  }
  for (std::int64_t e = 0; e < n; ++e) {
    const S s       = encode_as<S>(v[e]);
    out[e * stride] = s;
    note_change(v[e], decode(s), worst);
  }
}

// Values of block b in CSR order (the master's indices serve the products).
template <typename S, typename Index>
void fill_csr_order(const CsrView<Index> &csr, RowBlock &b, bool track, FormatStats &fs, BufferPool &pool)
{
  pool.lend(b.values.buffer(), static_cast<std::size_t>(b.nnz) * sizeof(S));
  S *out = b.values.as<S>();
  for (std::int64_t k = 0; k < b.row_count(); ++k) {
    const std::int64_t start = csr.rowptr[b.row(k)], n = csr.rowptr[b.row(k) + 1] - start;
    encode_row(csr.values + start, n, out + b.value_index(k, 0, start), 1, track, fs.max_relative_error);
  }
}

// Values and columns of block b written straight into slices (padding: value 0, column 0).
template <typename S, typename Index>
void fill_sliced(const CsrView<Index> &csr, std::vector<std::int64_t> offsets, RowBlock &b, bool track, FormatStats &fs,
                 BufferPool &pool)
{
  const std::int64_t nrows = b.row_count(), nslices = static_cast<std::int64_t>(offsets.size()) - 1;
  pool.lend(b.values.buffer(), static_cast<std::size_t>(offsets.back()) * sizeof(S));
  pool.lend(b.cols.buffer(), static_cast<std::size_t>(offsets.back()) * sizeof(std::int32_t));
  pool.lend(b.row_lengths.buffer(), static_cast<std::size_t>(nslices * kSliceRows) * sizeof(std::int32_t));
  S *vals = b.values.as<S>();
  std::int32_t *cols = b.cols.data();
  const S zero       = encode_as<S>(0.0);
  for (std::int64_t q = 0; q < nslices; ++q) {
    const std::int64_t base = offsets[q], width = (offsets[q + 1] - base) / kSliceRows;
    for (std::int64_t r = 0; r < kSliceRows; ++r) {
      const std::int64_t k = q * kSliceRows + r;
      std::int64_t n = 0, start = 0;
      if (k < nrows) {
        start = csr.rowptr[b.row(k)];
        n     = csr.rowptr[b.row(k) + 1] - start;
        encode_row(csr.values + start, n, vals + base + r, kSliceRows, track, fs.max_relative_error);
        for (std::int64_t e = 0; e < n; ++e) cols[base + r + e * kSliceRows] = static_cast<std::int32_t>(csr.cols[start + e]);
      }
      b.row_lengths[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(n);
      for (std::int64_t e = n; e < width; ++e) {
        vals[base + r + e * kSliceRows] = zero;
        cols[base + r + e * kSliceRows] = 0;
      }
    }
  }
  b.slice_offsets = std::move(offsets);
  b.value_offsets.clear();
  b.value_offsets.shrink_to_fit();
}

// Values and column indices of block b written node by node: entry e of the
// node's rows side by side, then entry e + 1.
template <typename S, typename Index>
void fill_nodes(const CsrView<Index> &csr, std::vector<NodeInfo> nodes, RowBlock &b, bool track, FormatStats &fs,
                BufferPool &pool)
{
  pool.lend(b.values.buffer(), static_cast<std::size_t>(b.nnz + kNodeValuePadding) * sizeof(S));
  pool.lend(b.node_cols.buffer(), static_cast<std::size_t>(node_index_bytes(nodes)));
  S *vals              = b.values.as<S>();
  for (int p = 0; p < kNodeValuePadding; ++p) vals[b.nnz + p] = encode_as<S>(0.0);
  unsigned char *index = b.node_cols.as<unsigned char>();
  double worst = fs.max_relative_error;
  for (const NodeInfo &nd : nodes) {
    const std::int64_t row0 = b.row(nd.first), start = csr.rowptr[row0];
    const double *src[kMaxNodeRows];
    for (int r = 0; r < nd.rows; ++r) src[r] = csr.values + csr.rowptr[row0 + r];
    S *out = vals + nd.values; // written in order: entry e of every row, then e + 1
    for (std::int32_t e = 0; e < nd.length; ++e)
      for (int r = 0; r < nd.rows; ++r) {
        const double v = src[r][e];
        *out           = encode_as<S>(v);
        if (track) note_change(v, decode(*out), worst);
        ++out;
      }
    if (nd.wide) {
      auto *c = reinterpret_cast<std::int32_t *>(index + nd.indices);
      for (std::int32_t e = 0; e < nd.length; ++e) c[e] = static_cast<std::int32_t>(csr.cols[start + e]);
    } else {
      auto *c = reinterpret_cast<std::uint16_t *>(index + nd.indices);
      for (std::int32_t e = 0; e < nd.length; ++e) c[e] = static_cast<std::uint16_t>(csr.cols[start + e] - nd.col_base);
    }
  }
  fs.max_relative_error = worst;
  b.nodes = std::move(nodes);
  b.value_offsets.clear();
  b.value_offsets.shrink_to_fit();
}

void count_nodes(const RowBlock &b, StorageStats &stats)
{
  stats.node_rows += b.row_count();
  stats.nodes += static_cast<std::int64_t>(b.nodes.size());
  for (const NodeInfo &nd : b.nodes) {
    stats.wide_nodes += nd.wide;
    ++stats.nodes_of_size[nd.rows];
  }
}

// Nodes when the layout asks for them, or (automatic) when they hold at least
// kMinNodeRows rows on average; empty otherwise.
template <typename Index> std::vector<NodeInfo> node_layout_of(const CsrView<Index> &csr, Layout layout, const RowBlock &b)
{
  std::vector<NodeInfo> nodes;
  if ((layout != Layout::node && layout != Layout::automatic) || b.row_count() == 0) return nodes;
  if (!find_nodes(csr, b, nodes)) {
    if (layout == Layout::node)
      throw StorageError("petscmp: the node layout stores 32-bit column indices; this block has 2^31 columns or more");
    nodes.clear();
  }
  if (layout == Layout::automatic && kMinNodeRows * static_cast<double>(nodes.size()) > static_cast<double>(b.row_count()))
    nodes.clear();
  return nodes;
}

// The layout decision (nodes where rows share patterns, slices where the
// options allow them and padding is small), then the values, written once, and
// the byte accounting.
template <typename Index>
void fill_blocks(const CsrView<Index> &csr, Layout layout, bool lossy, CompactCsr &out, BufferPool &pool)
{
  const bool narrow_columns = csr.ncols <= std::numeric_limits<std::int32_t>::max();
  if (layout == Layout::sliced && !narrow_columns)
    throw StorageError("petscmp: the sliced layout stores 32-bit column indices; this block has 2^31 columns or more");
  for (RowBlock &b : out.blocks) {
    FormatStats &fs = out.stats.per_format[static_cast<int>(b.format)];
    std::vector<NodeInfo> nodes = node_layout_of(csr, layout, b);
    std::vector<std::int64_t> offsets;
    if (nodes.empty() && layout != Layout::csr && layout != Layout::node && narrow_columns && b.row_count() > 0) {
      offsets = slice_offsets_of(csr, b);
      if (layout != Layout::sliced && offsets.back() > kMaxSlicePadding * static_cast<double>(b.nnz)) offsets.clear();
    }
    dispatch_format(b.format, [&](auto tag) {
      using S = typename decltype(tag)::type;
      if (!nodes.empty()) fill_nodes<S>(csr, std::move(nodes), b, lossy, fs, pool);
      else if (!offsets.empty()) fill_sliced<S>(csr, std::move(offsets), b, lossy, fs, pool);
      else fill_csr_order<S>(csr, b, lossy, fs, pool);
    });
    for (std::int64_t k = 0; k < b.row_count(); ++k) fs.rows += csr.rowptr[b.row(k) + 1] > csr.rowptr[b.row(k)];
    fs.nnz += b.nnz;
    out.stats.stored += b.stored_count();
    if (b.sliced()) out.stats.sliced_rows += b.row_count();
    if (b.node_layout()) count_nodes(b, out.stats);
    // a node block's padding is never read as values
    out.stats.value_bytes += b.node_layout() ? b.nnz * static_cast<std::int64_t>(format_bytes(b.format))
                                             : static_cast<std::int64_t>(b.values.size());
    out.stats.index_bytes += block_index_bytes<Index>(b);
  }
}

template <typename Index> void check_view(const CsrView<Index> &csr)
{
  if (csr.nrows < 0 || csr.ncols < 0) throw StorageError("petscmp: negative matrix dimensions");
  if (csr.nrows > 0 && (!csr.rowptr || (csr.rowptr[csr.nrows] > 0 && (!csr.cols || !csr.values))))
    throw StorageError("petscmp: the CSR arrays of the matrix are missing");
}

} // namespace

const char *storage_mode_name(StorageMode m) { return kModeNames[static_cast<int>(m)]; }

const char *const kLayoutNames[kLayoutCount] = {"auto", "csr", "sliced", "node"};
const char *layout_name(Layout l) { return kLayoutNames[static_cast<int>(l)]; }

bool parse_layout(const char *name, Layout *l)
{
  for (int i = 0; i < kLayoutCount; ++i)
    if (name && std::strcmp(name, kLayoutNames[i]) == 0) {
      *l = static_cast<Layout>(i);
      return true;
    }
  return false;
}

bool parse_storage_mode(const char *name, StorageMode *m)
{
  for (int i = 0; i < kStorageModeCount; ++i)
    if (name && std::strcmp(name, kModeNames[i]) == 0) {
      *m = static_cast<StorageMode>(i);
      return true;
    }
  return false;
}

bool parse_format(const char *name, Format *f)
{
  for (int i = 0; i < kFormatCount; ++i)
    if (name && std::strcmp(name, format_name(static_cast<Format>(i))) == 0) {
      *f = static_cast<Format>(i);
      return true;
    }
  return false;
}

double StorageStats::max_relative_error() const
{
  double e = 0.0;
  for (const auto &f : per_format) e = std::max(e, f.max_relative_error);
  return e;
}

template <typename Index> AbsSum abs_value_sum(const CsrView<Index> &csr)
{
  AbsSum s;
  const Index nnz = csr.nrows ? csr.rowptr[csr.nrows] : 0;
  for (Index k = 0; k < nnz; ++k)
    if (std::isfinite(csr.values[k]) && csr.values[k] != 0.0) {
      s.sum += std::fabs(csr.values[k]);
      s.count += 1;
    }
  return s;
}

template <typename Index>
std::vector<Format> choose_row_formats(const std::vector<CsrView<Index>> &parts, const StorageOptions &opts)
{
  if (parts.empty()) return {};
  const Index nrows = parts.front().nrows;
  for (const auto &p : parts) {
    check_view(p);
    if (p.nrows != nrows) throw StorageError("petscmp: the parts of a matrix disagree on the number of rows");
  }
  if (opts.mode == StorageMode::tolerance && !(opts.tolerance >= 0.0))
    throw StorageError("petscmp: the tolerance must be a nonnegative number");
  if (opts.mode == StorageMode::rowsplit && (!(opts.range_factor > 0.0) || !(opts.row_fraction >= 0.0 && opts.row_fraction <= 1.0)))
    throw StorageError("petscmp: rowsplit needs a positive range factor and a row fraction in [0, 1]");

  const double r = opts.range_factor * (opts.mean_abs_value >= 0.0 ? opts.mean_abs_value : mean_abs(parts));
  std::vector<Format> formats(static_cast<std::size_t>(nrows), Format::fp64);
  for (Index i = 0; i < nrows; ++i) {
    const RowValues<Index> row(parts, i);
    switch (opts.mode) {
    case StorageMode::lossless:
      formats[i] = lossless_row_format(row);
      break;
    case StorageMode::tolerance:
      formats[i] = tolerance_row_format(row, opts.tolerance);
      break;
    case StorageMode::rowsplit:
      formats[i] = rowsplit_row_format(row, r, opts.row_fraction);
      break;
    case StorageMode::entrysplit:
      throw StorageError("petscmp: entrysplit chooses formats per entry, not per row");
    default:
      formats[i] = uniform_row_format(row, uniform_format(opts.mode));
      break;
    }
  }
  return formats;
}

template <typename Index>
CompactCsr assemble_compact_csr(const CsrView<Index> &csr, const std::vector<Format> &row_formats,
                                const StorageOptions &opts, CompactCsr *recycle)
{
  BufferPool pool;
  if (recycle) {
    for (RowBlock &b : recycle->blocks) {
      pool.give(b.values.buffer());
      pool.give(b.cols.buffer());
      pool.give(b.row_lengths.buffer());
      pool.give(b.node_cols.buffer());
    }
    recycle->blocks.clear();
  }
  check_view(csr);
  if (static_cast<Index>(row_formats.size()) != csr.nrows)
    throw StorageError("petscmp: one format per row is needed");
  CompactCsr out;
  out.nrows            = csr.nrows;
  out.ncols            = csr.ncols;
  out.mode             = opts.mode;
  out.order            = opts.order;
  out.stats.nrows      = csr.nrows;
  out.stats.nnz        = csr.nrows ? csr.rowptr[csr.nrows] : 0;
  out.stats.index_size = sizeof(Index);

  const std::vector<Run> runs = find_runs(csr, row_formats);
  std::int64_t nonempty       = 0;
  for (Index i = 0; i < csr.nrows; ++i) nonempty += csr.rowptr[i + 1] > csr.rowptr[i];
  const bool mostly_empty = 2 * nonempty < csr.nrows;
  const bool fragmented   = static_cast<std::int64_t>(runs.size()) * kMinRunLength > std::max<std::int64_t>(nonempty, 1);
  if (runs.size() <= 1 && !mostly_empty) shape_runs(csr, runs, out);
  else if (fragmented || mostly_empty) shape_grouped(csr, row_formats, out);
  else shape_runs(csr, runs, out);
  fill_blocks(csr, opts.layout, storage_mode_is_lossy(opts.mode), out, pool);
  return out;
}

template <typename Index> CompactCsr build_entry_split(const CsrView<Index> &csr, const StorageOptions &opts)
{
  check_view(csr);
  if (csr.ncols > std::numeric_limits<std::int32_t>::max())
    throw StorageError("petscmp: entrysplit stores 32-bit column indices; this block has more than 2^31 columns");
  CompactCsr out;
  out.nrows            = csr.nrows;
  out.ncols            = csr.ncols;
  out.mode             = opts.mode;
  out.order            = opts.order;
  out.stats.nrows      = csr.nrows;
  out.stats.nnz        = csr.nrows ? csr.rowptr[csr.nrows] : 0;
  out.stats.index_size = sizeof(Index);
  auto goes_to_fp32    = [&opts](double v) { return std::fabs(v) < opts.range && stores_within_roundoff(Format::fp32, v); };

  for (Format f : {Format::fp32, Format::fp64}) {
    SplitPart part;
    part.format = f;
    part.rowptr.assign(static_cast<std::size_t>(csr.nrows) + 1, 0);
    for (Index i = 0; i < csr.nrows; ++i) {
      std::int64_t n = 0;
      for (Index k = csr.rowptr[i]; k < csr.rowptr[i + 1]; ++k) n += goes_to_fp32(csr.values[k]) == (f == Format::fp32);
      part.rowptr[i + 1] = part.rowptr[i] + n;
    }
    const std::int64_t nnz = part.rowptr.back();
    part.cols.resize(static_cast<std::size_t>(nnz));
    part.values.resize(static_cast<std::size_t>(nnz) * format_bytes(f));
    FormatStats &fs = out.stats.per_format[static_cast<int>(f)];
    dispatch_format(f, [&](auto tag) {
      using S = typename decltype(tag)::type;
      const reduced_writer<S> vals(part.values.as<S>(), static_cast<std::size_t>(nnz));
      std::int64_t dst = 0;
      for (Index i = 0; i < csr.nrows; ++i) {
        for (Index k = csr.rowptr[i]; k < csr.rowptr[i + 1]; ++k) {
          if (goes_to_fp32(csr.values[k]) != (f == Format::fp32)) continue;
          part.cols[dst] = static_cast<std::int32_t>(csr.cols[k]);
          vals.store(static_cast<std::size_t>(dst++), csr.values[k]);
          fs.max_relative_error = std::max(fs.max_relative_error, relative_error(f, csr.values[k]));
        }
        fs.rows += part.rowptr[i + 1] > part.rowptr[i];
      }
    });
    fs.nnz = nnz;
    out.stats.stored += nnz;
    out.stats.value_bytes += static_cast<std::int64_t>(part.values.size());
    out.stats.index_bytes += nnz * 4 + (csr.nrows + 1) * 8;
    out.split.push_back(std::move(part));
  }
  return out;
}

template <typename Index>
CompactCsr build_compact_csr(const CsrView<Index> &csr, const StorageOptions &opts, CompactCsr *recycle)
{
  if (opts.mode == StorageMode::entrysplit) return build_entry_split(csr, opts);
  return assemble_compact_csr(csr, choose_row_formats(std::vector<CsrView<Index>>{csr}, opts), opts, recycle);
}

#define PETSCMP_INSTANTIATE_BUILDER(Index)                                                                             \
  template AbsSum abs_value_sum<Index>(const CsrView<Index> &);                                                        \
  template std::vector<Format> choose_row_formats<Index>(const std::vector<CsrView<Index>> &, const StorageOptions &); \
  template CompactCsr assemble_compact_csr<Index>(const CsrView<Index> &, const std::vector<Format> &,                 \
                                                  const StorageOptions &, CompactCsr *);                               \
  template CompactCsr build_compact_csr<Index>(const CsrView<Index> &, const StorageOptions &, CompactCsr *);           \
  template CompactCsr build_entry_split<Index>(const CsrView<Index> &, const StorageOptions &);
PETSCMP_INSTANTIATE_BUILDER(std::int32_t)
PETSCMP_INSTANTIATE_BUILDER(std::int64_t)
#undef PETSCMP_INSTANTIATE_BUILDER

} // namespace petscmp
