// OpenMP SpMV against the reference backend on large random matrices: y = A x
// bitwise equal for any thread count; the transpose within the bound of a sum
// taken in another order; split storage at every read level, and with a read
// level per row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "petscmp/core/compact_csr.hpp"
#include "csr_matrices.hpp"
#include "prefetch.hpp"
#include "spmv.hpp"

using namespace petscmp;
using namespace petscmp_test;

namespace petscmp {
// gtest prints the parameter in test names: the mode's name, not its bytes.
void PrintTo(StorageMode m, std::ostream *os)
{
  *os << storage_mode_name(m);
}
} // namespace petscmp

namespace {

// Runs check() with the x of gathered slices read both ways the AVX-512
// kernels can (8 scalar loads, one gather instruction), whatever this
// processor's automatic choice is; then restores the automatic choice.
template <typename Check> void with_both_gathered_reads(Check &&check)
{
  for (openmp::GatheredX how : {openmp::GatheredX::scalar_loads, openmp::GatheredX::gathers}) {
    SCOPED_TRACE(how == openmp::GatheredX::gathers ? "x by gathers" : "x by scalar loads");
    openmp::set_gathered_x(how);
    check();
  }
  openmp::set_gathered_x(openmp::GatheredX::automatic);
}

constexpr double kU = 0x1p-53;
double gamma_n(double n)
{
  return n * kU / (1 - n * kU);
}

// Large matrices: 5 to 15 nonzeros drawn per row, classes in runs of 4096 rows,
// 80% empty rows in mostly_empty, and a few empty rows everywhere.
const RowRecipe kBigRows{4096, 5, 11, 8, 997};

bool same(double a, double b)
{
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Every block of A has the layout asked for (automatic: nodes, as the node
// matrices below hold 3 rows a node on average when formats come in runs).
void expect_layout(const CompactCsr &A, Layout layout)
{
  for (const auto &b : A.blocks) {
    ASSERT_EQ(b.sliced(), layout == Layout::sliced) << "a block does not have the layout the options ask for";
    ASSERT_EQ(b.node_layout(), layout == Layout::node || layout == Layout::automatic)
        << "a block does not have the layout the options ask for";
  }
}

// The read levels a mode's products have: every segment count of split
// storage (its last one reads all), else 0 (all).
std::vector<int> read_levels(StorageMode mode)
{
  std::vector<int> levels{0};
  for (int r = 1; r < storage_mode_segments(mode); ++r)
    levels.push_back(r);
  return levels;
}

// The level each row is read at: the highest among the rows stored with it
// (its node, its slice of 8 rows, or itself), stated here from the layout.
std::vector<int> unit_levels(const CompactCsr &A, const std::vector<std::uint8_t> &levels)
{
  std::vector<int> read(levels.begin(), levels.end());
  for (const RowBlock &b : A.blocks) {
    std::vector<std::pair<std::int64_t, std::int64_t>> units;
    if (b.node_layout())
      for (const NodeInfo &nd : b.nodes)
        units.emplace_back(nd.first, nd.first + nd.rows);
    else if (b.sliced())
      for (std::int64_t k = 0; k < b.row_count(); k += kSliceRows)
        units.emplace_back(k, std::min(b.row_count(), k + kSliceRows));
    for (const auto &[k0, k1] : units) {
      int m = 0;
      for (std::int64_t k = k0; k < k1; ++k)
        m = std::max<int>(m, levels[b.row(k)]);
      for (std::int64_t k = k0; k < k1; ++k)
        read[b.row(k)] = m;
    }
  }
  return read;
}

// Split storage, a read level per row: the reference's product gives every row,
// bit for bit, the whole product at the highest level among the rows stored
// with it; the OpenMP one (runs of units of one level through the SIMD
// kernels) equals it for every thread count and z (none, separate, aliasing y).
template <typename Index> void compare_row_levels(const Matrix<Index> &a, CompactCsr &A)
{
  const int segments = storage_mode_segments(A.mode);
  if (!segments) return;
  const std::size_t nr = static_cast<std::size_t>(a.nrows), nc = static_cast<std::size_t>(a.ncols);
  const std::vector<double> x = random_vector(nc, 211), z = random_vector(nr, 212);
  const auto p = a.pattern();
  std::vector<std::vector<double>> at_level(segments + 1), at_level_z(segments + 1);
  for (int l = 1; l <= segments; ++l) {
    A.read_segments = l;
    at_level[l].resize(nr);
    at_level_z[l].resize(nr);
    reference::spmv(A, p, x.data(), nullptr, at_level[l].data());
    reference::spmv(A, p, x.data(), z.data(), at_level_z[l].data());
  }
  A.read_segments = 0;
  std::mt19937_64 rng(7);
  // every level in equal shares, then mostly the head with a few rows above it
  for (int mostly_head : {0, 1}) {
    SCOPED_TRACE(mostly_head ? "mostly the head" : "levels in equal shares");
    // levels in runs of 40 rows (neighbors in storage share a level, as a component method's regions do), and one
    // row in 16 on a level of its own (the rows stored with it then read its level where it is higher)
    std::vector<std::uint8_t> levels(nr);
    int run_level = 1;
    for (std::size_t i = 0; i < nr; ++i) {
      if (i % 40 == 0) run_level = mostly_head && rng() % 8 ? 1 : 1 + static_cast<int>(rng() % segments);
      levels[i] = static_cast<std::uint8_t>(rng() % 16 ? run_level : 1 + static_cast<int>(rng() % segments));
    }
    const std::vector<int> read = unit_levels(A, levels);
    std::size_t below           = 0;
    for (std::size_t i = 0; i < nr; ++i) {
      ASSERT_GE(read[i], levels[i]);
      below += read[i] < segments;
    }
    ASSERT_GT(below, nr / 10) << "too few rows read below the full level: the test would not see a level mix-up";
    std::vector<double> ref(nr, 5.0), refz(nr, 5.0);
    reference::spmv_row_levels(A, p, levels.data(), x.data(), nullptr, ref.data());
    reference::spmv_row_levels(A, p, levels.data(), x.data(), z.data(), refz.data());
    for (std::size_t i = 0; i < nr; ++i) {
      ASSERT_TRUE(same(ref[i], at_level[read[i]][i])) << "row " << i << " at level " << read[i];
      ASSERT_TRUE(same(refz[i], at_level_z[read[i]][i])) << "row " << i << " at level " << read[i];
    }
    for (int nt : {1, 3}) {
      SCOPED_TRACE("threads " + std::to_string(nt));
      std::vector<double> y(nr, 5.0), yz(nr, 5.0), ya = z;
      openmp::spmv_row_levels(A, p, levels.data(), x.data(), nullptr, y.data(), nt);
      openmp::spmv_row_levels(A, p, levels.data(), x.data(), z.data(), yz.data(), nt);
      openmp::spmv_row_levels(A, p, levels.data(), x.data(), ya.data(), ya.data(), nt);
      for (std::size_t i = 0; i < nr; ++i) {
        ASSERT_TRUE(same(y[i], ref[i])) << "row " << i;
        ASSERT_TRUE(same(yz[i], refz[i])) << "row " << i;
        ASSERT_TRUE(same(ya[i], refz[i])) << "row " << i << " (z aliasing y)";
      }
    }
  }
}

template <typename Index>
void compare_backends(const Matrix<Index> &a, StorageMode mode, SumOrder order, Shape shape, Layout layout)
{
  SCOPED_TRACE(std::string(storage_mode_name(mode)) + " " + shape_name(shape) + " index " +
               std::to_string(8 * sizeof(Index)) + (order == SumOrder::paired ? " paired " : " sequential ") +
               layout_name(layout));
  StorageOptions opts;
  opts.mode         = mode;
  opts.min_run_rows = 32; // the shapes keep their runs of 40-64 rows as run blocks
  opts.order        = order;
  opts.layout       = layout;
  CompactCsr A      = build_compact_csr(a.view(), opts);
  expect_layout(A, layout);
  if (!A.entry_split()) {
    bool grouped = false;
    for (const auto &b : A.blocks)
      grouped |= b.grouped();
    // (split storage keeps every row in fp64: one run, grouped only where rows are mostly empty)
    const bool uniform = storage_mode_segments(mode) > 0;
    ASSERT_EQ(grouped, shape == Shape::mostly_empty || (shape != Shape::runs && !uniform))
        << "the test matrix does not have the layout it is meant to have";
    if (shape == Shape::runs && !uniform) {
      ASSERT_GT(A.blocks.size(), 1u);
    }
    // the OpenMP products read up to 8 such blocks a window of 8192 rows at a time (the large matrices here)
    if (grouped && A.blocks.size() > 1 && a.nrows > 2 * 8192) {
      ASSERT_LE(A.blocks.size(), 8u) << "more blocks than the OpenMP kernels interleave: the test would not see it";
    }
  }
  for (int read : read_levels(mode)) { // split storage: every read level (segments read), each a storage type
    SCOPED_TRACE("segments read " + std::to_string(read));
    A.read_segments      = read;
    const std::size_t nr = static_cast<std::size_t>(a.nrows), nc = static_cast<std::size_t>(a.ncols);
    const std::vector<double> x = random_vector(nc, 201), z = random_vector(nr, 202);
    const std::vector<double> xt = random_vector(nr, 203), zt = random_vector(nc, 204);
    const auto p = a.pattern();

    std::vector<double> ref(nr), refz(nr);
    reference::spmv(A, p, x.data(), nullptr, ref.data());
    reference::spmv(A, p, x.data(), z.data(), refz.data());
    std::vector<double> reft(nc), reftz(nc);
    reference::spmv_transpose(A, p, xt.data(), nullptr, reft.data());
    reference::spmv_transpose(A, p, xt.data(), zt.data(), reftz.data());

    // per column: sum_i |a_ij x_i| (stored values are within a factor 1 + 2^-4 of the master's) and count
    std::vector<double> colmag(nc, 0.0), colcount(nc, 0.0);
    for (Index i = 0; i < a.nrows; ++i)
      for (Index k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k) {
        colmag[a.cols[k]] += std::fabs(a.vals[k] * xt[i]) * (1 + 0x1p-4);
        colcount[a.cols[k]] += 1;
      }

    for (int nt : {1, 2, 3}) {
      SCOPED_TRACE("threads " + std::to_string(nt));
      with_both_gathered_reads([&] {
        std::vector<double> y(nr, 5.0);
        openmp::spmv(A, p, x.data(), nullptr, y.data(), nt);
        for (std::size_t i = 0; i < nr; ++i)
          ASSERT_TRUE(same(y[i], ref[i])) << "row " << i << ": " << y[i] << " vs " << ref[i];
        std::fill(y.begin(), y.end(), 5.0);
        openmp::spmv(A, p, x.data(), z.data(), y.data(), nt);
        for (std::size_t i = 0; i < nr; ++i)
          ASSERT_TRUE(same(y[i], refz[i])) << "row " << i;
        y = z; // z aliasing y
        openmp::spmv(A, p, x.data(), y.data(), y.data(), nt);
        for (std::size_t i = 0; i < nr; ++i)
          ASSERT_TRUE(same(y[i], refz[i])) << "row " << i;
      });

      std::vector<double> t(nc, 5.0), tz(nc, 5.0), ta = zt;
      openmp::spmv_transpose(A, p, xt.data(), nullptr, t.data(), nt);
      openmp::spmv_transpose(A, p, xt.data(), zt.data(), tz.data(), nt);
      openmp::spmv_transpose(A, p, xt.data(), ta.data(), ta.data(), nt);
      for (std::size_t j = 0; j < nc; ++j) {
        ASSERT_TRUE(same(ta[j], tz[j])) << "col " << j;
        if (nt == 1 || A.entry_split()) { // the same loop as the reference
          ASSERT_TRUE(same(t[j], reft[j])) << "col " << j;
          ASSERT_TRUE(same(tz[j], reftz[j])) << "col " << j;
        } else {
          const double g = 2 * gamma_n(colcount[j] + nt + 1);
          ASSERT_LE(std::fabs(t[j] - reft[j]), g * colmag[j]) << "col " << j;
          ASSERT_LE(std::fabs(tz[j] - reftz[j]), g * (colmag[j] + std::fabs(zt[j]))) << "col " << j;
        }
      }
    }
  }
  A.read_segments = 0;
  compare_row_levels(a, A);
}

// Fragmented: 200k x 20k (about 100 entries a column, for the transpose) with
// 32-bit indices; runs: half as many rows; 64-bit indices: 60k rows (their
// code paths do not depend on the size).
template <typename Index> void run_mode(StorageMode mode)
{
  const Index nrows = sizeof(Index) == 4 ? 200000 : 60000;
  for (Shape shape : {Shape::fragmented, Shape::runs}) {
    const Index n         = shape == Shape::runs ? nrows / 2 : nrows;
    const Matrix<Index> a = random_matrix<Index>(n, Index(20000), shape, 31 + static_cast<unsigned>(shape), kBigRows);
    for (Layout layout : {Layout::csr, Layout::sliced}) {
      compare_backends(a, mode, SumOrder::sequential, shape, layout);
      if (mode == StorageMode::lossless || mode == StorageMode::fp16)
        compare_backends(a, mode, SumOrder::paired, shape, layout);
    }
  }
  // slices with columns within 16 bits of their base (narrow: 16-bit offsets) and wider ones: 7 rows in 8
  // draw their columns near the diagonal, the others anywhere in 150000 columns
  RowRecipe near_rows   = kBigRows;
  near_rows.node_window = 30000;
  for (Shape shape : {Shape::fragmented, Shape::runs}) {
    const Matrix<Index> a = random_matrix<Index>(std::max(nrows / 4, Index(40000)), Index(150000), shape,
                                                 51 + static_cast<unsigned>(shape), near_rows);
    const CompactCsr S    = build_compact_csr(
           a.view(), StorageOptions{mode, 1e-3, 0.1, 0.99, 1.0, -1.0, SumOrder::sequential, Layout::sliced});
    if (!S.entry_split()) {
      ASSERT_GT(S.stats.narrow_rows, S.stats.sliced_rows / 10) << "the test matrix has too few narrow slices";
      ASSERT_LT(S.stats.narrow_rows, S.stats.sliced_rows * 9 / 10) << "the test matrix has too few wide slices";
    }
    for (SumOrder order : {SumOrder::sequential, SumOrder::paired})
      compare_backends(a, mode, order, shape, Layout::sliced);
  }
  // rows in nodes of 1..5 rows (inodes), 16-bit offsets but for one node in eight
  RowRecipe node_rows     = kBigRows;
  node_rows.max_node_rows = 5;
  node_rows.node_window   = 20000;
  for (Shape shape : {Shape::fragmented, Shape::runs}) {
    const Matrix<Index> a = random_matrix<Index>(std::max(nrows / 4, Index(40000)), Index(100000), shape,
                                                 41 + static_cast<unsigned>(shape), node_rows);
    for (Layout layout : {Layout::node, Layout::automatic}) {
      if (layout == Layout::automatic && shape == Shape::fragmented) continue; // a format per row: nodes of 1 row
      for (SumOrder order : {SumOrder::sequential, SumOrder::paired})
        compare_backends(a, mode, order, shape, layout);
    }
  }
  // stencil and band rows: shifted slices (x read with plain loads) among gathered ones
  for (Shape shape : {Shape::fragmented, Shape::runs}) {
    const Matrix<Index> s7  = stencil_matrix<Index>(Index(36), 7, shape, 43, 2048);
    const Matrix<Index> s27 = stencil_matrix<Index>(Index(24), 27, shape, 44, 2048);
    const Matrix<Index> bd  = stencil_matrix<Index>(Index(40000), 0, shape, 45, 2048, Index(9));
    if (shape == Shape::runs) // slices with face rows are patched (shifted but for a few entries), read without gathers
      for (const Matrix<Index> *m : {&s7, &s27}) {
        const CompactCsr S = build_compact_csr(
            m->view(), StorageOptions{mode, 1e-3, 0.1, 0.99, 1.0, -1.0, SumOrder::sequential, Layout::sliced});
        if (!S.entry_split()) {
          ASSERT_GT(S.stats.patched_rows, 0) << "the test matrix has no patched slice";
        }
      }
    for (SumOrder order : {SumOrder::sequential, SumOrder::paired})
      for (const Matrix<Index> *m : {&s7, &s27, &bd})
        compare_backends(*m, mode, order, shape, Layout::sliced);
  }
  // the off-diagonal block of an MPI matrix: rectangular, mostly empty rows
  const Matrix<Index> b = random_matrix<Index>(Index(50000), Index(3000), Shape::mostly_empty, 37, kBigRows);
  for (Layout layout : {Layout::csr, Layout::sliced})
    compare_backends(b, mode, SumOrder::paired, Shape::mostly_empty, layout);
}

class SpmvOpenmp : public ::testing::TestWithParam<StorageMode> {};

} // namespace

TEST_P(SpmvOpenmp, MatchesReferenceInt32)
{
  run_mode<std::int32_t>(GetParam());
}
TEST_P(SpmvOpenmp, MatchesReferenceInt64)
{
  run_mode<std::int64_t>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Modes, SpmvOpenmp,
                         ::testing::Values(StorageMode::lossless, StorageMode::fp32, StorageMode::fp16,
                                           StorageMode::bf16, StorageMode::fp11_20, StorageMode::fp11_4,
                                           StorageMode::tolerance, StorageMode::rowsplit, StorageMode::entrysplit,
                                           StorageMode::split2, StorageMode::split4),
                         [](const ::testing::TestParamInfo<StorageMode> &info) {
                           return std::string(storage_mode_name(info.param));
                         });

namespace {

// ---- row shapes the kernel schedules differently ---------------------------
// The kernel decodes values ahead in chunks of whole rows and interleaves
// groups of rows of equal length; these matrices put every row length 0..40 in
// runs of equal rows (groups of every alignment), random lengths (unequal
// groups), stencil-like rows (7 with some 6s) and rows longer than a chunk
// (511..1500 entries), in every storage format.
constexpr Format kAllFormats[] = {Format::fp64, Format::fp32,    Format::fp16,
                                  Format::bf16, Format::fp11_20, Format::fp11_4};

enum class Lengths { equal_runs, random, stencil, long_rows };
const char *lengths_name(Lengths l)
{
  return l == Lengths::equal_runs ? "equal_runs"
         : l == Lengths::random   ? "random"
         : l == Lengths::stencil  ? "stencil"
                                  : "long_rows";
}

std::vector<int> row_lengths(Lengths kind, std::mt19937_64 &rng)
{
  std::vector<int> len;
  switch (kind) {
  case Lengths::equal_runs:
    for (int n = 0; n <= 40; ++n)
      for (int r = 0; r < 37; ++r)
        len.push_back(n);
    break;
  case Lengths::random:
    for (int r = 0; r < 1500; ++r)
      len.push_back(static_cast<int>(rng() % 41));
    break;
  case Lengths::stencil:
    for (int r = 0; r < 1500; ++r)
      len.push_back(rng() % 9 == 0 ? 6 : 7);
    break;
  case Lengths::long_rows:
    for (int n : {511, 512, 513, 3, 600, 1100, 0, 1024, 7, 7, 7, 7, 1500, 40, 1, 2})
      for (int r = 0; r < 20; ++r)
        len.push_back(r % 4 == 3 ? 5 : n);
    break;
  }
  return len;
}

template <typename Index>
Matrix<Index> matrix_with_lengths(const std::vector<int> &len, Index ncols, std::mt19937_64 &rng)
{
  Matrix<Index> a;
  a.nrows = static_cast<Index>(len.size());
  a.ncols = ncols;
  std::uniform_real_distribution<double> u(0.5, 2.0);
  std::vector<char> used(static_cast<std::size_t>(ncols));
  for (int n : len) {
    std::vector<Index> row;
    std::fill(used.begin(), used.end(), 0);
    while (static_cast<int>(row.size()) < n) {
      const Index c = static_cast<Index>(rng() % static_cast<std::uint64_t>(ncols));
      if (!used[static_cast<std::size_t>(c)]) {
        used[static_cast<std::size_t>(c)] = 1;
        row.push_back(c);
      }
    }
    std::sort(row.begin(), row.end());
    for (Index c : row) {
      a.cols.push_back(c);
      a.vals.push_back((rng() & 1 ? 1.0 : -1.0) * u(rng)); // every format holds these (rounded)
    }
    a.rowptr.push_back(static_cast<Index>(a.vals.size()));
  }
  return a;
}

// openmp::spmv bitwise equal to the reference: y = A x, y = A x + z, and z aliasing y.
template <typename Index> void check_bitwise(const Matrix<Index> &a, const CompactCsr &A, int nt)
{
  const std::size_t nr        = static_cast<std::size_t>(a.nrows);
  const std::vector<double> x = random_vector(static_cast<std::size_t>(a.ncols), 301), z = random_vector(nr, 302);
  std::vector<double> ref(nr), refz(nr), y(nr, 7.0);
  reference::spmv(A, a.pattern(), x.data(), nullptr, ref.data());
  reference::spmv(A, a.pattern(), x.data(), z.data(), refz.data());
  openmp::spmv(A, a.pattern(), x.data(), nullptr, y.data(), nt);
  for (std::size_t i = 0; i < nr; ++i)
    ASSERT_TRUE(same(y[i], ref[i])) << "y = A x, row " << i << ": " << y[i] << " vs " << ref[i];
  std::fill(y.begin(), y.end(), 7.0);
  openmp::spmv(A, a.pattern(), x.data(), z.data(), y.data(), nt);
  for (std::size_t i = 0; i < nr; ++i)
    ASSERT_TRUE(same(y[i], refz[i])) << "y = A x + z, row " << i;
  y = z;
  openmp::spmv(A, a.pattern(), x.data(), y.data(), y.data(), nt);
  for (std::size_t i = 0; i < nr; ++i)
    ASSERT_TRUE(same(y[i], refz[i])) << "y = A x + y, row " << i;
}

template <typename Index> void run_row_shapes()
{
  std::mt19937_64 rng(97);
  for (Lengths kind : {Lengths::equal_runs, Lengths::random, Lengths::stencil, Lengths::long_rows}) {
    const Matrix<Index> a = matrix_with_lengths<Index>(row_lengths(kind, rng), Index(2000), rng);
    for (bool grouped : {false, true}) {
      // run layout: one format per 64 rows, cycling through all; grouped: a random format per row
      std::vector<Format> formats(static_cast<std::size_t>(a.nrows));
      for (std::size_t i = 0; i < formats.size(); ++i)
        formats[i] = kAllFormats[grouped ? rng() % kFormatCount : (i / 64) % kFormatCount];
      for (SumOrder order : {SumOrder::sequential, SumOrder::paired})
        for (Layout layout : {Layout::csr, Layout::sliced, Layout::node}) {
          SCOPED_TRACE(std::string(lengths_name(kind)) + (grouped ? " grouped" : " runs") +
                       (order == SumOrder::paired ? " paired " : " sequential ") + layout_name(layout) + " index " +
                       std::to_string(8 * sizeof(Index)));
          StorageOptions opts;
          opts.min_run_rows  = 32; // keeps the runs of 64 rows
          opts.order         = order;
          opts.layout        = layout;
          const CompactCsr A = assemble_compact_csr(a.view(), formats, opts);
          expect_layout(A, layout);
          bool has_grouped = false;
          for (const auto &b : A.blocks)
            has_grouped |= b.grouped();
          ASSERT_EQ(has_grouped, grouped) << "the test matrix does not have the layout it is meant to have";
          ASSERT_EQ(A.order, order);
          for (int nt : {1, 2, 3}) {
            SCOPED_TRACE("threads " + std::to_string(nt));
            with_both_gathered_reads([&] { check_bitwise(a, A, nt); });
          }
        }
    }
  }
}

} // namespace

TEST(SpmvOpenmpRowShapes, BitwiseInt32)
{
  run_row_shapes<std::int32_t>();
}
TEST(SpmvOpenmpRowShapes, BitwiseInt64)
{
  run_row_shapes<std::int64_t>();
}

// A slice's padding (rows shorter than the slice) adds nothing, not even +0:
// with every stored value negative and x = +0, every product is -0 but a
// padding entry's (value +0), so with z = -0 each sum stays -0 unless a
// padding product is added; and a padding column (0) whose x is NaN never
// enters a sum (the kernels load it with the rows' x but mask or zero its
// product). Rows of random lengths 0..40 in gathered slices, every format,
// both orders, run and grouped blocks; columns within 2000 (narrow slices:
// 16-bit offsets) and spread over 80000 (32-bit columns).
TEST(SpmvOpenmpRowShapes, SlicePaddingAddsNothing)
{
  for (std::int32_t spread : {1, 40}) {
    std::mt19937_64 rng(41);
    Matrix<std::int32_t> a = matrix_with_lengths<std::int32_t>(row_lengths(Lengths::random, rng), 2000, rng);
    a.ncols                = 2000 * spread + 1;
    for (auto &c : a.cols)
      c = c * spread + 1; // column 0 holds no entry
    for (auto &v : a.vals)
      v = -std::fabs(v);
    std::vector<double> x(static_cast<std::size_t>(a.ncols), 0.0), z(static_cast<std::size_t>(a.nrows), -0.0);
    x[0] = std::nan("");
    for (bool grouped : {false, true})
      for (SumOrder order : {SumOrder::sequential, SumOrder::paired}) {
        std::vector<Format> formats(static_cast<std::size_t>(a.nrows));
        for (std::size_t i = 0; i < formats.size(); ++i)
          formats[i] = kAllFormats[grouped ? rng() % kFormatCount : (i / 64) % kFormatCount];
        StorageOptions opts;
        opts.min_run_rows  = 32;
        opts.order         = order;
        opts.layout        = Layout::sliced;
        const CompactCsr A = assemble_compact_csr(a.view(), formats, opts);
        expect_layout(A, Layout::sliced);
        if (spread == 1)
          ASSERT_GT(A.stats.narrow_rows, A.stats.sliced_rows / 2) << "too few narrow slices";
        else
          ASSERT_LT(A.stats.narrow_rows, A.stats.sliced_rows / 2) << "too few slices with 32-bit columns";
        for (int nt : {1, 2})
          with_both_gathered_reads([&] {
            std::vector<double> ref(z.size()), y(z.size(), 7.0);
            reference::spmv(A, a.pattern(), x.data(), z.data(), ref.data());
            openmp::spmv(A, a.pattern(), x.data(), z.data(), y.data(), nt);
            for (std::size_t i = 0; i < y.size(); ++i) {
              ASSERT_TRUE(std::signbit(ref[i]) && ref[i] == 0.0) << "the reference's row " << i << " is not -0";
              ASSERT_TRUE(same(y[i], ref[i]))
                  << (grouped ? "grouped" : "runs") << " row " << i << ", spread " << spread << ": " << y[i];
            }
          });
      }
  }
}

// A bordered matrix (a constraint that couples every unknown): rows of up to
// 7 columns near the diagonal, most of them coupled to the last column (the
// constraint numbered last) or the first (numbered first), and the
// constraint's own row, which couples every column, in the middle. The
// automatic layout sets that row apart: the other rows form a grouped block
// whose slices list consecutive rows but for the one around the gap.
template <typename Index> Matrix<Index> bordered_matrix(Index n, bool numbered_last, std::mt19937_64 &rng)
{
  Matrix<Index> a;
  a.nrows = a.ncols = n;
  const Index far   = numbered_last ? n - 1 : 0;
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (Index i = 0; i < n; ++i) {
    std::vector<Index> row;
    if (i == n / 2)
      for (Index j = 0; j < n; ++j)
        row.push_back(j);
    else {
      for (Index j = std::max<Index>(i - 3, 1); j <= std::min<Index>(i + 3, n - 2); ++j)
        if (j == i || rng() % 2) row.push_back(j);
      if (rng() % 7) row.insert(numbered_last ? row.end() : row.begin(), far);
    }
    for (Index c : row) {
      a.cols.push_back(c);
      a.vals.push_back((rng() & 1 ? 1.0 : -1.0) * u(rng));
    }
    a.rowptr.push_back(static_cast<Index>(a.vals.size()));
  }
  return a;
}

// The slices of a grouped block that list consecutive rows are read and
// written as a run's (no gather of z, no scatter of y): every mode and order,
// bitwise the reference's (y = A x, + z, z aliasing y; 1-3 threads), and in
// fp64 the reference is AIJ's sum (each row summed in order).
template <typename Index> void run_listed_consecutive_rows()
{
  std::mt19937_64 rng(113);
  for (bool numbered_last : {true, false}) {
    const Matrix<Index> a = bordered_matrix<Index>(3001, numbered_last, rng);
    for (StorageMode mode : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16})
      for (SumOrder order : {SumOrder::sequential, SumOrder::paired}) {
        SCOPED_TRACE(std::string(numbered_last ? "last " : "first ") + storage_mode_name(mode) +
                     (order == SumOrder::paired ? " paired" : " sequential"));
        StorageOptions opts;
        opts.mode          = mode;
        opts.order         = order;
        const CompactCsr A = build_compact_csr(a.view(), opts);
        ASSERT_EQ(A.stats.long_rows, 1) << "the constraint's row was meant to be set apart";
        std::int64_t consecutive = 0, listed = 0;
        for (const RowBlock &b : A.blocks)
          for (std::int64_t q = 0; b.grouped() && b.sliced() && q < b.slice_count(); ++q) {
            const std::int64_t k0 = q * kSliceRows, k1 = std::min(b.row_count(), k0 + kSliceRows);
            ++listed;
            consecutive +=
                b.rows[static_cast<std::size_t>(k1 - 1)] - b.rows[static_cast<std::size_t>(k0)] == k1 - 1 - k0;
          }
        ASSERT_GT(consecutive, 0) << "no grouped slice of consecutive rows";
        ASSERT_LT(consecutive, listed) << "no grouped slice with a gap";
        for (int nt : {1, 2, 3}) {
          SCOPED_TRACE("threads " + std::to_string(nt));
          check_bitwise(a, A, nt);
        }
      }
    StorageOptions fp64; // values that need fp64: the reference takes AIJ's steps
    const CompactCsr A          = build_compact_csr(a.view(), fp64);
    const std::vector<double> x = random_vector(static_cast<std::size_t>(a.ncols), 304);
    std::vector<double> y(static_cast<std::size_t>(a.nrows));
    reference::spmv(A, a.pattern(), x.data(), nullptr, y.data());
    for (Index i = 0; i < a.nrows; ++i) {
      double sum = 0.0;
      for (Index at = a.rowptr[i]; at < a.rowptr[i + 1]; ++at)
        sum += a.vals[static_cast<std::size_t>(at)] * x[static_cast<std::size_t>(a.cols[static_cast<std::size_t>(at)])];
      ASSERT_TRUE(same(y[static_cast<std::size_t>(i)], sum)) << (numbered_last ? "last" : "first") << ", row " << i;
    }
  }
}

TEST(SpmvOpenmpRowShapes, ListedConsecutiveRowsBitwiseInt32)
{
  run_listed_consecutive_rows<std::int32_t>();
}
TEST(SpmvOpenmpRowShapes, ListedConsecutiveRowsBitwiseInt64)
{
  run_listed_consecutive_rows<std::int64_t>();
}

// The comparison above is not vacuous: changing one stored value or the
// summation order of a row changes a product the check sees.
TEST(SpmvOpenmpRowShapes, CheckDetectsDifferences)
{
  std::mt19937_64 rng(5);
  Matrix<std::int32_t> a = matrix_with_lengths<std::int32_t>(std::vector<int>(64, 7), 2000, rng);
  StorageOptions seq, pair;
  pair.order          = SumOrder::paired;
  const CompactCsr As = build_compact_csr(a.view(), seq), Ap = build_compact_csr(a.view(), pair);
  const std::vector<double> x = random_vector(2000, 301);
  std::vector<double> ys(64), yp(64);
  openmp::spmv(As, a.pattern(), x.data(), nullptr, ys.data(), 1);
  openmp::spmv(Ap, a.pattern(), x.data(), nullptr, yp.data(), 1);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < 64; ++i)
    differ += !same(ys[i], yp[i]);
  EXPECT_GT(differ, 0u) << "sequential and paired sums never differ: the bitwise check could not see an order change";
  a.vals[3 * 7 + 2] += 0.25; // row 3
  const CompactCsr Bs = build_compact_csr(a.view(), seq);
  std::vector<double> yb(64);
  openmp::spmv(Bs, a.pattern(), x.data(), nullptr, yb.data(), 1);
  EXPECT_FALSE(same(yb[3], ys[3]));
}

