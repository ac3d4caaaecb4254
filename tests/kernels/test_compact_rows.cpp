// Self-contained compact copies (StorageOptions::own_indices, the storage of
// ellmp): the rows read back are the matrix the products multiply by, the
// products need no master CSR, and lossless copies give back every value bit
// for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "petscmp/core/compact_csr.hpp"
#include "petscmp/core/compact_rows.hpp"
#include "csr_matrices.hpp"
#include "spmv.hpp"

using namespace petscmp;
using namespace petscmp_test;

namespace {

bool same(double a, double b)
{
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// The largest relative change a mode may make to an entry (its widest
// rounding; rows that would overflow or underflow go to wider formats).
double mode_bound(StorageMode m, double tolerance)
{
  switch (m) {
  case StorageMode::lossless:
  case StorageMode::split2: // (exact values; ellmp does not offer split storage)
  case StorageMode::split4:
    return 0.0;
  case StorageMode::fp32:
  case StorageMode::entrysplit:
  case StorageMode::rowsplit:
    return 0x1p-24;
  case StorageMode::fp16:
    return 0x1p-11;
  case StorageMode::bf16:
    return 0x1p-8;
  case StorageMode::fp11_20:
    return 0x1p-20;
  case StorageMode::fp11_4:
    return 0x1p-4;
  case StorageMode::tolerance:
    return tolerance;
  }
  return 0.0;
}

struct Case {
  StorageMode mode;
  Shape shape;
  int node_rows;
  Layout layout;
};

std::string case_name(const Case &c)
{
  return std::string(storage_mode_name(c.mode)) + "_" + shape_name(c.shape) + "_nodes" + std::to_string(c.node_rows) +
         "_" + layout_name(c.layout);
}

// gtest prints a parameter by its name (not its bytes, whose padding is uninitialised)
void PrintTo(const Case &c, std::ostream *os)
{
  *os << case_name(c);
}

class CompactRows : public ::testing::TestWithParam<Case> {};

TEST_P(CompactRows, ReadBackIsTheStoredMatrix)
{
  const Case c = GetParam();
  RowRecipe recipe{512, 0, 12, 7, 0, c.node_rows, 0};
  const auto a = random_matrix<std::int32_t>(3000, 2500, c.shape, 11u + static_cast<unsigned>(c.node_rows), recipe);
  StorageOptions opts;
  opts.mode             = c.mode;
  opts.layout           = c.layout;
  opts.own_indices      = true;
  opts.order            = c.node_rows > 1 ? SumOrder::paired : SumOrder::sequential;
  const CompactCsr copy = build_compact_csr(a.view(), opts);
  ASSERT_TRUE(self_contained(copy));

  // the whole matrix: the pattern is the input's; values exact (lossless) or within the mode's bound
  std::vector<std::int32_t> lengths(a.nrows), rowptr(a.nrows + 1, 0), cols(a.cols.size());
  std::vector<double> vals(a.vals.size());
  compact_row_lengths(copy, lengths.data());
  for (std::int32_t i = 0; i < a.nrows; ++i)
    rowptr[i + 1] = rowptr[i] + lengths[i];
  ASSERT_EQ(rowptr, a.rowptr);
  read_compact_csr(copy, rowptr.data(), cols.data(), vals.data());
  ASSERT_EQ(cols, a.cols);
  const double bound = mode_bound(c.mode, opts.tolerance);
  for (std::size_t e = 0; e < vals.size(); ++e) {
    if (bound == 0.0)
      ASSERT_TRUE(same(vals[e], a.vals[e])) << "entry " << e << " changed in lossless mode";
    else
      ASSERT_LE(std::fabs(vals[e] - a.vals[e]), bound * std::fabs(a.vals[e])) << "entry " << e;
  }

  // the products read exactly these values: a product over the read-back CSR in the copy's
  // order equals the kernel's, which is given no master pattern
  const std::vector<double> x = random_vector(static_cast<std::size_t>(a.ncols), 5u);
  std::vector<double> y(a.nrows), expect(a.nrows);
  if (!copy.entry_split()) {
    openmp::spmv(copy, CsrPattern<std::int32_t>{}, x.data(), nullptr, y.data(), 2);
    for (std::int32_t i = 0; i < a.nrows; ++i) {
      double sum     = 0.0;
      std::int32_t k = rowptr[i];
      if (opts.order == SumOrder::paired)
        for (; k + 1 < rowptr[i + 1]; k += 2)
          sum += vals[k] * x[cols[k]] + vals[k + 1] * x[cols[k + 1]];
      for (; k < rowptr[i + 1]; ++k)
        sum += vals[k] * x[cols[k]];
      expect[i] = sum;
    }
    for (std::int32_t i = 0; i < a.nrows; ++i)
      ASSERT_TRUE(same(y[i], expect[i])) << "row " << i << ": the product does not multiply by the rows read back";
  }

  // the pattern test: the input's pattern, and not one with a column moved
  ASSERT_TRUE(compact_has_pattern(copy, a.view()));
  if (!a.cols.empty()) {
    auto moved       = a;
    const auto last  = moved.rowptr[moved.nrows] - 1; // the last entry of the last nonempty row
    moved.cols[last] = moved.cols[last] + 1 < moved.ncols ? moved.cols[last] + 1 : moved.cols[last] - 1;
    if (moved.cols[last] >= 0 && (last == 0 || moved.cols[last] != moved.cols[last - 1])) {
      ASSERT_FALSE(compact_has_pattern(copy, moved.view())) << "a moved column is not seen";
    }
  }

  // single rows through the row map, and the diagonal
  const CompactRowMap map(copy);
  std::vector<double> diagonal(a.nrows);
  compact_diagonal(copy, 0, diagonal.data());
  std::vector<std::int64_t> row_cols;
  std::vector<double> row_vals;
  for (std::int32_t i = 0; i < a.nrows; ++i) {
    const std::int64_t n = compact_row_length(copy, map, i);
    ASSERT_EQ(n, lengths[i]);
    row_cols.resize(static_cast<std::size_t>(n));
    row_vals.resize(static_cast<std::size_t>(n));
    read_compact_row(copy, map, i, row_cols.data(), row_vals.data());
    double d = 0.0;
    for (std::int64_t e = 0; e < n; ++e) {
      ASSERT_EQ(row_cols[e], cols[rowptr[i] + e]);
      ASSERT_TRUE(same(row_vals[e], vals[rowptr[i] + e]));
      if (row_cols[e] == i) d = row_vals[e];
    }
    ASSERT_TRUE(same(diagonal[i], d)) << "diagonal of row " << i;
  }

  // rows read in order without a row map: every row, and every third row (the others skipped)
  for (int every : {1, 3}) {
    CompactRowReader reader(copy);
    for (std::int32_t i = 0; i < a.nrows; i += every) {
      reader.read(i, row_cols, row_vals);
      ASSERT_EQ(static_cast<std::int64_t>(row_cols.size()), lengths[i]) << "row " << i << ", every " << every;
      for (std::size_t e = 0; e < row_cols.size(); ++e) {
        ASSERT_EQ(row_cols[e], cols[rowptr[i] + static_cast<std::int32_t>(e)]) << "row " << i;
        ASSERT_TRUE(same(row_vals[e], vals[rowptr[i] + static_cast<std::int32_t>(e)])) << "row " << i;
      }
    }
  }
}

// An MPI matrix's diagonal block: its diagonal is (i, i + shift) of the local columns.
TEST(CompactRowsDiagonal, ShiftedColumns)
{
  const auto a = random_matrix<std::int32_t>(500, 900, Shape::fragmented, 3u, RowRecipe{64, 20, 30});
  StorageOptions opts;
  opts.own_indices      = true;
  const CompactCsr copy = build_compact_csr(a.view(), opts);
  std::vector<double> d(a.nrows);
  compact_diagonal(copy, 300, d.data());
  for (std::int32_t i = 0; i < a.nrows; ++i) {
    double expect = 0.0;
    for (std::int32_t k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k)
      if (a.cols[k] == i + 300) expect = a.vals[k];
    ASSERT_TRUE(same(d[i], expect)) << "row " << i;
  }
}

TEST(CompactRowsZero, ZeroKeepsThePatternAndFormats)
{
  const auto a = random_matrix<std::int32_t>(2000, 2000, Shape::runs, 9u, RowRecipe{256, 3, 9});
  StorageOptions opts;
  opts.own_indices = true;
  CompactCsr copy  = build_compact_csr(a.view(), opts);
  std::vector<int> formats_before;
  for (const RowBlock &b : copy.blocks)
    formats_before.push_back(static_cast<int>(b.format));
  zero_compact_values(copy);
  std::vector<int> formats_after;
  for (const RowBlock &b : copy.blocks)
    formats_after.push_back(static_cast<int>(b.format));
  EXPECT_EQ(formats_before, formats_after);
  std::vector<std::int32_t> rowptr(a.rowptr), cols(a.cols.size());
  std::vector<double> vals(a.vals.size(), 1.0);
  read_compact_csr(copy, rowptr.data(), cols.data(), vals.data());
  EXPECT_EQ(cols, a.cols);
  for (double v : vals)
    ASSERT_TRUE(same(v, 0.0));
}

// Without own_indices the CSR-order layout reads the master's columns: such a
// copy is not self-contained, and asking for both is refused.
TEST(CompactRowsMaster, CsrLayoutIsNotSelfContained)
{
  const auto a = random_matrix<std::int32_t>(1000, 1000, Shape::runs, 4u);
  StorageOptions opts;
  opts.layout = Layout::csr;
  EXPECT_FALSE(self_contained(build_compact_csr(a.view(), opts)));
  opts.own_indices = true;
  EXPECT_THROW(build_compact_csr(a.view(), opts), StorageError);
  // automatic with own indices slices blocks whatever their padding (rows of 0 to 40 entries), in matrix order;
  // without, it sorts their rows within windows (SortWindow.AutomaticLayoutSortsWherePaddingAsks)
  opts.layout          = Layout::automatic;
  const auto uneven    = random_matrix<std::int32_t>(1000, 1000, Shape::runs, 4u, RowRecipe{4096, 0, 40});
  const CompactCsr own = build_compact_csr(uneven.view(), opts);
  EXPECT_TRUE(self_contained(own));
  EXPECT_EQ(own.stats.sorted_windows, 0);
}

std::vector<Case> all_cases()
{
  std::vector<Case> cases;
  for (StorageMode m : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16,
                        StorageMode::fp11_4, StorageMode::tolerance, StorageMode::entrysplit})
    for (Shape s : {Shape::fragmented, Shape::runs, Shape::mostly_empty})
      for (int nodes : {1, 4})
        for (Layout l : {Layout::automatic, Layout::sliced})
          cases.push_back({m, s, nodes, l});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Copies, CompactRows, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case> &info) { return case_name(info.param); });

} // namespace

