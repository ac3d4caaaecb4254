// build_compact_parts_by_rows: the copy ellmp's assembly builds a range of rows
// at a time, giving the assembly matrix's memory back as it goes. It must be
// the matrix a whole build stores (the same values, bit for bit, and the same
// products, transposed ones included), and it must never read a row again
// after saying it is done with it: here every row said done is overwritten
// with NaNs and bad column indices before the build goes on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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

// Runs of consecutive rows with one pattern, at most `limit` rows each (PETSc's inodes).
std::vector<std::int32_t> pattern_runs(const Matrix<std::int32_t> &a, int limit)
{
  std::vector<std::int32_t> runs;
  const CsrView<std::int32_t> v = a.view();
  for (std::int32_t i = 0; i < a.nrows;) {
    std::int32_t n = 1;
    while (i + n < a.nrows && n < limit && same_pattern(v, i, i + n))
      ++n;
    runs.push_back(n);
    i += n;
  }
  return runs;
}

// The whole matrix a copy stores, read back.
struct ReadBack {
  std::vector<std::int32_t> rowptr, cols;
  std::vector<double> vals;
};
ReadBack read_back(const CompactCsr &c)
{
  ReadBack r;
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(c.nrows));
  compact_row_lengths(c, lengths.data());
  r.rowptr.assign(lengths.size() + 1, 0);
  for (std::size_t i = 0; i < lengths.size(); ++i)
    r.rowptr[i + 1] = r.rowptr[i] + lengths[i];
  r.cols.resize(static_cast<std::size_t>(r.rowptr.back()));
  r.vals.resize(r.cols.size());
  read_compact_csr(c, r.rowptr.data(), r.cols.data(), r.vals.data());
  return r;
}

void expect_same_matrix(const CompactCsr &whole, const CompactCsr &steps, const char *what)
{
  const ReadBack a = read_back(whole), b = read_back(steps);
  ASSERT_EQ(a.rowptr, b.rowptr) << what;
  ASSERT_EQ(a.cols, b.cols) << what;
  for (std::size_t e = 0; e < a.vals.size(); ++e)
    ASSERT_TRUE(same(a.vals[e], b.vals[e])) << what << ": entry " << e << " stored differently";
  for (int f = 0; f < kFormatCount; ++f) {
    EXPECT_EQ(whole.stats.per_format[f].rows, steps.stats.per_format[f].rows) << what << ": format " << f;
    EXPECT_EQ(whole.stats.per_format[f].nnz, steps.stats.per_format[f].nnz) << what << ": format " << f;
  }
  EXPECT_EQ(whole.stats.nnz, steps.stats.nnz) << what;
  EXPECT_TRUE(steps.stats.errors_measured) << what;
  EXPECT_EQ(whole.stats.max_relative_error(), steps.stats.max_relative_error()) << what;
}

void expect_same_products(const CompactCsr &whole, const CompactCsr &steps, const char *what)
{
  const std::vector<double> x  = random_vector(static_cast<std::size_t>(whole.ncols), 3u);
  const std::vector<double> xt = random_vector(static_cast<std::size_t>(whole.nrows), 4u);
  std::vector<double> y1(static_cast<std::size_t>(whole.nrows)), y2(y1.size());
  std::vector<double> t1(static_cast<std::size_t>(whole.ncols)), t2(t1.size());
  for (int threads : {1, 2}) {
    openmp::spmv(whole, CsrPattern<std::int32_t>{}, x.data(), nullptr, y1.data(), threads);
    openmp::spmv(steps, CsrPattern<std::int32_t>{}, x.data(), nullptr, y2.data(), threads);
    for (std::size_t i = 0; i < y1.size(); ++i)
      ASSERT_TRUE(same(y1[i], y2[i])) << what << ": product row " << i << ", " << threads << " threads";
  }
  // transposed: each y entry gathers the rows in the same order (serial), so bitwise too
  reference::spmv_transpose(whole, CsrPattern<std::int32_t>{}, xt.data(), nullptr, t1.data());
  reference::spmv_transpose(steps, CsrPattern<std::int32_t>{}, xt.data(), nullptr, t2.data());
  for (std::size_t j = 0; j < t1.size(); ++j)
    ASSERT_TRUE(same(t1[j], t2[j])) << what << ": transposed product entry " << j;
}