// The x of gathered slices: set_gathered_x forces either read, and the
// automatic choice is gathers on Intel processors only.
TEST(SpmvOpenmpGatheredX, SettingIsFollowed)
{
  openmp::set_gathered_x(openmp::GatheredX::gathers);
  EXPECT_TRUE(openmp::gathered_x_by_gathers());
  openmp::set_gathered_x(openmp::GatheredX::scalar_loads);
  EXPECT_FALSE(openmp::gathered_x_by_gathers());
  openmp::set_gathered_x(openmp::GatheredX::automatic);
#if defined(__x86_64__)
  EXPECT_EQ(openmp::gathered_x_by_gathers(), __builtin_cpu_is("intel"));
#else
  EXPECT_FALSE(openmp::gathered_x_by_gathers());
#endif
}

// A read asked for per call wins over the process-wide setting (aijmp times
// the two on its matrix), and the products stay bitwise the reference's.
// gathered_x_share counts the values of gathered slices: random columns fill
// them, a banded matrix has shifted slices only.
TEST(SpmvOpenmpGatheredX, PerCallReadIsFollowed)
{
  using openmp::GatheredX;
  for (GatheredX global : {GatheredX::scalar_loads, GatheredX::gathers}) {
    openmp::set_gathered_x(global);
    EXPECT_TRUE(openmp::gathered_x_by_gathers(GatheredX::gathers));
    EXPECT_FALSE(openmp::gathered_x_by_gathers(GatheredX::scalar_loads));
    EXPECT_EQ(openmp::gathered_x_by_gathers(GatheredX::automatic), global == GatheredX::gathers);
  }
  openmp::set_gathered_x(GatheredX::automatic);

  std::mt19937_64 rng(11);
  const Matrix<std::int32_t> a = matrix_with_lengths<std::int32_t>(row_lengths(Lengths::random, rng), 2000, rng);
  StorageOptions opts;
  opts.layout                     = Layout::sliced;
  const CompactCsr A              = build_compact_csr(a.view(), opts);
  const Matrix<std::int32_t> band = stencil_matrix<std::int32_t>(4000, 0, Shape::runs, 45, 2048, 9);
  const CompactCsr B              = build_compact_csr(band.view(), opts);
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  EXPECT_GT(openmp::gathered_x_share(A), 0.9) << "random columns make gathered slices";
#else
  EXPECT_EQ(openmp::gathered_x_share(A), 0.0) << "without the AVX-512 kernels the read is never asked for";
#endif
  EXPECT_EQ(openmp::gathered_x_share(B), 0.0) << "a band's slices are shifted";

  const std::vector<double> x = random_vector(static_cast<std::size_t>(a.ncols), 17);
  std::vector<double> want(static_cast<std::size_t>(a.nrows)), y(want.size());
  reference::spmv(A, a.pattern(), x.data(), nullptr, want.data());
  for (GatheredX global : {GatheredX::scalar_loads, GatheredX::gathers})
    for (GatheredX call : {GatheredX::scalar_loads, GatheredX::gathers}) {
      SCOPED_TRACE(std::string("set ") + (global == GatheredX::gathers ? "gathers" : "loads") + ", asked " +
                   (call == GatheredX::gathers ? "gathers" : "loads"));
      openmp::set_gathered_x(global);
      for (int nt : {1, 2}) {
        std::fill(y.begin(), y.end(), -1.0);
        openmp::spmv(A, a.pattern(), x.data(), nullptr, y.data(), nt, call);
        for (std::size_t i = 0; i < y.size(); ++i)
          ASSERT_TRUE(same(y[i], want[i])) << "row " << i << ", threads " << nt;
      }
    }
  openmp::set_gathered_x(GatheredX::automatic);
}