// ---- sigma: sliced rows sorted by length within windows (SELL-C-sigma) ----

namespace {
struct SigmaCase {
  const char *name;
  Matrix<std::int32_t> a;
};

std::vector<SigmaCase> sigma_matrices()
{
  std::vector<SigmaCase> cases;
  // rows of 0 to 40 entries, every 5th empty, more columns than rows
  cases.push_back(
      {"uneven_rectangular", random_matrix<std::int32_t>(1003, 1500, Shape::runs, 21u, RowRecipe{4096, 0, 41, 7, 5})});
  // most rows empty: whole slices of empty rows
  cases.push_back(
      {"mostly_empty", random_matrix<std::int32_t>(900, 700, Shape::mostly_empty, 22u, RowRecipe{4096, 0, 12, 9})});
  // one row of 600 entries among short ones
  auto longrow = random_matrix<std::int32_t>(400, 800, Shape::runs, 23u, RowRecipe{4096, 1, 4});
  {
    Matrix<std::int32_t> b;
    b.nrows = longrow.nrows;
    b.ncols = longrow.ncols;
    for (std::int32_t i = 0; i < b.nrows; ++i) {
      if (i == 77)
        for (std::int32_t c = 0; c < 600; ++c) {
          b.cols.push_back(c);
          b.vals.push_back(1.0 + c);
        }
      else
        for (std::int32_t e = longrow.rowptr[i]; e < longrow.rowptr[i + 1]; ++e) {
          b.cols.push_back(longrow.cols[e]);
          b.vals.push_back(longrow.vals[e]);
        }
      b.rowptr.push_back(static_cast<std::int32_t>(b.vals.size()));
    }
    cases.push_back({"single_long_row", std::move(b)});
  }
  return cases;
}

CompactCsr sigma_copy(const Matrix<std::int32_t> &a, int sigma, StorageMode mode = StorageMode::lossless)
{
  StorageOptions opts;
  opts.mode        = mode;
  opts.own_indices = true;
  opts.layout      = Layout::sliced;
  opts.sort_window = sigma;
  return build_compact_csr(a.view(), opts);
}
} // namespace

