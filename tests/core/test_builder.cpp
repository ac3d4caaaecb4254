// The storage builder: format decisions per mode on crafted rows, the layout of
// the compact copy, what it stores and the statistics it reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/compact_csr.hpp"

using namespace petscmp;

namespace {

const double kInf  = std::numeric_limits<double>::infinity();
const double kQNaN = double_from_bits(0x7ff8000000000000ull); // canonical quiet NaN
const double kPNaN = double_from_bits(0x7ff8000000000001ull); // NaN with a payload bit only fp64 keeps

template <typename Index> struct TestCsr {
  Index nrows = 0, ncols = 1;
  std::vector<Index> rowptr{0}, cols;
  std::vector<double> vals;
  void add_row(const std::vector<double> &r)
  {
    for (std::size_t k = 0; k < r.size(); ++k) {
      cols.push_back(static_cast<Index>(k));
      vals.push_back(r[k]);
    }
    rowptr.push_back(static_cast<Index>(vals.size()));
    ncols = std::max<Index>(ncols, static_cast<Index>(r.size()));
    ++nrows;
  }
  Index row_len(Index i) const { return rowptr[i + 1] - rowptr[i]; }
  CsrView<Index> view() const
  {
    CsrView<Index> v;
    v.nrows  = nrows;
    v.ncols  = ncols;
    v.rowptr = rowptr.data();
    v.cols   = cols.data();
    v.values = vals.data();
    return v;
  }
};

template <typename Index> TestCsr<Index> make_csr(const std::vector<std::vector<double>> &rows)
{
  TestCsr<Index> m;
  for (const auto &r : rows)
    m.add_row(r);
  return m;
}

bool same(double a, double b)
{
  return double_bits(a) == double_bits(b);
}

// Stored value i of block b, as products read it (split storage: `read` segments, 0: all).
double decode_at(const RowBlock &b, std::int64_t i, int read = 0)
{
  return dispatch_block_values(b, read, [&](auto tag) {
    using S = typename decltype(tag)::type;
    return decode(values_of<S>(b)[i]);
  });
}

// What a row-wise compact copy stores, read back entry by entry through its
// layout, with checks that the layout is consistent with the master CSR.
struct Readback {
  std::vector<double> vals;    // per master entry
  std::vector<int> row_format; // per row; -1: in no block
};

// The invariants of a sliced block: slices of kSliceRows block rows, each as
// wide as its longest row; entries carry the master's columns; padding is 0;
// a slice is shifted (one column per entry) exactly when its 8 rows have one
// length and the columns of row r are the first row's plus r; else patched
// (where allowed) exactly when, for each entry, the column minus the lane
// that most rows with that entry share (the largest of equally shared ones)
// is not negative, and the columns
// that differ from it (the patches) number at most min(2 width, 255).
template <typename Index> void check_slices(const RowBlock &b, const TestCsr<Index> &m, bool patched_allowed)
{
  const std::int64_t nslices = (b.row_count() + kSliceRows - 1) / kSliceRows;
  ASSERT_EQ(b.slice_count(), nslices);
  ASSERT_EQ(static_cast<std::int64_t>(b.row_lengths.size()), nslices * kSliceRows);
  ASSERT_EQ(static_cast<std::int64_t>(b.slice_col_offsets.size()), nslices + 1);
  EXPECT_EQ(b.slice_offsets.front(), 0);
  EXPECT_EQ(b.slice_col_offsets.front(), 0);
  if (!b.segments) { // (split storage: planes, checked by read_back)
    EXPECT_EQ(static_cast<std::int64_t>(b.values.size()),
              b.stored_count() * static_cast<std::int64_t>(format_bytes(b.format)));
  }
  EXPECT_EQ(static_cast<std::int64_t>(b.cols.size()), b.slice_col_offsets.back());
  for (std::int64_t q = 0; q < nslices; ++q) {
    std::int64_t width = 0;
    bool shifted       = (q + 1) * kSliceRows <= b.row_count();
    for (std::int64_t k = q * kSliceRows; k < (q + 1) * kSliceRows; ++k) {
      const std::int64_t len = k < b.row_count() ? m.row_len(static_cast<Index>(b.row(k))) : 0;
      EXPECT_EQ(b.row_lengths[k], len) << "block row " << k;
      width = std::max(width, len);
    }
    for (std::int64_t k = q * kSliceRows; shifted && k < (q + 1) * kSliceRows; ++k) {
      const Index row = static_cast<Index>(b.row(k)), row0 = static_cast<Index>(b.row(q * kSliceRows));
      shifted = m.row_len(row) == width && width > 0;
      for (std::int64_t e = 0; shifted && e < width; ++e)
        shifted = m.cols[m.rowptr[row] + e] == m.cols[m.rowptr[row0] + e] + (k - q * kSliceRows);
    }
    // narrow: any other slice whose columns lie within 2^16 of its smallest one
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = -1;
    for (std::int64_t k = q * kSliceRows; k < std::min(b.row_count(), (q + 1) * kSliceRows); ++k) {
      const Index row = static_cast<Index>(b.row(k));
      for (Index at = m.rowptr[row]; at < m.rowptr[row + 1]; ++at) {
        lo = std::min<std::int64_t>(lo, m.cols[at]);
        hi = std::max<std::int64_t>(hi, m.cols[at]);
      }
    }
    std::int64_t patches = 0;
    bool patched         = !shifted && width > 0 && patched_allowed;
    for (std::int64_t e = 0; patched && e < width; ++e) {
      std::map<std::int64_t, int> lanes_of; // column minus lane -> rows with entry e that have it
      int live = 0;
      for (std::int64_t k = q * kSliceRows; k < std::min(b.row_count(), (q + 1) * kSliceRows); ++k) {
        const Index row = static_cast<Index>(b.row(k));
        if (e >= m.row_len(row)) continue;
        ++live;
        ++lanes_of[static_cast<std::int64_t>(m.cols[m.rowptr[row] + e]) - (k - q * kSliceRows)];
      }
      int most = 0;
      for (const auto &[shift, count] : lanes_of) // ascending: the largest of equally shared shifts
        if (count >= most) {
          most    = count;
          patched = shift >= 0;
        }
      patches += live - most;
    }
    patched           = patched && patches <= std::min<std::int64_t>(2 * width, 255);
    const bool narrow = !shifted && !patched && width > 0 && hi - lo < 65536;
    EXPECT_EQ(b.shifted_slice(q), shifted) << "slice " << q;
    EXPECT_EQ(b.patched_slice(q), patched) << "slice " << q;
    EXPECT_EQ(b.narrow_slice(q), narrow) << "slice " << q;
    EXPECT_EQ(b.slice_offsets[q + 1] - b.slice_offsets[q], width * kSliceRows) << "slice " << q;
    EXPECT_EQ(b.slice_col_offsets[q + 1] - b.slice_col_offsets[q], shifted   ? width
                                                                   : patched ? width + (width + 1) / 2 + patches
                                                                   : narrow  ? 1 + width * kSliceRows / 2
                                                                             : width * kSliceRows)
        << "slice " << q;
    if (narrow) {
      EXPECT_EQ(b.narrow_base(q), lo) << "slice " << q;
    }
    for (std::int64_t k = q * kSliceRows; k < (q + 1) * kSliceRows; ++k)
      for (std::int64_t e = 0; e < width; ++e) {
        const std::int64_t at = b.value_index(k, e, 0);
        if (e < b.row_lengths[k]) {
          const Index row = static_cast<Index>(b.row(k));
          EXPECT_EQ(b.slice_column(k, e), static_cast<std::int64_t>(m.cols[m.rowptr[row] + e]));
        } else {
          if (narrow)
            EXPECT_EQ(b.narrow_offsets(q)[e * kSliceRows + k % kSliceRows], 0);
          else if (patched)
            EXPECT_EQ(b.patched_columns(q).masks[e] >> (k % kSliceRows) & 1u, 0u) << "a padding entry is no patch";
          else
            EXPECT_EQ(b.cols[b.slice_col_offsets[q] + e * kSliceRows + k % kSliceRows], 0);
          EXPECT_EQ(decode_at(b, at), 0.0) << "padding must be zero";
        }
      }
  }
}

// A node block: nodes tile its rows in order; a node's rows are consecutive
// matrix rows with one column pattern, which its indices hold; the values are
// followed by zero padding.
template <typename Index> void check_nodes(const RowBlock &b, const TestCsr<Index> &m)
{
  if (!b.segments) { // (split storage: planes, checked by read_back)
    EXPECT_EQ(static_cast<std::size_t>(b.values.size()),
              static_cast<std::size_t>(b.nnz + kNodeValuePadding) * format_bytes(b.format));
  }
  for (int p = 0; p < kNodeValuePadding; ++p)
    EXPECT_EQ(decode_at(b, b.nnz + p), 0.0) << "padding must be zero";
  std::int64_t next = 0, values = 0;
  for (const NodeInfo &nd : b.nodes) {
    EXPECT_EQ(nd.first, next);
    EXPECT_EQ(nd.values, values);
    ASSERT_GE(nd.rows, 1);
    ASSERT_LE(nd.rows, kMaxNodeRows);
    const Index row0 = static_cast<Index>(b.row(nd.first));
    for (int r = 0; r < nd.rows; ++r) {
      const Index row = static_cast<Index>(b.row(nd.first + r));
      EXPECT_EQ(row, row0 + r) << "a node's rows are consecutive";
      ASSERT_EQ(m.row_len(row), nd.length);
      for (Index e = 0; e < nd.length; ++e) {
        const unsigned char *at = b.node_cols.as<unsigned char>() + nd.indices;
        const std::int64_t col  = nd.wide ? reinterpret_cast<const std::int32_t *>(at)[e]
                                          : nd.col_base + reinterpret_cast<const std::uint16_t *>(at)[e];
        EXPECT_EQ(col, static_cast<std::int64_t>(m.cols[m.rowptr[row] + e])) << "row " << row << " entry " << e;
      }
    }
    next += nd.rows;
    values += static_cast<std::int64_t>(nd.rows) * nd.length;
  }
  EXPECT_EQ(next, b.row_count());
  EXPECT_EQ(values, b.nnz);
}

// A grouped block lists its rows in ascending order, or, where they were sorted
// by length (ellmp's sort_window, or the automatic layout's kAutoSortWindow),
// each window of that many block rows holds the rows it held in ascending order,
// either so or stably sorted by decreasing length.
// (in_order: b's rows in ascending order)
template <typename Index>
void check_sorted_windows(const CompactCsr &A, const RowBlock &b, const std::vector<std::int32_t> &in_order,
                          const TestCsr<Index> &m)
{
  if (in_order == b.rows) return;
  EXPECT_GT(A.stats.sorted_windows, 0) << "rows out of order, but no window sorted";
  EXPECT_TRUE(b.sliced()) << "rows are sorted for slices only";
  const std::size_t window = static_cast<std::size_t>(A.sort_window > 1 ? A.sort_window : kAutoSortWindow);
  for (std::size_t w = 0; w < in_order.size(); w += window) {
    const auto first = in_order.begin() + static_cast<std::ptrdiff_t>(w);
    const auto last  = in_order.begin() + static_cast<std::ptrdiff_t>(std::min(in_order.size(), w + window));
    std::vector<std::int32_t> by_length(first, last);
    std::stable_sort(by_length.begin(), by_length.end(), [&](std::int32_t i, std::int32_t j) {
      return m.row_len(static_cast<Index>(i)) > m.row_len(static_cast<Index>(j));
    });
    const std::vector<std::int32_t> held(b.rows.begin() + (first - in_order.begin()),
                                         b.rows.begin() + (last - in_order.begin()));
    EXPECT_TRUE(held == std::vector<std::int32_t>(first, last) || held == by_length)
        << "window at block row " << w << " holds other rows, or in another order";
  }
}

template <typename Index> Readback read_back(const CompactCsr &A, const TestCsr<Index> &m)
{
  Readback out;
  out.vals.assign(m.vals.size(), std::nan(""));
  out.row_format.assign(static_cast<std::size_t>(m.nrows), -1);
  std::vector<int> seen(m.vals.size(), 0);
  EXPECT_EQ(A.nrows, m.nrows);
  EXPECT_EQ(A.ncols, m.ncols);
  EXPECT_FALSE(A.entry_split());
  std::int64_t next_run_row = 0;
  for (const RowBlock &b : A.blocks) {
    if (b.sliced())
      check_slices(b, m, A.patched_slices);
    else if (b.node_layout())
      check_nodes(b, m);
    if (b.segments) { // planes of fp64's bytes, each padded
      EXPECT_GE(b.plane_stride, b.stored_count() + kNodeValuePadding);
      EXPECT_EQ(static_cast<std::size_t>(b.values.size()), static_cast<std::size_t>(b.plane_stride) * sizeof(double));
    } else if (!b.sliced() && !b.node_layout()) {
      EXPECT_EQ(static_cast<std::size_t>(b.values.size()), static_cast<std::size_t>(b.nnz) * format_bytes(b.format));
    }
    const bool sorted_run = b.grouped() && A.all_rows_covered; // a run block whose rows were sorted by length
    if (b.grouped()) {
      if (!b.sliced() && !b.node_layout()) {
        EXPECT_EQ(b.value_offsets.size(), b.rows.size() + 1);
        EXPECT_EQ(b.value_offsets.front(), 0);
        EXPECT_EQ(b.value_offsets.back(), b.nnz);
        for (std::size_t k = 0; k < b.rows.size(); ++k)
          EXPECT_EQ(b.value_offsets[k + 1] - b.value_offsets[k], m.row_len(static_cast<Index>(b.rows[k])));
      }
      EXPECT_EQ(b.row_count(), static_cast<std::int64_t>(b.rows.size()));
      std::vector<std::int32_t> in_order(b.rows);
      std::sort(in_order.begin(), in_order.end());
      check_sorted_windows(A, b, in_order, m);
      for (std::size_t k = 0; k < in_order.size(); ++k) {
        if (k) {
          EXPECT_LT(in_order[k - 1], in_order[k]);
        }
        if (sorted_run) // it lists every row of its range, empty ones too
          EXPECT_EQ(in_order[k], b.row_begin + static_cast<std::int64_t>(k));
        else
          EXPECT_GT(m.row_len(static_cast<Index>(in_order[k])), 0) << "grouped blocks list nonempty rows only";
      }
    }
    if (!b.grouped() || sorted_run) {
      EXPECT_TRUE(A.all_rows_covered);
      EXPECT_EQ(b.row_begin, next_run_row) << "runs must tile the rows in order";
      EXPECT_LT(b.row_begin, b.row_end);
      next_run_row = b.row_end;
      EXPECT_EQ(b.value_base, m.rowptr[b.row_begin]);
      EXPECT_EQ(b.nnz, m.rowptr[b.row_end] - m.rowptr[b.row_begin]);
      EXPECT_EQ(b.row_count(), b.row_end - b.row_begin);
    }
    for (std::int64_t k = 0; k < b.row_count(); ++k) {
      const Index row = static_cast<Index>(b.row(k));
      EXPECT_EQ(out.row_format[row], -1) << "row " << row << " in two blocks";
      out.row_format[row] = static_cast<int>(b.format);
      for (Index e = 0; e < m.row_len(row); ++e) {
        out.vals[m.rowptr[row] + e] = decode_at(b, b.value_index(k, e, m.rowptr[row]));
        seen[m.rowptr[row] + e]++;
        if (b.sliced()) { // the slice's own columns, whatever its kind
          EXPECT_EQ(b.slice_column(k, e), static_cast<std::int64_t>(m.cols[m.rowptr[row] + e]))
              << "row " << row << " entry " << e;
        }
      }
    }
  }
  if (A.all_rows_covered) {
    EXPECT_EQ(next_run_row, m.nrows);
  }
  for (std::size_t k = 0; k < seen.size(); ++k)
    EXPECT_EQ(seen[k], 1) << "entry " << k;
  return out;
}

// |stored - v| / |v|, with 0 for bitwise-equal values and NaN kept NaN.
double rel_err(double stored, double v)
{
  if (same(stored, v) || (std::isnan(stored) && std::isnan(v))) return 0.0;
  if (!std::isfinite(stored) || !std::isfinite(v)) return kInf;
  if (v == 0.0) return stored == 0.0 ? 0.0 : kInf;
  return std::fabs(stored - v) / std::fabs(v);
}

// Every stored value is the master value rounded to its row's format, and the
// statistics are those of what is stored (the largest changes as
// measure_relative_errors finds them: a lossy build leaves them unmeasured).
template <typename Index>
void check_compact(const CompactCsr &built, const TestCsr<Index> &m, const std::vector<Format> &formats)
{
  for (const FormatStats &fs : built.stats.per_format) {
    if (!built.stats.errors_measured) {
      EXPECT_EQ(fs.max_relative_error, 0.0);
    }
  }
  CompactCsr A = built;
  measure_relative_errors(m.view(), A);
  EXPECT_TRUE(A.stats.errors_measured);
  const Readback rb = read_back(A, m);
  FormatStats want[kFormatCount];
  std::int64_t value_bytes = 0;
  for (Index i = 0; i < m.nrows; ++i) {
    if (m.row_len(i) == 0) continue;
    const Format f = formats[i];
    EXPECT_EQ(rb.row_format[i], static_cast<int>(f)) << "row " << i;
    want[static_cast<int>(f)].rows += 1;
    want[static_cast<int>(f)].nnz += m.row_len(i);
    value_bytes += m.row_len(i) * static_cast<std::int64_t>(format_bytes(f));
    for (Index k = m.rowptr[i]; k < m.rowptr[i + 1]; ++k) {
      EXPECT_TRUE(same(rb.vals[k], round_trip(f, m.vals[k])) ||
                  (std::isnan(rb.vals[k]) && std::isnan(round_trip(f, m.vals[k]))))
          << "row " << i << " entry " << k << ": " << rb.vals[k] << " vs " << m.vals[k] << " in " << format_name(f);
      double &e = want[static_cast<int>(f)].max_relative_error;
      e         = std::max(e, rel_err(rb.vals[k], m.vals[k]));
    }
  }
  EXPECT_EQ(A.stats.nrows, m.nrows);
  EXPECT_EQ(A.stats.nnz, static_cast<std::int64_t>(m.vals.size()));
  EXPECT_EQ(A.stats.index_size, static_cast<int>(sizeof(Index)));
  // padding entries of sliced blocks are stored (and moved) too
  std::int64_t padding_bytes = 0;
  for (const RowBlock &b : A.blocks)
    padding_bytes += (b.stored_count() - b.nnz) * static_cast<std::int64_t>(format_bytes(b.format));
  EXPECT_EQ(A.stats.value_bytes, value_bytes + padding_bytes);
  double maxe = 0.0;
  for (int f = 0; f < kFormatCount; ++f) {
    EXPECT_EQ(A.stats.per_format[f].rows, want[f].rows) << format_name(static_cast<Format>(f));
    EXPECT_EQ(A.stats.per_format[f].nnz, want[f].nnz) << format_name(static_cast<Format>(f));
    EXPECT_EQ(A.stats.per_format[f].max_relative_error, want[f].max_relative_error)
        << format_name(static_cast<Format>(f));
    maxe = std::max(maxe, want[f].max_relative_error);
  }
  EXPECT_EQ(A.stats.max_relative_error(), maxe);
  EXPECT_EQ(A.stats.aij_bytes(), static_cast<double>(m.vals.size()) * (8 + sizeof(Index)) +
                                     static_cast<double>(m.nrows + 1) * sizeof(Index));
}

struct RowCase {
  std::vector<double> values;
  Format expect;
};

template <typename Index> void check_mode(StorageOptions opts, const std::vector<RowCase> &cases)
{
  std::vector<std::vector<double>> rows;
  for (const auto &c : cases)
    rows.push_back(c.values);
  const TestCsr<Index> m            = make_csr<Index>(rows);
  const std::vector<Format> formats = choose_row_formats(std::vector<CsrView<Index>>{m.view()}, opts);
  ASSERT_EQ(formats.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(format_name(formats[i]), std::string(format_name(cases[i].expect)))
        << storage_mode_name(opts.mode) << " row " << i << " (first value " << std::hexfloat
        << (cases[i].values.empty() ? 0.0 : cases[i].values[0]) << ")";
  const CompactCsr A = build_compact_csr(m.view(), opts);
  EXPECT_EQ(A.mode, opts.mode);
  check_compact(A, m, formats);
}

template <typename Index> class BuilderTest : public ::testing::Test {
};
using IndexTypes = ::testing::Types<std::int32_t, std::int64_t>;
TYPED_TEST_SUITE(BuilderTest, IndexTypes);

StorageOptions with_mode(StorageMode m, Layout layout = Layout::automatic)
{
  StorageOptions o;
  o.mode   = m;
  o.layout = layout;
  return o;
}

} // namespace

// ---- format decisions ------------------------------------------------------------------

TYPED_TEST(BuilderTest, Lossless)
{
  check_mode<TypeParam>(with_mode(StorageMode::lossless),
                        {
                            {{6, -1, -1}, Format::fp16},
                            {{65536.0 * 3, 1}, Format::bf16}, // exact in bf16, beyond fp16's range
                            {{0.1}, Format::fp64},
                            {{1 + 0x1p-20}, Format::fp32},
                            {{0x1p-30}, Format::bf16}, // below fp16's subnormals
                            {{kInf, -kInf, 2}, Format::fp16},
                            {{kQNaN}, Format::fp16},
                            {{kPNaN}, Format::fp64},
                            {{}, Format::fp16}, // empty: narrowest
                            {{-0.0, 0.0}, Format::fp16},
                            {{65504, 0x1p-24, -0x1p-14}, Format::fp16},
                            {{65520}, Format::fp32},           // 12 significant bits: not bf16
                            {{1e-310}, Format::fp64},          // double subnormal
                            {{0x1p-140}, Format::fp32},        // fp32 subnormal, below bf16's
                            {{0x1p-130}, Format::bf16},        // bf16 subnormal
                            {{1, 2, 3, 0.1, 4}, Format::fp64}, // one value decides the row
                            {{1e5}, Format::fp32},
                            {{DBL_MAX}, Format::fp64},
                        });
}

TYPED_TEST(BuilderTest, LosslessStoresBitForBit)
{
  std::mt19937_64 rng(21);
  TestCsr<TypeParam> m;
  for (int i = 0; i < 300; ++i) {
    std::vector<double> r(static_cast<std::size_t>(rng() % 6));
    const int kind = static_cast<int>(rng() % 4);
    for (auto &v : r) {
      const double base = static_cast<double>(static_cast<std::int64_t>(rng() % 2001) - 1000);
      v                 = kind == 0 ? base : kind == 1 ? base * 0x1p40 : kind == 2 ? base + 0x1p-12 : base / 3;
    }
    m.add_row(r);
  }
  const CompactCsr A = build_compact_csr(m.view(), with_mode(StorageMode::lossless));
  const Readback rb  = read_back(A, m);
  for (std::size_t k = 0; k < m.vals.size(); ++k)
    ASSERT_TRUE(same(rb.vals[k], m.vals[k])) << k;
  EXPECT_EQ(A.stats.max_relative_error(), 0.0);
}

TYPED_TEST(BuilderTest, UniformFp16)
{
  check_mode<TypeParam>(with_mode(StorageMode::fp16), {
                                                          {{0.1, 3}, Format::fp16},
                                                          {{1e5}, Format::fp32},     // overflows fp16
                                                          {{1e300}, Format::fp64},   // overflows fp32 too
                                                          {{1e-9}, Format::fp32},    // underflows fp16
                                                          {{1e-6}, Format::fp32},    // fp16 subnormal, 1% error
                                                          {{0x1p-20}, Format::fp16}, // fp16 subnormal, exact
                                                          {{65519}, Format::fp16},   // rounds to 65504
                                                          {{1e-310}, Format::fp64},
                                                          {{kQNaN, kInf}, Format::fp16},
                                                          {{kPNaN}, Format::fp64}, // payload lost in fp16 and fp32
                                                          {{}, Format::fp16},
                                                      });
}

TYPED_TEST(BuilderTest, UniformBf16)
{
  check_mode<TypeParam>(with_mode(StorageMode::bf16), {
                                                          {{0.1, 1e5, 1e38, 1e-37}, Format::bf16},
                                                          {{1e300}, Format::fp64},
                                                          {{3.4e38}, Format::fp32}, // beyond bf16's max + half ulp
                                                          {{1e-39}, Format::fp64},  // subnormal in bf16 and fp32
                                                          {{-0.0}, Format::bf16},
                                                      });
}

TYPED_TEST(BuilderTest, UniformFp32)
{
  check_mode<TypeParam>(with_mode(StorageMode::fp32), {
                                                          {{0.1, 1e38, -1e-37}, Format::fp32},
                                                          {{1e39}, Format::fp64},
                                                          {{1e-40}, Format::fp64},
                                                          {{1e-310}, Format::fp64},
                                                          {{1e-300}, Format::fp64},
                                                          {{kInf}, Format::fp32},
                                                      });
}

TYPED_TEST(BuilderTest, UniformTruncated)
{
  check_mode<TypeParam>(with_mode(StorageMode::fp11_20), {
                                                             {{1e300, 0.1, DBL_MAX, DBL_MIN}, Format::fp11_20},
                                                             {{1e-310}, Format::fp64},
                                                             {{kInf, kQNaN}, Format::fp11_20},
                                                             {{kPNaN}, Format::fp64},
                                                         });
  check_mode<TypeParam>(with_mode(StorageMode::fp11_4), {
                                                            {{0.1, 1e300, -DBL_MAX}, Format::fp11_4},
                                                            {{1e-310}, Format::fp64},
                                                            // subnormal: 0 in fp11_4, exact in fp11_20
                                                            {{std::ldexp(1 + 0x1p-7, -1030)}, Format::fp11_20},
                                                            {{kPNaN}, Format::fp64},
                                                            {{1.999}, Format::fp11_4},
                                                        });
}

TYPED_TEST(BuilderTest, Tolerance)
{
  StorageOptions o = with_mode(StorageMode::tolerance);
  o.tolerance      = 1e-3;
  const double a   = std::ldexp(1 + 0x1p-8, 500); // fp11_4 error 2^-8/(1+2^-8) > 1e-3
  check_mode<TypeParam>(o, {
                               {{1 + 0x1p-9}, Format::fp16},
                               {{0.1}, Format::fp16},       // fp16 error 2.4e-4
                               {{0x1p20}, Format::bf16},    // beyond fp16, exact in bf16
                               {{0x1p200}, Format::fp11_4}, // beyond fp32, exact in fp11_4
                               {{1e5}, Format::fp32},       // bf16 error 1.6e-3, fp11_4 1.7e-2
                               {{a}, Format::fp11_20},
                               {{0.1, 0x1p200}, Format::fp11_20},
                               {{1e-310}, Format::fp64}, // underflows everywhere
                               {{kQNaN, -kInf}, Format::fp16},
                               {{kPNaN}, Format::fp64},
                           });
  o.tolerance = 1e-5;
  check_mode<TypeParam>(o, {{{0.1}, Format::fp32}, {{1 + 0x1p-9}, Format::fp16}, {{0.1, 0x1p200}, Format::fp11_20}});
  o.tolerance = 1e-10;
  check_mode<TypeParam>(o, {{{0.1}, Format::fp64}, {{0.1, 0x1p200}, Format::fp64}, {{1 + 0x1p-20}, Format::fp32}});
  o.tolerance = 0.1; // fp11_4 is good enough where fp16 and bf16 fail
  check_mode<TypeParam>(o, {{{0.1, 0x1p200}, Format::fp11_4}, {{1e5}, Format::bf16}});
}

TYPED_TEST(BuilderTest, ToleranceZeroIsExactness)
{
  StorageOptions o                 = with_mode(StorageMode::tolerance);
  o.tolerance                      = 0.0;
  const std::vector<RowCase> cases = {
      {{1 + 0x1p-4}, Format::fp16},
      {{1.5 * 0x1p-100}, Format::bf16},
      {{0x1p200}, Format::fp11_4},
      {{1 + 0x1p-20}, Format::fp32},
      {{std::ldexp(1 + 0x1p-20, 500)}, Format::fp11_20},
      {{0.1}, Format::fp64},
      {{1e-310}, Format::fp64},
  };
  check_mode<TypeParam>(o, cases);
  // On rows without fp11 candidates it agrees with lossless.
  std::vector<std::vector<double>> rows = {{1 + 0x1p-4}, {1.5 * 0x1p-100}, {1 + 0x1p-20}, {0.1},
                                           {kQNaN},      {kPNaN},          {65520}};
  const TestCsr<TypeParam> m            = make_csr<TypeParam>(rows);
  EXPECT_EQ(choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, o),
            choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, with_mode(StorageMode::lossless)));
}

