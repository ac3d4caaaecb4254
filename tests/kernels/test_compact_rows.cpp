// Self-contained compact copies (StorageOptions::own_indices, the storage of
// ellmp): the rows read back are the matrix the products multiply by, the
// products need no master CSR, and lossless copies give back every value bit
// for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
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
  // automatic with own indices slices blocks whatever their padding (rows of 0 to 40 entries)
  opts.layout       = Layout::automatic;
  const auto uneven = random_matrix<std::int32_t>(1000, 1000, Shape::runs, 4u, RowRecipe{4096, 0, 40});
  EXPECT_TRUE(self_contained(build_compact_csr(uneven.view(), opts)));
  opts.own_indices = false;
  EXPECT_FALSE(self_contained(build_compact_csr(uneven.view(), opts)));
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