// The sorted copy is the same matrix: read back bit for bit, products bit for bit (each row summed alone), the
// serial transposed product too (it adds the rows in ascending order, each window put back in order); less padding.
TEST(SortWindow, SameMatrixLessPadding)
{
  for (const SigmaCase &c : sigma_matrices())
    for (int sigma : {16, 64, 1 << 30}) { // (a window larger than the matrix: one window, no window-sized buffers)
      SCOPED_TRACE(std::string(c.name) + " sigma " + std::to_string(sigma));
      const CompactCsr plain = sigma_copy(c.a, 1), sorted = sigma_copy(c.a, sigma);
      EXPECT_GT(sorted.stats.sorted_windows, 0);
      EXPECT_LT(sorted.stats.stored, plain.stats.stored) << "sorting stored no fewer padding entries";
      for (int f = 0; f < kFormatCount; ++f)
        EXPECT_EQ(sorted.stats.per_format[f].rows, plain.stats.per_format[f].rows);
      std::vector<std::int32_t> len1(c.a.nrows), len2(c.a.nrows);
      compact_row_lengths(plain, len1.data());
      compact_row_lengths(sorted, len2.data());
      ASSERT_EQ(len1, len2);
      // each window of sigma rows in matrix order, or stably sorted by decreasing length (the counting sort of
      // short rows, the comparison sort where a 600-entry row widens the range of lengths)
      for (const RowBlock &b : sorted.blocks) {
        if (!b.grouped()) continue;
        std::vector<std::int32_t> in_order(b.rows);
        std::sort(in_order.begin(), in_order.end());
        for (std::size_t w = 0; w < in_order.size(); w += static_cast<std::size_t>(sigma)) {
          const std::size_t end = std::min(in_order.size(), w + static_cast<std::size_t>(sigma));
          std::vector<std::int32_t> by_length(in_order.begin() + w, in_order.begin() + end);
          const std::vector<std::int32_t> held(b.rows.begin() + w, b.rows.begin() + end);
          if (held == by_length) continue;
          std::stable_sort(by_length.begin(), by_length.end(),
                           [&](std::int32_t i, std::int32_t j) { return len1[i] > len1[j]; });
          ASSERT_EQ(held, by_length) << "window at block row " << w;
        }
      }
      std::vector<std::int32_t> cols1(c.a.cols.size()), cols2(c.a.cols.size());
      std::vector<double> vals1(c.a.vals.size()), vals2(c.a.vals.size());
      read_compact_csr(plain, c.a.rowptr.data(), cols1.data(), vals1.data());
      read_compact_csr(sorted, c.a.rowptr.data(), cols2.data(), vals2.data());
      ASSERT_EQ(cols1, cols2);
      for (std::size_t e = 0; e < vals1.size(); ++e)
        ASSERT_TRUE(same(vals1[e], vals2[e])) << "entry " << e;
      { // rows in order from sorted windows (read through a row map)
        CompactRowReader reader(sorted);
        std::vector<std::int32_t> row_cols;
        std::vector<double> row_vals;
        for (std::int32_t i = 0; i < c.a.nrows; ++i) {
          reader.read(i, row_cols, row_vals);
          ASSERT_EQ(row_cols.size(), static_cast<std::size_t>(len2[i])) << "row " << i;
          for (std::size_t e = 0; e < row_cols.size(); ++e)
            ASSERT_TRUE(row_cols[e] == cols2[c.a.rowptr[i] + static_cast<std::int32_t>(e)] &&
                        same(row_vals[e], vals2[c.a.rowptr[i] + static_cast<std::int32_t>(e)]))
                << "row " << i << " entry " << e;
        }
      }
      const std::vector<double> x = random_vector(static_cast<std::size_t>(c.a.ncols), 8u);
      const std::vector<double> z = random_vector(static_cast<std::size_t>(c.a.nrows), 9u);
      std::vector<double> y1(c.a.nrows), y2(c.a.nrows);
      for (int threads : {1, 2})
        for (const double *zz : {static_cast<const double *>(nullptr), z.data()}) {
          openmp::spmv(plain, CsrPattern<std::int32_t>{}, x.data(), zz, y1.data(), threads);
          openmp::spmv(sorted, CsrPattern<std::int32_t>{}, x.data(), zz, y2.data(), threads);
          for (std::int32_t i = 0; i < c.a.nrows; ++i)
            ASSERT_TRUE(same(y1[i], y2[i])) << "row " << i << ", " << threads << " threads";
          reference::spmv(sorted, CsrPattern<std::int32_t>{}, x.data(), zz, y2.data());
          for (std::int32_t i = 0; i < c.a.nrows; ++i)
            ASSERT_TRUE(same(y1[i], y2[i])) << "reference, row " << i;
        }
      const std::vector<double> xt = random_vector(static_cast<std::size_t>(c.a.nrows), 10u);
      std::vector<double> t1(c.a.ncols), t2(c.a.ncols);
      reference::spmv_transpose(plain, CsrPattern<std::int32_t>{}, xt.data(), nullptr, t1.data());
      reference::spmv_transpose(sorted, CsrPattern<std::int32_t>{}, xt.data(), nullptr, t2.data());
      for (std::int32_t j = 0; j < c.a.ncols; ++j)
        ASSERT_TRUE(same(t1[j], t2[j])) << "transposed entry " << j;
    }
}