TEST(SpmvOpenmpThreads, Available)
{
#if defined(_OPENMP)
  EXPECT_TRUE(openmp::threads_available());
#else
  EXPECT_FALSE(openmp::threads_available());
#endif
  EXPECT_GE(openmp::default_thread_count(), 1);
}

TEST(SpmvOpenmpThreads, MoreThreadsThanRows)
{
  Matrix<std::int32_t> a;
  a.nrows  = 2;
  a.ncols  = 2;
  a.rowptr = {0, 2, 3};
  a.cols   = {0, 1, 1};
  a.vals   = {1.0, 2.0, 3.0};
  StorageOptions opts;
  const CompactCsr A = build_compact_csr(a.view(), opts);
  const double x[2] = {10, 100}, z[2] = {1, 2};
  for (int nt : {1, 2, 3, 8}) {
    double y[2] = {-1, -1}, t[2] = {-1, -1};
    openmp::spmv(A, a.pattern(), x, z, y, nt);
    EXPECT_EQ(y[0], 211.0);
    EXPECT_EQ(y[1], 302.0);
    openmp::spmv_transpose(A, a.pattern(), x, z, t, nt);
    EXPECT_EQ(t[0], 11.0);
    EXPECT_EQ(t[1], 2.0 + 20.0 + 300.0);
  }
}

