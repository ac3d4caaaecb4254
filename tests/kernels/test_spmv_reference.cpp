// Reference SpMV against products computed here with plain loops over the
// master CSR, from the values the compact copy stores (every storage mode,
// both summation orders, both layouts, both index types).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "petscmp/core/compact_csr.hpp"
#include "csr_matrices.hpp"
#include "spmv.hpp"

using namespace petscmp;
using namespace petscmp_test;

namespace {

constexpr double kU = 0x1p-53;
double gamma_n(double n)
{
  return n * kU / (1 - n * kU);
}

// The value each master entry has in the compact copy, and which pass adds it
// (entry split: 0 for the fp32 part, 1 for the fp64 part). Computed from the
// documented rules, not read from the compact copy.
struct Stored {
  std::vector<double> vals;
  std::vector<int> pass;
  std::vector<double> entry_u; // unit roundoff of the format the entry went to
};

// Split storage read at `read` of n segments: the value with its low 64 - 64 read / n bits cleared (truncated
// toward zero; exact when read is 0 or n), relative change below 2^-(64 read / n - 12).
double truncated_read(double v, int n, int read, double *u)
{
  *u = 0.0;
  if (read <= 0 || read >= n) return v;
  const int kept = 64 * read / n;
  *u             = std::ldexp(1.0, -(kept - 12));
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  b &= ~((std::uint64_t(1) << (64 - kept)) - 1);
  std::memcpy(&v, &b, sizeof v);
  return v;
}

template <typename Index> Stored stored_values(const Matrix<Index> &a, const StorageOptions &opts, int read = 0)
{
  Stored s;
  s.vals.resize(a.vals.size());
  s.pass.assign(a.vals.size(), 0);
  s.entry_u.assign(a.vals.size(), 0.0);
  if (opts.mode == StorageMode::entrysplit) {
    for (std::size_t k = 0; k < a.vals.size(); ++k) {
      const double v = a.vals[k], f = static_cast<double>(static_cast<float>(v));
      const bool in32 = std::fabs(v) < opts.range && (v == 0.0 || std::fabs(f - v) <= 0x1p-24 * std::fabs(v));
      s.vals[k]       = in32 ? f : v;
      s.pass[k]       = in32 ? 0 : 1;
      s.entry_u[k]    = in32 ? 0x1p-24 : 0.0;
    }
    return s;
  }
  if (const int n = storage_mode_segments(opts.mode)) {
    for (std::size_t k = 0; k < a.vals.size(); ++k)
      s.vals[k] = truncated_read(a.vals[k], n, read, &s.entry_u[k]);
    return s;
  }
  const std::vector<Format> formats = choose_row_formats(std::vector<CsrView<Index>>{a.view()}, opts);
  for (Index i = 0; i < a.nrows; ++i)
    for (Index k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k) {
      s.vals[k]    = round_trip(formats[i], a.vals[k]);
      s.entry_u[k] = formats[i] == Format::fp64 ? 0.0 : unit_roundoff(formats[i]);
    }
  return s;
}

// y = A x (+ z), rows in order, entries in row order, in the given summation
// order; for an entry split the fp32 pass then the fp64 pass, each sequential.
template <typename Index>
std::vector<double> loop_spmv(const Matrix<Index> &a, const Stored &s, SumOrder order, bool split,
                              const std::vector<double> &x, const std::vector<double> *z)
{
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  for (Index i = 0; i < a.nrows; ++i) {
    double sum = z ? (*z)[i] : 0.0;
    if (split) {
      for (int pass = 0; pass < 2; ++pass)
        for (Index k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k)
          if (s.pass[k] == pass) sum += s.vals[k] * x[a.cols[k]];
    } else if (order == SumOrder::sequential) {
      for (Index k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k)
        sum += s.vals[k] * x[a.cols[k]];
    } else {
      Index k = a.rowptr[i];
      for (; k + 1 < a.rowptr[i + 1]; k += 2)
        sum += s.vals[k] * x[a.cols[k]] + s.vals[k + 1] * x[a.cols[k + 1]];
      if (k < a.rowptr[i + 1]) sum += s.vals[k] * x[a.cols[k]];
    }
    y[i] = sum;
  }
  return y;
}

// y = A^T x (+ z), rows in order.
template <typename Index>
std::vector<double> loop_spmv_transpose(const Matrix<Index> &a, const std::vector<double> &vals,
                                        const std::vector<double> &x, const std::vector<double> *z)
{
  std::vector<double> y(static_cast<std::size_t>(a.ncols), 0.0);
  if (z) y = *z;
  for (Index i = 0; i < a.nrows; ++i)
    for (Index k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k)
      y[a.cols[k]] += vals[k] * x[i];
  return y;
}

bool same(double a, double b)
{
  return std::memcmp(&a, &b, sizeof a) == 0;
}

template <typename Index> class SpmvReference : public ::testing::Test {
};
using IndexTypes = ::testing::Types<std::int32_t, std::int64_t>;
TYPED_TEST_SUITE(SpmvReference, IndexTypes);

StorageOptions options(StorageMode mode, SumOrder order, Layout layout = Layout::automatic)
{
  StorageOptions o;
  o.mode         = mode;
  o.order        = order;
  o.layout       = layout;
  o.min_run_rows = 32; // the small test matrices keep their runs of 40-64 rows as run blocks
  return o;
}

// y = A x + z against a dense product of the *original* values (column order reversed):
// |y - y_dense| <= sum_j |a_ij - s_ij| |x_j| + 2 gamma_(n+1) (|z_i| + sum_j |a_ij x_j| (1 + u_ij))
template <typename Index>
void check_against_dense(const Matrix<Index> &a, const Stored &s, const std::vector<double> &x,
                         const std::vector<double> &z, const std::vector<double> &yz)
{
  const std::size_t nr = static_cast<std::size_t>(a.nrows), nc = static_cast<std::size_t>(a.ncols);
  std::vector<double> dense(nr * nc, 0.0), dense_u(nr * nc, 0.0);
  for (Index i = 0; i < a.nrows; ++i)
    for (Index k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k) {
      dense[static_cast<std::size_t>(i) * nc + a.cols[k]]   = a.vals[k];
      dense_u[static_cast<std::size_t>(i) * nc + a.cols[k]] = s.entry_u[k];
    }
  for (std::size_t i = 0; i < nr; ++i) {
    double sum = z[i], mag = std::fabs(z[i]), rounding = 0.0;
    for (std::size_t j = nc; j-- > 0;) {
      const double aij = dense[i * nc + j];
      sum += aij * x[j];
      mag += std::fabs(aij * x[j]) * (1 + dense_u[i * nc + j]);
      rounding += dense_u[i * nc + j] * std::fabs(aij * x[j]);
    }
    const double n     = static_cast<double>(a.rowptr[i + 1] - a.rowptr[i]);
    const double bound = rounding + 2 * gamma_n(n + 2) * mag;
    ASSERT_LE(std::fabs(yz[i] - sum), bound) << "row " << i;
  }
}

// dense: also compare with a dense product of the original values (O(rows x columns)).
// Whether a test matrix of this shape is stored in grouped blocks: formats that change from row to row, or mostly
// empty rows (split storage keeps every row in fp64).
bool expect_grouped(StorageMode mode, Shape shape)
{
  return shape == Shape::mostly_empty || (shape != Shape::runs && !storage_mode_segments(mode));
}

// read: split storage, the segments products read (0: all).
template <typename Index>
void check_case(const Matrix<Index> &a, const StorageOptions &opts, bool expect_grouped, bool dense_check = true,
                int read = 0)
{
  CompactCsr A     = build_compact_csr(a.view(), opts);
  A.read_segments  = read;
  const bool split = opts.mode == StorageMode::entrysplit;
  ASSERT_EQ(A.entry_split(), split);
  bool grouped = false;
  for (const auto &b : A.blocks) {
    grouped |= b.grouped();
    if (opts.layout != Layout::automatic) {
      ASSERT_EQ(b.sliced(), opts.layout == Layout::sliced);
      ASSERT_EQ(b.node_layout(), opts.layout == Layout::node);
    }
  }
  if (!split) {
    ASSERT_EQ(grouped, expect_grouped) << "the test matrix does not have the layout it is meant to have";
  }
  const Stored s       = stored_values(a, opts, read);
  const std::size_t nr = static_cast<std::size_t>(a.nrows), nc = static_cast<std::size_t>(a.ncols);
  const std::vector<double> x = random_vector(nc, 101), z = random_vector(nr, 102);
  const std::vector<double> xt = random_vector(nr, 103), zt = random_vector(nc, 104);

  // ---- y = A x, y = A x + z, y = A x + y: bitwise those of the loops
  std::vector<double> y(nr, 7.0);
  reference::spmv(A, a.pattern(), x.data(), nullptr, y.data());
  const std::vector<double> want = loop_spmv(a, s, opts.order, split, x, nullptr);
  for (std::size_t i = 0; i < nr; ++i)
    ASSERT_TRUE(same(y[i], want[i])) << "row " << i << ": " << y[i] << " vs " << want[i];
  std::vector<double> yz(nr, 7.0);
  reference::spmv(A, a.pattern(), x.data(), z.data(), yz.data());
  const std::vector<double> wantz = loop_spmv(a, s, opts.order, split, x, &z);
  for (std::size_t i = 0; i < nr; ++i)
    ASSERT_TRUE(same(yz[i], wantz[i])) << "row " << i;
  std::vector<double> ya = z; // z aliasing y
  reference::spmv(A, a.pattern(), x.data(), ya.data(), ya.data());
  for (std::size_t i = 0; i < nr; ++i)
    ASSERT_TRUE(same(ya[i], wantz[i])) << "row " << i;

  if (dense_check) check_against_dense(a, s, x, z, yz);

  // ---- transposes: bitwise in row order when the blocks are runs in row order,
  // else within the bound for two orders of the same sum
  std::vector<double> t(nc, 7.0), tz(nc, 7.0), ta = zt;
  reference::spmv_transpose(A, a.pattern(), xt.data(), nullptr, t.data());
  reference::spmv_transpose(A, a.pattern(), xt.data(), zt.data(), tz.data());
  reference::spmv_transpose(A, a.pattern(), xt.data(), ta.data(), ta.data());
  const std::vector<double> tw  = loop_spmv_transpose(a, s.vals, xt, nullptr),
                            twz = loop_spmv_transpose(a, s.vals, xt, &zt);
  std::vector<double> colmag(nc, 0.0), colcount(nc, 1.0);
  for (Index i = 0; i < a.nrows; ++i)
    for (Index k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k) {
      colmag[a.cols[k]] += std::fabs(s.vals[k] * xt[i]);
      colcount[a.cols[k]] += 1;
    }
  const bool in_row_order = !split && !grouped;
  for (std::size_t j = 0; j < nc; ++j) {
    ASSERT_TRUE(same(ta[j], tz[j])) << "col " << j; // aliasing changes nothing
    if (in_row_order) {
      ASSERT_TRUE(same(t[j], tw[j])) << "col " << j;
      ASSERT_TRUE(same(tz[j], twz[j])) << "col " << j;
    } else {
      const double g = 2 * gamma_n(colcount[j]) * (1 + kU);
      ASSERT_LE(std::fabs(t[j] - tw[j]), g * colmag[j]) << "col " << j;
      ASSERT_LE(std::fabs(tz[j] - twz[j]), g * (colmag[j] + std::fabs(zt[j]))) << "col " << j;
    }
  }
}

} // namespace

