// refill_compact_parts_by_rows: ellmp's reassembly writes new values into the
// layout it keeps a range of rows at a time, giving the assembly matrix's rows
// back as it goes, after CompactValuesRelease gave the old values back while
// the rows were read. The result must be the matrix a whole build from the new
// values stores (values bit for bit, formats, largest changes, products), also
// when a row needs another format after rows were given back (they are
// restored from the copy and built anew with the formats they kept, a range
// of rows at a time, every row given back again), and the refill must never
// read a row said done: such rows are poisoned here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
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

using Mat = Matrix<std::int32_t>;

void expect_same_storage(const CompactCsr &whole, const CompactCsr &refilled, const char *what)
{
  for (int f = 0; f < kFormatCount; ++f) {
    EXPECT_EQ(whole.stats.per_format[f].rows, refilled.stats.per_format[f].rows) << what << ": format " << f;
    EXPECT_EQ(whole.stats.per_format[f].nnz, refilled.stats.per_format[f].nnz) << what << ": format " << f;
  }
  EXPECT_TRUE(refilled.stats.errors_measured) << what;
  EXPECT_EQ(whole.stats.max_relative_error(), refilled.stats.max_relative_error()) << what;
  const std::vector<double> x = random_vector(static_cast<std::size_t>(whole.ncols), 3u);
  std::vector<double> y1(static_cast<std::size_t>(whole.nrows)), y2(y1.size());
  reference::spmv(whole, CsrPattern<std::int32_t>{}, x.data(), nullptr, y1.data());
  for (int threads : {1, 2}) {
    openmp::spmv(refilled, CsrPattern<std::int32_t>{}, x.data(), nullptr, y2.data(), threads);
    for (std::size_t i = 0; i < y1.size(); ++i)
      ASSERT_TRUE(same(y1[i], y2[i])) << what << ": product row " << i << ", " << threads << " threads";
  }
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(whole.nrows)), other(lengths.size());
  compact_row_lengths(whole, lengths.data());
  compact_row_lengths(refilled, other.data());
  ASSERT_EQ(lengths, other) << what;
  std::vector<std::int32_t> rowptr(lengths.size() + 1, 0);
  for (std::size_t i = 0; i < lengths.size(); ++i)
    rowptr[i + 1] = rowptr[i] + lengths[i];
  std::vector<std::int32_t> c1(static_cast<std::size_t>(rowptr.back())), c2(c1.size());
  std::vector<double> v1(c1.size()), v2(c1.size());
  read_compact_csr(whole, rowptr.data(), c1.data(), v1.data());
  read_compact_csr(refilled, rowptr.data(), c2.data(), v2.data());
  ASSERT_EQ(c1, c2) << what;
  for (std::size_t e = 0; e < v1.size(); ++e)
    ASSERT_TRUE(same(v1[e], v2[e])) << what << ": entry " << e << " stored differently";
}

enum class Widen { none, first_row, late_row }; // which row's new values need a wider format

struct Case {
  StorageMode mode;
  Shape shape;
  int node_rows;
  std::int64_t step;
  Widen widen;
  int group = 1; // StorageOptions::format_group
};

std::string case_name(const Case &c)
{
  return std::string(storage_mode_name(c.mode)) + "_" + shape_name(c.shape) + "_nodes" + std::to_string(c.node_rows) +
         "_step" + std::to_string(c.step) +
         (c.widen == Widen::none       ? "_sameformats"
          : c.widen == Widen::late_row ? "_newformat"
                                       : "_newformat_first") +
         (c.group > 1 ? "_group" + std::to_string(c.group) : "");
}
void PrintTo(const Case &c, std::ostream *os)
{
  *os << case_name(c);
}