#if defined(_OPENMP)
// openmp::spmv is asked for nthreads, but OpenMP may give a smaller team (a
// call from inside a parallel region with nesting off, OMP_THREAD_LIMIT,
// OMP_DYNAMIC): every row must still be computed.
// (Regression test: the kernels once split rows over the requested count.)
// kernels.OpenmpThreadLimit (tests/kernels/CMakeLists.txt) checks the same with
// OMP_THREAD_LIMIT=2 and 3 requested threads.
TEST(SpmvOpenmpThreads, SmallerTeamThanRequested)
{
  const Matrix<std::int32_t> a = random_matrix<std::int32_t>(20000, 20000, Shape::fragmented, 41, kBigRows);
  StorageOptions opts;
  opts.mode                   = StorageMode::fp16;
  const CompactCsr A          = build_compact_csr(a.view(), opts);
  const std::vector<double> x = random_vector(20000, 5);
  std::vector<double> ref(20000), reft(20000);
  reference::spmv(A, a.pattern(), x.data(), nullptr, ref.data());
  reference::spmv_transpose(A, a.pattern(), x.data(), nullptr, reft.data());
  std::vector<std::vector<double>> ys(2, std::vector<double>(20000, -1.0)), ts = ys;
  const int saved = omp_get_max_active_levels();
  omp_set_max_active_levels(1); // the inner regions below get one thread each
#pragma omp parallel num_threads(2)
  {
    const int id = omp_get_thread_num();
    openmp::spmv(A, a.pattern(), x.data(), nullptr, ys[id].data(), 3);
    openmp::spmv_transpose(A, a.pattern(), x.data(), nullptr, ts[id].data(), 3);
  }
  omp_set_max_active_levels(saved);
  std::vector<double> colmag(20000, 0.0), colcount(20000, 0.0);
  for (std::int32_t i = 0; i < a.nrows; ++i)
    for (std::int32_t k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k) {
      colmag[a.cols[k]] += std::fabs(a.vals[k] * x[i]) * (1 + 0x1p-4);
      colcount[a.cols[k]] += 1;
    }
  for (int id = 0; id < 2; ++id) {
    std::size_t wrong = 0, wrongt = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
      wrong += !same(ys[id][i], ref[i]);
    for (std::size_t j = 0; j < reft.size(); ++j)
      wrongt += std::fabs(ts[id][j] - reft[j]) > 2 * gamma_n(colcount[j] + 4) * colmag[j];
    EXPECT_EQ(wrong, 0u) << "spmv: rows not computed by a smaller team";
    EXPECT_EQ(wrongt, 0u) << "spmv_transpose: rows not accumulated by a smaller team";
  }
}
#endif