TYPED_TEST(SpmvReference, EveryModeOrderAndLayout)
{
  using Index = TypeParam;
  for (Shape shape : {Shape::fragmented, Shape::runs, Shape::mostly_empty}) {
    const Matrix<Index> a = random_matrix<Index>(Index(700), Index(450), shape, 7 + static_cast<unsigned>(shape));
    for (int mi = 0; mi < kStorageModeCount; ++mi)
      for (SumOrder order : {SumOrder::sequential, SumOrder::paired})
        for (Layout layout : {Layout::csr, Layout::sliced, Layout::node}) {
          const StorageMode mode = static_cast<StorageMode>(mi);
          SCOPED_TRACE(std::string(shape_name(shape)) + " " + storage_mode_name(mode) +
                       (order == SumOrder::paired ? " paired " : " sequential ") + layout_name(layout));
          // split storage: every row fp64 (one run unless most rows are empty), read at every level
          const int segments = storage_mode_segments(mode);
          const bool grouped = expect_grouped(mode, shape);
          for (int read = segments ? 1 : 0; read <= segments; ++read) {
            SCOPED_TRACE("segments read " + std::to_string(read));
            check_case(a, options(mode, order, layout), grouped, true, read);
          }
        }
  }
}

TYPED_TEST(SpmvReference, LosslessMatchesOriginalValuesBitwise)
{
  // Lossless: the result is bit for bit the product of the original matrix,
  // summed as PETSc's AIJ sums (sequential, or pairs for inodes).
  using Index = TypeParam;
  for (Shape shape : {Shape::fragmented, Shape::runs, Shape::mostly_empty}) {
    const Matrix<Index> a = random_matrix<Index>(Index(500), Index(500), shape, 17);
    for (SumOrder order : {SumOrder::sequential, SumOrder::paired})
      for (Layout layout : {Layout::csr, Layout::sliced, Layout::node}) {
        const CompactCsr A = build_compact_csr(a.view(), options(StorageMode::lossless, order, layout));
        EXPECT_GT(A.stats.per_format[static_cast<int>(Format::fp16)].nnz, 0);
        EXPECT_GT(A.stats.per_format[static_cast<int>(Format::bf16)].nnz, 0);
        EXPECT_GT(A.stats.per_format[static_cast<int>(Format::fp64)].nnz, 0);
        const std::vector<double> x = random_vector(500, 1), z = random_vector(500, 2);
        std::vector<double> y(500);
        reference::spmv(A, a.pattern(), x.data(), z.data(), y.data());
        for (Index i = 0; i < a.nrows; ++i) {
          double sum = z[i];
          Index k    = a.rowptr[i];
          if (order == SumOrder::paired)
            for (; k + 1 < a.rowptr[i + 1]; k += 2)
              sum += a.vals[k] * x[a.cols[k]] + a.vals[k + 1] * x[a.cols[k + 1]];
          for (; k < a.rowptr[i + 1]; ++k)
            sum += a.vals[k] * x[a.cols[k]];
          ASSERT_TRUE(same(y[i], sum)) << shape_name(shape) << " " << layout_name(layout) << " row " << i;
        }
      }
  }
}