// Whether row i of part `stored` takes another format when its values are changed by change_row.
bool row_can_change(const CompactCsr &stored, const CompactRowMap &map, std::int32_t i, StorageMode mode)
{
  if (map.block_of(i) < 0) return false;
  const Format f = stored.blocks[static_cast<std::size_t>(map.block_of(i))].format;
  return mode == StorageMode::tolerance ? f != Format::fp16 : f != Format::fp64;
}
// Tolerance: every value 0 (exact in fp16, the narrowest format of its ladder, whose others hold fp64's range);
// the others: one value of no narrower format than fp64 in lossless mode, out of fp32's range in the lossy ones.
void change_row(Mat &m, std::int32_t i, StorageMode mode)
{
  const auto first = static_cast<std::size_t>(m.rowptr[i]), end = static_cast<std::size_t>(m.rowptr[i + 1]);
  if (mode == StorageMode::tolerance)
    std::fill(m.vals.begin() + static_cast<std::ptrdiff_t>(first), m.vals.begin() + static_cast<std::ptrdiff_t>(end),
              0.0);
  else
    m.vals[first] = mode == StorageMode::lossless ? 1.0 + std::ldexp(1.0, -40) : 1e300;
}

struct RefillCalls {
  int restores      = 0; // calls to restore
  int steps         = 0; // calls to rows_done
  int steps_after   = 0; // calls to rows_done after the restore or, without one, after a range that failed
  std::int64_t last = 0; // rows given back at the end
  bool went_back    = false;
};

// The old matrices' copies refilled with the new matrices' values (new_mats, poisoned as rows are said done),
// after every old value was given back.
RefillCalls refill(std::vector<Mat> &new_mats, std::vector<CompactPart<std::int32_t>> &parts, std::int64_t step,
                   bool *handled)
{
  for (auto &p : parts) {
    CompactValuesRelease release(p.copy);
    for (std::int64_t r = 0; r <= p.copy.nrows; r += 97)
      release(r);
    release(p.copy.nrows);
  }
  RefillCalls calls;
  std::int64_t restored = -1; // the rows restored (the same for every part)
  auto rows_done        = [&](std::int64_t r) {
    if (r < calls.last) { // a build anew after a range that failed: it gives every row back again
      ASSERT_EQ(calls.restores, 0) << "rows given back went backwards";
      calls.went_back = true;
      calls.last      = 0;
    }
    poison_rows(new_mats, calls.last, r);
    calls.last = r;
    ++calls.steps;
    calls.steps_after += calls.restores > 0 || calls.went_back;
  };
  auto restore = [&](std::size_t i, std::int64_t r) {
    if (restored < 0) restored = calls.last;
    ASSERT_EQ(r, restored) << "restore asks for other rows than those given back";
    read_compact_csr(parts[i].copy, new_mats[i].rowptr.data(), new_mats[i].cols.data(), new_mats[i].vals.data(), r);
    ++calls.restores;
    calls.last = 0; // (restored rows are not given back: the build anew gives them back again)
  };
  *handled = refill_compact_parts_by_rows(parts, step, rows_done, restore);
  return calls;
}

class RefillByRows : public ::testing::TestWithParam<Case> {};