namespace {
// Products y = A x + z and y = A^T x + z of copies a and b of matrix m, bit for bit: the reference's and the
// OpenMP backend's (1 and 2 threads; the transpose serially, as threads add their parts in another order).
void expect_same_products(const CompactCsr &a, const CompactCsr &b, const Matrix<std::int32_t> &m)
{
  const CsrPattern<std::int32_t> p = m.pattern();
  const std::vector<double> x      = random_vector(static_cast<std::size_t>(m.ncols), 8u);
  const std::vector<double> z      = random_vector(static_cast<std::size_t>(m.nrows), 9u);
  std::vector<double> y1(m.nrows), y2(m.nrows);
  reference::spmv(a, p, x.data(), z.data(), y1.data());
  for (int threads : {0, 1, 2}) {
    if (threads == 0)
      reference::spmv(b, p, x.data(), z.data(), y2.data());
    else
      openmp::spmv(b, p, x.data(), z.data(), y2.data(), threads);
    for (std::int32_t i = 0; i < m.nrows; ++i)
      ASSERT_TRUE(same(y1[i], y2[i])) << "row " << i << ", " << threads << " threads (0: reference)";
  }
  const std::vector<double> xt = random_vector(static_cast<std::size_t>(m.nrows), 10u);
  const std::vector<double> zt = random_vector(static_cast<std::size_t>(m.ncols), 11u);
  std::vector<double> t1(m.ncols), t2(m.ncols);
  reference::spmv_transpose(a, p, xt.data(), zt.data(), t1.data());
  openmp::spmv_transpose(b, p, xt.data(), zt.data(), t2.data(), 1);
  for (std::int32_t j = 0; j < m.ncols; ++j)
    ASSERT_TRUE(same(t1[j], t2[j])) << "transposed entry " << j;
}

// n rows of length_of(i, rng) entries each, random values: a shifted row i holds columns i, i + 1, i + 2 (8 shifted
// rows in a slice make it a shifted slice), another row's columns are spread over the matrix.
template <typename Length, typename Shifted>
Matrix<std::int32_t> rows_of_lengths(std::int32_t n, unsigned seed, Length length_of, Shifted shifted)
{
  Matrix<std::int32_t> m;
  m.nrows = m.ncols = n;
  std::mt19937_64 rng(seed);
  for (std::int32_t i = 0; i < n; ++i) {
    const bool shift       = shifted(i);
    const std::int32_t len = shift ? 3 : length_of(i, rng);
    for (std::int32_t e = 0; e < len; ++e) {
      m.cols.push_back(shift ? std::min(i, n - 3) + e
                             : static_cast<std::int32_t>((static_cast<std::int64_t>(i) + e * (n / len)) % n));
      m.vals.push_back(class_value(1, rng));
    }
    std::sort(m.cols.end() - len, m.cols.end());
    m.rowptr.push_back(static_cast<std::int32_t>(m.cols.size()));
  }
  return m;
}

// Rows of 2 entries but one in every 256 of 600: sorting a window still leaves that row's slice padded 300-fold.
Matrix<std::int32_t> spiky_matrix(std::int32_t n)
{
  return rows_of_lengths(
      n, 5u, [](std::int32_t i, std::mt19937_64 &) { return i % 256 == 17 ? 600 : 2; },
      [](std::int32_t) { return false; });
}

// Windows of 256 rows that start with two shifted slices (never sorted, also once the long rows before them are set
// apart), then rows of 1 and 4 entries alternating (slices padded 1.6-fold), and one row of 600 entries each: setting
// the long rows apart leaves too much padding.
Matrix<std::int32_t> unsortable_matrix(std::int32_t n)
{
  return rows_of_lengths(
      n, 7u,
      [](std::int32_t i, std::mt19937_64 &) {
        const std::int32_t short_row = i % 2 ? 4 : 1;
        return i % 256 == 100 ? 600 : short_row;
      },
      [](std::int32_t i) { return i % 256 < 16; });
}

// Rows of 1 or 8 entries in windows of 256 rows: one window in 4 at random (sorting helps it), the others starting
// with a shifted slice (never sorted) and then alternating (slices padded 1.76-fold): sorting leaves the block padded
// 1.57-fold, and no row is long.
Matrix<std::int32_t> partly_sortable_matrix(std::int32_t n)
{
  const auto sortable = [](std::int32_t i) { return (i / 256) % 4 == 0; };
  return rows_of_lengths(
      n, 8u, [&](std::int32_t i, std::mt19937_64 &rng) { return (sortable(i) ? rng() % 2 : i % 2) ? 8 : 1; },
      [&](std::int32_t i) { return !sortable(i) && i % 256 < 8; });
}

// A bordered operator: rows of 3 entries (a 1D Laplacian's pattern) plus the last column, and a last row with an entry
// in every column, as a constraint couples all unknowns (a mean-zero pressure, an arc-length continuation).
Matrix<std::int32_t> bordered_matrix(std::int32_t n)
{
  Matrix<std::int32_t> m;
  m.nrows = m.ncols = n;
  std::mt19937_64 rng(6u);
  for (std::int32_t i = 0; i < n; ++i) {
    for (std::int32_t j = 0; j < n; ++j)
      if (i == n - 1 || j == n - 1 || (j >= i - 1 && j <= i + 1)) {
        m.cols.push_back(j);
        m.vals.push_back(class_value(1, rng));
      }
    m.rowptr.push_back(static_cast<std::int32_t>(m.cols.size()));
  }
  return m;
}
} // namespace