// Rows in nodes of 1..5 rows sharing a pattern (PETSc's inodes), formats that
// change inside nodes (fragmented) or between runs. Narrow: 1500 columns, all
// 16-bit offsets, checked against the dense product too; wide: 120000 columns,
// one node in eight spans more than 16-bit offsets (checked against the loops).
TYPED_TEST(SpmvReference, NodeMatrices)
{
  using Index = TypeParam;
  RowRecipe nodes;
  nodes.max_node_rows = 5;
  nodes.run_rows      = 40;
  for (bool wide : {false, true}) {
    nodes.node_window = wide ? 20000 : 0;
    const Index ncols = wide ? 120000 : 1500;
    for (Shape shape : {Shape::fragmented, Shape::runs, Shape::mostly_empty}) {
      const Matrix<Index> a = random_matrix<Index>(Index(900), ncols, shape, 23 + static_cast<unsigned>(shape), nodes);
      for (int mi = 0; mi < kStorageModeCount; ++mi)
        for (SumOrder order : {SumOrder::sequential, SumOrder::paired})
          for (Layout layout : {Layout::automatic, Layout::csr, Layout::node, Layout::sliced}) {
            const StorageMode mode = static_cast<StorageMode>(mi);
            if (wide && mode != StorageMode::lossless && mode != StorageMode::fp16) continue; // the same code paths
            SCOPED_TRACE(std::string(wide ? "wide " : "narrow ") + shape_name(shape) + " " + storage_mode_name(mode) +
                         (order == SumOrder::paired ? " paired " : " sequential ") + layout_name(layout));
            // the dense comparison checks values, the same in every layout: once, for nodes
            check_case(a, options(mode, order, layout), expect_grouped(mode, shape), !wide && layout == Layout::node);
          }
      // sliced, the rows' slices have columns within 16 bits of their base (narrow) or (wide) some not (slices
      // that could be patched stay narrow here)
      StorageOptions narrow_opts = options(StorageMode::lossless, SumOrder::paired, Layout::sliced);
      narrow_opts.patched_slices = false;
      const CompactCsr S         = build_compact_csr(a.view(), narrow_opts);
      if (wide) {
        EXPECT_GT(S.stats.narrow_rows, 0);
        EXPECT_LT(S.stats.narrow_rows, S.stats.sliced_rows);
      } else { // every slice with entries is narrow (or shifted)
        for (const RowBlock &b : S.blocks)
          for (std::int64_t q = 0; q < b.slice_count(); ++q)
            EXPECT_EQ(b.narrow_slice(q), b.slice_width(q) > 0 && !b.shifted_slice(q)) << "slice " << q;
        EXPECT_GT(S.stats.narrow_rows, 0);
      }
      // the node layout really holds nodes of several sizes, narrow (and wide)
      const CompactCsr A = build_compact_csr(a.view(), options(StorageMode::lossless, SumOrder::paired, Layout::node));
      if (wide)
        EXPECT_GT(A.stats.wide_nodes, 0);
      else
        EXPECT_EQ(A.stats.wide_nodes, 0);
      EXPECT_LT(A.stats.wide_nodes, A.stats.nodes);
      std::int64_t rows = 0, sizes = 0;
      for (int sz = 1; sz <= kMaxNodeRows; ++sz) {
        rows += sz * A.stats.nodes_of_size[sz];
        sizes += A.stats.nodes_of_size[sz] > 0;
      }
      EXPECT_EQ(rows, A.stats.node_rows);
      EXPECT_GE(sizes, 3);
    }
  }
  // automatic takes nodes when they hold 2 rows or more on average (runs of one format)
  const Matrix<Index> a = random_matrix<Index>(Index(900), Index(1500), Shape::runs, 24, nodes);
  const CompactCsr A    = build_compact_csr(a.view(), options(StorageMode::fp32, SumOrder::paired, Layout::automatic));
  EXPECT_EQ(A.stats.node_rows, 900);
  // 16-bit offsets once per node: fewer index bytes than AIJ's columns and row pointers
  EXPECT_LT(A.stats.index_bytes, 4 * (A.stats.nnz + 901));
  EXPECT_LT(A.stats.index_bytes, static_cast<std::int64_t>(A.stats.nodes * sizeof(NodeInfo)) + A.stats.nnz);
}