TEST_P(RefillByRows, IsTheWholeBuildOfTheNewValues)
{
  const Case c = GetParam();
  RowRecipe recipe{256, 0, 14, 7, 37, c.node_rows, 64};
  const Mat old_a = random_matrix<std::int32_t>(2000, 1800, c.shape, 7u, recipe);
  const Mat old_b = random_matrix<std::int32_t>(2000, 300, Shape::fragmented, 9u, recipe);
  for (int nparts : {1, 2}) {
    SCOPED_TRACE(nparts == 1 ? "one part" : "two parts");
    std::vector<Mat> olds{old_a}, news{old_a};
    if (nparts == 2) {
      olds.push_back(old_b);
      news.push_back(old_b);
    }
    for (Mat &m : news) // new values of the same formats: twice the old (exact, and relative changes alike)
      for (double &v : m.vals)
        v *= 2;
    StorageOptions old_opts, new_opts;
    old_opts.mode = new_opts.mode = c.mode;
    old_opts.own_indices = new_opts.own_indices = true;
    old_opts.order = new_opts.order = c.node_rows > 1 ? SumOrder::paired : SumOrder::sequential;
    old_opts.format_group = new_opts.format_group = c.group;
    old_opts.mean_abs_value = 1e10; // (rowsplit: every row within the range, in fp32 where it fits)
    new_opts.mean_abs_value = 2e10;
    std::vector<CompactPart<std::int32_t>> expected(nparts), parts(nparts);
    for (int i = 0; i < nparts; ++i) {
      parts[i].csr  = olds[i].view();
      parts[i].opts = old_opts;
    }
    update_compact_parts(parts);
    // a late row gets values that need another format (in the off-diagonal part when there are
    // two: its rows decide with the other's)
    std::int32_t widened = -1;
    if (c.widen != Widen::none) {
      const CompactCsr &stored = parts.back().copy;
      const CompactRowMap map(stored);
      auto formats = [&](const std::vector<Mat> &mats) {
        std::vector<CsrView<std::int32_t>> views;
        for (const Mat &m : mats)
          views.push_back(m.view());
        return choose_row_formats(views, new_opts);
      };
      const std::vector<Format> unchanged = formats(news);
      const Mat &late                     = news.back(); // (news is replaced as a whole below: the loop ends then)
      const std::int32_t nrows            = late.nrows;
      for (std::int32_t i = c.widen == Widen::late_row ? nrows / 2 : 0; widened < 0 && i < nrows; ++i)
        if (late.rowptr[i + 1] > late.rowptr[i] && row_can_change(stored, map, i, c.mode)) {
          std::vector<Mat> changed = news;
          for (Mat &m : changed) // (tolerance: the row's values in every part; else the one value in `late`)
            if (&m == &changed.back() || c.mode == StorageMode::tolerance) change_row(m, i, c.mode);
          if (c.group > 1 && formats(changed) == unchanged) continue; // (its group keeps a wider format)
          widened = i;
          news    = std::move(changed);
        }
    }
    for (int i = 0; i < nparts; ++i) {
      expected[i].csr  = news[i].view();
      expected[i].opts = new_opts;
    }
    update_compact_parts(expected);
    for (int i = 0; i < nparts; ++i) {
      measure_relative_errors(expected[i].csr, expected[i].copy);
      parts[i].csr      = news[i].view();
      parts[i].opts     = new_opts;
      parts[i].reusable = true;
    }
    bool handled            = false;
    const RefillCalls calls = refill(news, parts, c.step, &handled);
    ASSERT_TRUE(handled);
    for (int i = 0; i < nparts; ++i)
      expect_same_storage(expected[i].copy, parts[i].copy, i == 0 ? "first part" : "second part");
    EXPECT_EQ(calls.last, old_a.nrows) << "the rows of the matrix were not all given back";
    const bool ranges = c.step > 0 && c.step < static_cast<std::int64_t>(old_a.vals.size());
    if (c.widen != Widen::none) {
      ASSERT_GE(widened, 0);
      EXPECT_FALSE(parts[0].refilled) << "a row changed its format: the copies are built anew";
      if (ranges && c.widen == Widen::late_row) {
        EXPECT_EQ(calls.restores, nparts) << "rows given back before the new format was seen were not restored";
      }
      if (ranges) { // (without a restore the failure came before any range was done: every call is the build anew's)
        EXPECT_GT(calls.restores > 0 ? calls.steps_after : calls.steps, 1)
            << "the copies were built anew in one step: the whole matrix held with them";
      }
    } else if (c.mode == StorageMode::lossless || c.mode == StorageMode::tolerance) {
      EXPECT_TRUE(parts[0].refilled) << "twice the values keep their formats";
      EXPECT_EQ(calls.restores, 0);
    }
  }
}

std::vector<Case> all_cases()
{
  std::vector<Case> cases;
  for (StorageMode m :
       {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::tolerance, StorageMode::rowsplit})
    for (Shape s : {Shape::fragmented, Shape::runs, Shape::mostly_empty})
      for (int nodes : {1, 4})
        for (std::int64_t step : {0, 500, 5000})
          for (Widen widen : {Widen::none, Widen::first_row, Widen::late_row})
            for (int group : {1, 3})
              if (group == 1 || nodes > 1) cases.push_back({m, s, nodes, step, widen, group});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ranges, RefillByRows, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case> &info) { return case_name(info.param); });