// The kernels ask for a block's values ahead of them (ValuesAhead) only where
// the read is narrow (4 bytes or fewer per entry, over every plane it touches)
// and the block's values stream from memory; each line of the stream once.
TEST(ValuesAhead, AsksForNarrowStreamsFromMemoryOnly)
{
  const std::int64_t mib4 = kPrefetchFromBytes;
  auto active             = [](auto values, std::int64_t count) { return ValuesAhead(values, count).active(); };
  EXPECT_TRUE(active(static_cast<const float *>(nullptr), mib4 / 4));
  EXPECT_FALSE(active(static_cast<const float *>(nullptr), mib4 / 4 - 1)) << "fits in cache";
  EXPECT_TRUE(active(static_cast<const bf16_t *>(nullptr), mib4 / 2));
  EXPECT_TRUE(active(static_cast<const fp16_t *>(nullptr), mib4 / 2));
  EXPECT_TRUE(active(static_cast<const fp11_20_t *>(nullptr), mib4 / 4)); // split2's heads
  EXPECT_FALSE(active(static_cast<const double *>(nullptr), mib4)) << "8 bytes per entry";
  const std::uint16_t *words = nullptr;
  EXPECT_TRUE(active(segment_ptr<4, 2>{words, 1 << 22}, mib4 / 4)); // two 16-bit planes: 4 bytes
  EXPECT_FALSE(active(segment_ptr<4, 2>{words, 1 << 22}, mib4 / 4 - 1));
  EXPECT_FALSE(active(segment_ptr<4, 3>{words, 1 << 22}, mib4)) << "6 bytes per entry";
  const std::uint32_t *halves = nullptr;
  EXPECT_FALSE(active(segment_ptr<2, 2>{halves, 1 << 22}, mib4)) << "split2 read whole: 8 bytes per entry";

  const std::vector<float> values(static_cast<std::size_t>(mib4 / 4) + 100);
  const std::int64_t count = static_cast<std::int64_t>(values.size());
  ValuesAhead ahead(values.data(), count);
  ASSERT_TRUE(ahead.active());
  const std::int64_t distance = kValuesAheadBytes / 4, line = 16;
  // after upto(at): every entry before at + distance asked for, in whole lines
  auto asked_ahead_of = [&](std::int64_t at) {
    ahead.upto(at);
    EXPECT_GE(ahead.asked_until(), at + distance) << "at " << at;
    EXPECT_LT(ahead.asked_until(), at + distance + line) << "at " << at;
  };
  asked_ahead_of(0);
  asked_ahead_of(10);
  asked_ahead_of(11);
  asked_ahead_of(5000);  // skipped ahead (another thread's part): asked from there on
  ahead.upto(count - 1); // never past the stream's end (but for the last line's rest)
  EXPECT_GE(ahead.asked_until(), count);
  EXPECT_LT(ahead.asked_until(), count + line);
  ValuesAhead wide(static_cast<const double *>(nullptr), count);
  wide.upto(0);
  EXPECT_EQ(wide.asked_until(), 0) << "a wide stream asks for nothing";
}