TYPED_TEST(BuilderTest, ToleranceBoundsRandomErrors)
{
  std::mt19937_64 rng(22);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> ex(-60, 60);
  TestCsr<TypeParam> m;
  for (int i = 0; i < 400; ++i) {
    std::vector<double> r(1 + rng() % 5);
    for (auto &v : r)
      v = std::ldexp(mant(rng), ex(rng)) * ((rng() & 1) ? -1 : 1);
    m.add_row(r);
  }
  for (double tol : {0.0, 1e-12, 1e-7, 1e-5, 1e-3, 0.01, 0.1}) {
    StorageOptions o   = with_mode(StorageMode::tolerance);
    o.tolerance        = tol;
    const auto formats = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, o);
    const CompactCsr A = build_compact_csr(m.view(), o);
    check_compact(A, m, formats);
    EXPECT_LE(A.stats.max_relative_error(), tol);
    if (tol >= 1e-3) {
      EXPECT_GT(A.stats.per_format[static_cast<int>(Format::fp16)].rows, 0);
    }
  }
}

// The tolerance mode's formats against its definition, value by value: the
// first of fp16, bf16, fp11_4, fp32, fp11_20 that stores every value of the row
// exactly or rounded within its unit roundoff, with a relative error within the
// tolerance (the builder decides without conversions where the unit roundoff
// is within the tolerance). Values near every format's range limits, random
// significands of 1-20 bits, specials; tolerances on both sides of each unit
// roundoff.
TYPED_TEST(BuilderTest, ToleranceMatchesItsDefinition)
{
  const Format ladder[] = {Format::fp16, Format::bf16, Format::fp11_4, Format::fp32, Format::fp11_20};
  std::mt19937_64 rng(31);
  std::vector<double> pool = {0.0, -0.0, kInf, -kInf, kQNaN, kPNaN, 1e-310, 5e-324};
  for (Format f : ladder)
    for (double v : {max_finite(f), min_normal(f)})
      for (double scale : {1.0, 1.0 + 0x1p-12, 1.0 - 0x1p-12, 1.0 + 0x1p-30, 0.5, 2.0})
        pool.push_back(v * scale);
  std::uniform_int_distribution<int> bits(1, 20), ex(-30, 30);
  for (int i = 0; i < 300; ++i) {
    const double m = 1.0 + std::ldexp(static_cast<double>(rng() & ((1u << 20) - 1)), -bits(rng));
    pool.push_back(std::ldexp(m, ex(rng)) * ((rng() & 1) ? -1 : 1));
  }
  TestCsr<TypeParam> m;
  for (int i = 0; i < 2000; ++i) {
    std::vector<double> r(1 + rng() % 12);
    for (auto &v : r)
      v = pool[rng() % pool.size()];
    m.add_row(r);
  }
  for (double tol : {0.0, 0x1p-25, 0x1p-24, 0x1p-23, 0x1p-12, 0x1p-11, 0x1p-10, 0x1p-9, 0x1p-8, 0x1p-5, 0x1p-4, 0.5}) {
    StorageOptions o              = with_mode(StorageMode::tolerance);
    o.tolerance                   = tol;
    const std::vector<Format> got = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, o);
    for (TypeParam i = 0; i < m.nrows; ++i) {
      Format want = Format::fp64;
      for (Format f : ladder) {
        bool ok = true;
        for (TypeParam k = m.rowptr[i]; k < m.rowptr[i + 1] && ok; ++k) {
          const Conversion c = classify_conversion(f, m.vals[k]);
          ok = (c == Conversion::exact || c == Conversion::rounded) && relative_error(f, m.vals[k]) <= tol;
        }
        if (ok) {
          want = f;
          break;
        }
      }
      ASSERT_EQ(got[static_cast<std::size_t>(i)], want) << "row " << i << ", tolerance " << tol;
    }
  }
}

TYPED_TEST(BuilderTest, RowSplit)
{
  StorageOptions o = with_mode(StorageMode::rowsplit);
  o.range_factor   = 0.5;
  o.mean_abs_value = 2.0; // r = 1
  std::vector<double> r0(200, 0.5), r1(200, 0.5);
  r0[17] = 7;
  r1[3] = r1[100] = r1[199] = -7;
  check_mode<TypeParam>(o, {
                               {r0, Format::fp32},           // 199/200 inside
                               {r1, Format::fp64},           // 197/200 inside
                               {{0.5, 1e-50}, Format::fp64}, // inside, but underflows fp32
                               {{}, Format::fp64},
                               {{1.0}, Format::fp64}, // |a| < r is strict
                               {{std::nextafter(1.0, 0.0)}, Format::fp32},
                               {{0.1, -0.3}, Format::fp32},
                           });
  o.row_fraction = 0.98; // now 197/200 is enough, 195/200 is not
  std::vector<double> r2(200, 0.5);
  r2[0] = r2[1] = r2[2] = r2[3] = r2[4] = 9;
  check_mode<TypeParam>(o, {{r1, Format::fp32}, {r2, Format::fp64}});
}

// abs_value_sum adds 8 lanes and a tail: every count of values 0-20 (integers: exact in any order), negative,
// zero, infinite and NaN ones among them, in one row and split over rows
TYPED_TEST(BuilderTest, AbsValueSumCountsEveryValueOnce)
{
  for (int n = 0; n <= 20; ++n) {
    std::vector<double> row;
    double expected_sum         = 0.0;
    std::int64_t expected_count = 0;
    for (int k = 0; k < n; ++k) {
      const double v = k % 7 == 3 ? 0.0 : k % 11 == 5 ? kInf : k % 13 == 9 ? kQNaN : (k % 2 ? -1.0 : 1.0) * (k + 1);
      row.push_back(v);
      if (std::isfinite(v) && v != 0.0) {
        expected_sum += std::fabs(v);
        ++expected_count;
      }
    }
    const std::vector<double> head(row.begin(), row.begin() + n / 2), tail(row.begin() + n / 2, row.end());
    for (const TestCsr<TypeParam> &m : {make_csr<TypeParam>({row}), make_csr<TypeParam>({head, {}, tail})}) {
      const AbsSum s = abs_value_sum(m.view());
      EXPECT_EQ(s.sum, expected_sum) << n << " values";
      EXPECT_EQ(s.count, expected_count) << n << " values";
    }
  }
}