// Copies the ranged refill does not take (it returns false and touches nothing): the caller refills them whole.
TEST(RefillByRowsInput, RefusesWhatItCannotRefill)
{
  const Mat a = random_matrix<std::int32_t>(500, 500, Shape::runs, 1u);
  for (StorageMode m : {StorageMode::entrysplit, StorageMode::split2, StorageMode::rowsplit}) {
    SCOPED_TRACE(storage_mode_name(m));
    StorageOptions opts;
    opts.mode        = m;
    opts.own_indices = m != StorageMode::entrysplit;
    std::vector<CompactPart<std::int32_t>> parts(1);
    parts[0].csr  = a.view();
    parts[0].opts = opts;
    parts[0].copy =
        m == StorageMode::entrysplit ? build_entry_split(a.view(), opts) : build_compact_csr(a.view(), opts);
    parts[0].reusable = true;
    int calls         = 0;
    EXPECT_FALSE(refill_compact_parts_by_rows(
        parts, 100, [&](std::int64_t) { ++calls; }, [&](std::size_t, std::int64_t) { ++calls; }))
        << "(rowsplit: no mean given)";
    EXPECT_EQ(calls, 0);
  }
  StorageOptions opts;
  opts.mode        = StorageMode::fp32;
  opts.own_indices = true;
  std::vector<CompactPart<std::int32_t>> parts(1);
  parts[0].csr  = a.view();
  parts[0].opts = opts;
  parts[0].copy = build_compact_csr(a.view(), opts);
  EXPECT_FALSE(refill_compact_parts_by_rows(
      parts, 100, [](std::int64_t) {}, [](std::size_t, std::int64_t) {}))
      << "not said reusable";
}

// CompactValuesRelease gives back the pages of values whose rows were read, and nothing of the rows not yet read.
TEST(CompactValuesRelease, GivesBackTheValuesOfRowsRead)
{
  // 10^6 rows, one fp32 block of 28 MB: pages are given back 2 MiB at a time
  const Mat a = stencil_matrix<std::int32_t>(100, 7, Shape::runs, 5u, 1 << 30);
  StorageOptions opts;
  opts.mode        = StorageMode::fp32;
  opts.own_indices = true;
  for (Layout layout : {Layout::sliced, Layout::node}) {
    SCOPED_TRACE(layout_name(layout));
    opts.layout             = layout;
    CompactCsr c            = build_compact_csr(a.view(), opts);
    const CompactCsr before = build_compact_csr(a.view(), opts);
    ASSERT_EQ(c.blocks.size(), 1u);
    std::vector<std::int32_t> lengths(static_cast<std::size_t>(a.nrows));
    compact_row_lengths(c, lengths.data());
    std::vector<std::int32_t> rowptr(lengths.size() + 1, 0);
    for (std::size_t i = 0; i < lengths.size(); ++i)
      rowptr[i + 1] = rowptr[i] + lengths[i];
    std::vector<double> v0(static_cast<std::size_t>(rowptr.back())), v1(v0.size());
    read_compact_csr<std::int32_t>(before, rowptr.data(), nullptr, v0.data());
    CompactValuesRelease release(c);
    const std::int64_t half = a.nrows / 2;
    release(half);
    read_compact_csr<std::int32_t>(c, rowptr.data(), nullptr, v1.data());
    std::int64_t zeros_below = 0;
    for (std::int64_t e = 0; e < rowptr[half]; ++e)
      zeros_below += v1[e] == 0.0 && v0[e] != 0.0;
    EXPECT_GT(zeros_below, rowptr[half] * 3 / 4) << "the values of the rows read were not given back";
    for (std::int64_t e = rowptr[half + 8]; e < rowptr.back(); ++e) // (a slice or node may hold the half's row)
      ASSERT_TRUE(same(v0[e], v1[e])) << "a value of a row not read yet was lost: entry " << e;
  }
}