// Stencil and band rows, whose slices are mostly shifted (one column per entry
// of 8 rows): every mode and order, bitwise the loops' product, in runs of one
// format (run blocks: shifted slices) and with a format per row (grouped
// blocks, whose rows are rarely consecutive).
TYPED_TEST(SpmvReference, ShiftedSlices)
{
  using Index = TypeParam;
  struct Case {
    const char *name;
    Index n, band;
    int points;
  };
  // grid lines of 18 points: 4 slices in 9 lie inside a line (x = 1..16), shifted
  for (const Case &c : {Case{"7-point", 18, 0, 7}, Case{"27-point", 18, 0, 27}, Case{"band", 640, 13, 0}})
    for (Shape shape : {Shape::fragmented, Shape::runs}) {
      const Matrix<Index> a = stencil_matrix<Index>(c.n, c.points, shape, 29, 64, c.band);
      for (int mi = 0; mi < kStorageModeCount; ++mi)
        for (SumOrder order : {SumOrder::sequential, SumOrder::paired})
          for (Layout layout : {Layout::automatic, Layout::sliced}) {
            const StorageMode mode = static_cast<StorageMode>(mi);
            SCOPED_TRACE(std::string(c.name) + " " + shape_name(shape) + " " + storage_mode_name(mode) +
                         (order == SumOrder::paired ? " paired " : " sequential ") + layout_name(layout));
            // the dense comparison (values, not layout): for the band only, whose dense matrix is small
            check_case(a, options(mode, order, layout), expect_grouped(mode, shape),
                       c.band > 0 && layout == Layout::sliced && order == SumOrder::sequential);
          }
      // runs of 64 rows: slices of the interior are shifted, slices with face rows are not
      const CompactCsr A =
          build_compact_csr(a.view(), options(StorageMode::lossless, SumOrder::sequential, Layout::sliced));
      if (shape == Shape::runs && c.band > 0) {
        EXPECT_EQ(A.stats.shifted_rows, a.nrows);
      } else if (shape == Shape::runs) {
        EXPECT_GT(A.stats.shifted_rows, 0);
        EXPECT_LT(A.stats.shifted_rows, A.stats.sliced_rows);
        EXPECT_GT(A.stats.patched_rows, 0); // the slices with face rows: shifted but for a few entries
      }
      EXPECT_EQ(A.stats.sliced_rows, a.nrows);
    }
}