TYPED_TEST(BuilderTest, RowSplitMeanFromValues)
{
  std::vector<double> twos(100, 2.0);
  const TestCsr<TypeParam> m = make_csr<TypeParam>({twos, {1000.0}, {0.0, kInf, kQNaN}});
  const AbsSum s             = abs_value_sum(m.view());
  EXPECT_EQ(s.sum, 1200.0); // zeros, Inf and NaN are left out
  EXPECT_EQ(s.count, 101);
  StorageOptions o      = with_mode(StorageMode::rowsplit);
  o.range_factor        = 0.1; // r = 0.1 * 1200/101 = 1.19
  std::vector<Format> f = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, o);
  EXPECT_EQ(f, (std::vector<Format>{Format::fp64, Format::fp64, Format::fp64}));
  o.row_fraction = 0.3; // 1 of 3 inside suffices; NaN and Inf are exact in fp32
  f              = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, o);
  EXPECT_EQ(f, (std::vector<Format>{Format::fp64, Format::fp64, Format::fp32}));
  o.mean_abs_value = 100.0; // r = 10
  o.row_fraction   = 0.99;
  f                = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, o);
  EXPECT_EQ(f, (std::vector<Format>{Format::fp32, Format::fp64, Format::fp64}));
  o.mean_abs_value = 0.0; // r = 0: nothing inside
  f                = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, o);
  EXPECT_EQ(f, (std::vector<Format>{Format::fp64, Format::fp64, Format::fp64}));
  // the mean is taken over all parts: a second part with large values shrinks nothing, widens r
  std::vector<double> big(100, 1000.0);
  const TestCsr<TypeParam> m2 = make_csr<TypeParam>({big, {}, {}});
  o.mean_abs_value            = -1.0;
  f                           = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view(), m2.view()}, o);
  // mean = (1200 + 100000) / 201 = 503.5, r = 50.3: row 0 has 100 twos and 100 thousands -> 50% inside
  EXPECT_EQ(f, (std::vector<Format>{Format::fp64, Format::fp64, Format::fp64}));
  o.row_fraction = 0.5; // row 0: 100 of 200; row 2: 1 of 3 is too few
  f              = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view(), m2.view()}, o);
  EXPECT_EQ(f, (std::vector<Format>{Format::fp32, Format::fp64, Format::fp64}));
  // with a single part the mean of the first part alone applies: r = 1.19, the twos are outside
  f = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, o);
  EXPECT_EQ(f, (std::vector<Format>{Format::fp64, Format::fp64, Format::fp64}));
}

TYPED_TEST(BuilderTest, BadOptionsThrow)
{
  const TestCsr<TypeParam> m = make_csr<TypeParam>({{1.0}});
  const std::vector<CsrView<TypeParam>> parts{m.view()};
  StorageOptions o = with_mode(StorageMode::tolerance);
  o.tolerance      = -1e-3;
  EXPECT_THROW(choose_row_formats(parts, o), StorageError);
  o.tolerance = std::nan("");
  EXPECT_THROW(choose_row_formats(parts, o), StorageError);
  o              = with_mode(StorageMode::rowsplit);
  o.range_factor = 0.0;
  EXPECT_THROW(choose_row_formats(parts, o), StorageError);
  o              = with_mode(StorageMode::rowsplit);
  o.row_fraction = 1.5;
  EXPECT_THROW(choose_row_formats(parts, o), StorageError);
  EXPECT_THROW(choose_row_formats(parts, with_mode(StorageMode::entrysplit)), StorageError);
  const TestCsr<TypeParam> two = make_csr<TypeParam>({{1.0}, {2.0}});
  EXPECT_THROW(
      choose_row_formats(std::vector<CsrView<TypeParam>>{m.view(), two.view()}, with_mode(StorageMode::lossless)),
      StorageError);
  EXPECT_THROW(assemble_compact_csr(two.view(), std::vector<Format>{Format::fp64}, with_mode(StorageMode::lossless)),
               StorageError);
  EXPECT_TRUE(choose_row_formats(std::vector<CsrView<TypeParam>>{}, with_mode(StorageMode::lossless)).empty());
}

TYPED_TEST(BuilderTest, PartsDecideTogether)
{
  // diagonal and off-diagonal blocks of the same rows
  const TestCsr<TypeParam> d = make_csr<TypeParam>({{1.0, 2.0}, {1.0}, {}, {3.0}});
  const TestCsr<TypeParam> o = make_csr<TypeParam>({{0.1}, {}, {0x1p20}, {0x1p-30, 1 + 0x1p-20}});
  const auto f =
      choose_row_formats(std::vector<CsrView<TypeParam>>{d.view(), o.view()}, with_mode(StorageMode::lossless));
  EXPECT_EQ(f, (std::vector<Format>{Format::fp64, Format::fp16, Format::bf16, Format::fp32}));
  const StorageOptions opts = with_mode(StorageMode::lossless);
  check_compact(assemble_compact_csr(d.view(), f, opts), d, f);
  check_compact(assemble_compact_csr(o.view(), f, opts), o, f);
}

// ---- entry split ------------------------------------------------------------------------

TYPED_TEST(BuilderTest, EntrySplit)
{
  StorageOptions opts = with_mode(StorageMode::entrysplit);
  opts.range          = 1.0;
  const TestCsr<TypeParam> m =
      make_csr<TypeParam>({{0.5, 0.1, 2.0, -0.75}, {-3.0, 1.0, kQNaN}, {}, {1e-50, kInf, -0.999, 0.0}, {7.0}});
  const CompactCsr A = build_compact_csr(m.view(), opts);
  ASSERT_TRUE(A.entry_split());
  EXPECT_TRUE(A.blocks.empty());
  ASSERT_EQ(A.split.size(), 2u);
  const SplitPart *p32 = nullptr, *p64 = nullptr;
  for (const auto &p : A.split)
    (p.format == Format::fp32 ? p32 : p64) = &p;
  ASSERT_TRUE(p32 && p64);
  EXPECT_EQ(p64->format, Format::fp64);
  // expected parts, computed here: |a| < 1 and fp32 neither overflows nor underflows
  std::vector<std::int64_t> rp32{0}, rp64{0};
  std::vector<std::int32_t> c32, c64;
  std::vector<double> v32, v64;
  double maxerr32 = 0.0;
  for (TypeParam i = 0; i < m.nrows; ++i) {
    for (TypeParam k = m.rowptr[i]; k < m.rowptr[i + 1]; ++k) {
      const double v = m.vals[k];
      const double f = static_cast<double>(static_cast<float>(v));
      if (std::fabs(v) < 1.0 && (v == 0.0 || std::fabs(f - v) <= 0x1p-24 * std::fabs(v))) {
        c32.push_back(static_cast<std::int32_t>(m.cols[k]));
        v32.push_back(f);
        maxerr32 = std::max(maxerr32, rel_err(f, v));
      } else {
        c64.push_back(static_cast<std::int32_t>(m.cols[k]));
        v64.push_back(v);
      }
    }
    rp32.push_back(static_cast<std::int64_t>(c32.size()));
    rp64.push_back(static_cast<std::int64_t>(c64.size()));
  }
  EXPECT_EQ(v32.size(), 5u); // 0.5 0.1 -0.75 | -0.999 0.0, and not 1e-50
  EXPECT_EQ(p32->rowptr, rp32);
  EXPECT_EQ(p64->rowptr, rp64);
  EXPECT_EQ(p32->cols, c32);
  EXPECT_EQ(p64->cols, c64);
  ASSERT_EQ(p32->values.size(), v32.size() * 4);
  ASSERT_EQ(p64->values.size(), v64.size() * 8);
  for (std::size_t k = 0; k < v32.size(); ++k)
    EXPECT_TRUE(same(decode(p32->values.as<float>()[k]), v32[k])) << k;
  for (std::size_t k = 0; k < v64.size(); ++k)
    EXPECT_TRUE(same(p64->values.as<double>()[k], v64[k])) << k;
  const FormatStats &s32 = A.stats.per_format[static_cast<int>(Format::fp32)];
  const FormatStats &s64 = A.stats.per_format[static_cast<int>(Format::fp64)];
  EXPECT_EQ(s32.nnz, static_cast<std::int64_t>(v32.size()));
  EXPECT_EQ(s64.nnz, static_cast<std::int64_t>(v64.size()));
  EXPECT_EQ(s32.rows, 2); // rows 0 and 3
  EXPECT_EQ(s64.rows, 4); // rows 0, 1, 3, 4
  EXPECT_EQ(s32.max_relative_error, maxerr32);
  EXPECT_GT(maxerr32, 0.0);
  EXPECT_LE(maxerr32, 0x1p-24);
  EXPECT_EQ(s64.max_relative_error, 0.0);
  EXPECT_EQ(A.stats.nnz, static_cast<std::int64_t>(m.vals.size()));
  EXPECT_EQ(A.stats.value_bytes, static_cast<std::int64_t>(v32.size() * 4 + v64.size() * 8));
}

TYPED_TEST(BuilderTest, EntrySplitRandom)
{
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  TestCsr<TypeParam> m;
  for (int i = 0; i < 500; ++i) {
    std::vector<double> r(rng() % 8);
    for (auto &v : r)
      v = u(rng);
    m.add_row(r);
  }
  for (double range : {0.5, 1.0, 3.0}) {
    StorageOptions opts = with_mode(StorageMode::entrysplit);
    opts.range          = range;
    const CompactCsr A  = build_compact_csr(m.view(), opts);
    std::int64_t small  = 0;
    for (double v : m.vals)
      small += std::fabs(v) < range;
    EXPECT_EQ(A.stats.per_format[static_cast<int>(Format::fp32)].nnz, small);
    EXPECT_EQ(A.stats.per_format[static_cast<int>(Format::fp64)].nnz, static_cast<std::int64_t>(m.vals.size()) - small);
    EXPECT_LE(A.stats.per_format[static_cast<int>(Format::fp32)].max_relative_error, 0x1p-24);
    EXPECT_GT(A.stats.per_format[static_cast<int>(Format::fp32)].max_relative_error, 0x1p-26);
  }
}

// ---- layout ----------------------------------------------------------------------------

TYPED_TEST(BuilderTest, LayoutOneFormatIsOneRun)
{
  std::vector<std::vector<double>> rows(100, std::vector<double>{1.0, 2.0});
  rows[0].clear(); // empty rows join the run
  rows[50].clear();
  const TestCsr<TypeParam> m = make_csr<TypeParam>(rows);
  const StorageOptions opts  = with_mode(StorageMode::fp32, Layout::csr);
  const CompactCsr A         = build_compact_csr(m.view(), opts);
  ASSERT_EQ(A.blocks.size(), 1u);
  EXPECT_FALSE(A.blocks[0].grouped());
  EXPECT_TRUE(A.all_rows_covered);
  EXPECT_EQ(A.blocks[0].row_begin, 0);
  EXPECT_EQ(A.blocks[0].row_end, 100);
  EXPECT_EQ(A.blocks[0].format, Format::fp32);
  EXPECT_EQ(A.blocks[0].nnz, 196);
  EXPECT_EQ(A.stats.value_bytes, 196 * 4);
  EXPECT_EQ(A.stats.per_format[static_cast<int>(Format::fp32)].rows, 98);
  EXPECT_EQ(A.stats.index_bytes, static_cast<std::int64_t>(sizeof(TypeParam)) * (196 + 101));
  check_compact(A, m, choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts));
}

TYPED_TEST(BuilderTest, LayoutAlternatingIsGrouped)
{
  std::vector<std::vector<double>> rows;
  for (int i = 0; i < 64; ++i)
    rows.push_back(i % 2 ? std::vector<double>{0.1, 0.2, 0.3} : std::vector<double>{1.0});
  const TestCsr<TypeParam> m = make_csr<TypeParam>(rows);
  const StorageOptions opts  = with_mode(StorageMode::lossless, Layout::csr);
  const CompactCsr A         = build_compact_csr(m.view(), opts);
  EXPECT_FALSE(A.all_rows_covered);
  ASSERT_EQ(A.blocks.size(), 2u);
  for (const auto &b : A.blocks) {
    ASSERT_TRUE(b.grouped());
    const bool is64 = b.format == Format::fp64;
    EXPECT_TRUE(is64 || b.format == Format::fp16);
    ASSERT_EQ(b.rows.size(), 32u);
    for (std::size_t k = 0; k < 32; ++k) {
      EXPECT_EQ(b.rows[k], static_cast<std::int32_t>(2 * k + (is64 ? 1 : 0)));
      EXPECT_EQ(b.value_offsets[k], static_cast<std::int64_t>(k * (is64 ? 3 : 1)));
    }
    EXPECT_EQ(b.nnz, is64 ? 96 : 32);
  }
  EXPECT_EQ(A.stats.value_bytes, 96 * 8 + 32 * 2);
  EXPECT_EQ(A.stats.per_format[static_cast<int>(Format::fp64)].rows, 32);
  EXPECT_EQ(A.stats.per_format[static_cast<int>(Format::fp16)].nnz, 32);
  check_compact(A, m, choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts));
}

TYPED_TEST(BuilderTest, LayoutMostlyEmptyIsGrouped)
{
  std::vector<std::vector<double>> rows(100);
  for (int i = 0; i < 100; i += 10)
    rows[i] = {1.0, -2.0};
  const TestCsr<TypeParam> m = make_csr<TypeParam>(rows);
  const StorageOptions opts  = with_mode(StorageMode::lossless);
  const CompactCsr A         = build_compact_csr(m.view(), opts);
  EXPECT_FALSE(A.all_rows_covered);
  ASSERT_EQ(A.blocks.size(), 1u);
  ASSERT_TRUE(A.blocks[0].grouped());
  EXPECT_EQ(A.blocks[0].rows.size(), 10u);
  EXPECT_EQ(A.blocks[0].format, Format::fp16);
  EXPECT_EQ(A.stats.value_bytes, 20 * 2);
  check_compact(A, m, choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts));
}

TYPED_TEST(BuilderTest, LayoutRunThreshold)
{
  // The run layout needs runs of min_run_rows (here 32) nonempty rows on
  // average: 128 nonempty rows in 4 runs keep it, 127 (one row emptied) or 5
  // runs do not. The default threshold (kMinRunNonzeros) groups all of these.
  struct Case {
    int nruns, emptied;
    bool runs;
  };
  for (const Case c : {Case{2, 0, true}, Case{4, 0, true}, Case{4, 1, false}, Case{5, 0, false}}) {
    std::vector<std::vector<double>> rows;
    for (int i = 0; i < 128; ++i) {
      const int run = i * c.nruns / 128;
      rows.push_back(run % 2 ? std::vector<double>{0.1, 1.0} : std::vector<double>{1.0, 2.0});
    }
    if (c.emptied) rows[40].clear(); // inside a run: the run count stays 4
    const TestCsr<TypeParam> m = make_csr<TypeParam>(rows);
    StorageOptions opts        = with_mode(StorageMode::lossless);
    EXPECT_EQ(build_compact_csr(m.view(), opts).blocks.size(), 2u) << "default threshold " << kMinRunNonzeros;
    opts.min_run_rows  = 32;
    const CompactCsr A = build_compact_csr(m.view(), opts);
    SCOPED_TRACE(std::to_string(c.nruns) + " runs, " + std::to_string(c.emptied) + " emptied");
    if (c.runs) {
      ASSERT_EQ(A.blocks.size(), static_cast<std::size_t>(c.nruns));
      for (const auto &b : A.blocks)
        EXPECT_FALSE(b.grouped());
      EXPECT_TRUE(A.all_rows_covered);
    } else {
      ASSERT_EQ(A.blocks.size(), 2u);
      for (const auto &b : A.blocks)
        EXPECT_TRUE(b.grouped());
    }
    check_compact(A, m, choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts));
  }
  // The default threshold counts nonzeros: 2 runs of 100 rows of 1000 entries
  // (kMinRunNonzeros a run) keep the run layout; one row emptied does not.
  for (const int emptied : {0, 1}) {
    std::vector<std::vector<double>> rows;
    for (int i = 0; i < 200; ++i)
      rows.push_back(std::vector<double>(static_cast<std::size_t>(kMinRunNonzeros / 100), i < 100 ? 1.0 : 0.1));
    if (emptied) rows[150].clear();
    const TestCsr<TypeParam> m = make_csr<TypeParam>(rows);
    const StorageOptions opts  = with_mode(StorageMode::lossless);
    const CompactCsr A         = build_compact_csr(m.view(), opts);
    SCOPED_TRACE(std::to_string(emptied) + " emptied, default threshold");
    ASSERT_EQ(A.blocks.size(), 2u);
    for (const auto &b : A.blocks)
      EXPECT_EQ(b.grouped(), emptied == 1);
    check_compact(A, m, choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts));
  }
  StorageOptions zero_runs = with_mode(StorageMode::lossless);
  zero_runs.min_run_rows   = 0;
  EXPECT_THROW(build_compact_csr(make_csr<TypeParam>({{1.0}}).view(), zero_runs), StorageError);
}

TYPED_TEST(BuilderTest, LayoutEmptyMatrix)
{
  const TestCsr<TypeParam> m;
  for (StorageMode mode : {StorageMode::lossless, StorageMode::fp16, StorageMode::entrysplit}) {
    const CompactCsr A = build_compact_csr(m.view(), with_mode(mode));
    EXPECT_EQ(A.nrows, 0);
    EXPECT_EQ(A.stats.nnz, 0);
    EXPECT_EQ(A.stats.value_bytes, 0);
    EXPECT_TRUE(A.blocks.empty());
  }
  // rows, but no entries
  const TestCsr<TypeParam> e = make_csr<TypeParam>({{}, {}, {}});
  const CompactCsr A         = build_compact_csr(e.view(), with_mode(StorageMode::lossless));
  EXPECT_EQ(A.stats.nnz, 0);
  EXPECT_EQ(A.stats.value_bytes, 0);
  for (const auto &b : A.blocks)
    EXPECT_EQ(b.nnz, 0);
}

// ---- statistics on random matrices ------------------------------------------------------

TYPED_TEST(BuilderTest, RandomMatricesEveryRowMode)
{
  std::mt19937_64 rng(24);
  std::uniform_real_distribution<double> mant(-2.0, 2.0);
  TestCsr<TypeParam> m;
  for (int i = 0; i < 2000; ++i) {
    std::vector<double> r(rng() % 9);
    const int kind = static_cast<int>((i / (1 + i % 7)) % 5); // mixes short and long runs
    for (auto &v : r) {
      switch (kind) {
      case 0:
        v = mant(rng);
        break;
      case 1:
        v = std::ldexp(mant(rng), 20);
        break; // beyond fp16
      case 2:
        v = std::ldexp(mant(rng), 200);
        break; // beyond fp32
      case 3:
        v = std::ldexp(mant(rng), -1040);
        break; // double subnormal
      default:
        v = std::round(mant(rng) * 100);
        break;
      }
    }
    m.add_row(r);
  }
  for (int mi = 0; mi < kStorageModeCount; ++mi) {
    const StorageMode mode = static_cast<StorageMode>(mi);
    if (mode == StorageMode::entrysplit) continue;
    const StorageOptions opts = with_mode(mode);
    const auto formats        = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
    const CompactCsr A        = build_compact_csr(m.view(), opts);
    SCOPED_TRACE(storage_mode_name(mode));
    check_compact(A, m, formats);
    const CompactCsr B = assemble_compact_csr(m.view(), formats, opts);
    EXPECT_EQ(A.stats.value_bytes, B.stats.value_bytes);
    EXPECT_EQ(A.blocks.size(), B.blocks.size());
    // uniform modes: rows that fit keep the mode's format, errors within its unit roundoff
    for (int f = 0; f < kFormatCount; ++f)
      EXPECT_LE(A.stats.per_format[f].max_relative_error, unit_roundoff(static_cast<Format>(f)))
          << format_name(static_cast<Format>(f));
  }
}