// With its indices: the index pages of the rows read go back too, the rows not yet read keep their columns, the
// copy says so and is neither compared, nor read, nor refilled afterwards.
TEST(CompactValuesRelease, WithIndicesRetiresTheCopy)
{
  // (110^3: its first quarter's indices take more than 1 MiB, several pages, in patched slices too)
  Mat a = stencil_matrix<std::int32_t>(110, 7, Shape::runs, 5u, 1 << 30);
  for (double &v : a.vals) // a pattern without values, as a DM preallocates it
    v = 0.0;
  StorageOptions opts;
  opts.mode        = StorageMode::lossless;
  opts.own_indices = true;
  for (Layout layout : {Layout::sliced, Layout::node}) {
    SCOPED_TRACE(layout_name(layout));
    opts.layout             = layout;
    CompactCsr c            = build_compact_csr(a.view(), opts);
    const CompactCsr before = build_compact_csr(a.view(), opts);
    ASSERT_EQ(c.blocks.size(), 1u);
    EXPECT_TRUE(compact_holds_a_pattern(c));
    const RowBlock &b      = c.blocks[0];
    const bool nodes       = b.node_layout();
    const auto index_bytes = [&](const CompactCsr &copy) {
      const RowBlock &blk = copy.blocks[0];
      return nodes ? blk.node_cols.as<unsigned char>() : reinterpret_cast<const unsigned char *>(blk.cols.data());
    };
    const std::int64_t quarter_unit = nodes ? b.node_of(a.nrows / 4) : a.nrows / 4 / kSliceRows;
    const std::int64_t quarter_bytes =
        nodes ? b.nodes[quarter_unit].indices : b.slice_col_offsets[quarter_unit] * std::int64_t(sizeof(std::int32_t));
    ASSERT_GT(quarter_bytes, 1 << 20);
    CompactRowReader rows(c);
    CompactValuesRelease release(c, true);
    EXPECT_TRUE(c.indices_released);
    std::vector<std::int32_t> cols;
    std::vector<double> vals;
    const std::int64_t half = a.nrows / 2;
    for (std::int64_t i = 0; i < a.nrows; ++i) {
      if (i == half) release(half);
      rows.read(i, cols, vals);
      ASSERT_EQ(static_cast<std::int32_t>(cols.size()), a.rowptr[i + 1] - a.rowptr[i]) << "row " << i;
      ASSERT_TRUE(std::equal(cols.begin(), cols.end(), a.cols.begin() + a.rowptr[i])) << "row " << i << "'s columns";
    }
    std::int64_t were_set = 0, now_zero = 0;
    for (std::int64_t k = 0; k < quarter_bytes; ++k)
      if (index_bytes(before)[k]) {
        ++were_set;
        now_zero += index_bytes(c)[k] == 0;
      }
    EXPECT_GT(now_zero, were_set * 9 / 10) << "the column indices of the rows read were not given back";
    EXPECT_FALSE(compact_has_pattern(c, a.view())) << "a copy without indices has no pattern to compare";
    std::vector<std::int32_t> rowptr(a.rowptr.begin(), a.rowptr.end()), all(a.cols.size());
    EXPECT_THROW(read_compact_csr(c, rowptr.data(), all.data(), nullptr), StorageError);
    std::vector<CompactPart<std::int32_t>> parts(1);
    parts[0].csr      = a.view();
    parts[0].opts     = opts;
    parts[0].copy     = std::move(c);
    parts[0].reusable = true;
    EXPECT_FALSE(refill_compact_parts_by_rows(
        parts, 1000, [](std::int64_t) {}, [](std::size_t, std::int64_t) {}))
        << "the layout of a copy without indices was reused";
  }
  Mat b         = a;
  b.vals[12345] = -0.0; // (a sign is a value: not all zeros)
  EXPECT_FALSE(compact_holds_a_pattern(build_compact_csr(b.view(), StorageOptions{})));
  const Mat values  = stencil_matrix<std::int32_t>(30, 7, Shape::runs, 5u, 1 << 30);
  CompactCsr zeroed = build_compact_csr(values.view(), StorageOptions{});
  EXPECT_FALSE(compact_holds_a_pattern(zeroed));
  zero_compact_values(zeroed);
  EXPECT_FALSE(compact_holds_a_pattern(zeroed)) << "MatZeroEntries's zeros taken for a pattern: its layout is kept";
}

} // namespace