// Builds parts by rows with `step`, poisoning every row said done; checks the calls.
void build_poisoning(std::vector<Matrix<std::int32_t>> &mats, std::vector<CompactPart<std::int32_t>> &parts,
                     std::int64_t step, const std::vector<std::int32_t> *runs, std::int64_t *calls)
{
  std::int64_t last = 0;
  *calls            = 0;
  auto rows_done    = [&](std::int64_t r) {
    ASSERT_GT(r, last) << "rows said done twice";
    if (runs && r < mats.front().nrows) { // ranges end where a run ends
      std::int64_t start = 0;
      for (std::int32_t s : *runs) {
        if (start >= r) break;
        start += s;
      }
      ASSERT_EQ(start, r) << "a range ends inside a run of rows with one pattern";
    }
    poison_rows(mats, last, r);
    last = r;
    ++*calls;
  };
  build_compact_parts_by_rows(parts, step, rows_done);
  EXPECT_EQ(last, mats.front().nrows) << "not every row was said done";
}

struct Case {
  StorageMode mode;
  Shape shape;
  int node_rows;
  std::int64_t step;
  int group = 1; // StorageOptions::format_group: the ranges must hold whole groups
};

std::string case_name(const Case &c)
{
  return std::string(storage_mode_name(c.mode)) + "_" + shape_name(c.shape) + "_nodes" + std::to_string(c.node_rows) +
         "_step" + std::to_string(c.step) + (c.group > 1 ? "_group" + std::to_string(c.group) : "");
}

// gtest prints a parameter by its name (not its bytes, whose padding is uninitialised)
void PrintTo(const Case &c, std::ostream *os)
{
  *os << case_name(c);
}

class BuildByRows : public ::testing::TestWithParam<Case> {};

TEST_P(BuildByRows, OnePartIsTheWholeBuild)
{
  const Case c = GetParam();
  RowRecipe recipe{256, 0, 14, 7, 37, c.node_rows, 64};
  std::vector<Matrix<std::int32_t>> mats{random_matrix<std::int32_t>(2000, 1800, c.shape, 7u, recipe)};
  const std::vector<std::int32_t> runs = pattern_runs(mats[0], 5);
  StorageOptions opts;
  opts.mode                  = c.mode;
  opts.own_indices           = true;
  opts.order                 = c.node_rows > 1 ? SumOrder::paired : SumOrder::sequential;
  opts.format_group          = c.group;
  CsrView<std::int32_t> view = mats[0].view();
  view.run_sizes             = runs.data();
  view.runs                  = static_cast<std::int32_t>(runs.size());
  view.run_limit             = 5;
  CompactCsr whole           = build_compact_csr(view, opts);
  measure_relative_errors(view, whole);

  std::vector<CompactPart<std::int32_t>> parts(1);
  parts[0].csr  = view;
  parts[0].opts = opts;
  std::int64_t calls;
  build_poisoning(mats, parts, c.step, &runs, &calls);
  if (c.step > 0 && c.step < static_cast<std::int64_t>(mats[0].vals.size()) && c.mode != StorageMode::entrysplit) {
    // (ranges end at a slice boundary, up to 32 runs of at most 4 rows further)
    EXPECT_GE(calls, std::min<std::int64_t>(static_cast<std::int64_t>(mats[0].vals.size()) / (c.step + 40),
                                            mats[0].nrows / 160))
        << "too few ranges";
  }

  expect_same_matrix(whole, parts[0].copy, "one part");
  expect_same_products(whole, parts[0].copy, "one part");
}

// An MPI matrix's two blocks: each row's format is decided over both, in every range.
class BuildPartsByRows : public ::testing::TestWithParam<Case> {};