TYPED_TEST(BuilderTest, Fp16MaxRelativeError)
{
  std::mt19937_64 rng(25);
  std::uniform_real_distribution<double> lg(-3.0, 3.0);
  TestCsr<TypeParam> m;
  for (int i = 0; i < 300; ++i) {
    std::vector<double> r(1 + rng() % 6);
    const double scale = (i % 3 == 0) ? 1e3 : 1.0; // some rows exceed fp16 -> fp32
    for (auto &v : r)
      v = scale * std::pow(10.0, lg(rng)) * ((rng() & 1) ? -1 : 1);
    m.add_row(r);
  }
  const StorageOptions opts = with_mode(StorageMode::fp16);
  CompactCsr A              = build_compact_csr(m.view(), opts);
  const auto formats        = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
  EXPECT_FALSE(A.stats.errors_measured);
  measure_relative_errors(m.view(), A);
  // the per-format maximum of |float16(a) - a| / |a|, with float16 done here by the
  // enumeration-free rule: a = m 2^e, keep 11 significant bits, ties to even
  double want16 = 0.0, want32 = 0.0;
  for (TypeParam i = 0; i < m.nrows; ++i)
    for (TypeParam k = m.rowptr[i]; k < m.rowptr[i + 1]; ++k) {
      const double v = m.vals[k];
      if (formats[i] == Format::fp16) {
        int e;
        std::frexp(v, &e);                                  // |v| in [2^(e-1), 2^e)
        const int q    = std::max(e - 1, -14) - 10;         // fp16 ulp exponent
        const double r = std::nearbyint(std::ldexp(v, -q)); // ties to even (default mode)
        const double h = std::ldexp(r, q);
        want16         = std::max(want16, std::fabs(h - v) / std::fabs(v));
        ASSERT_LT(std::fabs(v), 65520.0);
      } else {
        ASSERT_EQ(formats[i], Format::fp32);
        want32 = std::max(want32, std::fabs(static_cast<double>(static_cast<float>(v)) - v) / std::fabs(v));
      }
    }
  EXPECT_EQ(A.stats.per_format[static_cast<int>(Format::fp16)].max_relative_error, want16);
  EXPECT_EQ(A.stats.per_format[static_cast<int>(Format::fp32)].max_relative_error, want32);
  EXPECT_GT(want16, 0x1p-12);
  EXPECT_LE(want16, 0x1p-11);
  EXPECT_GT(A.stats.per_format[static_cast<int>(Format::fp32)].rows, 0);
  check_compact(A, m, formats);
}

// The largest changes are measured on demand, against the values the copy
// holds: after a value-only refill they are those of the new values, and a
// matrix of another shape is refused.
TYPED_TEST(BuilderTest, RelativeErrorsMeasuredOnDemand)
{
  TestCsr<TypeParam> m;
  m.add_row({1.0, 1.0 + 0x1p-9}); // bf16 rounds the second value (a tie, to even: 1)
  m.add_row({3.0});               // exact in bf16
  const StorageOptions opts = with_mode(StorageMode::bf16);
  CompactCsr A              = build_compact_csr(m.view(), opts);
  EXPECT_FALSE(A.stats.errors_measured);
  measure_relative_errors(m.view(), A);
  const double first = A.stats.per_format[static_cast<int>(Format::bf16)].max_relative_error;
  EXPECT_EQ(first, 0x1p-9 / (1.0 + 0x1p-9));
  m.vals[1] = 1.0 + 0x1p-7; // now exact: the refill forgets the old figure
  ASSERT_TRUE(refill_compact_values(m.view(), opts, A));
  EXPECT_FALSE(A.stats.errors_measured);
  EXPECT_EQ(A.stats.per_format[static_cast<int>(Format::bf16)].max_relative_error, 0.0);
  measure_relative_errors(m.view(), A);
  EXPECT_EQ(A.stats.per_format[static_cast<int>(Format::bf16)].max_relative_error, 0.0);
  A.stats.errors_measured = false;
  TestCsr<TypeParam> other;
  other.add_row({1.0});
  EXPECT_THROW(measure_relative_errors(other.view(), A), StorageError);
  // lossless copies change nothing: measured from the start
  EXPECT_TRUE(build_compact_csr(m.view(), with_mode(StorageMode::lossless)).stats.errors_measured);
}

TEST(Builder, ModeNames)
{
  const char *names[] = {"lossless",  "fp32",     "fp16",       "bf16",   "fp11_20", "fp11_4",
                         "tolerance", "rowsplit", "entrysplit", "split2", "split4"};
  static_assert(sizeof names / sizeof names[0] == kStorageModeCount, "a name per mode");
  for (int i = 0; i < kStorageModeCount; ++i) {
    const StorageMode m = static_cast<StorageMode>(i);
    EXPECT_EQ(std::string(storage_mode_name(m)), names[i]);
    StorageMode p = i ? StorageMode::lossless : StorageMode::fp16;
    ASSERT_TRUE(parse_storage_mode(names[i], &p));
    EXPECT_EQ(p, m);
    EXPECT_EQ(storage_mode_is_lossy(m), m != StorageMode::lossless && !storage_mode_segments(m));
  }
  StorageMode p = StorageMode::fp32;
  EXPECT_FALSE(parse_storage_mode("Lossless", &p));
  EXPECT_FALSE(parse_storage_mode(nullptr, &p));
  EXPECT_EQ(p, StorageMode::fp32);
}

// ---- sliced layout ---------------------------------------------------------------------

namespace {
// Rows of the given lengths, columns spread over [0, ncols) so that no entry
// shares its column with its position, values exact in fp16 and distinct.
template <typename Index> TestCsr<Index> rows_of_lengths(const std::vector<int> &lengths, Index ncols)
{
  TestCsr<Index> m;
  m.ncols = ncols;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const std::size_t start = m.cols.size();
    for (int e = 0; e < lengths[i]; ++e) {
      m.cols.push_back(static_cast<Index>((7 * i + 3 * e + 1) % static_cast<std::size_t>(ncols)));
      m.vals.push_back(static_cast<double>(m.vals.size() % 100 + 1));
    }
    std::sort(m.cols.begin() + static_cast<std::ptrdiff_t>(start), m.cols.end()); // ascending, as AIJ keeps them
    m.rowptr.push_back(static_cast<Index>(m.vals.size()));
    ++m.nrows;
  }
  return m;
}
} // namespace

TYPED_TEST(BuilderTest, SlicedLayoutRoundTrip)
{
  // 21 rows: two full slices and a partial one, an empty row inside a slice
  std::vector<int> lengths;
  for (int i = 0; i < 21; ++i)
    lengths.push_back(i == 5 ? 0 : 3 + i % 2);
  const TestCsr<TypeParam> m = rows_of_lengths<TypeParam>(lengths, 50);
  for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16}) {
    const StorageOptions opts = with_mode(mode, Layout::sliced);
    const CompactCsr A        = build_compact_csr(m.view(), opts);
    ASSERT_EQ(A.blocks.size(), 1u);
    const RowBlock &b = A.blocks[0];
    ASSERT_TRUE(b.sliced());
    EXPECT_EQ(b.slice_count(), 3);
    // widths 4, 4, 4 (every slice has a row of length 4): 3 * 8 * 4 stored entries
    EXPECT_EQ(b.stored_count(), 96);
    EXPECT_EQ(A.stats.value_bytes, 96 * static_cast<std::int64_t>(format_bytes(b.format)));
    // narrow slices (50 columns): a base and 16-bit offsets, lengths, value and column offsets
    EXPECT_EQ(A.stats.index_bytes, 3 * (1 + 4 * 4) * 4 + 24 * 4 + 4 * 16);
    EXPECT_EQ(A.stats.narrow_rows, 21);
    check_compact(A, m, choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts));
  }
}

// ShiftedSlices' and PatchedSlices' matrix: 28 rows of 40 columns, row i with
// columns i, i + 2, i + 5, but i + 6 for i + 5 in row 12 and a fourth column
// i + 9 in row 20.
template <typename Index> TestCsr<Index> shifted_slices_matrix()
{
  TestCsr<Index> m;
  m.ncols = 40;
  for (int i = 0; i < 28; ++i) {
    std::vector<int> offs = {0, 2, i == 12 ? 6 : 5};
    if (i == 20) offs.push_back(9);
    for (int o : offs) {
      m.cols.push_back(static_cast<Index>(i + o));
      m.vals.push_back(1.0 + 0.125 * static_cast<double>(m.vals.size() % 50));
    }
    m.rowptr.push_back(static_cast<Index>(m.vals.size()));
    ++m.nrows;
  }
  return m;
}

TYPED_TEST(BuilderTest, ShiftedSlices)
{
  // 28 rows of 40 columns. Slice 0: row i has columns i, i + 2, i + 5 (shifted).
  // Slice 1: the same but row 12 has i + 6 for i + 5. Slice 2: row 20 has one
  // entry more. Slice 3: shifted rows, but only 4 of them.
  TestCsr<TypeParam> m = shifted_slices_matrix<TypeParam>();
  for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16})
    for (Layout layout : {Layout::sliced, Layout::automatic}) {
      SCOPED_TRACE(std::string(storage_mode_name(mode)) + " " + layout_name(layout));
      StorageOptions opts = with_mode(mode, layout);
      opts.patched_slices = false; // (PatchedSlices: the same matrix with them)
      CompactCsr A        = build_compact_csr(m.view(), opts);
      ASSERT_EQ(A.blocks.size(), 1u);
      const RowBlock &b = A.blocks[0];
      ASSERT_TRUE(b.sliced());
      EXPECT_TRUE(b.shifted_slice(0));
      EXPECT_FALSE(b.shifted_slice(1));
      EXPECT_FALSE(b.shifted_slice(2));
      EXPECT_FALSE(b.shifted_slice(3));
      EXPECT_EQ(A.stats.shifted_rows, 8);
      // columns: 3 for slice 0, then (narrow slices: 40 columns) a base and 8 16-bit offsets per entry of
      // widths 3, 4, 3
      EXPECT_EQ(static_cast<std::int64_t>(b.cols.size()), 3 + (1 + 4 * 3) + (1 + 4 * 4) + (1 + 4 * 3));
      EXPECT_TRUE(b.narrow_slice(1) && b.narrow_slice(2) && b.narrow_slice(3));
      EXPECT_EQ(A.stats.narrow_rows, 8 + 8 + 4);
      // columns, the row lengths of the 3 gathered slices, value and column offsets
      EXPECT_EQ(A.stats.index_bytes, (3 + 43) * 4 + 3 * 8 * 4 + 5 * 16);
      const std::vector<Format> formats = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
      check_compact(A, m, formats);
      // a value-only refill keeps the shifted slice and writes the new values in it
      for (double &v : m.vals)
        v *= 2;
      ASSERT_TRUE(refill_compact_values(m.view(), formats, opts, A));
      EXPECT_TRUE(A.blocks[0].shifted_slice(0));
      check_compact(A, m, formats);
      for (double &v : m.vals)
        v /= 2;
    }
}

// ShiftedSlices' matrix with patched slices: slice 1 (row 12's third column
// is not the shifted one) stores that column as its one patch; slice 2 (row
// 20's fourth entry, no other row's) and slice 3 (4 rows) need none.
TYPED_TEST(BuilderTest, PatchedSlices)
{
  TestCsr<TypeParam> m = shifted_slices_matrix<TypeParam>();
  for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16})
    for (Layout layout : {Layout::sliced, Layout::automatic}) {
      SCOPED_TRACE(std::string(storage_mode_name(mode)) + " " + layout_name(layout));
      const StorageOptions opts = with_mode(mode, layout);
      CompactCsr A              = build_compact_csr(m.view(), opts);
      ASSERT_EQ(A.blocks.size(), 1u);
      const RowBlock &b = A.blocks[0];
      ASSERT_TRUE(b.sliced());
      EXPECT_TRUE(b.shifted_slice(0));
      for (std::int64_t q = 1; q < 4; ++q) {
        EXPECT_TRUE(b.patched_slice(q)) << q;
        EXPECT_FALSE(b.shifted_slice(q) || b.narrow_slice(q)) << q;
      }
      EXPECT_FALSE(b.patched_slice(0));
      EXPECT_EQ(A.stats.shifted_rows, 8);
      EXPECT_EQ(A.stats.patched_rows, 8 + 8 + 4);
      EXPECT_EQ(A.stats.narrow_rows, 0);
      // columns: 3 for slice 0; then per slice its width's bases and ceil(width / 2) elements of masks and
      // counts, and its patches: (3 + 2 + 1) + (4 + 2 + 0) + (3 + 2 + 0)
      EXPECT_EQ(static_cast<std::int64_t>(b.cols.size()), 3 + 6 + 6 + 5);
      EXPECT_EQ(A.stats.index_bytes, 20 * 4 + 3 * 8 * 4 + 5 * 16);
      const PatchedSlice s1 = b.patched_columns(1);
      EXPECT_EQ(s1.bases[0], 8);
      EXPECT_EQ(s1.bases[2], 13);
      EXPECT_EQ(s1.masks[0] | s1.masks[1], 0);
      EXPECT_EQ(s1.masks[2], 1u << 4); // row 12
      EXPECT_EQ(s1.before[2], 0);
      EXPECT_EQ(s1.patches[0], 18);
      EXPECT_EQ(b.slice_column(12, 2), 18);
      EXPECT_EQ(b.slice_column(13, 2), 18);
      EXPECT_EQ(b.patched_columns(2).bases[3], 25); // row 20 (lane 4): column 29, no patch
      EXPECT_EQ(b.patched_columns(2).masks[3], 0);
      const std::vector<Format> formats = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
      check_compact(A, m, formats);
      for (double &v : m.vals) // a value-only refill keeps the patched slices
        v *= 2;
      ASSERT_TRUE(refill_compact_values(m.view(), formats, opts, A));
      EXPECT_TRUE(A.blocks[0].patched_slice(1));
      check_compact(A, m, formats);
      for (double &v : m.vals)
        v /= 2;
    }
}

// A slice is patched only where each entry's shifted column is not negative
// and its patches are few: a tridiagonal matrix's first slice (row r's first
// column is r - 1: shifted column -1) stays narrow; its second is patched with
// no patch (row 15 ends a column early). Slices whose rows have unrelated
// columns need more than 2 patches per entry and stay narrow too.
TYPED_TEST(BuilderTest, PatchedSliceLimits)
{
  TestCsr<TypeParam> m;
  m.ncols = 64;
  for (int i = 0; i < 24; ++i) {
    std::vector<int> cols;
    if (i < 16) {
      for (int c = std::max(i - 1, 0); c <= std::min(i + 1, 15); ++c)
        cols.push_back(c);
    } else
      cols = {(i * 7) % 13, 20 + (i * 5) % 11, 40 + (i * 3) % 17};
    for (int c : cols) {
      m.cols.push_back(static_cast<TypeParam>(c));
      m.vals.push_back(0.5 + static_cast<double>(m.vals.size()));
    }
    m.rowptr.push_back(static_cast<TypeParam>(m.vals.size()));
    ++m.nrows;
  }
  const StorageOptions opts = with_mode(StorageMode::lossless, Layout::sliced);
  const CompactCsr A        = build_compact_csr(m.view(), opts);
  ASSERT_EQ(A.blocks.size(), 1u);
  const RowBlock &b = A.blocks[0];
  ASSERT_EQ(b.slice_count(), 3);
  EXPECT_TRUE(b.narrow_slice(0));
  EXPECT_TRUE(b.patched_slice(1));
  EXPECT_EQ(b.slice_col_offsets[2] - b.slice_col_offsets[1], 3 + 2); // no patch
  EXPECT_TRUE(b.narrow_slice(2));
  check_compact(A, m, choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts));
}

// Gathered (32-bit) and narrow (16-bit) slices of rows of 1 to 11 entries:
// every column in its place and every padding entry column 0 (offset 0),
// whether a row's last chunk of 8 entries was read past its end (rows in the
// middle of the array) or up to the array's end (the last rows).
TYPED_TEST(BuilderTest, GatheredAndNarrowSlicesPadWithColumnZero)
{
  TestCsr<TypeParam> m;
  m.ncols = 250000;
  for (int i = 0; i < 64; ++i) {
    const int length = 1 + (i * 5) % 11;
    const bool wide  = (i / kSliceRows) % 2 == 0; // columns 20011 apart: more than 2^16 across the slice
    for (int e = 0; e < length; ++e) {
      m.cols.push_back(static_cast<TypeParam>(wide ? e * 20011 + (i * 37) % 1000 : 1000 + i * 3 + e * 5));
      m.vals.push_back(0.5 + static_cast<double>(m.vals.size()));
    }
    m.rowptr.push_back(static_cast<TypeParam>(m.vals.size()));
    ++m.nrows;
  }
  StorageOptions opts = with_mode(StorageMode::lossless, Layout::sliced);
  opts.patched_slices = false;
  const CompactCsr A  = build_compact_csr(m.view(), opts);
  int gathered = 0, narrow = 0;
  for (const RowBlock &b : A.blocks)
    for (std::int64_t q = 0; q < b.slice_count(); ++q) {
      narrow += b.narrow_slice(q);
      gathered += !b.narrow_slice(q) && !b.shifted_slice(q) && !b.patched_slice(q);
    }
  EXPECT_GE(gathered, 3);
  EXPECT_GE(narrow, 3);
  check_compact(A, m, choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts));
}