// A slice is shifted only when its 8 rows have one length and each row's
// columns are the previous row's plus 1. Near misses are not shifted, and
// their products equal a plain CSR product of the values (lossless): a row
// whose columns step by 2, one row of another length, and a slice whose
// columns, read as one span, follow the shifted pattern although its rows are
// cut elsewhere (rows of 3, 2, 1, 3, ... values; the next rows complete the span).
TYPED_TEST(SpmvReference, ShiftedSliceDetectionIsExact)
{
  using Index = TypeParam;
  auto row_of = [](Index first, Index count) {
    std::vector<Index> r;
    for (Index e = 0; e < count; ++e)
      r.push_back(first + e);
    return r;
  };
  std::vector<std::vector<Index>> shifted, step2, length, split;
  for (Index r = 0; r < 16; ++r) {
    shifted.push_back(row_of(r, 3));
    length.push_back(row_of(r, r == 5 ? 2 : 3));
    std::vector<Index> s = row_of(r, 3);
    if (r >= 5)
      for (Index &c : s)
        c += 1; // row 5 steps by 2 from row 4, the others by 1
    step2.push_back(s);
  }
  // one span 0 1 2 | 1 2 | 3 | 2 3 4 | ... : chunks of 3 shifted by 1, rows cut at other places
  split = {row_of(0, 3), row_of(1, 2), row_of(3, 1)};
  for (Index r = 2; r < 16; ++r)
    split.push_back(row_of(r, 3));
  struct Case {
    const char *name;
    const std::vector<std::vector<Index>> *rows;
    std::int64_t shifted_rows;
  };
  for (const Case &c : {Case{"shifted", &shifted, 16}, Case{"step 2", &step2, 8}, Case{"length", &length, 8},
                        Case{"split span", &split, 8}}) {
    SCOPED_TRACE(c.name);
    Matrix<Index> a;
    a.nrows = static_cast<Index>(c.rows->size());
    a.ncols = 24;
    std::mt19937_64 rng(3);
    for (const auto &row : *c.rows) {
      for (Index col : row) {
        a.cols.push_back(col);
        a.vals.push_back(0.5 + static_cast<double>(rng() % 1000) / 7.0);
      }
      a.rowptr.push_back(static_cast<Index>(a.vals.size()));
    }
    const CompactCsr A =
        build_compact_csr(a.view(), options(StorageMode::lossless, SumOrder::sequential, Layout::sliced));
    EXPECT_EQ(A.stats.shifted_rows, c.shifted_rows);
    std::vector<double> x(24), y(static_cast<std::size_t>(a.nrows));
    for (std::size_t j = 0; j < x.size(); ++j)
      x[j] = 1.0 + static_cast<double>(rng() % 997) / 13.0;
    reference::spmv(A, a.pattern(), x.data(), nullptr, y.data());
    for (Index i = 0; i < a.nrows; ++i) {
      double want = 0.0;
      for (Index k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k)
        want += a.vals[k] * x[static_cast<std::size_t>(a.cols[k])];
      ASSERT_EQ(y[static_cast<std::size_t>(i)], want) << "row " << i;
    }
  }
}