// aijmp's automatic layout (a master holds the column indices, rows in matrix order asked for): where slices of the
// rows in matrix order would pad a block by more than kMaxSlicePadding, the rows are sorted by length within windows of
// kAutoSortWindow rows if that brings the padding under the limit, else the block is read in CSR order. Either way
// the products are those of the CSR-order copy, bit for bit.
TEST(SortWindow, AutomaticLayoutSortsWherePaddingAsks)
{
  StorageOptions opts; // lossless, automatic layout, sort_window 1, no own indices
  StorageOptions csr = opts;
  csr.layout         = Layout::csr;
  { // rows of 0 to 40 entries: sorted
    const auto uneven       = random_matrix<std::int32_t>(2000, 2000, Shape::runs, 4u, RowRecipe{4096, 0, 40});
    const CompactCsr sorted = build_compact_csr(uneven.view(), opts);
    EXPECT_GT(sorted.stats.sorted_windows, 0);
    EXPECT_EQ(sorted.stats.sliced_rows, uneven.nrows);
    EXPECT_LE(static_cast<double>(sorted.stats.stored), kMaxSlicePadding * static_cast<double>(uneven.cols.size()));
    expect_same_products(build_compact_csr(uneven.view(), csr), sorted, uneven);
  }
  for (const std::int32_t n : {2048, 2051}) { // windows that sorting cannot save: their long rows are set apart
    const auto spiky      = spiky_matrix(n);
    const CompactCsr copy = build_compact_csr(spiky.view(), opts);
    EXPECT_EQ(copy.stats.sorted_windows, 0); // (the rows of 2 entries slice in matrix order)
    EXPECT_EQ(copy.stats.long_rows, 8);
    EXPECT_EQ(copy.stats.sliced_rows, spiky.nrows); // (the 8 long rows, of one length, in one slice)
    EXPECT_TRUE(copy.rows_in_order());
    EXPECT_TRUE(self_contained(copy)); // (both blocks sliced: no index of the master is read)
    ASSERT_EQ(copy.blocks.size(), 2u);
    for (const RowBlock &b : copy.blocks) {
      EXPECT_TRUE(b.grouped() && b.sliced());
      EXPECT_TRUE(std::is_sorted(b.rows.begin(), b.rows.end()));
    }
    EXPECT_EQ(copy.blocks[1].row_count(), 8);
    EXPECT_EQ(copy.blocks[0].row_count() + copy.blocks[1].row_count(), spiky.nrows);
    EXPECT_EQ(copy.blocks[0].nnz + copy.blocks[1].nnz, static_cast<std::int64_t>(spiky.cols.size()));
    EXPECT_LE(static_cast<double>(copy.stats.stored), kMaxSlicePadding * static_cast<double>(spiky.cols.size()));
    expect_same_products(build_compact_csr(spiky.view(), csr), copy, spiky);
  }
  // Long rows set apart, the others still too padded and not sortable; or sorting helps too little, and no row is
  // long: either way the block as it was (not listing its rows, every row and nonzero), read in CSR order.
  for (const auto &unsliced : {unsortable_matrix(2048), partly_sortable_matrix(2048)}) {
    const CompactCsr copy = build_compact_csr(unsliced.view(), opts);
    EXPECT_EQ(copy.stats.long_rows, 0);
    EXPECT_EQ(copy.stats.sorted_windows, 0);
    EXPECT_EQ(copy.stats.sliced_rows, 0);
    ASSERT_EQ(copy.blocks.size(), 1u);
    EXPECT_FALSE(copy.blocks[0].grouped());
    EXPECT_EQ(copy.blocks[0].row_count(), unsliced.nrows);
    EXPECT_EQ(copy.blocks[0].nnz, static_cast<std::int64_t>(unsliced.cols.size()));
    EXPECT_TRUE(copy.rows_in_order());
    expect_same_products(build_compact_csr(unsliced.view(), csr), copy, unsliced);
  }
  { // one dense row: set apart (alone in a slice it would pad 7-fold, so CSR order), the rest sliced
    const auto bordered   = bordered_matrix(3000);
    const CompactCsr copy = build_compact_csr(bordered.view(), opts);
    EXPECT_EQ(copy.stats.long_rows, 1);
    EXPECT_EQ(copy.stats.sliced_rows, bordered.nrows - 1);
    ASSERT_EQ(copy.blocks.size(), 2u);
    EXPECT_FALSE(copy.blocks[1].sliced());
    EXPECT_FALSE(self_contained(copy)); // (the dense row in CSR order reads the master's columns)
    EXPECT_EQ(copy.blocks[1].rows, std::vector<std::int32_t>{bordered.nrows - 1});
    expect_same_products(build_compact_csr(bordered.view(), csr), copy, bordered);
    for (StorageMode mode :
         {StorageMode::fp32, StorageMode::fp16}) { // lossy: the same products as the CSR-order copy of that mode
      StorageOptions lossy = opts, lossy_csr = csr;
      lossy.mode = lossy_csr.mode = mode;
      const CompactCsr apart      = build_compact_csr(bordered.view(), lossy);
      EXPECT_EQ(apart.stats.long_rows, 1);
      expect_same_products(build_compact_csr(bordered.view(), lossy_csr), apart, bordered);
    }
  }
  { // with its own column indices (ellmp) a copy keeps its rows together: sliced, padded, no row set apart
    StorageOptions own = opts;
    own.own_indices    = true;
    const auto spiky   = spiky_matrix(2048);
    EXPECT_EQ(build_compact_csr(spiky.view(), own).stats.long_rows, 0);
  }
}

// Stencil rows stay in order: windows with shifted slices (one column per 8 values, no gathers) are not sorted.
TEST(SortWindow, StencilKeepsShiftedSlices)
{
  const auto a           = stencil_matrix<std::int32_t>(20, 7, Shape::runs, 3u, 1 << 30);
  const CompactCsr plain = sigma_copy(a, 1), sorted = sigma_copy(a, 32);
  EXPECT_GT(plain.stats.shifted_rows, 0);
  EXPECT_EQ(sorted.stats.shifted_rows, plain.stats.shifted_rows);
  EXPECT_LE(sorted.stats.stored, plain.stats.stored);
}

TEST(SortWindow, RefusesWindowsThatAreNotSlices)
{
  const auto a = random_matrix<std::int32_t>(100, 100, Shape::runs, 1u);
  for (int sigma : {0, 12, -8})
    EXPECT_THROW(sigma_copy(a, sigma), StorageError) << sigma;
}