// A narrow slice is chosen from each row's first and last column (PETSc's AIJ
// keeps a row's columns ascending); a column between them outside the 16-bit
// range is reported, not stored wrapped around.
TYPED_TEST(BuilderTest, UnsortedColumnsOfANarrowSliceAreRefused)
{
  for (int row : {0, 5}) { // the bad row first and in the middle of the slice
    const TestCsr<TypeParam> m                              = rows_of_lengths<TypeParam>(std::vector<int>(8, 3), 100);
    TestCsr<TypeParam> bad                                  = m;
    bad.ncols                                               = 300000;
    bad.cols[static_cast<std::size_t>(bad.rowptr[row] + 1)] = static_cast<TypeParam>(200000);
    StorageOptions opts                                     = with_mode(StorageMode::lossless, Layout::sliced);
    opts.patched_slices                                     = false;
    EXPECT_NO_THROW(build_compact_csr(m.view(), opts));
    EXPECT_THROW(build_compact_csr(bad.view(), opts), StorageError) << "row " << row;
  }
}

TYPED_TEST(BuilderTest, SlicedLayoutAutomaticPaddingLimit)
{
  // Slices of 8 rows: seven rows of length 4 and one of length w pad to 8 * w
  // entries for 28 + w nonzeros. w = 6: 48 <= 1.5 * 34 = 51, sliced;
  // w = 7: 56 > 1.5 * 35 = 52.5, CSR order.
  ASSERT_EQ(kSliceRows, 8);
  ASSERT_EQ(kMaxSlicePadding, 1.5);
  for (int w : {6, 7}) {
    std::vector<int> lengths(8, 4);
    lengths[3]                 = w;
    const TestCsr<TypeParam> m = rows_of_lengths<TypeParam>(lengths, 20);
    const StorageOptions opts  = with_mode(StorageMode::fp32);
    const CompactCsr A         = build_compact_csr(m.view(), opts);
    ASSERT_EQ(A.blocks.size(), 1u);
    EXPECT_EQ(A.blocks[0].sliced(), w == 6) << "w = " << w;
    check_compact(A, m, choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts));
    const CompactCsr C = build_compact_csr(m.view(), with_mode(StorageMode::fp32, Layout::csr));
    EXPECT_FALSE(C.blocks[0].sliced());
  }
}

namespace {
// 805 rows in 4 windows of kAutoSortWindow rows (the last of 37 rows, its last
// slice of 5): stencil-like rows of 7 columns around the diagonal, and every
// 8th row from row 3 on (windows 0, 2, 3) a row of 27 with a column beyond
// 2^16; in window 1 the first slice is shifted (row r: columns r .. r + 6) and
// two rows in different slices are long. Unsorted, the long rows pad most
// slices to 27 entries; sorted, windows 0, 2 and 3 pad little, and window 1
// stays in matrix order (a shifted slice).
template <typename Index> TestCsr<Index> windows_to_sort()
{
  TestCsr<Index> m;
  m.ncols                  = 200000;
  const std::int64_t nrows = 3 * kAutoSortWindow + 37;
  for (std::int64_t i = 0; i < nrows; ++i) {
    const bool in_window1 = i >= kAutoSortWindow && i < 2 * kAutoSortWindow;
    const bool long_row   = in_window1 ? (i == kAutoSortWindow + 20 || i == kAutoSortWindow + 100) : i % 8 == 3;
    std::vector<std::int64_t> cols;
    if (in_window1 && i < kAutoSortWindow + kSliceRows)
      for (int e = 0; e < 7; ++e)
        cols.push_back(i + e);
    else
      for (std::int64_t d : {-40, -9, -1, 0, 1, 9, 40})
        cols.push_back(std::max<std::int64_t>(0, i + d));
    if (long_row) {
      for (int e = 0; e < 19; ++e)
        cols.push_back(1000 + 13 * i + e);
      cols.push_back(100000 + i);
    }
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (std::int64_t c : cols) {
      m.cols.push_back(static_cast<Index>(c));
      m.vals.push_back(0.5 + static_cast<double>(m.vals.size() % 97) / 64.0);
    }
    m.rowptr.push_back(static_cast<Index>(m.vals.size()));
    ++m.nrows;
  }
  return m;
}
} // namespace

// The automatic layout sorts a block's rows window by window and shapes each
// window's slices as it goes (no shaping pass of its own): the shapes are
// those of the rows as sorted (check_compact recounts every slice: width,
// shifted, patched with its bases and masks, narrow), windows holding a
// shifted slice keep their order, and a copy built in the memory of another
// (its shapes reused) is the same.
TYPED_TEST(BuilderTest, AutomaticLayoutShapesSortedWindowsAsTheySort)
{
  const TestCsr<TypeParam> m = windows_to_sort<TypeParam>();
  for (bool patched : {true, false})
    for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16}) {
      StorageOptions opts = with_mode(mode);
      opts.patched_slices = patched;
      const CompactCsr A  = build_compact_csr(m.view(), opts);
      ASSERT_EQ(A.blocks.size(), 1u) << storage_mode_name(mode);
      const RowBlock &b = A.blocks[0];
      EXPECT_TRUE(b.sliced() && b.grouped());
      EXPECT_EQ(A.stats.sorted_windows, 3) << storage_mode_name(mode);
      for (std::int64_t k = kAutoSortWindow; k < 2 * kAutoSortWindow; ++k)
        EXPECT_EQ(b.row(k), k) << "window 1 holds a shifted slice: its rows stay in matrix order";
      EXPECT_TRUE(b.shifted_slice(kAutoSortWindow / kSliceRows));
      EXPECT_LE(static_cast<double>(b.stored_count()), kMaxSlicePadding * static_cast<double>(m.vals.size()));
      EXPECT_GT(A.stats.narrow_rows, 0);
      if (patched) {
        EXPECT_GT(A.stats.patched_rows, 0);
      }
      const auto formats = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
      check_compact(A, m, formats);
      CompactCsr other       = build_compact_csr(m.view(), with_mode(StorageMode::fp32, Layout::sliced));
      const CompactCsr again = build_compact_csr(m.view(), opts, &other);
      check_compact(again, m, formats);
      EXPECT_EQ(again.blocks[0].slice_col_offsets, b.slice_col_offsets);
      EXPECT_EQ(again.blocks[0].rows, b.rows);
    }
}

TYPED_TEST(BuilderTest, SlicedLayoutGroupedRows)
{
  // alternating formats give grouped blocks; each is sliced over its own row list
  std::vector<std::vector<double>> rows;
  for (int i = 0; i < 40; ++i)
    rows.push_back(i % 2 ? std::vector<double>{0.1, 0.2, 0.3} : std::vector<double>{1.0, 2.0, 3.0});
  const TestCsr<TypeParam> m = make_csr<TypeParam>(rows);
  const StorageOptions opts  = with_mode(StorageMode::lossless, Layout::sliced);
  const CompactCsr A         = build_compact_csr(m.view(), opts);
  ASSERT_EQ(A.blocks.size(), 2u);
  for (const RowBlock &b : A.blocks) {
    EXPECT_TRUE(b.grouped());
    EXPECT_TRUE(b.sliced());
    EXPECT_EQ(b.slice_count(), 3); // 20 rows
  }
  check_compact(A, m, choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts));
}

TEST(BuilderWideColumns, SlicedLayoutNeeds32BitColumns)
{
  TestCsr<std::int64_t> m = rows_of_lengths<std::int64_t>({2, 2}, 4);
  m.ncols                 = std::int64_t{1} << 31; // columns past 2^31 - 1 cannot be stored in 32 bits
  EXPECT_THROW(build_compact_csr(m.view(), with_mode(StorageMode::fp32, Layout::sliced)), StorageError);
  const CompactCsr A = build_compact_csr(m.view(), with_mode(StorageMode::fp32));
  ASSERT_EQ(A.blocks.size(), 1u);
  EXPECT_FALSE(A.blocks[0].sliced()) << "the automatic layout keeps CSR order for wide blocks";
}

TEST(BuilderLayout, Names)
{
  for (int i = 0; i < kLayoutCount; ++i) {
    Layout l;
    ASSERT_TRUE(parse_layout(layout_name(static_cast<Layout>(i)), &l));
    EXPECT_EQ(static_cast<int>(l), i);
  }
  Layout l;
  EXPECT_FALSE(parse_layout("ell", &l));
  EXPECT_FALSE(parse_layout(nullptr, &l));
}

// The builder decides formats through fast paths (one fp32 conversion and bit
// tests for lossless; a range test for uniform modes). Their answers must be
// those of the definition: per value, classify_conversion over the ladder.
namespace {
Format lossless_by_definition(const std::vector<double> &row)
{
  for (Format f : {Format::fp16, Format::bf16, Format::fp32})
    if (std::all_of(row.begin(), row.end(), [f](double v) { return classify_conversion(f, v) == Conversion::exact; }))
      return f;
  return Format::fp64;
}
Format uniform_by_definition(const std::vector<double> &row, Format f)
{
  auto fits = [](Format g, double v) {
    const Conversion c = classify_conversion(g, v);
    return c == Conversion::exact || c == Conversion::rounded;
  };
  while (f != Format::fp64) {
    if (std::all_of(row.begin(), row.end(), [&](double v) { return fits(f, v); })) return f;
    f = (f == Format::fp16 || f == Format::bf16) ? Format::fp32 : f == Format::fp11_4 ? Format::fp11_20 : Format::fp64;
  }
  return Format::fp64;
}
} // namespace

TYPED_TEST(BuilderTest, FastFormatChoiceMatchesDefinition)
{
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double specials[] = {0.0,
                             -0.0,
                             inf,
                             -inf,
                             nan,
                             -nan,
                             65504.0,
                             65505.0,
                             65519.99,
                             65520.0,
                             0x1p-14,
                             0x1p-24,
                             0x1.8p-25,
                             0x1p-25,
                             0x1p-26,
                             0x1.fep127,
                             0x1.ffp127,
                             0x1p-126,
                             0x1p-133,
                             0x1p-149,
                             0x1p-150,
                             FLT_MAX,
                             0x1.fffffefffffffp127,
                             DBL_MAX,
                             DBL_MIN,
                             0x1p-1074,
                             1.0 + 0x1p-23,
                             1.0 + 0x1p-24,
                             1.0 + 0x1p-10,
                             1.0 + 0x1p-11,
                             3.0,
                             -7.5,
                             0.1,
                             std::numeric_limits<double>::signaling_NaN()};
  std::mt19937_64 rng(99);
  TestCsr<TypeParam> m;
  std::vector<std::vector<double>> rows;
  for (double v : specials)
    rows.push_back({1.0, v, 2.0}); // one special value per row
  for (int i = 0; i < 3000; ++i) { // random bit patterns around the formats' ranges
    std::vector<double> r(1 + rng() % 4);
    for (auto &v : r) {
      const int e              = static_cast<int>(rng() % 320) - 160;
      const std::uint64_t keep = rng() % 4 == 0 ? 0 : (rng() % 3 == 0 ? 0xffffffffe0000000ull : 0xfffffffffffff000ull);
      v                        = std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, e) * (rng() & 1 ? 1 : -1);
      if (keep) v = double_from_bits(double_bits(v) & keep); // fewer significant bits: exact in narrower formats
    }
    rows.push_back(r);
  }
  for (int i = 0; i < 1500; ++i) { // rows of 8-24 values: whole 8-value chunks of the SIMD paths, and their tails
    std::vector<double> r(8 + rng() % 17);
    const std::uint64_t keep = rng() % 2 ? 0xffffffffe0000000ull : 0xfffffffffffff000ull; // one class per row
    const int e0             = static_cast<int>(rng() % 320) - 160;
    for (auto &v : r) {
      v = std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, e0 + static_cast<int>(rng() % 9) - 4);
      v = double_from_bits(double_bits(v) & keep) * (rng() & 1 ? 1 : -1);
      if (rng() % 50 == 0) v = specials[rng() % (sizeof specials / sizeof specials[0])];
    }
    rows.push_back(r);
  }
  for (const auto &r : rows)
    m.add_row(r);
  for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16,
                           StorageMode::fp11_20, StorageMode::fp11_4}) {
    const auto formats = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, with_mode(mode));
    const Format start = mode == StorageMode::fp32      ? Format::fp32
                         : mode == StorageMode::fp16    ? Format::fp16
                         : mode == StorageMode::bf16    ? Format::bf16
                         : mode == StorageMode::fp11_20 ? Format::fp11_20
                                                        : Format::fp11_4;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Format want =
          mode == StorageMode::lossless ? lossless_by_definition(rows[i]) : uniform_by_definition(rows[i], start);
      ASSERT_EQ(formats[i], want) << storage_mode_name(mode) << " row " << i << " first value " << std::hexfloat
                                  << rows[i][0] << " second " << (rows[i].size() > 1 ? rows[i][1] : 0.0);
    }
  }
}

// Every stored value has the scalar encoder's bits (NaN payloads included), in
// every layout: the slices' transposed 8-entry writer and the nodes' and rows'
// writers all give encode_as<S> of the value.
TYPED_TEST(BuilderTest, StoredBitsAreTheScalarEncodingInEveryLayout)
{
  const double specials[] = {kInf,    -kInf,   kQNaN, -kQNaN,     kPNaN,   std::numeric_limits<double>::signaling_NaN(),
                             65520.0, 0x1p-25, -0.0,  0x1.ffp127, DBL_MAX, 0x1p-1074};
  std::mt19937_64 rng(5);
  TestCsr<TypeParam> m;
  m.ncols = 40;
  for (int i = 0; i < 400; ++i) {
    const int n = 8 + static_cast<int>(rng() % 17) / (i % 3 == 0 ? 1 : 4); // slices of equal and unequal rows
    for (int e = 0; e < n; ++e) {
      double v = std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, static_cast<int>(rng() % 40) - 20);
      if (rng() % 4 == 0) v = double_from_bits(double_bits(v) & 0xffffffffe0000000ull); // fits fp32
      if (rng() % 30 == 0) v = specials[rng() % (sizeof specials / sizeof specials[0])];
      m.cols.push_back(static_cast<TypeParam>(e));
      m.vals.push_back(v);
    }
    m.rowptr.push_back(static_cast<TypeParam>(m.vals.size()));
    ++m.nrows;
  }
  for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16,
                           StorageMode::fp11_20, StorageMode::fp11_4})
    for (Layout layout : {Layout::csr, Layout::sliced, Layout::node}) {
      SCOPED_TRACE(std::string(storage_mode_name(mode)) + " " + layout_name(layout));
      const CompactCsr A = build_compact_csr(m.view(), with_mode(mode, layout));
      for (const RowBlock &b : A.blocks)
        for (std::int64_t k = 0; k < b.row_count(); ++k) {
          const TypeParam row = static_cast<TypeParam>(b.row(k));
          for (TypeParam e = 0; e < m.row_len(row); ++e) {
            const double v = m.vals[m.rowptr[row] + e];
            dispatch_format(b.format, [&](auto tag) {
              using S       = typename decltype(tag)::type;
              const S want  = encode_as<S>(v);
              const S &have = b.values.as<S>()[b.value_index(k, e, m.rowptr[row])];
              ASSERT_EQ(std::memcmp(&want, &have, sizeof(S)), 0)
                  << format_name(b.format) << " row " << row << " entry " << e << " value " << std::hexfloat << v;
            });
          }
        }
    }
}

// ---- value-only rebuild ------------------------------------------------------------------

namespace {
// Two copies are the same: blocks, layout, stored bytes (padding included) and statistics.
void expect_same_copy(const CompactCsr &a, const CompactCsr &b)
{
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (std::size_t i = 0; i < a.blocks.size(); ++i) {
    const RowBlock &x = a.blocks[i], &y = b.blocks[i];
    EXPECT_EQ(x.format, y.format) << "block " << i;
    EXPECT_EQ(x.row_count(), y.row_count());
    EXPECT_EQ(x.nodes.size(), y.nodes.size());
    EXPECT_EQ(x.slice_count(), y.slice_count());
    ASSERT_EQ(x.values.size(), y.values.size());
    EXPECT_EQ(0, std::memcmp(x.values.as<unsigned char>(), y.values.as<unsigned char>(), x.values.size()))
        << "block " << i << " stores other bytes";
  }
  EXPECT_EQ(a.stats.errors_measured, b.stats.errors_measured);
  for (int f = 0; f < kFormatCount; ++f) {
    EXPECT_EQ(a.stats.per_format[f].rows, b.stats.per_format[f].rows);
    EXPECT_EQ(a.stats.per_format[f].nnz, b.stats.per_format[f].nnz);
    EXPECT_EQ(a.stats.per_format[f].max_relative_error, b.stats.per_format[f].max_relative_error)
        << format_name(static_cast<Format>(f));
  }
  EXPECT_EQ(a.stats.value_bytes, b.stats.value_bytes);
  EXPECT_EQ(a.stats.index_bytes, b.stats.index_bytes);
}

// Rows in nodes of 1-4 rows with 5-30 values, values of a few exactness classes
// (fp16-, bf16-, fp32-exact, fp64), some rows empty.
template <typename Index> TestCsr<Index> node_matrix(std::mt19937_64 &rng, int nrows)
{
  TestCsr<Index> m;
  std::vector<double> r;
  for (int i = 0; i < nrows;) {
    const int rows = 1 + static_cast<int>(rng() % 4), len = rng() % 10 == 0 ? 0 : 5 + static_cast<int>(rng() % 26);
    for (int k = 0; k < rows && i < nrows; ++k, ++i) {
      const int cls = static_cast<int>(rng() % 4);
      r.assign(static_cast<std::size_t>(len), 0.0);
      for (auto &v : r) {
        v = static_cast<double>(static_cast<int>(rng() % 2001) - 1000) / 64.0; // fp16-exact
        if (cls == 1) v = 0x1p100 * static_cast<double>(1 + rng() % 100);      // bf16, not fp16
        if (cls == 2) v = static_cast<double>(static_cast<float>(static_cast<double>(rng() >> 11) * 0x1p-53));
        if (cls == 3) v = static_cast<double>(rng() >> 11) * 0x1p-53 + 0.1;
      }
      m.add_row(r);
    }
  }
  return m;
}

// Nodes of 3 rows with 9-18 fp16-exact values each.
template <typename Index> TestCsr<Index> fp16_node_matrix(std::mt19937_64 &rng, int nrows)
{
  TestCsr<Index> m;
  for (int i = 0; i < nrows; ++i) {
    std::vector<double> r(static_cast<std::size_t>(9 + 3 * (i / 3 % 4)));
    for (auto &v : r)
      v = static_cast<double>(static_cast<int>(rng() % 2001) - 1000) / 64.0;
    m.add_row(r);
  }
  return m;
}
} // namespace