TEST_P(BuildPartsByRows, EachRowDecidedOverBothParts)
{
  const Case c = GetParam();
  RowRecipe recipe{256, 0, 10, 7, 0, c.node_rows, 0};
  std::vector<Matrix<std::int32_t>> mats{random_matrix<std::int32_t>(1500, 1500, c.shape, 8u, recipe),
                                         random_matrix<std::int32_t>(1500, 300, Shape::fragmented, 9u, recipe)};
  StorageOptions opts;
  opts.mode         = c.mode;
  opts.own_indices  = true;
  opts.format_group = c.group;
  std::vector<CompactPart<std::int32_t>> whole(2), parts(2);
  for (int i = 0; i < 2; ++i) {
    whole[i].csr = parts[i].csr = mats[static_cast<std::size_t>(i)].view();
    whole[i].opts = parts[i].opts = opts;
  }
  update_compact_parts(whole);
  for (auto &p : whole)
    measure_relative_errors(p.csr, p.copy);
  std::int64_t calls;
  build_poisoning(mats, parts, c.step, nullptr, &calls);
  for (int i = 0; i < 2; ++i) {
    expect_same_matrix(whole[i].copy, parts[i].copy, i == 0 ? "diagonal part" : "off-diagonal part");
    expect_same_products(whole[i].copy, parts[i].copy, i == 0 ? "diagonal part" : "off-diagonal part");
  }
}

std::vector<Case> all_cases(bool row_wise_only)
{
  std::vector<Case> cases;
  for (StorageMode m : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::tolerance,
                        StorageMode::rowsplit, StorageMode::entrysplit})
    if (!(row_wise_only && m == StorageMode::entrysplit)) // (entrysplit: a single part, not row-wise)
      for (Shape s : {Shape::fragmented, Shape::runs, Shape::mostly_empty})
        for (int nodes : {1, 4})
          for (std::int64_t step : {0, 1, 500, 5000})
            for (int group : {1, 3})
              if (group == 1 || (nodes > 1 && m != StorageMode::entrysplit))
                cases.push_back({m, s, nodes, step, group});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ranges, BuildByRows, ::testing::ValuesIn(all_cases(false)),
                         [](const ::testing::TestParamInfo<Case> &info) { return case_name(info.param); });
INSTANTIATE_TEST_SUITE_P(Ranges, BuildPartsByRows, ::testing::ValuesIn(all_cases(true)),
                         [](const ::testing::TestParamInfo<Case> &info) { return case_name(info.param); });

// A matrix of one format: the ranges' blocks are joined into the one block a whole build makes (slices, and nodes),
// the same matrix and products.
TEST(BuildByRowsJoin, OneFormatIsOneBlock)
{
  for (Layout layout : {Layout::automatic, Layout::node}) {
    SCOPED_TRACE(layout_name(layout));
    std::vector<Matrix<std::int32_t>> mats{stencil_matrix<std::int32_t>(30, 7, Shape::runs, 5u, 1 << 30)};
    StorageOptions opts;
    opts.mode        = StorageMode::fp32;
    opts.own_indices = true;
    opts.layout      = layout;
    CompactCsr whole = build_compact_csr(mats[0].view(), opts);
    measure_relative_errors(mats[0].view(), whole);
    ASSERT_EQ(whole.blocks.size(), 1u);
    std::vector<CompactPart<std::int32_t>> parts(1);
    parts[0].csr  = mats[0].view();
    parts[0].opts = opts;
    std::int64_t calls;
    build_poisoning(mats, parts, 5000, nullptr, &calls);
    EXPECT_GT(calls, 10);
    EXPECT_EQ(parts[0].copy.blocks.size(), 1u) << "the ranges' blocks were not joined";
    EXPECT_EQ(parts[0].copy.blocks[0].node_layout(), whole.blocks[0].node_layout());
    expect_same_matrix(whole, parts[0].copy, "joined");
    expect_same_products(whole, parts[0].copy, "joined");
  }
}

TEST(BuildByRowsInput, NeedsOwnIndices)
{
  auto a = random_matrix<std::int32_t>(100, 100, Shape::runs, 1u);
  std::vector<CompactPart<std::int32_t>> parts(1);
  parts[0].csr = a.view();
  EXPECT_THROW(build_compact_parts_by_rows(parts, 10, [](std::int64_t) {}), StorageError);
}

} // namespace