namespace {
// Whether block b's values, read at `read` segments, are asked for ahead.
bool streamed_ahead(const RowBlock &b, int read)
{
  return dispatch_block_values(b, read, [&](auto tag) {
    using S = typename decltype(tag)::type;
    return ValuesAhead(values_of<S>(b), b.stored_count()).active();
  });
}
} // namespace

// Blocks whose narrow values stream from memory, so that the kernels ask for
// them ahead: rows (CSR order), slices and nodes, every narrow format and
// read level, bitwise the reference for 1-3 threads.
TEST(SpmvOpenmpPrefetch, StreamedNarrowValuesBitwise)
{
  const std::int64_t one_run         = std::int64_t{1} << 40; // one value class: one block
  const Matrix<std::int32_t> stencil = stencil_matrix<std::int32_t>(46, 27, Shape::runs, 61, one_run);
  RowRecipe nodes                    = kBigRows;
  nodes.run_rows                     = one_run;
  nodes.min_nnz                      = 8;
  nodes.nnz_spread                   = 8;
  nodes.max_node_rows                = 5;
  nodes.node_window                  = 20000;
  const Matrix<std::int32_t> fem     = random_matrix<std::int32_t>(300000, 300000, Shape::runs, 62, nodes);
  const std::pair<const Matrix<std::int32_t> *, Layout> cases[] = {
      {&stencil, Layout::sliced}, {&stencil, Layout::csr}, {&fem, Layout::node}};
  for (const auto &[a, layout] : cases)
    for (StorageMode mode : {StorageMode::fp32, StorageMode::fp16, StorageMode::bf16, StorageMode::fp11_20,
                             StorageMode::split2, StorageMode::split4}) {
      StorageOptions opts;
      opts.mode    = mode;
      opts.layout  = layout;
      CompactCsr A = build_compact_csr(a->view(), opts);
      expect_layout(A, layout);
      ASSERT_EQ(A.blocks.size(), 1u);
      const int narrow_levels = mode == StorageMode::split4 ? 2 : 1;
      for (int read = 1; read <= narrow_levels; ++read) {
        SCOPED_TRACE(std::string(storage_mode_name(mode)) + " " + layout_name(layout) + " read " +
                     std::to_string(read));
        A.read_segments = storage_mode_segments(mode) > 0 ? read : 0;
        ASSERT_TRUE(streamed_ahead(A.blocks[0], A.read_segments)) << "the test matrix does not stream its values";
        for (int nt : {1, 2, 3})
          check_bitwise(*a, A, nt);
      }
    }
}