// Runs of consecutive rows with one pattern, as PETSc's inodes give them: the
// maximal runs of rows with equal columns, cut every `limit` rows and, with
// split_at_random, at random places too.
template <typename Index>
std::vector<Index> pattern_runs(const TestCsr<Index> &m, int limit, bool split_at_random, std::mt19937_64 &rng)
{
  std::vector<Index> runs;
  for (Index i = 0; i < m.nrows;) {
    Index n = 1;
    while (i + n < m.nrows && n < limit && (!split_at_random || rng() % 3 != 0) &&
           same_pattern(m.view(), static_cast<std::int64_t>(i), static_cast<std::int64_t>(i + n)))
      ++n;
    runs.push_back(n);
    i += n;
  }
  return runs;
}

// Rows known to share their columns (PETSc's inodes) are not compared again;
// the copy is the one built without the runs, byte for byte, however the runs
// cut the nodes (PETSc's limit of 5 rows, random cuts, one row each), whether
// runs shorter than the limit are known maximal, and whatever the rows' formats. Runs that do not cover the rows are
// refused.
// The automatic layout looks at shifted slices first where the first slices
// show some, and skips the node search only when their rows alone pass the
// node limit. A block that starts with 2 shifted slices (16 stencil-like
// rows) and goes on with 1000 nodes of 3 rows still takes nodes; one with
// more shifted slices than the limit allows takes slices.
TYPED_TEST(BuilderTest, ShiftedSlicesFirstKeepTheNodeDecision)
{
  using Index = TypeParam;
  auto matrix = [](Index shifted_rows, Index node_rows) {
    TestCsr<Index> m;
    auto add = [&](Index first, Index count) {
      for (Index e = 0; e < count; ++e) {
        m.cols.push_back(first + e);
        m.vals.push_back(1.0 + static_cast<double>((first + e) % 7));
      }
      m.rowptr.push_back(static_cast<Index>(m.vals.size()));
      ++m.nrows;
    };
    for (Index r = 0; r < shifted_rows; ++r)
      add(r, 5); // row r: columns r..r+4, each row the previous one's plus 1
    for (Index r = 0; r < node_rows; ++r)
      add(shifted_rows + r / 3 * 3, 6); // 3 rows per node, one pattern each
    m.ncols = shifted_rows + node_rows + 8;
    return m;
  };
  for (StorageMode mode : {StorageMode::fp32, StorageMode::lossless}) {
    SCOPED_TRACE(storage_mode_name(mode));
    const TestCsr<Index> with_nodes = matrix(16, 3000); // 16 + 1000 nodes <= 3016 / 1.5
    const CompactCsr a              = build_compact_csr(with_nodes.view(), with_mode(mode));
    EXPECT_EQ(a.stats.node_rows, with_nodes.nrows);
    const TestCsr<Index> stencil = matrix(800, 600); // 800 + 200 nodes > 1400 / 1.5
    const CompactCsr b           = build_compact_csr(stencil.view(), with_mode(mode));
    EXPECT_EQ(b.stats.node_rows, 0);
    EXPECT_GT(b.stats.shifted_rows, 0);
  }
}

// The automatic layout takes nodes where a block's nodes hold kMinNodeRows = 1.5 rows or more on average (pieces of
// nodes whose rows took two formats: 2 rows on average in snes ex19's Jacobian in fp16 mode), not below.
TYPED_TEST(BuilderTest, AutomaticNodesFromOneAndAHalfRowsANode)
{
  using Index = TypeParam;
  ASSERT_EQ(kMinNodeRows, 1.5);
  auto matrix = [](const std::vector<int> &sizes, int repeats) { // nodes of these sizes, in turn
    TestCsr<Index> m;
    Index node = 0;
    for (int k = 0; k < repeats; ++k)
      for (int size : sizes) {
        for (int r = 0; r < size; ++r) {
          for (Index e = 0; e < 6; ++e) { // the node's pattern: columns 3 node .. 3 node + 5
            m.cols.push_back(3 * node + e);
            m.vals.push_back(1.0 + static_cast<double>((m.nrows + e) % 5));
          }
          m.rowptr.push_back(static_cast<Index>(m.vals.size()));
          ++m.nrows;
        }
        ++node;
      }
    m.ncols = 3 * node + 6;
    return m;
  };
  for (StorageMode mode : {StorageMode::fp32, StorageMode::lossless}) {
    SCOPED_TRACE(storage_mode_name(mode));
    const TestCsr<Index> mean_5_3 = matrix({2, 2, 1}, 200), mean_4_3 = matrix({2, 1, 1}, 200);
    const CompactCsr a = build_compact_csr(mean_5_3.view(), with_mode(mode));
    EXPECT_EQ(a.stats.node_rows, mean_5_3.nrows);
    EXPECT_EQ(a.stats.nodes, 600);
    check_compact(a, mean_5_3, choose_row_formats(std::vector<CsrView<Index>>{mean_5_3.view()}, with_mode(mode)));
    const CompactCsr b = build_compact_csr(mean_4_3.view(), with_mode(mode));
    EXPECT_EQ(b.stats.node_rows, 0);
    check_compact(b, mean_4_3, choose_row_formats(std::vector<CsrView<Index>>{mean_4_3.view()}, with_mode(mode)));
  }
}

// The automatic layout's node count near its limit, on blocks of many 4096-row steps, where a first scan of row
// lengths and first columns may refuse nodes before the patterns are compared: rows alone (their first columns all
// differ) and nodes of 8 rows, alone first or last. Nodes are taken exactly when single + nodes <= rows / 1.5, i.e.
// for a share of single rows up to 13/21 = 0.619; rows of one length and first column but other columns are no nodes.
TYPED_TEST(BuilderTest, NodeDecisionAtItsLimitOnLargeBlocks)
{
  using Index = TypeParam;
  auto matrix = [](Index single, Index node_rows, bool single_first, bool same_first_column) {
    TestCsr<Index> m;
    auto add_row = [&](std::vector<Index> cols) {
      for (Index c : cols) {
        m.cols.push_back(c);
        m.vals.push_back(1.0 + static_cast<double>((m.nrows + c) % 5));
      }
      m.rowptr.push_back(static_cast<Index>(m.vals.size()));
      ++m.nrows;
    };
    auto add_single = [&] {
      for (Index r = 0; r < single; ++r) // not shifted: row r + 1's columns are row r's plus 2
        add_row(same_first_column ? std::vector<Index>{0, 2 * r + 1, 2 * r + 5}
                                  : std::vector<Index>{2 * r, 2 * r + 5, 2 * r + 9});
    };
    auto add_nodes = [&] {
      for (Index r = 0; r < node_rows; ++r)
        add_row({3 * (r / 8), 3 * (r / 8) + 1, 3 * (r / 8) + 4});
    };
    if (single_first) add_single();
    add_nodes();
    if (!single_first) add_single();
    m.ncols = 2 * single + 3 * node_rows + 16;
    return m;
  };
  const Index rows = 24000;
  for (bool single_first : {true, false})
    for (double share : {0.60, 0.64}) {
      SCOPED_TRACE(::testing::Message() << "single rows " << share << (single_first ? " first" : " last"));
      const Index single = static_cast<Index>(share * rows) / 8 * 8, node_rows = rows - single;
      const TestCsr<Index> m = matrix(single, node_rows, single_first, false);
      const CompactCsr a     = build_compact_csr(m.view(), with_mode(StorageMode::lossless));
      const bool nodes       = 1.5 * static_cast<double>(single + node_rows / 8) <= static_cast<double>(rows);
      EXPECT_EQ(nodes, share < 0.619);
      EXPECT_EQ(a.stats.node_rows, nodes ? rows : 0);
      EXPECT_EQ(a.stats.nodes, nodes ? single + node_rows / 8 : 0);
      check_compact(a, m, choose_row_formats(std::vector<CsrView<Index>>{m.view()}, with_mode(StorageMode::lossless)));
    }
  // the same decision in blocks that list their rows: fp16 and fp64 rows in turn (single rows one by one, nodes
  // node by node), each format a grouped block of half the single rows and half the nodes
  for (double share : {0.60, 0.64}) {
    SCOPED_TRACE(::testing::Message() << "two grouped formats, single rows " << share);
    const Index single = static_cast<Index>(share * rows) / 16 * 16, node_rows = rows - single;
    TestCsr<Index> m = matrix(single, node_rows, true, false);
    for (Index r = 0; r < m.nrows; ++r)
      if ((r < single ? r : (r - single) / 8) % 2)
        for (Index k = m.rowptr[r]; k < m.rowptr[r + 1]; ++k)
          m.vals[k] += 0.1; // (needs fp64)
    const CompactCsr a = build_compact_csr(m.view(), with_mode(StorageMode::lossless));
    ASSERT_EQ(a.blocks.size(), 2u);
    for (const RowBlock &b : a.blocks)
      EXPECT_TRUE(b.grouped());
    const bool nodes = share < 0.619;
    EXPECT_EQ(a.stats.node_rows, nodes ? rows : 0);
    EXPECT_EQ(a.stats.nodes, nodes ? single + node_rows / 8 : 0);
    check_compact(a, m, choose_row_formats(std::vector<CsrView<Index>>{m.view()}, with_mode(StorageMode::lossless)));
  }
  // single rows that share length and first column with their neighbours: each still its own node
  const TestCsr<Index> m = matrix(16000, 8000, true, true);
  const CompactCsr a     = build_compact_csr(m.view(), with_mode(StorageMode::fp32));
  EXPECT_EQ(a.stats.node_rows, 0);
}

TYPED_TEST(BuilderTest, KnownPatternRunsGiveTheSameNodes)
{
  std::mt19937_64 rng(41);
  for (Layout layout : {Layout::automatic, Layout::node})
    for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16})
      for (int cut = 0; cut < 3; ++cut) {
        SCOPED_TRACE(std::string(storage_mode_name(mode)) + " layout " + layout_name(layout) + " cut " +
                     std::to_string(cut));
        const TestCsr<TypeParam> m        = node_matrix<TypeParam>(rng, 600);
        const std::vector<TypeParam> runs = pattern_runs(m, cut == 0 ? 5 : cut == 1 ? 8 : 1, cut == 1, rng);
        CsrView<TypeParam> hinted         = m.view();
        hinted.run_sizes                  = runs.data();
        hinted.runs                       = static_cast<TypeParam>(runs.size());
        hinted.run_limit                  = cut == 1 ? 0 : cut == 0 ? 5 : 1; // random cuts: no run is known maximal
        const StorageOptions opts         = with_mode(mode, layout);
        const CompactCsr plain            = build_compact_csr(m.view(), opts);
        if (layout == Layout::node || mode == StorageMode::fp32) { // one format: the automatic layout takes nodes
          EXPECT_GT(plain.stats.node_rows, 0);
        }
        expect_same_copy(build_compact_csr(hinted, opts), plain);
        // the MPI update, both parts hinted
        std::vector<CompactPart<TypeParam>> parts(2);
        for (auto &p : parts) {
          p.csr  = hinted;
          p.opts = opts;
        }
        update_compact_parts(parts);
        expect_same_copy(parts[0].copy, plain);
      }
  const TestCsr<TypeParam> m = node_matrix<TypeParam>(rng, 20);
  std::vector<TypeParam> short_runs{5, 5, 5}, empty_run{10, 0, 10};
  CsrView<TypeParam> bad = m.view();
  bad.run_sizes          = short_runs.data();
  bad.runs               = 3;
  EXPECT_THROW(build_compact_csr(bad, with_mode(StorageMode::fp32, Layout::node)), StorageError);
  bad.run_sizes = empty_run.data();
  EXPECT_THROW(build_compact_csr(bad, with_mode(StorageMode::fp32, Layout::node)), StorageError);
}

TYPED_TEST(BuilderTest, ValueOnlyRefillEqualsFreshBuild)
{
  std::mt19937_64 rng(7);
  for (Layout layout : {Layout::automatic, Layout::csr, Layout::sliced, Layout::node})
    for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16,
                             StorageMode::fp11_4, StorageMode::tolerance}) {
      SCOPED_TRACE(std::string(storage_mode_name(mode)) + " layout " + layout_name(layout));
      TestCsr<TypeParam> m      = node_matrix<TypeParam>(rng, 300);
      const StorageOptions opts = with_mode(mode, layout);
      for (bool fused : {false, true}) {
        CompactCsr copy = build_compact_csr(m.view(), opts);
        for (auto &v : m.vals)
          v *= 2.0; // every value keeps its exactness class and range: formats stay
        const auto formats = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
        ASSERT_TRUE(fused ? refill_compact_values(m.view(), opts, copy)
                          : refill_compact_values(m.view(), formats, opts, copy));
        check_compact(copy, m, formats);
        expect_same_copy(copy, build_compact_csr(m.view(), opts));
      }
    }
}

// The value-only refill of a uniform mode tests each value against the
// format's normal range while it encodes, and looks closer only at rows with a
// value outside it: such a row keeps its format when the value is stored
// exactly (a subnormal of the format) and loses it otherwise, in every layout.
TYPED_TEST(BuilderTest, FusedRefillLooksCloserOutsideTheNormalRange)
{
  std::mt19937_64 rng(11);
  for (Layout layout : {Layout::automatic, Layout::csr, Layout::sliced, Layout::node})
    for (StorageMode mode : {StorageMode::fp16, StorageMode::bf16, StorageMode::fp32}) {
      SCOPED_TRACE(std::string(storage_mode_name(mode)) + " layout " + layout_name(layout));
      TestCsr<TypeParam> m      = node_matrix<TypeParam>(rng, 300);
      const StorageOptions opts = with_mode(mode, layout);
      const Format f            = mode == StorageMode::fp16   ? Format::fp16
                                  : mode == StorageMode::bf16 ? Format::bf16
                                                              : Format::fp32;
      CompactCsr copy           = build_compact_csr(m.view(), opts);
      const auto formats        = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
      TypeParam row             = m.nrows / 2; // a row in the mode's own format, past the middle
      while (row < m.nrows && (formats[row] != f || m.row_len(row) < 3))
        ++row;
      ASSERT_LT(row, m.nrows);
      const std::size_t k = static_cast<std::size_t>(m.rowptr[row] + 2);
      m.vals[k]           = -min_normal(f) / 16; // a power of two below the normal range: exact in f
      ASSERT_EQ(classify_conversion(f, m.vals[k]), Conversion::exact);
      ASSERT_TRUE(refill_compact_values(m.view(), opts, copy));
      check_compact(copy, m, formats);
      expect_same_copy(copy, build_compact_csr(m.view(), opts));
      m.vals[k] = min_normal(f) * 0.3 + min_normal(f) * 0x1p-20; // below the range, not exact in f
      EXPECT_FALSE(refill_compact_values(m.view(), opts, copy));
      EXPECT_NE(choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts)[row], f);
    }
}

// A copy said reusable whose layout cannot be refilled (built with another
// layout option or mode, or its values dropped) is built anew, as a first
// build is: each part's copy is assemble_compact_csr's with the formats chosen
// over all parts, and none is said refilled. An off-diagonal part whose rows
// are mostly empty gets the whole rows' formats (lossless values in fp16 and
// fp64 rows: a guess of one format fails, the copies are still right).
TYPED_TEST(BuilderTest, PartsBuiltAnewWhenTheirCopyCannotBeRefilled)
{
  std::mt19937_64 rng(23);
  for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16})
    for (bool mixed : {false, true}) {
      SCOPED_TRACE(std::string(storage_mode_name(mode)) + (mixed ? " fp16 and fp64 rows" : " one format"));
      TestCsr<TypeParam> d = node_matrix<TypeParam>(rng, 900), o;
      if (!mixed)
        for (auto &v : d.vals)
          v = static_cast<double>(static_cast<int>(rng() % 2001) - 1000) / 64.0; // fp16-exact: one lossless format
      for (TypeParam i = 0; i < d.nrows; ++i) // the last rows only: a mostly empty block
        o.add_row(i < d.nrows - 40 ? std::vector<double>{} : std::vector<double>{0.5, 1.0 + 0x1p-40 * (i % 2)});
      const std::vector<CsrView<TypeParam>> views{d.view(), o.view()};
      for (Layout before : {Layout::sliced, Layout::csr}) {
        std::vector<CompactPart<TypeParam>> parts(2);
        parts[0].csr = d.view();
        parts[1].csr = o.view();
        for (auto &p : parts)
          p.opts = with_mode(mode == StorageMode::fp16 ? StorageMode::bf16 : mode, before);
        update_compact_parts(parts); // the copies of another layout (and, for fp16, another mode)
        const StorageOptions opts = with_mode(mode, Layout::automatic);
        for (auto &p : parts) {
          p.opts     = opts;
          p.reusable = true;
        }
        update_compact_parts(parts);
        const auto formats = choose_row_formats(views, opts);
        for (std::size_t i = 0; i < 2; ++i) {
          EXPECT_FALSE(parts[i].refilled) << "part " << i;
          expect_same_copy(parts[i].copy, assemble_compact_csr(views[i], formats, opts));
        }
        check_compact(parts[0].copy, d, formats);
        check_compact(parts[1].copy, o, formats);
      }
    }
}