TYPED_TEST(SpmvReference, PairedDiffersFromSequential)
{
  // The two orders are really different (else the tests above could not tell them apart).
  using Index                 = TypeParam;
  const Matrix<Index> a       = random_matrix<Index>(Index(400), Index(400), Shape::runs, 19);
  const std::vector<double> x = random_vector(400, 3);
  std::vector<double> ys(400), yp(400);
  reference::spmv(build_compact_csr(a.view(), options(StorageMode::lossless, SumOrder::sequential)), a.pattern(),
                  x.data(), nullptr, ys.data());
  reference::spmv(build_compact_csr(a.view(), options(StorageMode::lossless, SumOrder::paired)), a.pattern(), x.data(),
                  nullptr, yp.data());
  int differ = 0;
  for (std::size_t i = 0; i < 400; ++i)
    differ += !same(ys[i], yp[i]);
  EXPECT_GT(differ, 0);
}

TYPED_TEST(SpmvReference, EmptyAndTinyMatrices)
{
  using Index = TypeParam;
  Matrix<Index> a; // 3 x 2, all rows empty
  a.nrows  = 3;
  a.ncols  = 2;
  a.rowptr = {0, 0, 0, 0};
  for (int mi = 0; mi < kStorageModeCount; ++mi) {
    const CompactCsr A = build_compact_csr(a.view(), options(static_cast<StorageMode>(mi), SumOrder::sequential));
    const double x[2] = {1, 2}, z[3] = {3, 4, 5}, xt[3] = {1, 1, 1}, zt[2] = {-1, -2};
    double y[3] = {9, 9, 9}, t[2] = {9, 9};
    reference::spmv(A, a.pattern(), x, nullptr, y);
    for (double v : y)
      EXPECT_EQ(v, 0.0);
    reference::spmv(A, a.pattern(), x, z, y);
    EXPECT_EQ(y[0], 3.0);
    EXPECT_EQ(y[2], 5.0);
    reference::spmv_transpose(A, a.pattern(), xt, zt, t);
    EXPECT_EQ(t[0], -1.0);
    EXPECT_EQ(t[1], -2.0);
  }
  // a 2 x 3 matrix by hand: [[1, 0, 2], [0, 0.1, 0]]
  Matrix<Index> b;
  b.nrows           = 2;
  b.ncols           = 3;
  b.rowptr          = {0, 2, 3};
  b.cols            = {0, 2, 1};
  b.vals            = {1, 2, 0.1};
  const double x[3] = {1, 10, 100}, xt[2] = {1, 10};
  for (int mi = 0; mi < kStorageModeCount; ++mi) {
    const StorageMode mode = static_cast<StorageMode>(mi);
    const CompactCsr A     = build_compact_csr(b.view(), options(mode, SumOrder::paired));
    double y[2], t[3];
    reference::spmv(A, b.pattern(), x, nullptr, y);
    reference::spmv_transpose(A, b.pattern(), xt, nullptr, t);
    EXPECT_EQ(y[0], 201.0) << storage_mode_name(mode);
    EXPECT_EQ(t[0], 1.0) << storage_mode_name(mode);
    EXPECT_EQ(t[2], 2.0) << storage_mode_name(mode);
    // 0.1 as stored: fp16 0.0999755859375, fp32 0.100000001490116..., fp11_4 0.09765625;
    // rowsplit: r = 0.1 * mean(1, 2, 0.1) = 0.103 puts the row {0.1} in fp32
    const double s01 = mode == StorageMode::lossless || storage_mode_segments(mode)
                           ? 0.1
                           : round_trip(mode == StorageMode::fp16 || mode == StorageMode::tolerance ? Format::fp16
                                        : mode == StorageMode::bf16                                 ? Format::bf16
                                        : mode == StorageMode::fp11_20                              ? Format::fp11_20
                                        : mode == StorageMode::fp11_4                               ? Format::fp11_4
                                                                                                    : Format::fp32,
                                        0.1);
    EXPECT_EQ(y[1], s01 * 10) << storage_mode_name(mode);
    EXPECT_EQ(t[1], s01 * 10) << storage_mode_name(mode);
  }
}