// bf16's normal range is encoded by a shorter path that is wrong below it; a
// subnormal that bf16 stores within its unit roundoff keeps the row in bf16,
// and its unit is written again by the general encoder: the stored bits are the
// scalar encoder's, in a full build and in a refill, in every layout.
TYPED_TEST(BuilderTest, Bf16SubnormalWithinRoundoffTakesTheGeneralEncoder)
{
  constexpr double kSubnormal = 0x1.4ecp-129; // rounded within 2^-8, but not as the short path rounds it
  ASSERT_EQ(classify_conversion(Format::bf16, kSubnormal), Conversion::rounded);
  std::mt19937_64 rng(19);
  for (Layout layout : {Layout::automatic, Layout::csr, Layout::sliced, Layout::node}) {
    SCOPED_TRACE(layout_name(layout));
    TestCsr<TypeParam> m      = fp16_node_matrix<TypeParam>(rng, 300);
    const StorageOptions opts = with_mode(StorageMode::bf16, layout);
    CompactCsr copy           = build_compact_csr(m.view(), opts);
    const std::size_t k       = static_cast<std::size_t>(m.rowptr[m.nrows / 2] + 1);
    m.vals[k]                 = kSubnormal;
    const auto formats        = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
    ASSERT_EQ(formats[m.nrows / 2], Format::bf16);
    ASSERT_TRUE(refill_compact_values(m.view(), opts, copy));
    check_compact(copy, m, formats);
    check_compact(build_compact_csr(m.view(), opts), m, formats);
  }
}

// The parts of an MPI matrix (diagonal and off-diagonal blocks) hold pieces of
// the same rows, and each row takes the format decided over all of them: the
// one-pass update (refill, or a build for a guessed format) gives each part the
// copy assemble_compact_csr gives with choose_row_formats over all parts, when
// both copies are refilled, when one is built anew, and when a row's values in
// one part need a wider format than its values in the other (the fused checks
// see one part at a time), in every mode and layout, with one thread or three.
TYPED_TEST(BuilderTest, PartsShareEachRowsFormat)
{
  std::mt19937_64 rng(14);
  for (Layout layout : {Layout::automatic, Layout::csr, Layout::sliced, Layout::node})
    for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16,
                             StorageMode::fp11_4, StorageMode::tolerance, StorageMode::rowsplit})
      for (int threads : {1, 3}) {
        SCOPED_TRACE(std::string(storage_mode_name(mode)) + " layout " + layout_name(layout) + " threads " +
                     std::to_string(threads));
        TestCsr<TypeParam> d = node_matrix<TypeParam>(rng, 1200), o;
        for (TypeParam i = 0; i < d.nrows; ++i) { // 0-5 fp16-exact values per row
          std::vector<double> r(static_cast<std::size_t>(rng() % 6));
          for (auto &v : r)
            v = static_cast<double>(static_cast<int>(rng() % 2001) - 1000) / 64.0;
          o.add_row(r);
        }
        StorageOptions opts = with_mode(mode, layout);
        opts.threads        = threads;
        if (mode == StorageMode::rowsplit) opts.mean_abs_value = 3.0; // (all ranks' mean, given by the caller)
        std::vector<CompactPart<TypeParam>> parts(2);
        const auto update = [&](bool reuse_d, bool reuse_o) {
          parts[0].csr      = d.view();
          parts[1].csr      = o.view();
          parts[0].reusable = reuse_d;
          parts[1].reusable = reuse_o;
          for (auto &p : parts)
            p.opts = opts;
          update_compact_parts(parts);
          const auto formats = choose_row_formats(std::vector<CsrView<TypeParam>>{d.view(), o.view()}, opts);
          check_compact(parts[0].copy, d, formats);
          check_compact(parts[1].copy, o, formats);
          expect_same_copy(parts[0].copy, assemble_compact_csr(d.view(), formats, opts));
          expect_same_copy(parts[1].copy, assemble_compact_csr(o.view(), formats, opts));
        };
        const auto joint_formats = [&] {
          return choose_row_formats(std::vector<CsrView<TypeParam>>{d.view(), o.view()}, opts);
        };
        // whether the rows with values in m kept their formats (a refill of m's copy can keep them)
        const auto kept = [](const TestCsr<TypeParam> &m, const std::vector<Format> &a, const std::vector<Format> &b) {
          for (TypeParam i = 0; i < m.nrows; ++i)
            if (m.row_len(i) > 0 && a[i] != b[i]) return false;
          return true;
        };
        update(false, false);
        const auto before = joint_formats();
        for (auto *m : {&d, &o})
          for (auto &v : m->vals)
            v *= 2.0; // formats stay, except where a value crosses the bottom of a format's normal range
        opts.mean_abs_value *= 2.0;
        const auto after = joint_formats();
        update(true, true);
        EXPECT_EQ(parts[0].refilled, kept(d, before, after)) << "diagonal";
        EXPECT_EQ(parts[1].refilled, kept(o, before, after)) << "off-diagonal";
        EXPECT_TRUE(parts[0].refilled || mode == StorageMode::fp16) << "(random values below fp16's range only)";
        update(true, false);
        EXPECT_TRUE(parts[0].refilled);
        // a row with values in both parts whose off-diagonal values now need fp64 in every mode
        TypeParam row = d.nrows / 2;
        while (row < d.nrows && (d.row_len(row) == 0 || o.row_len(row) == 0))
          ++row;
        ASSERT_LT(row, d.nrows);
        const bool was_fp64                             = joint_formats()[row] == Format::fp64;
        o.vals[static_cast<std::size_t>(o.rowptr[row])] = 1e-310;
        update(true, true);
        EXPECT_EQ(parts[0].refilled, was_fp64);
        o.vals[static_cast<std::size_t>(o.rowptr[row])] = 1.0;
        update(true, true);
        // the off-diagonal values become fp64 values, its copy is built anew (for one guessed format, fp64 in
        // lossless mode, which its rows confirm) and the diagonal one refilled (its lossless fp16 rows confirmed
        // by their own values): the parts then disagree and the formats are chosen over both
        for (auto &v : o.vals)
          v = 0.1 + static_cast<double>(rng() >> 11) * 0x1p-53;
        parts[1].copy = CompactCsr(); // (a copy in several formats would not let the build guess)
        update(true, false);
        if (mode == StorageMode::lossless) {
          EXPECT_FALSE(parts[0].refilled);
        }
      }
}

// Lossless fp16 rows are confirmed while they are written: a value whose
// stored form reads back bit for bit keeps the row's format (a subnormal of
// fp16, -0), a value fp16 does not hold exactly (bf16- or fp32-exact) makes the
// refill refuse, in every layout, with one thread or three.
TYPED_TEST(BuilderTest, LosslessRefillChecksExactnessWhileWriting)
{
  std::mt19937_64 rng(13);
  for (Layout layout : {Layout::automatic, Layout::csr, Layout::sliced, Layout::node})
    for (int threads : {1, 3}) {
      SCOPED_TRACE(std::string("layout ") + layout_name(layout) + " threads " + std::to_string(threads));
      TestCsr<TypeParam> m = fp16_node_matrix<TypeParam>(rng, 3000);
      StorageOptions opts  = with_mode(StorageMode::lossless, layout);
      opts.threads         = threads;
      const std::size_t k  = static_cast<std::size_t>(m.rowptr[m.nrows - 2] + 1); // near the end
      for (double kept : {0x1p-20, -0.0, 1024.0 + 1.0}) {
        CompactCsr copy = build_compact_csr(m.view(), opts);
        m.vals[k]       = kept;
        ASSERT_TRUE(refill_compact_values(m.view(), opts, copy)) << kept;
        const auto formats = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
        check_compact(copy, m, formats);
        expect_same_copy(copy, build_compact_csr(m.view(), opts));
      }
      for (double refused : {0x1p100, 1.0 + 0x1p-11, 0x1p-25, 0.1}) { // bf16, fp32, fp32 (below fp16), fp64
        CompactCsr copy  = build_compact_csr(m.view(), opts);
        const double old = m.vals[k];
        m.vals[k]        = refused;
        EXPECT_FALSE(refill_compact_values(m.view(), opts, copy)) << refused;
        EXPECT_NE(choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts)[m.nrows - 2], Format::fp16);
        m.vals[k] = old;
      }
    }
}

// Lossless fp64 rows are confirmed while they are written: a row that holds a
// value fp32 does not hold bit for bit keeps fp64, wherever that value lies in
// the row (here at entry row % length: every lane of slices and nodes), and a
// row that loses its only such value makes the refill refuse, first, middle
// or last, in every layout, with one thread or three. A row whose witness lies
// in another part (an MPI matrix's off-diagonal block) keeps fp64 too.
TYPED_TEST(BuilderTest, LosslessRefillFindsAnFp64ValueInEachFp64Row)
{
  std::mt19937_64 rng(29);
  const auto needs_fp64 = [](TypeParam row) { return 0.1 + 0x1p-40 * static_cast<double>(row % 64); };
  const auto witness_of = [](const TestCsr<TypeParam> &m, TypeParam row) {
    return static_cast<std::size_t>(m.rowptr[row] + row % (m.rowptr[row + 1] - m.rowptr[row]));
  };
  for (Layout layout : {Layout::automatic, Layout::csr, Layout::sliced, Layout::node})
    for (int threads : {1, 3}) {
      SCOPED_TRACE(std::string("layout ") + layout_name(layout) + " threads " + std::to_string(threads));
      TestCsr<TypeParam> m = fp16_node_matrix<TypeParam>(rng, 3000); // nodes of 3 rows, 9-18 values
      for (TypeParam row = 0; row < m.nrows; ++row)
        m.vals[witness_of(m, row)] = needs_fp64(row);
      StorageOptions opts = with_mode(StorageMode::lossless, layout);
      opts.threads        = threads;
      CompactCsr copy     = build_compact_csr(m.view(), opts);
      ASSERT_EQ(copy.stats.per_format[static_cast<int>(Format::fp64)].rows, m.nrows);
      for (auto &v : m.vals)
        v *= 2.0;
      ASSERT_TRUE(refill_compact_values(m.view(), opts, copy));
      expect_same_copy(copy, build_compact_csr(m.view(), opts));
      for (TypeParam row : {TypeParam(0), TypeParam(1500 + 7), TypeParam(m.nrows - 1)}) {
        const std::size_t k = witness_of(m, row);
        const double old    = m.vals[k];
        m.vals[k]           = 0.375; // fp16-exact, as the row's other values
        EXPECT_FALSE(refill_compact_values(m.view(), opts, copy)) << row;
        EXPECT_EQ(choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts)[row], Format::fp16);
        m.vals[k] = old;
        copy      = build_compact_csr(m.view(), opts);
      }
    }
  // Two parts: rows 0-99 of the first part lose their witness, which the second part holds for them.
  TestCsr<TypeParam> d = fp16_node_matrix<TypeParam>(rng, 900), o;
  for (TypeParam row = 0; row < d.nrows; ++row) {
    if (row >= 100) d.vals[witness_of(d, row)] = needs_fp64(row);
    o.add_row(row < 100 ? std::vector<double>{needs_fp64(row)} : std::vector<double>{});
  }
  const std::vector<CsrView<TypeParam>> views{d.view(), o.view()};
  std::vector<CompactPart<TypeParam>> parts(2);
  parts[0].csr = d.view();
  parts[1].csr = o.view();
  for (auto &p : parts)
    p.opts = with_mode(StorageMode::lossless, Layout::sliced);
  update_compact_parts(parts);
  for (auto *m : {&d, &o})
    for (auto &v : m->vals)
      v *= 2.0;
  for (auto &p : parts)
    p.reusable = true;
  update_compact_parts(parts);
  const auto formats = choose_row_formats(views, parts[0].opts);
  EXPECT_EQ(std::count(formats.begin(), formats.end(), Format::fp64), d.nrows);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(parts[i].refilled) << "part " << i;
    expect_same_copy(parts[i].copy, assemble_compact_csr(views[i], formats, parts[i].opts));
  }
}

// A uniform mode's build first assumes that every row takes the mode's format
// (lossless: the format of rows sampled over the matrix) and checks each row as
// it writes it. A row that needs another format, first
// or last, in any layout, with one thread or three, in fresh or recycled
// memory, makes it start again: the copy is the one the chosen formats give.
TYPED_TEST(BuilderTest, UniformBuildStartsAgainWhenARowNeedsAnotherFormat)
{
  std::mt19937_64 rng(12);
  for (Layout layout : {Layout::automatic, Layout::csr, Layout::sliced, Layout::node})
    for (StorageMode mode :
         {StorageMode::lossless, StorageMode::fp16, StorageMode::bf16, StorageMode::fp32, StorageMode::fp11_4})
      for (bool last : {false, true})
        for (int threads : {1, 3}) {
          SCOPED_TRACE(std::string(storage_mode_name(mode)) + " layout " + layout_name(layout) +
                       (last ? " last" : " first") + " threads " + std::to_string(threads));
          TestCsr<TypeParam> m                            = fp16_node_matrix<TypeParam>(rng, 2400);
          const TypeParam row                             = last ? m.nrows - 1 : 0;
          m.vals[static_cast<std::size_t>(m.rowptr[row])] = 1e-310; // no narrow format holds it within roundoff
          StorageOptions opts                             = with_mode(mode, layout);
          opts.threads                                    = threads;
          const auto formats = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
          ASSERT_EQ(formats[row], Format::fp64);
          CompactCsr old         = build_compact_csr(m.view(), with_mode(mode, layout)); // memory to recycle
          const CompactCsr built = build_compact_csr(m.view(), opts, &old);
          check_compact(built, m, formats);
          expect_same_copy(built, assemble_compact_csr(m.view(), formats, opts, nullptr));
          expect_same_copy(build_compact_csr(m.view(), opts), built);
        }
}

// Values written by several OpenMP threads (StorageOptions::threads): the same
// bytes and statistics as one thread, for a build, a refill and a refused
// refill. Blocks of 4000 rows: more nodes and rows than one thread's minimum.
TYPED_TEST(BuilderTest, ThreadsWriteTheSameCopy)
{
  std::mt19937_64 rng(9);
  for (Layout layout : {Layout::automatic, Layout::csr, Layout::sliced, Layout::node})
    for (StorageMode mode :
         {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16, StorageMode::tolerance}) {
      SCOPED_TRACE(std::string(storage_mode_name(mode)) + " layout " + layout_name(layout));
      TestCsr<TypeParam> m = node_matrix<TypeParam>(rng, 4000);
      StorageOptions one = with_mode(mode, layout), three = one;
      three.threads   = 3;
      CompactCsr copy = build_compact_csr(m.view(), three);
      expect_same_copy(copy, build_compact_csr(m.view(), one));
      std::int64_t most = 0; // the threaded path really runs: a block large enough
      for (const RowBlock &b : copy.blocks)
        most =
            std::max<std::int64_t>(most, b.node_layout() ? static_cast<std::int64_t>(b.nodes.size()) : b.row_count());
      EXPECT_GE(most, 512);
      for (auto &v : m.vals)
        v *= 2.0;
      ASSERT_TRUE(refill_compact_values(m.view(), three, copy));
      expect_same_copy(copy, build_compact_csr(m.view(), one));
      // a row near the end, of small fp16-exact values, gets 1e6 + 0.1: beyond
      // fp16 and bf16's precision, not fp32-exact. Every mode but fp32 and bf16
      // (whose rows keep their format) refuses, whichever thread meets the row.
      std::size_t k = m.vals.size() - 1;
      while (k > 0 && !(m.vals[k] != 0.0 && std::fabs(m.vals[k]) <= 16.0 &&
                        classify_conversion(Format::fp16, m.vals[k]) == Conversion::exact))
        --k;
      ASSERT_GT(k, m.vals.size() / 2);
      m.vals[k]                 = 1e6 + 0.1;
      const bool formats_change = mode != StorageMode::fp32 && mode != StorageMode::bf16;
      EXPECT_EQ(refill_compact_values(m.view(), three, copy), !formats_change);
    }
  StorageOptions none = with_mode(StorageMode::fp32);
  none.threads        = 0;
  EXPECT_THROW(build_compact_csr(node_matrix<TypeParam>(rng, 10).view(), none), StorageError);
}

TYPED_TEST(BuilderTest, ValueOnlyRefillRefusesChanges)
{
  std::mt19937_64 rng(8);
  TestCsr<TypeParam> m          = node_matrix<TypeParam>(rng, 200);
  const StorageOptions lossless = with_mode(StorageMode::lossless);
  CompactCsr copy               = build_compact_csr(m.view(), lossless);
  // a row changes format: a value needing fp64 in the first row with values (lossless)
  TestCsr<TypeParam> changed = m;
  std::size_t k              = 0;
  while (k < changed.vals.size() && !(classify_conversion(Format::fp16, changed.vals[k]) == Conversion::exact))
    ++k;
  ASSERT_LT(k, changed.vals.size());
  changed.vals[k] = 0.1;
  EXPECT_FALSE(refill_compact_values(changed.view(), lossless, copy));
  copy = build_compact_csr(m.view(), lossless);
  EXPECT_FALSE(refill_compact_values(
      changed.view(), choose_row_formats(std::vector<CsrView<TypeParam>>{changed.view()}, lossless), lossless, copy));
  // the refused copy's memory still serves a full build, which is right
  const CompactCsr rebuilt = assemble_compact_csr(
      changed.view(), choose_row_formats(std::vector<CsrView<TypeParam>>{changed.view()}, lossless), lossless, &copy);
  expect_same_copy(rebuilt, build_compact_csr(changed.view(), lossless));
  // other options, another shape, dropped values, rowsplit's global range: no refill
  copy = build_compact_csr(m.view(), lossless);
  EXPECT_FALSE(refill_compact_values(m.view(), with_mode(StorageMode::fp32), copy));
  EXPECT_FALSE(refill_compact_values(m.view(), with_mode(StorageMode::lossless, Layout::csr), copy));
  StorageOptions paired = lossless;
  paired.order          = SumOrder::paired;
  EXPECT_FALSE(refill_compact_values(m.view(), paired, copy));
  CsrView<TypeParam> fewer = m.view();
  fewer.nrows -= 1;
  EXPECT_FALSE(refill_compact_values(fewer, lossless, copy));
  CompactCsr dropped = build_compact_csr(m.view(), lossless);
  for (RowBlock &b : dropped.blocks)
    b.values.release();
  EXPECT_FALSE(refill_compact_values(m.view(), lossless, dropped));
  const StorageOptions rowsplit = with_mode(StorageMode::rowsplit);
  CompactCsr split_rows         = build_compact_csr(m.view(), rowsplit);
  EXPECT_TRUE(refill_compact_values(m.view(), choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, rowsplit),
                                    rowsplit, split_rows));
}

// rowsplit's range is a mean over the whole matrix: the single-part refill takes that mean itself, so it decides
// each row's format as a full build does, refuses where a row's format changes, and follows a given mean.
TYPED_TEST(BuilderTest, RowsplitRefillTakesTheMean)
{
  std::mt19937_64 rng(12);
  TestCsr<TypeParam> m    = node_matrix<TypeParam>(rng, 300);
  StorageOptions rowsplit = with_mode(StorageMode::rowsplit);
  rowsplit.range_factor   = 1.0; // the rows of values near 2^100 outside the range (fp64), the others inside (fp32)
  CompactCsr copy         = build_compact_csr(m.view(), rowsplit);
  ASSERT_GT(copy.stats.per_format[static_cast<int>(Format::fp32)].rows, 0);
  ASSERT_GT(copy.stats.per_format[static_cast<int>(Format::fp64)].rows, 0);
  for (double &v : m.vals) // scaled by 2: exact, the mean scales with the values, every row keeps its format
    v *= 2.0;
  ASSERT_TRUE(refill_compact_values(m.view(), rowsplit, copy));
  expect_same_copy(copy, build_compact_csr(m.view(), rowsplit));
  // the values of an fp64 row made small: that row now lies in the range (fp32), the refill refuses
  TestCsr<TypeParam> changed        = m;
  const std::vector<Format> formats = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, rowsplit);
  TypeParam row                     = 0;
  while (row < m.nrows && (formats[row] != Format::fp64 || m.row_len(row) == 0))
    ++row;
  ASSERT_LT(row, m.nrows);
  for (TypeParam e = m.rowptr[row]; e < m.rowptr[row + 1]; ++e)
    changed.vals[e] = 1e-3;
  ASSERT_EQ(choose_row_formats(std::vector<CsrView<TypeParam>>{changed.view()}, rowsplit)[row], Format::fp32);
  CompactCsr refused = build_compact_csr(m.view(), rowsplit);
  EXPECT_FALSE(refill_compact_values(changed.view(), rowsplit, refused)) << "row " << row << " changed format";
  // a given mean sets the range: one so large that every row lies inside puts the fp64 rows in fp32
  StorageOptions given = rowsplit;
  given.mean_abs_value = 1e40;
  CompactCsr kept      = build_compact_csr(m.view(), rowsplit);
  EXPECT_FALSE(refill_compact_values(m.view(), given, kept)) << "the given mean moves rows to fp32";
}

// ---- split storage (CPMS segments) ---------------------------------------------------

namespace {
// v with its bits past the first 64 read / n cleared: what reading `read` of n segments must give.
double first_bits(double v, int n, int read)
{
  const int kept = 64 * read / n;
  return kept >= 64 ? v : double_from_bits(double_bits(v) & ~((std::uint64_t(1) << (64 - kept)) - 1));
}

// Rows of random doubles over the whole exponent range, with the special values among them: subnormals, the
// largest and smallest normals, +-0, NaN with and without payload, +-Inf. Rows 3 at a time share their columns
// (nodes), lengths 1..12.
template <typename Index> TestCsr<Index> special_value_rows(unsigned seed)
{
  std::mt19937_64 rng(seed);
  const double specials[] = {0.0,      -0.0,    kInf,     -kInf,     kQNaN,      kPNaN,         DBL_MAX,
                             -DBL_MAX, DBL_MIN, -DBL_MIN, 0x1p-1074, -0x1p-1074, 0x1.234p-1040, 0x1.fffffffffffffp-1023,
                             1.0};
  TestCsr<Index> m;
  m.ncols = 40;
  std::vector<Index> cols;
  for (int i = 0; i < 300; ++i) {
    if (i % 3 == 0) { // a new node pattern
      cols.clear();
      const int len = 1 + static_cast<int>(rng() % 12);
      for (Index c = static_cast<Index>(rng() % 4); static_cast<int>(cols.size()) < len && c < m.ncols;
           c += 1 + static_cast<Index>(rng() % 3))
        cols.push_back(c);
    }
    for (Index c : cols) {
      m.cols.push_back(c);
      m.vals.push_back(rng() % 4 == 0 ? specials[rng() % (sizeof specials / sizeof specials[0])]
                                      : double_from_bits(rng() & ~(std::uint64_t(0x7ff) << 52)) *
                                            std::ldexp(1.0, static_cast<int>(rng() % 2000) - 1000));
    }
    m.rowptr.push_back(static_cast<Index>(m.vals.size()));
    ++m.nrows;
  }
  return m;
}

// Every entry of A, read at every level through its layout, is the master value's first segments, bit for bit.
template <typename Index> void expect_segments(const CompactCsr &A, const TestCsr<Index> &m, int n)
{
  for (const RowBlock &b : A.blocks) {
    ASSERT_EQ(b.segments, n);
    ASSERT_EQ(b.format, Format::fp64);
    for (std::int64_t k = 0; k < b.row_count(); ++k) {
      const Index row = static_cast<Index>(b.row(k));
      for (Index e = 0; e < m.row_len(row); ++e) {
        const double v = m.vals[m.rowptr[row] + e];
        for (int read = 1; read <= n; ++read)
          ASSERT_TRUE(same(decode_at(b, b.value_index(k, e, m.rowptr[row]), read), first_bits(v, n, read)))
              << "row " << row << " entry " << e << " read " << read << " of " << n;
      }
    }
  }
}
} // namespace

TYPED_TEST(BuilderTest, SplitSegmentsReassembleBitwise)
{
  TestCsr<TypeParam> m = special_value_rows<TypeParam>(17);
  for (StorageMode mode : {StorageMode::split2, StorageMode::split4})
    for (Layout layout : {Layout::csr, Layout::sliced, Layout::node, Layout::automatic}) {
      SCOPED_TRACE(std::string(storage_mode_name(mode)) + " " + layout_name(layout));
      const int n                   = storage_mode_segments(mode);
      const StorageOptions opts     = with_mode(mode, layout);
      CompactCsr A                  = build_compact_csr(m.view(), opts);
      const std::vector<Format> all = choose_row_formats(std::vector<CsrView<TypeParam>>{m.view()}, opts);
      for (Format f : all)
        ASSERT_EQ(f, Format::fp64) << "split storage keeps every row's exact fp64 values";
      check_compact(A, m, all); // the layout's invariants, the exact values read back
      expect_segments(A, m, n);
      // a value-only refill with other values (same pattern) writes every plane anew
      TestCsr<TypeParam> m2 = m;
      for (double &v : m2.vals)
        v = -v * 3.0;
      ASSERT_TRUE(refill_compact_values(m2.view(), opts, A));
      expect_segments(A, m2, n);
    }
  // The planes are written through a cache-sized scratch, several runs of units
  // per block here (rows of 1-80 entries, 240000 in all), shared among 3
  // threads or not: the same bytes as one thread's, in a build and a refill.
  std::mt19937_64 rng(31);
  TestCsr<TypeParam> big;
  for (int i = 0; i < 6000; ++i) {
    std::vector<double> r(1 + rng() % 80);
    for (double &v : r)
      v = static_cast<double>(rng() >> 11) * 0x1p-50 - 2.0;
    big.add_row(r);
  }
  for (StorageMode mode : {StorageMode::split2, StorageMode::split4})
    for (Layout layout : {Layout::csr, Layout::sliced, Layout::automatic}) {
      SCOPED_TRACE(std::string(storage_mode_name(mode)) + " " + layout_name(layout) + ", 240k entries");
      StorageOptions one = with_mode(mode, layout), three = one;
      three.threads = 3;
      CompactCsr A1 = build_compact_csr(big.view(), one), A3 = build_compact_csr(big.view(), three);
      expect_segments(A1, big, storage_mode_segments(mode));
      expect_same_copy(A1, A3);
      TestCsr<TypeParam> big2 = big;
      for (double &v : big2.vals)
        v = 1.0 / v;
      ASSERT_TRUE(refill_compact_values(big2.view(), one, A1));
      ASSERT_TRUE(refill_compact_values(big2.view(), three, A3));
      expect_segments(A3, big2, storage_mode_segments(mode));
      expect_same_copy(A1, A3);
    }
}

// Planes of 32 MiB and more are written with non-temporal stores, 16 bytes at
// a time from a 16-byte boundary, the entries before it and after the last
// whole store one by one: a block of 4.5M entries in rows of 1-119 entries
// (runs start anywhere), split2 and split4, a build and a value-only refill,
// every plane's bits those of the fp64 values (1 and 3 threads).
TYPED_TEST(BuilderTest, SplitPlanesStreamedBeyondTheCaches)
{
  std::mt19937_64 rng(77);
  TestCsr<TypeParam> big;
  while (big.vals.size() < 4500000) {
    std::vector<double> r(1 + rng() % 119);
    for (double &v : r)
      v = std::ldexp(static_cast<double>(rng() >> 11) * 0x1p-53 + 0.5, static_cast<int>(rng() % 200) - 100);
    big.add_row(r);
  }
  for (StorageMode mode : {StorageMode::split2, StorageMode::split4})
    for (Layout layout : {Layout::csr, Layout::automatic})
      for (int threads : {1, 3}) {
        SCOPED_TRACE(std::string(storage_mode_name(mode)) + " " + layout_name(layout) + ", threads " +
                     std::to_string(threads));
        StorageOptions opts = with_mode(mode, layout);
        opts.threads        = threads;
        CompactCsr A        = build_compact_csr(big.view(), opts);
        std::int64_t widest = 0;
        for (const RowBlock &b : A.blocks)
          widest = std::max(widest, b.plane_stride);
        ASSERT_GE(widest * 8, std::int64_t(32) << 20) << "a block's planes reach the streaming size";
        expect_segments(A, big, storage_mode_segments(mode));
        TestCsr<TypeParam> big2 = big;
        for (double &v : big2.vals)
          v = -1.0 / v;
        ASSERT_TRUE(refill_compact_values(big2.view(), opts, A));
        expect_segments(A, big2, storage_mode_segments(mode));
      }
}

// ---- format groups (StorageOptions::format_group) ---------------------------------------

namespace {
// Lossless classes: exact in fp16; in bf16 only; in fp32 only; in fp64 only.
double group_class_value(int cls, std::mt19937_64 &rng)
{
  const double k = static_cast<double>(1 + rng() % 200);
  switch (cls) {
  case 0:
    return k / 8;
  case 1:
    return 3.0 * std::ldexp(1.0, 17 + static_cast<int>(rng() % 20));
  case 2:
    return 1.0 + k * 0x1p-22;
  default:
    return 1.0 + k * 0x1p-45;
  }
}
} // namespace

// Rows of one block (3 rows, one pattern) share the widest format one of them
// needs (their join on the wider_format chains); where no row needs the join,
// and with other patterns, each row keeps its own; rowsplit chooses per row.
TYPED_TEST(BuilderTest, FormatGroupsJoinTheRowsOfABlock)
{
  const double h = 1.5, s = 1.0 + 0x1p-20, d = 1.0 + 0x1p-40, b = 3.0 * 0x1p20; // fp16, fp32, fp64, bf16-exact
  const std::vector<double> H(6, h), S(6, s), D(6, d), B(6, b), S5(5, s);
  using F = Format;
  struct Group {
    std::vector<std::vector<double>> rows;
    std::vector<F> own, grouped;
  };
  const std::vector<Group> groups = {
      {{H, S, H}, {F::fp16, F::fp32, F::fp16}, {F::fp32, F::fp32, F::fp32}},  // joined in fp32
      {{H, D, H}, {F::fp16, F::fp64, F::fp16}, {F::fp64, F::fp64, F::fp64}},  // joined in fp64
      {{S, D, S}, {F::fp32, F::fp64, F::fp32}, {F::fp64, F::fp64, F::fp64}},  // joined in fp64
      {{H, B, H}, {F::fp16, F::bf16, F::fp16}, {F::fp16, F::bf16, F::fp16}},  // their join fp32 is no row's
      {{H, S5, H}, {F::fp16, F::fp32, F::fp16}, {F::fp16, F::fp32, F::fp16}}, // another pattern
      {{H, S}, {F::fp16, F::fp32}, {F::fp32, F::fp32}}};                      // the last group, 2 rows
  std::vector<std::vector<double>> rows;
  std::vector<F> own, grouped;
  for (const Group &g : groups) {
    rows.insert(rows.end(), g.rows.begin(), g.rows.end());
    own.insert(own.end(), g.own.begin(), g.own.end());
    grouped.insert(grouped.end(), g.grouped.begin(), g.grouped.end());
  }
  const TestCsr<TypeParam> m = make_csr<TypeParam>(rows);
  const std::vector<CsrView<TypeParam>> views{m.view()};
  for (Layout layout : {Layout::automatic, Layout::node, Layout::sliced}) {
    SCOPED_TRACE(layout_name(layout));
    StorageOptions opts = with_mode(StorageMode::lossless, layout);
    EXPECT_EQ(choose_row_formats(views, opts), own);
    opts.format_group = 3;
    EXPECT_EQ(choose_row_formats(views, opts), grouped);
    check_compact(build_compact_csr(m.view(), opts), m, grouped);
  }
  // fp16 storage: rows beyond fp16's range fall back to fp32 or fp64, and their block with them
  const std::vector<double> big(6, 1e6), huge(6, 1e300);
  const TestCsr<TypeParam> u = make_csr<TypeParam>({H, big, H, H, huge, H, H, H, H});
  StorageOptions opts        = with_mode(StorageMode::fp16);
  opts.format_group          = 3;
  const std::vector<F> want  = {F::fp32, F::fp32, F::fp32, F::fp64, F::fp64, F::fp64, F::fp16, F::fp16, F::fp16};
  EXPECT_EQ(choose_row_formats(std::vector<CsrView<TypeParam>>{u.view()}, opts), want);
  check_compact(build_compact_csr(u.view(), opts), u, want);
  // rowsplit: per row, group or not
  opts                = with_mode(StorageMode::rowsplit);
  opts.mean_abs_value = 10.0;
  const auto per_row  = choose_row_formats(std::vector<CsrView<TypeParam>>{u.view()}, opts);
  opts.format_group   = 3;
  EXPECT_EQ(choose_row_formats(std::vector<CsrView<TypeParam>>{u.view()}, opts), per_row);
  opts.format_group = -1;
  EXPECT_THROW(choose_row_formats(std::vector<CsrView<TypeParam>>{u.view()}, opts), StorageError);
}

// A value-only refill confirms each row as it writes it (most rows by a test
// fused with the encoding, which sees only the row), yet a group's formats
// depend on all its rows: the refill must succeed exactly when the formats a
// build would choose are the stored ones, and then store what that build
// stores. Random blocks of 3 rows whose rows change class at random, in every
// layout, with one thread and three.
TYPED_TEST(BuilderTest, FormatGroupsRefillExactlyWhenNoGroupChanges)
{
  std::mt19937_64 rng(29);
  for (StorageMode mode :
       {StorageMode::lossless, StorageMode::fp16, StorageMode::bf16, StorageMode::fp32, StorageMode::tolerance})
    for (Layout layout : {Layout::automatic, Layout::node, Layout::sliced, Layout::csr})
      for (int threads : {1, 3}) {
        SCOPED_TRACE(std::string(storage_mode_name(mode)) + " layout " + layout_name(layout) + " threads " +
                     std::to_string(threads));
        TestCsr<TypeParam> m;
        std::vector<int> cls;
        for (int g = 0; g < 700; ++g) { // 7 blocks in 8 of one pattern (a few with a shorter middle row)
          const std::size_t len = 5 + rng() % 26;
          const bool broken     = rng() % 8 == 0;
          for (int r = 0; r < 3; ++r) {
            cls.push_back(static_cast<int>(rng() % 4));
            std::vector<double> row(broken && r == 1 ? len - 1 : len);
            for (auto &v : row)
              v = group_class_value(cls.back(), rng);
            m.add_row(row);
          }
        }
        StorageOptions opts = with_mode(mode, layout);
        opts.format_group   = 3;
        opts.threads        = threads;
        const std::vector<CsrView<TypeParam>> views{m.view()};
        CompactCsr copy = build_compact_csr(m.view(), opts);
        int refilled = 0, refused = 0;
        for (int round = 0; round < 12; ++round) {
          const auto before = choose_row_formats(views, opts);
          for (int k = 0; k < 1 + round % 3; ++k) { // a few rows change class (their block may keep its formats)
            const auto row = static_cast<std::size_t>(rng() % static_cast<std::uint64_t>(m.nrows));
            const int c    = static_cast<int>(rng() % 4);
            for (auto i = m.rowptr[row]; i < m.rowptr[row + 1]; ++i)
              m.vals[static_cast<std::size_t>(i)] = mode == StorageMode::lossless ? group_class_value(c, rng)
                                                                                  : (c == 3   ? 1e300
                                                                                     : c == 2 ? 1e6
                                                                                              : 1.0) *
                                                                                        (1 + rng() % 7);
          }
          const auto after = choose_row_formats(views, opts);
          const bool kept  = refill_compact_values(m.view(), opts, copy);
          ASSERT_EQ(kept, before == after) << "round " << round;
          kept ? ++refilled : ++refused;
          if (!kept) copy = build_compact_csr(m.view(), opts);
          check_compact(copy, m, after);
          expect_same_copy(copy, build_compact_csr(m.view(), opts));
        }
        EXPECT_GT(refilled, 0);
        EXPECT_GT(refused, 0);
      }
}
