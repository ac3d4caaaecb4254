// Adaptive-precision block-Jacobi, the PETSc-free core: Gauss-Jordan inversion
// against known inverses, norm1 and kappa_1, block detection, per-block format
// selection (the paper's list and its overflow/underflow protection), exact
// symmetry of the stored inverses and the interleaved group storage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "dense_blocks.hpp"
#include "petscmp/core/block_jacobi.hpp"

using namespace petscmp;
using namespace petscmp_test;

namespace {

constexpr double kU     = 0x1p-53; // fp64 unit roundoff
const double kInf       = std::numeric_limits<double>::infinity();
const double kNaN       = std::numeric_limits<double>::quiet_NaN();
const Format kFormats[] = {Format::fp64, Format::fp32, Format::fp16, Format::bf16, Format::fp11_20, Format::fp11_4};

bool same(double a, double b)
{
  return double_bits(a) == double_bits(b);
}

Dense from_rows(const std::vector<std::vector<double>> &rows)
{
  Dense d(static_cast<int>(rows.size()));
  for (int r = 0; r < d.n; ++r)
    for (int c = 0; c < d.n; ++c)
      d(r, c) = rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
  return d;
}

Dense identity(int n)
{
  Dense d(n);
  for (int i = 0; i < n; ++i)
    d(i, i) = 1.0;
  return d;
}

InversionStatus gauss_jordan(Dense &m)
{
  std::vector<int> work(static_cast<std::size_t>(m.n), -7);
  return invert_gauss_jordan(m.n, m.a.data(), work.data());
}

Dense multiply(const Dense &x, const Dense &y)
{
  Dense z(x.n);
  for (int r = 0; r < x.n; ++r)
    for (int c = 0; c < x.n; ++c) {
      double s = 0.0;
      for (int k = 0; k < x.n; ++k)
        s += x(r, k) * y(k, c);
      z(r, c) = s;
    }
  return z;
}

// Maximum column sum of |a|, computed here independently of norm1().
double my_norm1(const Dense &d)
{
  double m = 0.0;
  for (int c = 0; c < d.n; ++c) {
    double s = 0.0;
    for (int r = 0; r < d.n; ++r)
      s += std::fabs(d(r, c));
    m = std::max(m, s);
  }
  return m;
}

double residual_norm1(const Dense &a, const Dense &x) // ||I - A X||_1
{
  Dense r = multiply(a, x);
  for (int i = 0; i < a.n; ++i)
    r(i, i) -= 1.0;
  return my_norm1(r);
}

// ---- a CSR matrix holding given diagonal blocks ----------------------------------
struct BlockCsr {
  std::int32_t nrows = 0;
  std::vector<std::int32_t> rowptr{0}, cols;
  std::vector<double> vals;
  CsrView<std::int32_t> view() const
  {
    CsrView<std::int32_t> v;
    v.nrows  = nrows;
    v.ncols  = nrows;
    v.rowptr = rowptr.data();
    v.cols   = cols.data();
    v.values = vals.data();
    return v;
  }
};

// The blocks on the diagonal (exact zeros left out of the pattern) and, per row,
// `coupling` random entries outside the row's block, which inversion ignores.
BlockCsr assemble(const BlockPartition &p, const std::vector<Dense> &blocks, int coupling = 0, unsigned seed = 1)
{
  std::mt19937_64 rng(seed);
  BlockCsr m;
  m.nrows = static_cast<std::int32_t>(p.row_count());
  for (std::int64_t b = 0; b < p.block_count(); ++b) {
    const Dense &d = blocks[static_cast<std::size_t>(b)];
    for (int r = 0; r < d.n; ++r) {
      std::map<std::int32_t, double> row;
      for (int c = 0; c < d.n; ++c)
        if (d(r, c) != 0.0 || std::isnan(d(r, c))) row[static_cast<std::int32_t>(p.offsets[b] + c)] = d(r, c);
      if (m.nrows > d.n)
        for (int k = 0; k < coupling; ++k) {
          const std::int64_t col = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(m.nrows));
          if (col < p.offsets[b] || col >= p.offsets[b + 1])
            row[static_cast<std::int32_t>(col)] = 1e3 + static_cast<double>(k);
        }
      for (const auto &e : row) {
        m.cols.push_back(e.first);
        m.vals.push_back(e.second);
      }
      m.rowptr.push_back(static_cast<std::int32_t>(m.vals.size()));
    }
  }
  return m;
}

BlockPartition partition_of(const std::vector<Dense> &blocks)
{
  std::vector<std::int64_t> sizes;
  std::int64_t n = 0;
  for (const Dense &d : blocks) {
    sizes.push_back(d.n);
    n += d.n;
  }
  return partition_from_sizes(sizes.data(), static_cast<std::int64_t>(sizes.size()), n);
}

InvertedBlocks invert_blocks(const std::vector<Dense> &blocks, int coupling = 0)
{
  const BlockPartition p = partition_of(blocks);
  const BlockCsr m       = assemble(p, blocks, coupling);
  return invert_diagonal_blocks(m.view(), p);
}

Dense inverse_of(const InvertedBlocks &ib, std::int64_t b)
{
  const int n = ib.partition.block_size(b);
  Dense e(n);
  std::copy_n(ib.inverses.data() + ib.value_offsets[static_cast<std::size_t>(b)], n * n, e.a.begin());
  return e;
}

// diag(v): ||D||_1 = max|v|, E = diag(1/v), kappa_1 = max|v| * max(1/|v|).
Dense diag(const std::vector<double> &v)
{
  Dense d(static_cast<int>(v.size()));
  for (int i = 0; i < d.n; ++i)
    d(i, i) = v[static_cast<std::size_t>(i)];
  return d;
}

// =================================================================================
// 1. Gauss-Jordan
// =================================================================================

TEST(BlockJacobiGaussJordan, IdentityIsItsOwnInverseExactly)
{
  for (int n = 1; n <= kMaxBlockSize; ++n) {
    Dense m = identity(n);
    ASSERT_EQ(gauss_jordan(m), InversionStatus::ok) << n;
    const Dense id = identity(n);
    for (std::size_t k = 0; k < m.a.size(); ++k)
      ASSERT_TRUE(same(m.a[k], id.a[k])) << "n " << n << " entry " << k;
  }
}

TEST(BlockJacobiGaussJordan, DiagonalInverseIsExactForPowersOfTwo)
{
  Dense m = diag({2.0, 4.0, 0.5, -8.0, 1.0});
  ASSERT_EQ(gauss_jordan(m), InversionStatus::ok);
  const Dense want = diag({0.5, 0.25, 2.0, -0.125, 1.0});
  for (std::size_t k = 0; k < m.a.size(); ++k)
    EXPECT_TRUE(same(m.a[k], want.a[k])) << k << ": " << m.a[k];
  // a diagonal of non-powers of two: each entry the correctly rounded reciprocal
  Dense m3 = diag({3.0, -7.0, 10.0});
  ASSERT_EQ(gauss_jordan(m3), InversionStatus::ok);
  EXPECT_NEAR(m3(0, 0), 1.0 / 3.0, 1.0 / 3.0 * 2 * kU);
  EXPECT_NEAR(m3(1, 1), -1.0 / 7.0, 1.0 / 7.0 * 2 * kU);
  EXPECT_NEAR(m3(2, 2), 0.1, 0.1 * 2 * kU);
  EXPECT_EQ(m3(0, 1), 0.0);
  EXPECT_EQ(m3(2, 0), 0.0);
}

void expect_inverse(const Dense &a, const Dense &want, double tol)
{
  Dense m = a;
  ASSERT_EQ(gauss_jordan(m), InversionStatus::ok);
  for (int r = 0; r < a.n; ++r)
    for (int c = 0; c < a.n; ++c)
      EXPECT_NEAR(m(r, c), want(r, c), tol) << "entry (" << r << "," << c << ")";
}

TEST(BlockJacobiGaussJordan, SmallMatricesWithHandComputedInverses)
{
  // [[4,7],[2,6]]: det 10, inverse [[0.6,-0.7],[-0.2,0.4]]
  expect_inverse(from_rows({{4, 7}, {2, 6}}), from_rows({{0.6, -0.7}, {-0.2, 0.4}}), 8 * kU);
  // tridiag(-1, 2, -1): inverse 1/4 [[3,2,1],[2,4,2],[1,2,3]]
  expect_inverse(from_rows({{2, -1, 0}, {-1, 2, -1}, {0, -1, 2}}),
                 from_rows({{0.75, 0.5, 0.25}, {0.5, 1.0, 0.5}, {0.25, 0.5, 0.75}}), 8 * kU);
  // det 1, integer inverse
  expect_inverse(from_rows({{1, 2, 3}, {0, 1, 4}, {5, 6, 0}}), from_rows({{-24, 18, 5}, {20, -15, -4}, {-5, 4, 1}}),
                 64 * 24 * kU);
}

TEST(BlockJacobiGaussJordan, ZeroDiagonalNeedsPivoting)
{
  // without row interchanges every one of these hits a zero pivot
  expect_inverse(from_rows({{0, 1}, {1, 0}}), from_rows({{0, 1}, {1, 0}}), 0.0);
  expect_inverse(from_rows({{0, 1}, {1, 1}}), from_rows({{-1, 1}, {1, 0}}), 4 * kU);
  // a scaled cyclic permutation: x2 = b1/2, x3 = b2/3, x1 = b3/4
  expect_inverse(from_rows({{0, 2, 0}, {0, 0, 3}, {4, 0, 0}}),
                 from_rows({{0, 0, 0.25}, {0.5, 0, 0}, {0, 1.0 / 3.0, 0}}), 2 * kU);
  // a tiny (but not negligible) leading pivot: partial pivoting must swap to stay accurate.
  // [[1e-10, 1],[1, 1]]^-1 = 1/(1e-10 - 1) [[1, -1],[-1, 1e-10]]
  const double det = 1e-10 - 1.0;
  expect_inverse(from_rows({{1e-10, 1}, {1, 1}}), from_rows({{1 / det, -1 / det}, {-1 / det, 1e-10 / det}}), 8 * kU);
}

// Right residual of Gauss-Jordan with partial pivoting (Higham, Accuracy and
// Stability of Numerical Algorithms, 2nd ed., sec. 14.4):
//   |I - A X| <= 8 n u |L||U||X| + O(u^2),
// so ||I - A X||_1 <= 8 n u rho ||A||_1 ||X||_1 = 8 n u rho kappa_1 with rho the
// ratio || |L||U| ||_1 / ||A||_1 (<= 2 for column diagonally dominant A, a few
// units for random A). Forming A X in fp64 adds at most n u ||A||_1 ||X||_1.
// With rho <= 4: ||I - A X||_1 <= (32 + 1) n u kappa_1, c = 33.
void check_random_inverse(const Dense &a)
{
  Dense x = a;
  ASSERT_EQ(gauss_jordan(x), InversionStatus::ok);
  const double kappa = my_norm1(a) * my_norm1(x);
  const double res   = residual_norm1(a, x);
  EXPECT_LE(res, 33.0 * a.n * kU * kappa) << "kappa_1 " << kappa;
  EXPECT_GT(kappa, 1.0);
}

TEST(BlockJacobiGaussJordan, Random32x32ResidualWithinBound)
{
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const int n = 32;
  for (int trial = 0; trial < 5; ++trial) {
    Dense a(n); // column diagonally dominant
    for (double &v : a.a)
      v = u(rng);
    for (int c = 0; c < n; ++c)
      a(c, c) = (rng() & 1 ? 1 : -1) * (n + 1.0);
    check_random_inverse(a);
    // dense random with kappa_2 = 100, nonsymmetric (pivoting does swap rows)
    check_random_inverse(random_block(n, 100.0, false, 1.0, rng));
  }
}

TEST(BlockJacobiGaussJordan, SingularBlocks)
{
  Dense zero_row = from_rows({{1, 2, 3}, {0, 0, 0}, {4, 5, 7}});
  EXPECT_EQ(gauss_jordan(zero_row), InversionStatus::singular);
  Dense zero_col = from_rows({{1, 0, 3}, {2, 0, 1}, {4, 0, 7}});
  EXPECT_EQ(gauss_jordan(zero_col), InversionStatus::singular);
  Dense equal_rows = from_rows({{1, 2, 3}, {1, 2, 3}, {4, 5, 7}});
  EXPECT_EQ(gauss_jordan(equal_rows), InversionStatus::singular);
  Dense zero(4);
  EXPECT_EQ(gauss_jordan(zero), InversionStatus::singular);
  // rank deficient up to a 1e-17 perturbation: [[1,0],[1,0]] + 1e-17 e1 e2^T. The
  // second pivot is exactly -1e-17, 5e-18 ||D||_1: below fp64's unit roundoff
  // against the block's norm, numerically singular (kappa_1 ~ 4e17 > 1/u).
  Dense tiny = from_rows({{1, 1e-17}, {1, 0}});
  EXPECT_EQ(gauss_jordan(tiny), InversionStatus::singular);
  Dense tiny3 = from_rows({{1, 1e-17, 0}, {1, 0, 0}, {0, 0, 2}});
  EXPECT_EQ(gauss_jordan(tiny3), InversionStatus::singular);
  // rank 2 in exact arithmetic; in fp64 the last pivot is a rounding residue
  // (<= ~2e-16 against ||D||_1 = 18)
  Dense rank2 = from_rows({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  EXPECT_EQ(gauss_jordan(rank2), InversionStatus::singular);
  // the same zero pattern scaled far from 1 is still singular (negligible is relative)
  Dense scaled = from_rows({{1e-200, 1e-217}, {1e-200, 0}});
  EXPECT_EQ(gauss_jordan(scaled), InversionStatus::singular);
  // ...and a well-conditioned block scaled far from 1 is not
  Dense small = from_rows({{2e-200, 1e-200}, {1e-200, 2e-200}});
  EXPECT_EQ(gauss_jordan(small), InversionStatus::ok);
  EXPECT_NEAR(small(0, 0) * 1e-200, 2.0 / 3.0, 1e-14);
  Dense large = from_rows({{2e200, 1e200}, {1e200, 2e200}});
  EXPECT_EQ(gauss_jordan(large), InversionStatus::ok);
  EXPECT_NEAR(large(0, 1) * 1e200, -1.0 / 3.0, 1e-14);
}

TEST(BlockJacobiGaussJordan, NonFiniteInput)
{
  for (double bad : {kNaN, kInf, -kInf}) {
    for (int pos = 0; pos < 9; ++pos) {
      Dense m                            = from_rows({{4, 1, 0}, {1, 4, 1}, {0, 1, 4}});
      m.a[static_cast<std::size_t>(pos)] = bad;
      EXPECT_EQ(gauss_jordan(m), InversionStatus::not_finite) << bad << " at " << pos;
    }
  }
  // NaN in a block that would also be singular: the non-finite input is reported
  Dense m = from_rows({{0, 0}, {0, kNaN}});
  EXPECT_EQ(gauss_jordan(m), InversionStatus::not_finite);
  EXPECT_STRNE(inversion_status_name(InversionStatus::ok), inversion_status_name(InversionStatus::singular));
  EXPECT_STRNE(inversion_status_name(InversionStatus::singular), inversion_status_name(InversionStatus::not_finite));
}

// =================================================================================
// 2. norm1, symmetry test, kappa_1 through invert_diagonal_blocks
// =================================================================================

TEST(BlockJacobiNorms, Norm1IsTheMaximumColumnSum)
{
  // column-major {1, 3, -2, 4} is [[1,-2],[3,4]]: column sums 4 and 6, row sums 3 and 7
  const double a[] = {1, 3, -2, 4};
  EXPECT_EQ(norm1(2, a), 6.0);
  const double b[] = {-5};
  EXPECT_EQ(norm1(1, b), 5.0);
  const double z[] = {0, 0, 0, 0};
  EXPECT_EQ(norm1(2, z), 0.0);
  std::mt19937_64 rng(3);
  for (int n : {3, 17, 32}) {
    const Dense d = random_block(n, 1e3, false, 1.0, rng);
    EXPECT_NEAR(norm1(n, d.a.data()), my_norm1(d), my_norm1(d) * n * kU) << n;
  }
}

TEST(BlockJacobiNorms, ExactSymmetry)
{
  const double s[] = {1, 2, 2, 5};
  EXPECT_TRUE(is_exactly_symmetric(2, s));
  const double t[] = {1, 2, std::nextafter(2.0, 3.0), 5};
  EXPECT_FALSE(is_exactly_symmetric(2, t));
  const Dense d = from_rows({{1, 2, 3}, {2, 4, 5}, {3, 5, 6}});
  EXPECT_TRUE(is_exactly_symmetric(3, d.a.data()));
  const Dense e = from_rows({{1, 2, 3}, {2, 4, 5}, {3, -5, 6}});
  EXPECT_FALSE(is_exactly_symmetric(3, e.a.data()));
}

TEST(BlockJacobiNorms, KappaOfCraftedBlocks)
{
  // diag(1, 1e-3): ||D||_1 = 1, E = diag(1, 1e3), kappa_1 = 1e3.
  // [[1,1],[0,1]]: ||D||_1 = 2, E = [[1,-1],[0,1]], ||E||_1 = 2, kappa_1 = 4.
  // [[2,1],[1,2]]: ||D||_1 = 3, E = 1/3 [[2,-1],[-1,2]], ||E||_1 = 1, kappa_1 = 3.
  // diag(1e-6, 2e-6): kappa_1 = 2e-6 * 1e6 = 2.
  // a singular block in the middle fails alone.
  const std::vector<Dense> blocks = {diag({1.0, 0.001}),          from_rows({{1, 1}, {0, 1}}),
                                     from_rows({{2, 1}, {1, 2}}), from_rows({{1, 2}, {2, 4}}),
                                     diag({1e-6, 2e-6}),          diag({5.0})};
  const InvertedBlocks ib         = invert_blocks(blocks, 2);
  ASSERT_EQ(ib.partition.block_count(), 6);
  ASSERT_EQ(ib.status.size(), 6u);
  ASSERT_EQ(ib.kappa.size(), 6u);
  ASSERT_EQ(ib.norm_d.size(), 6u);
  EXPECT_EQ(ib.status[0], InversionStatus::ok);
  EXPECT_EQ(ib.norm_d[0], 1.0);
  EXPECT_NEAR(ib.kappa[0], 1e3, 1e3 * 4 * kU);
  EXPECT_EQ(ib.norm_d[1], 2.0);
  EXPECT_EQ(ib.kappa[1], 4.0);
  const Dense e1 = inverse_of(ib, 1);
  EXPECT_EQ(e1(0, 0), 1.0);
  EXPECT_EQ(e1(0, 1), -1.0);
  EXPECT_EQ(e1(1, 0), 0.0);
  EXPECT_EQ(e1(1, 1), 1.0);
  EXPECT_EQ(ib.norm_d[2], 3.0);
  EXPECT_NEAR(ib.kappa[2], 3.0, 3.0 * 8 * kU);
  EXPECT_EQ(ib.status[3], InversionStatus::singular);
  EXPECT_EQ(ib.kappa[3], kInf);
  EXPECT_NEAR(ib.kappa[4], 2.0, 2.0 * 8 * kU);
  EXPECT_NEAR(ib.norm_d[4], 2e-6, 2e-6 * 2 * kU);
  EXPECT_EQ(ib.norm_d[5], 5.0);
  EXPECT_EQ(ib.kappa[5], 1.0);
  EXPECT_EQ(ib.failed_blocks, 1);
  EXPECT_EQ(ib.first_failed_block, 3);
  for (int b : {0, 1, 2, 4, 5})
    EXPECT_EQ(ib.status[static_cast<std::size_t>(b)], InversionStatus::ok) << b;
}

TEST(BlockJacobiNorms, InversionIgnoresCouplingAndMatchesGaussJordan)
{
  std::mt19937_64 rng(5);
  std::vector<Dense> blocks;
  for (int k = 0; k < 40; ++k)
    blocks.push_back(
        random_block(1 + static_cast<int>(rng() % 32), 10.0 + static_cast<double>(rng() % 1000), false, 1.0, rng));
  blocks.push_back(diag({0.0, 1.0}));    // singular
  blocks.push_back(from_rows({{kNaN}})); // not finite
  blocks.push_back(from_rows({{3.0}}));  // fine after failures
  const InvertedBlocks ib = invert_blocks(blocks, 5);
  ASSERT_EQ(ib.partition.block_count(), static_cast<std::int64_t>(blocks.size()));
  ASSERT_EQ(ib.value_offsets.size() >= blocks.size(), true);
  for (std::size_t b = 0; b < 40; ++b) {
    ASSERT_EQ(ib.status[b], InversionStatus::ok) << b;
    Dense want = blocks[b];
    ASSERT_EQ(gauss_jordan(want), InversionStatus::ok);
    const Dense got = inverse_of(ib, static_cast<std::int64_t>(b));
    // extract + Gauss-Jordan: the same inverse as inverting the extracted block (a nonsymmetric block is left as
    // is; a 1x1 block is trivially symmetric)
    EXPECT_EQ(ib.symmetric[b], blocks[b].n == 1 ? 1u : 0u) << b;
    for (std::size_t k = 0; k < want.a.size(); ++k)
      ASSERT_TRUE(same(got.a[k], want.a[k]))
          << "block " << b << " entry " << k << ": " << got.a[k] << " vs " << want.a[k];
    EXPECT_NEAR(ib.norm_d[b], my_norm1(blocks[b]), my_norm1(blocks[b]) * 32 * kU) << b;
    const double kappa = my_norm1(blocks[b]) * my_norm1(got);
    EXPECT_NEAR(ib.kappa[b], kappa, kappa * 4 * kU) << b;
  }
  EXPECT_EQ(ib.status[40], InversionStatus::singular);
  EXPECT_EQ(ib.status[41], InversionStatus::not_finite);
  EXPECT_EQ(ib.status[42], InversionStatus::ok);
  EXPECT_EQ(inverse_of(ib, 42)(0, 0), 1.0 / 3.0);
  EXPECT_EQ(ib.kappa[40], kInf);
  EXPECT_EQ(ib.kappa[41], kInf);
  EXPECT_EQ(ib.failed_blocks, 2);
  EXPECT_EQ(ib.first_failed_block, 40);
}

// Blocks of 1-6 rows are inverted by code unrolled for their size: the same
// operations in the same order as the general code, so the same bits, for
// nonsymmetric and symmetric blocks, kappa included, and the same failures.
TEST(BlockJacobiInversion, FixedSizesMatchTheGeneralCode)
{
  std::mt19937_64 rng(17);
  std::vector<Dense> blocks;
  for (int k = 0; k < 400; ++k) {
    const int n = 1 + k % 8;
    blocks.push_back(random_block(n, 1.0 + static_cast<double>(rng() % 1000), (k / 8) % 2 == 1, 1.0, rng));
  }
  blocks.push_back(diag({1.0, 0.0, 2.0}));                // singular, 3 rows
  blocks.push_back(from_rows({{1.0, kNaN}, {0.0, 1.0}})); // not finite, 2 rows
  const InvertedBlocks ib = invert_blocks(blocks, 3);
  for (std::size_t b = 0; b < 400; ++b) {
    const Dense &d = blocks[b];
    Dense want     = d;
    ASSERT_EQ(gauss_jordan(want), InversionStatus::ok) << b;
    const bool symmetric = is_exactly_symmetric(d.n, d.a.data());
    ASSERT_EQ(ib.symmetric[b], symmetric ? 1u : 0u) << b;
    if (symmetric)
      for (int c = 0; c < d.n; ++c)
        for (int r = c + 1; r < d.n; ++r)
          want(r, c) = want(c, r) = 0.5 * (want(r, c) + want(c, r));
    const Dense got = inverse_of(ib, static_cast<std::int64_t>(b));
    for (std::size_t k = 0; k < want.a.size(); ++k)
      ASSERT_TRUE(same(got.a[k], want.a[k])) << "block " << b << " (" << d.n << " rows) entry " << k;
    ASSERT_TRUE(same(ib.norm_d[b], norm1(d.n, d.a.data()))) << b;
    ASSERT_TRUE(same(ib.kappa[b], norm1(d.n, d.a.data()) * norm1(d.n, want.a.data()))) << b;
  }
  EXPECT_EQ(ib.status[400], InversionStatus::singular);
  EXPECT_EQ(ib.status[401], InversionStatus::not_finite);
  EXPECT_EQ(ib.failed_blocks, 2);
}

TEST(BlockJacobiNorms, NoFailedBlocks)
{
  const InvertedBlocks ib = invert_blocks({diag({2.0}), diag({1.0, 4.0})});
  EXPECT_EQ(ib.failed_blocks, 0);
  EXPECT_EQ(ib.first_failed_block, -1);
  EXPECT_EQ(ib.kappa[1], 4.0);
}

// =================================================================================
// 3. Block detection and partitions
// =================================================================================

// Nodes of `dof` unknowns numbered consecutively on a 1-D chain: node k couples
// with nodes k-1, k, k+1, so the rows of one node share a pattern and adjacent
// nodes' patterns differ. Values vary (detection sees the pattern only).
BlockCsr node_chain(int nnodes, const std::vector<int> &dofs)
{
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<std::int32_t> first{0};
  for (int k = 0; k < nnodes; ++k)
    first.push_back(first.back() + dofs[static_cast<std::size_t>(k) % dofs.size()]);
  BlockCsr m;
  m.nrows = first.back();
  for (int k = 0; k < nnodes; ++k)
    for (std::int32_t r = first[static_cast<std::size_t>(k)]; r < first[static_cast<std::size_t>(k) + 1]; ++r) {
      for (int j = std::max(0, k - 1); j <= std::min(nnodes - 1, k + 1); ++j)
        for (std::int32_t c = first[static_cast<std::size_t>(j)]; c < first[static_cast<std::size_t>(j) + 1]; ++c) {
          m.cols.push_back(c);
          m.vals.push_back(u(rng));
        }
      m.rowptr.push_back(static_cast<std::int32_t>(m.vals.size()));
    }
  return m;
}

std::vector<int> sizes_of(const BlockPartition &p)
{
  std::vector<int> s;
  for (std::int64_t b = 0; b < p.block_count(); ++b)
    s.push_back(p.block_size(b));
  return s;
}

TEST(BlockJacobiDetection, SupervariablesOfThreeAreAgglomerated)
{
  const BlockCsr m = node_chain(25, {3}); // 75 rows
  {
    const BlockPartition p = detect_supervariable_blocks(m.view(), 32); // 10 supervariables fit in 32
    EXPECT_EQ(sizes_of(p), (std::vector<int>{30, 30, 15}));
    EXPECT_EQ(p.row_count(), 75);
    EXPECT_EQ(p.max_block_size(), 30);
  }
  EXPECT_EQ(sizes_of(detect_supervariable_blocks(m.view(), 3)), std::vector<int>(25, 3));
  // 4: a second supervariable does not fit, and supervariables are not split
  EXPECT_EQ(sizes_of(detect_supervariable_blocks(m.view(), 4)), std::vector<int>(25, 3));
  {
    std::vector<int> want(12, 6);
    want.push_back(3);
    EXPECT_EQ(sizes_of(detect_supervariable_blocks(m.view(), 8)), want);
  }
}

TEST(BlockJacobiDetection, DifferentPatternsStaySeparate)
{
  // supervariables of 2, 3, 1, 2 rows (repeated): with max 4 the greedy merge
  // gives 2 | 3+1 | 2+2 | 3+1 | ... ; treating rows one by one would fill blocks of 4.
  const BlockCsr m       = node_chain(8, {2, 3, 1, 2});
  const BlockPartition p = detect_supervariable_blocks(m.view(), 4);
  EXPECT_EQ(sizes_of(p), (std::vector<int>{2, 4, 4, 4, 2}));
  // max 1: every row alone
  EXPECT_EQ(sizes_of(detect_supervariable_blocks(m.view(), 1)), std::vector<int>(16, 1));
  // one row with an extra column breaks a supervariable of 3 into 1 + 2: row 3
  // (first of node 1) gets an entry at column 11. Supervariables 3 | 1 | 2 | 3 | 3;
  // max 4: 3+1 | 2 | 3 | 3 (without the extra entry: 3 | 3 | 3 | 3)
  BlockCsr n = node_chain(4, {3});
  EXPECT_EQ(sizes_of(detect_supervariable_blocks(n.view(), 4)), (std::vector<int>{3, 3, 3, 3}));
  {
    BlockCsr r;
    r.nrows = n.nrows;
    for (std::int32_t i = 0; i < n.nrows; ++i) {
      for (std::int32_t k = n.rowptr[static_cast<std::size_t>(i)]; k < n.rowptr[static_cast<std::size_t>(i) + 1]; ++k) {
        r.cols.push_back(n.cols[static_cast<std::size_t>(k)]);
        r.vals.push_back(n.vals[static_cast<std::size_t>(k)]);
      }
      if (i == 3) {
        r.cols.push_back(11);
        r.vals.push_back(1.0);
      }
      r.rowptr.push_back(static_cast<std::int32_t>(r.vals.size()));
    }
    n = r;
  }
  EXPECT_EQ(sizes_of(detect_supervariable_blocks(n.view(), 4)), (std::vector<int>{4, 2, 3, 3}));
  EXPECT_EQ(sizes_of(detect_supervariable_blocks(n.view(), 32)), (std::vector<int>{12}));
}

TEST(BlockJacobiDetection, LongSupervariableIsSplit)
{
  // nodes of 40 rows with one pattern each: longer than 32, split into pieces of at most 32;
  // a piece never spans two nodes.
  const BlockCsr m       = node_chain(3, {40});
  const BlockPartition p = detect_supervariable_blocks(m.view(), 32);
  ASSERT_EQ(p.row_count(), 120);
  EXPECT_LE(p.max_block_size(), 32);
  for (std::int64_t b = 0; b < p.block_count(); ++b) {
    EXPECT_GE(p.block_size(b), 1);
    EXPECT_EQ(p.offsets[static_cast<std::size_t>(b)] / 40, (p.offsets[static_cast<std::size_t>(b) + 1] - 1) / 40)
        << "block " << b << " spans two nodes";
  }
  for (std::int64_t node = 0; node <= 3; ++node)
    EXPECT_TRUE(std::find(p.offsets.begin(), p.offsets.end(), node * 40) != p.offsets.end()) << node;
  EXPECT_EQ(p.block_count(), 6); // two pieces per node
  // max 5 on three nodes of 12: 3 pieces per node, none longer than 5
  const BlockPartition q = detect_supervariable_blocks(node_chain(3, {12}).view(), 5);
  EXPECT_EQ(q.row_count(), 36);
  EXPECT_LE(q.max_block_size(), 5);
  EXPECT_EQ(q.block_count(), 9);
  for (std::int64_t node : {12, 24})
    EXPECT_TRUE(std::find(q.offsets.begin(), q.offsets.end(), node) != q.offsets.end()) << node;
}

TEST(BlockJacobiDetection, PatternRunsAreTheNodes)
{
  // nodes of 2, 3, 1, 2 rows: the runs are exactly the nodes, never merged
  const BlockCsr m = node_chain(8, {2, 3, 1, 2});
  EXPECT_EQ(sizes_of(detect_pattern_runs(m.view(), 32)), (std::vector<int>{2, 3, 1, 2, 2, 3, 1, 2}));
  EXPECT_TRUE(runs_are_nodes(detect_pattern_runs(m.view(), 32))); // 8 runs for 16 rows
  // max 2 splits the nodes of 3
  EXPECT_EQ(sizes_of(detect_pattern_runs(m.view(), 2)), (std::vector<int>{2, 2, 1, 1, 2, 2, 2, 1, 1, 2}));
  // scalar rows (every pattern differs): no nodes, by PETSc's inode rule (runs > 90% of the rows)
  const BlockCsr scalar = node_chain(20, {1});
  EXPECT_EQ(detect_pattern_runs(scalar.view(), 32).block_count(), 20);
  EXPECT_FALSE(runs_are_nodes(detect_pattern_runs(scalar.view(), 32)));
  // one node of 2 among 9 scalar rows: 10 runs of 11 rows (over 90%), not nodes; 17 runs of 20 rows are
  const BlockCsr few = node_chain(10, {1, 1, 1, 1, 1, 1, 1, 1, 1, 2});
  EXPECT_EQ(detect_pattern_runs(few.view(), 32).block_count(), 10);
  EXPECT_FALSE(runs_are_nodes(detect_pattern_runs(few.view(), 32)));
  EXPECT_TRUE(runs_are_nodes(detect_pattern_runs(node_chain(17, {1, 1, 1, 1, 2}).view(), 32)));
  EXPECT_FALSE(runs_are_nodes(BlockPartition{}));
}

TEST(BlockJacobiDetection, AgglomerateKeepsNodesWhole)
{
  // point blocks of 3 (a matrix block size) agglomerated: multiples of 3 only, like the supervariables
  const BlockPartition nodes = uniform_partition(75, 3);
  EXPECT_EQ(sizes_of(agglomerate(nodes, 32)), (std::vector<int>{30, 30, 15}));
  EXPECT_EQ(sizes_of(agglomerate(nodes, 8)).front(), 6);
  EXPECT_EQ(sizes_of(agglomerate(nodes, 3)), std::vector<int>(25, 3));
  // a node larger than the maximum stays one block, its neighbours are not merged into it
  const std::int64_t s[] = {1, 5, 1, 1};
  EXPECT_EQ(sizes_of(agglomerate(partition_from_sizes(s, 4, 8), 2)), (std::vector<int>{1, 5, 2}));
  // the supervariable blocks are the agglomerated pattern runs
  const BlockCsr m = node_chain(30, {2, 3, 1, 2, 5});
  for (int maxb : {1, 4, 7, 32})
    EXPECT_EQ(detect_supervariable_blocks(m.view(), maxb).offsets,
              agglomerate(detect_pattern_runs(m.view(), maxb), maxb).offsets)
        << maxb;
  EXPECT_EQ(agglomerate(BlockPartition{}, 4).block_count(), 0);
}

TEST(BlockJacobiDetection, Int64IndicesGiveTheSameResults)
{
  const BlockCsr m = node_chain(30, {2, 3, 1, 2, 5});
  std::vector<std::int64_t> rowptr(m.rowptr.begin(), m.rowptr.end()), cols(m.cols.begin(), m.cols.end());
  CsrView<std::int64_t> v;
  v.nrows  = m.nrows;
  v.ncols  = m.nrows;
  v.rowptr = rowptr.data();
  v.cols   = cols.data();
  v.values = m.vals.data();
  for (int maxb : {1, 4, 7, 32}) {
    const BlockPartition p32 = detect_supervariable_blocks(m.view(), maxb);
    const BlockPartition p64 = detect_supervariable_blocks(v, maxb);
    EXPECT_EQ(p32.offsets, p64.offsets) << maxb;
    const InvertedBlocks a = invert_diagonal_blocks(m.view(), p32), b = invert_diagonal_blocks(v, p64);
    ASSERT_EQ(a.inverses.size(), b.inverses.size());
    for (std::size_t k = 0; k < a.inverses.size(); ++k)
      ASSERT_TRUE(same(a.inverses[k], b.inverses[k])) << k;
    ASSERT_EQ(a.kappa.size(), b.kappa.size());
    for (std::size_t k = 0; k < a.kappa.size(); ++k)
      EXPECT_TRUE(same(a.kappa[k], b.kappa[k])) << k;
  }
}

TEST(BlockJacobiDetection, UniformPartition)
{
  const BlockPartition p = uniform_partition(10, 4);
  EXPECT_EQ(p.offsets, (std::vector<std::int64_t>{0, 4, 8, 10}));
  EXPECT_EQ(p.block_count(), 3);
  EXPECT_EQ(p.block_size(2), 2);
  EXPECT_EQ(p.max_block_size(), 4);
  EXPECT_EQ(uniform_partition(12, 4).offsets, (std::vector<std::int64_t>{0, 4, 8, 12}));
  EXPECT_EQ(uniform_partition(5, 1).block_count(), 5);
  EXPECT_EQ(uniform_partition(3, 32).offsets, (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(uniform_partition(64, 32).offsets, (std::vector<std::int64_t>{0, 32, 64}));
}

TEST(BlockJacobiDetection, PartitionFromSizes)
{
  const std::int64_t s[] = {3, 32, 1, 7};
  const BlockPartition p = partition_from_sizes(s, 4, 43);
  EXPECT_EQ(p.offsets, (std::vector<std::int64_t>{0, 3, 35, 36, 43}));
  EXPECT_EQ(p.max_block_size(), 32);
  EXPECT_EQ(p.row_count(), 43);
  const std::int64_t zero[] = {3, 0, 1};
  EXPECT_THROW(partition_from_sizes(zero, 3, 4), StorageError);
  const std::int64_t big[] = {33};
  EXPECT_THROW(partition_from_sizes(big, 1, 33), StorageError);
  const std::int64_t neg[] = {5, -1};
  EXPECT_THROW(partition_from_sizes(neg, 2, 4), StorageError);
  EXPECT_THROW(partition_from_sizes(s, 4, 42), StorageError);
  EXPECT_THROW(partition_from_sizes(s, 4, 44), StorageError);
  EXPECT_THROW(partition_from_sizes(s, 3, 43), StorageError);
}

// =================================================================================
// 4. Format selection
// =================================================================================

FormatSelection selection(FormatPolicy policy, double accuracy = 1e-2, Format forced = Format::fp64)
{
  FormatSelection s;
  s.policy   = policy;
  s.accuracy = accuracy;
  s.forced   = forced;
  return s;
}

std::string names(const std::vector<Format> &f)
{
  std::string s;
  for (Format x : f)
    s += std::string(format_name(x)) + " ";
  return s;
}

TEST(BlockJacobiSelection, CandidateLists)
{
  using V = std::vector<Format>;
  EXPECT_EQ(candidate_formats(selection(FormatPolicy::all)),
            (V{Format::fp16, Format::bf16, Format::fp11_4, Format::fp32, Format::fp11_20, Format::fp64}));
  EXPECT_EQ(candidate_formats(selection(FormatPolicy::ieee)), (V{Format::fp16, Format::fp32, Format::fp64}));
  EXPECT_EQ(candidate_formats(selection(FormatPolicy::range_preserving)),
            (V{Format::fp11_4, Format::fp11_20, Format::fp64}));
  for (Format f : kFormats) {
    const V c = candidate_formats(selection(FormatPolicy::forced, 1e-2, f));
    ASSERT_FALSE(c.empty());
    EXPECT_EQ(c.front(), f);
    EXPECT_LE(c.size(), 2u);
    EXPECT_EQ(c.back() == f || c.back() == Format::fp64, true);
  }
  EXPECT_TRUE(has_reduced_range(Format::fp16));
  EXPECT_TRUE(has_reduced_range(Format::bf16));
  EXPECT_TRUE(has_reduced_range(Format::fp32));
  EXPECT_FALSE(has_reduced_range(Format::fp64));
  EXPECT_FALSE(has_reduced_range(Format::fp11_20));
  EXPECT_FALSE(has_reduced_range(Format::fp11_4));
  for (int a = 0; a < kFormatPolicyCount; ++a)
    for (int b = a + 1; b < kFormatPolicyCount; ++b)
      EXPECT_STRNE(format_policy_name(static_cast<FormatPolicy>(a)), format_policy_name(static_cast<FormatPolicy>(b)));
}

// Accuracy 1e-2, kappa thresholds accuracy / u:
//   fp16 20.48, bf16 2.56, fp11_4 0.16 (never: kappa >= 1), fp32 167772.16,
//   fp11_20 10485.76, fp64 9.0e13.
// fp11_20's threshold is below fp32's, so by kappa alone fp11_20 never wins; it
// is chosen when fp32 fails the range check. Likewise bf16 only when fp16 fails it.
// Blocks diag(1, 1/k) have kappa_1 = k and an inverse diag(1, k) in fp16's range.
TEST(BlockJacobiSelection, KappaThresholds)
{
  const std::vector<double> kappas   = {1, 2, 16, 20, 21, 100, 1e4, 1e5, 1.6e5, 1.7e5, 2e5, 1e6, 1e12, 8e13};
  const std::vector<Format> want_all = {Format::fp16, Format::fp16, Format::fp16, Format::fp16, Format::fp32,
                                        Format::fp32, Format::fp32, Format::fp32, Format::fp32, Format::fp64,
                                        Format::fp64, Format::fp64, Format::fp64, Format::fp64};
  // range preserving: fp11_4 never (0.0625 kappa > 1e-2), fp11_20 up to 10485.76
  const std::vector<Format> want_rp = {Format::fp11_20, Format::fp11_20, Format::fp11_20, Format::fp11_20,
                                       Format::fp11_20, Format::fp11_20, Format::fp11_20, Format::fp64,
                                       Format::fp64,    Format::fp64,    Format::fp64,    Format::fp64,
                                       Format::fp64,    Format::fp64};
  std::vector<Dense> blocks;
  for (double k : kappas)
    blocks.push_back(diag({1.0, 1.0 / k}));
  const InvertedBlocks ib = invert_blocks(blocks);
  for (std::size_t b = 0; b < kappas.size(); ++b)
    EXPECT_NEAR(ib.kappa[b], kappas[b], kappas[b] * 1e-15);
  SelectionStats st;
  const std::vector<Format> got = select_block_formats(ib, selection(FormatPolicy::all), &st);
  EXPECT_EQ(got, want_all) << names(got);
  EXPECT_EQ(select_block_formats(ib, selection(FormatPolicy::ieee)), want_all); // no block needs bf16/fp11
  const std::vector<Format> rp = select_block_formats(ib, selection(FormatPolicy::range_preserving));
  EXPECT_EQ(rp, want_rp) << names(rp);
  EXPECT_EQ(st.blocks_per_format[static_cast<int>(Format::fp16)], 4);
  EXPECT_EQ(st.blocks_per_format[static_cast<int>(Format::fp32)], 5);
  EXPECT_EQ(st.blocks_per_format[static_cast<int>(Format::fp64)], 5);
  EXPECT_EQ(st.blocks_per_format[static_cast<int>(Format::bf16)], 0);
  EXPECT_EQ(st.range_rejections, 0);
  EXPECT_EQ(st.forced_fallbacks, 0);
  // accuracy 0.1: fp11_4 admissible for kappa <= 1.6, bf16 <= 25.6, fp16 <= 204.8
  const std::vector<Format> a1 = select_block_formats(ib, selection(FormatPolicy::all, 0.1));
  EXPECT_EQ(a1[0], Format::fp16);
  EXPECT_EQ(a1[5], Format::fp16); // 100
  EXPECT_EQ(a1[6], Format::fp32); // 1e4
  const std::vector<Format> r1 = select_block_formats(ib, selection(FormatPolicy::range_preserving, 0.1));
  EXPECT_EQ(r1[0], Format::fp11_4);  // kappa 1
  EXPECT_EQ(r1[1], Format::fp11_20); // kappa 2 > 1.6
  // accuracy 1e-6: fp16 never; fp32 up to 16.8; fp11_20 up to 1.05; fp64 up to 9e9
  const std::vector<Format> a6 = select_block_formats(ib, selection(FormatPolicy::all, 1e-6));
  EXPECT_EQ(a6[0], Format::fp32);
  EXPECT_EQ(a6[2], Format::fp32);
  EXPECT_EQ(a6[4], Format::fp64);
  EXPECT_EQ(a6[11], Format::fp64);
  EXPECT_EQ(a6[12], Format::fp64); // 1e12 * 2^-53 > 1e-6: nothing admissible, fp64 all the same
  const std::vector<Format> r6 = select_block_formats(ib, selection(FormatPolicy::range_preserving, 1e-6));
  EXPECT_EQ(r6[0], Format::fp11_20); // 1 * 2^-20 = 9.5e-7 <= 1e-6
  EXPECT_EQ(r6[1], Format::fp64);
}

// The paper's protection: a format admitted by kappa is rejected when rounding
// the inverse overflows or underflows. Blocks are well conditioned (kappa 1 or
// 2, 4) with inverse entries far from 1.
TEST(BlockJacobiSelection, OverflowAndUnderflowProtection)
{
  struct Case {
    const char *what;
    Dense d;
    Format all, ieee, range_preserving;
  };
  const std::vector<Case> cases = {
      // E entries ~1e6 and 5e5: fp16 overflows (max 65504); bf16 holds them, kappa 2 <= 2.56
      {"inverse 1e6, kappa 2", diag({1e-6, 2e-6}), Format::bf16, Format::fp32, Format::fp11_20},
      // kappa 4 > 2.56: bf16 and fp11_4 fail by kappa, fp32 next
      {"inverse 1e6, kappa 4", diag({1e-6, 4e-6}), Format::fp32, Format::fp32, Format::fp11_20},
      // E entries ~1e-9: below half of fp16's smallest subnormal (2^-25), flushed to zero
      {"inverse 1e-9, kappa 2", diag({1e9, 2e9}), Format::bf16, Format::fp32, Format::fp11_20},
      // E = 9.09e-7 = 15.25 * 2^-24: an fp16 subnormal stored as 15 * 2^-24, relative error 1.6% > 1e-2
      {"inverse 1e-6, kappa 1", diag({1.1e6, 1.1e6}), Format::bf16, Format::fp32, Format::fp11_20},
      // E ~1e-300: zero in fp16, bf16 and fp32; fp11_4 fails by kappa (2 * 2^-4 > 1e-2)
      {"inverse 1e-300, kappa 2", diag({1e300, 2e300}), Format::fp11_20, Format::fp64, Format::fp11_20},
      // E ~1e+300: infinite in fp16, bf16 and fp32
      {"inverse 1e300, kappa 1", diag({1e-300, -1e-300}), Format::fp11_20, Format::fp64, Format::fp11_20},
      // E = 1e-44 = 7.14 * 2^-149: an fp32 subnormal stored as 7 * 2^-149 (relative error 1.9%); zero in bf16
      {"inverse 1e-44, kappa 1", diag({1e44, 1e44}), Format::fp11_20, Format::fp64, Format::fp11_20},
      // E = 1e-42 (714 * 2^-149): an fp32 subnormal with relative error 5.5e-4: kappa 1 * 5.5e-4 <= 1e-2 keeps fp32
      {"inverse 1e-42, kappa 1", diag({1e42, 1e42}), Format::fp32, Format::fp32, Format::fp11_20},
      // kappa 1e5 (fp11_20 needs <= 10485.76) and inverse entries outside fp32's range: nothing but fp64
      {"inverse 1e-300, kappa 1e5", diag({1e300, 1e305}), Format::fp64, Format::fp64, Format::fp64},
  };
  std::vector<Dense> blocks;
  for (const Case &c : cases)
    blocks.push_back(c.d);
  const InvertedBlocks ib = invert_blocks(blocks);
  for (std::size_t b = 0; b < cases.size(); ++b)
    ASSERT_EQ(ib.status[b], InversionStatus::ok) << cases[b].what;
  SelectionStats st_all, st_ieee, st_rp;
  const auto all  = select_block_formats(ib, selection(FormatPolicy::all), &st_all);
  const auto ieee = select_block_formats(ib, selection(FormatPolicy::ieee), &st_ieee);
  const auto rp   = select_block_formats(ib, selection(FormatPolicy::range_preserving), &st_rp);
  for (std::size_t b = 0; b < cases.size(); ++b) {
    SCOPED_TRACE(cases[b].what);
    EXPECT_EQ(format_name(all[b]), std::string(format_name(cases[b].all)));
    EXPECT_EQ(format_name(ieee[b]), std::string(format_name(cases[b].ieee)));
    EXPECT_EQ(format_name(rp[b]), std::string(format_name(cases[b].range_preserving)));
  }
  // range preserving formats need no range check: no rejections
  EXPECT_EQ(st_rp.range_rejections, 0);
  // ieee: every block but the last is admitted by kappa in fp16 and rejected by range (8);
  // blocks 4..6 and 8 are also rejected in fp32 (4 more); counted per rejection (12) or per block (9)
  EXPECT_TRUE(st_ieee.range_rejections == 12 || st_ieee.range_rejections == 9) << st_ieee.range_rejections;
  EXPECT_GT(st_all.range_rejections, 0);
  EXPECT_EQ(st_all.blocks_per_format[static_cast<int>(Format::bf16)], 3);
  EXPECT_EQ(st_all.blocks_per_format[static_cast<int>(Format::fp11_20)], 3);
  EXPECT_EQ(st_all.blocks_per_format[static_cast<int>(Format::fp32)], 2);
  EXPECT_EQ(st_all.blocks_per_format[static_cast<int>(Format::fp64)], 1);
  // accuracy 0.2: fp11_4 admitted by kappa <= 3.2, so the range-starved kappa-2 blocks take it
  const auto all02 = select_block_formats(ib, selection(FormatPolicy::all, 0.2));
  EXPECT_EQ(all02[4], Format::fp11_4);
  EXPECT_EQ(all02[5], Format::fp11_4);
  EXPECT_EQ(all02[0], Format::bf16); // bf16 before fp11_4: more significand bits at 16 bits
}

TEST(BlockJacobiSelection, AdmissibilityOfSingleFormats)
{
  const InvertedBlocks ib = invert_blocks({diag({1e-6, 2e-6}), diag({1.0, 1.0 / 16}), diag({1e300, 1e300})});
  // block 0: inverse 1e6: fp16 admitted by kappa only without the range check
  EXPECT_FALSE(format_admissible(ib, 0, Format::fp16, 1e-2, true));
  EXPECT_TRUE(format_admissible(ib, 0, Format::fp16, 1e-2, false));
  EXPECT_TRUE(format_admissible(ib, 0, Format::bf16, 1e-2, true));
  EXPECT_FALSE(format_admissible(ib, 0, Format::bf16, 1e-3, true)); // 2 * 2^-8 > 1e-3
  EXPECT_FALSE(format_admissible(ib, 0, Format::fp11_4, 1e-2, false));
  EXPECT_TRUE(format_admissible(ib, 0, Format::fp11_4, 0.2, false));
  EXPECT_TRUE(format_admissible(ib, 0, Format::fp64, 1e-2, true));
  // block 1: kappa 16
  EXPECT_TRUE(format_admissible(ib, 1, Format::fp16, 1e-2, true));
  EXPECT_FALSE(format_admissible(ib, 1, Format::fp16, 7e-3, true)); // 16 * 2^-11 = 7.8e-3
  EXPECT_FALSE(format_admissible(ib, 1, Format::bf16, 1e-2, true));
  EXPECT_TRUE(format_admissible(ib, 1, Format::fp32, 1e-2, true));
  EXPECT_TRUE(format_admissible(ib, 1, Format::fp11_20, 1e-2, true));
  EXPECT_FALSE(format_admissible(ib, 1, Format::fp11_20, 1e-5, true)); // 16 * 2^-20 = 1.5e-5
  // block 2: inverse 1e-300 underflows every reduced-range format
  for (Format f : {Format::fp16, Format::bf16, Format::fp32}) {
    EXPECT_FALSE(format_admissible(ib, 2, f, 1e-2, true)) << format_name(f);
    EXPECT_TRUE(format_admissible(ib, 2, f, 1e-2, false)) << format_name(f);
  }
  EXPECT_TRUE(format_admissible(ib, 2, Format::fp11_20, 1e-2, true));
}

// The header's rule, from the implementation's own inverse and kappa, with the
// distance of the decision from its boundary (borderline cases are skipped).
struct RefDecision {
  bool admissible;
  double margin;
};
RefDecision reference_admissible(const InvertedBlocks &ib, std::int64_t b, Format f, double acc, bool check_range)
{
  const double kappa = ib.kappa[static_cast<std::size_t>(b)];
  const double q1    = kappa * unit_roundoff(f) / acc;
  if (!(q1 <= 1.0)) return {false, q1 - 1.0};
  double margin = 1.0 - q1;
  if (check_range && has_reduced_range(f)) {
    const Dense e = inverse_of(ib, b);
    double ne = 0.0, nd = 0.0;
    for (int c = 0; c < e.n; ++c) {
      double se = 0.0, sd = 0.0;
      for (int r = 0; r < e.n; ++r) {
        const double rt = round_trip(f, e(r, c));
        if (!std::isfinite(rt)) return {false, kInf};
        se += std::fabs(e(r, c));
        sd += std::fabs(e(r, c) - rt);
      }
      ne = std::max(ne, se);
      nd = std::max(nd, sd);
    }
    const double q2 = kappa * (nd / ne) / acc;
    if (!(q2 <= 1.0)) return {false, q2 - 1.0};
    margin = std::min(margin, 1.0 - q2);
  }
  return {true, margin};
}

bool kappa_ok(const InvertedBlocks &ib, std::int64_t b, Format f, double acc)
{
  return ib.kappa[static_cast<std::size_t>(b)] * unit_roundoff(f) <= acc;
}

TEST(BlockJacobiSelection, MatchesTheRuleOnRandomBlocks)
{
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Dense> blocks;
  for (int k = 0; k < 600; ++k) {
    const int n        = 1 + static_cast<int>(rng() % 12);
    const double kappa = std::pow(10.0, 8 * u(rng));
    // scales that push the inverse out of fp16 (1e5, 1e-8), bf16/fp32 (1e40, 1e-45) or to subnormals
    const double scales[] = {1.0, 1e-5, 1e5, 1e8, 1e-40, 1e40, 1e44, 1e290, 1e-300, 3e4, 1e-4};
    const double scale    = scales[rng() % (sizeof scales / sizeof scales[0])] * (0.5 + u(rng));
    blocks.push_back(random_block(n, kappa, (rng() & 1) != 0, scale, rng));
  }
  const InvertedBlocks ib = invert_blocks(blocks, 3);
  const std::int64_t nb   = ib.partition.block_count();
  std::int64_t checked = 0, tested_per_format[kFormatCount] = {};
  for (double acc : {1e-1, 1e-2, 1e-4}) {
    for (FormatPolicy pol : {FormatPolicy::all, FormatPolicy::ieee, FormatPolicy::range_preserving}) {
      const FormatSelection s        = selection(pol, acc);
      const bool check_range         = pol != FormatPolicy::range_preserving;
      const std::vector<Format> cand = candidate_formats(s);
      SelectionStats st;
      const std::vector<Format> got = select_block_formats(ib, s, &st);
      ASSERT_EQ(got.size(), static_cast<std::size_t>(nb));
      std::int64_t hist[kFormatCount] = {};
      for (Format f : got)
        ++hist[static_cast<int>(f)];
      for (int f = 0; f < kFormatCount; ++f)
        EXPECT_EQ(st.blocks_per_format[f], hist[f]) << format_name(Format(f));
      std::int64_t events = 0, blocks_rejected = 0;
      for (std::int64_t b = 0; b < nb; ++b) {
        if (ib.status[static_cast<std::size_t>(b)] != InversionStatus::ok) {
          EXPECT_EQ(got[static_cast<std::size_t>(b)], Format::fp64);
          continue;
        }
        Format want     = Format::fp64;
        double margin   = kInf;
        std::int64_t ev = 0;
        for (Format f : cand) {
          const RefDecision d = reference_admissible(ib, b, f, acc, check_range);
          margin              = std::min(margin, std::fabs(d.margin));
          if (!d.admissible && kappa_ok(ib, b, f, acc)) ++ev;
          if (d.admissible) {
            want = f;
            break;
          }
        }
        events += ev;
        blocks_rejected += ev > 0;
        if (margin < 1e-9) continue;
        ++checked;
        ++tested_per_format[static_cast<int>(want)];
        ASSERT_EQ(format_name(got[static_cast<std::size_t>(b)]), std::string(format_name(want)))
            << "block " << b << " n " << ib.partition.block_size(b) << " kappa "
            << ib.kappa[static_cast<std::size_t>(b)] << " accuracy " << acc << " policy " << format_policy_name(pol);
        for (Format f : kFormats) {
          const RefDecision d = reference_admissible(ib, b, f, acc, true);
          if (std::fabs(d.margin) >= 1e-9) {
            ASSERT_EQ(format_admissible(ib, b, f, acc, true), d.admissible)
                << "block " << b << " format " << format_name(f) << " kappa " << ib.kappa[static_cast<std::size_t>(b)];
          }
          const RefDecision k = reference_admissible(ib, b, f, acc, false);
          if (std::fabs(k.margin) >= 1e-9) {
            ASSERT_EQ(format_admissible(ib, b, f, acc, false), k.admissible) << "block " << b << " " << format_name(f);
          }
        }
      }
      // counted per rejected (block, format) or per block with a rejection
      EXPECT_TRUE(st.range_rejections == events || st.range_rejections == blocks_rejected)
          << st.range_rejections << " vs " << events << " / " << blocks_rejected;
      EXPECT_EQ(st.forced_fallbacks, 0);
    }
  }
  EXPECT_GT(checked, 4000);
  for (int f = 0; f < kFormatCount; ++f)
    EXPECT_GT(tested_per_format[f], 0) << format_name(Format(f));
}

TEST(BlockJacobiSelection, ForcedFormat)
{
  // block 0: identity (exact in every format, kappa 1); block 1: inverse 1e6;
  // block 2: inverse 1e-300; block 3: inverse 0.5 and 1 (exact everywhere, kappa 2)
  const InvertedBlocks ib = invert_blocks({identity(3), diag({1e-6, 1e-6}), diag({1e300}), diag({2.0, 1.0})});
  struct Want {
    Format forced;
    Format got[4];
    std::int64_t fallbacks;
  };
  const Want wants[] = {
      {Format::fp16, {Format::fp16, Format::fp64, Format::fp64, Format::fp16}, 2},
      {Format::bf16, {Format::bf16, Format::bf16, Format::fp64, Format::bf16}, 1},
      {Format::fp32, {Format::fp32, Format::fp32, Format::fp64, Format::fp32}, 1},
      {Format::fp11_20, {Format::fp11_20, Format::fp11_20, Format::fp11_20, Format::fp11_20}, 0},
      {Format::fp11_4, {Format::fp11_4, Format::fp11_4, Format::fp11_4, Format::fp11_4}, 0},
      {Format::fp64, {Format::fp64, Format::fp64, Format::fp64, Format::fp64}, 0},
  };
  for (const Want &w : wants) {
    SCOPED_TRACE(format_name(w.forced));
    SelectionStats st;
    // accuracy 0.2: every format (fp11_4: 2 * 2^-4 = 0.125) is admitted by these kappas
    const auto got = select_block_formats(ib, selection(FormatPolicy::forced, 0.2, w.forced), &st);
    ASSERT_EQ(got.size(), 4u);
    for (int b = 0; b < 4; ++b)
      EXPECT_EQ(format_name(got[static_cast<std::size_t>(b)]), std::string(format_name(w.got[b]))) << b;
    EXPECT_EQ(st.forced_fallbacks, w.fallbacks);
    std::int64_t total = 0;
    for (int f = 0; f < kFormatCount; ++f)
      total += st.blocks_per_format[f];
    EXPECT_EQ(total, 4);
    EXPECT_EQ(st.blocks_per_format[static_cast<int>(Format::fp64)], w.forced == Format::fp64 ? 4 : w.fallbacks);
  }
}

TEST(BlockJacobiSelection, FailedBlocksGetFp64)
{
  const InvertedBlocks ib = invert_blocks({diag({1.0}), diag({0.0, 1.0}), diag({2.0, 4.0}), from_rows({{kInf}})});
  ASSERT_EQ(ib.failed_blocks, 2);
  for (FormatPolicy pol : {FormatPolicy::all, FormatPolicy::ieee, FormatPolicy::range_preserving}) {
    SelectionStats st;
    const auto got = select_block_formats(ib, selection(pol, 0.1), &st);
    EXPECT_EQ(got[1], Format::fp64);
    EXPECT_EQ(got[3], Format::fp64);
    EXPECT_NE(got[0], Format::fp64);
    EXPECT_NE(got[2], Format::fp64);
    std::int64_t total = 0;
    for (int f = 0; f < kFormatCount; ++f)
      total += st.blocks_per_format[f];
    EXPECT_EQ(total, 4);
  }
  SelectionStats st;
  const auto forced = select_block_formats(ib, selection(FormatPolicy::forced, 0.1, Format::fp16), &st);
  EXPECT_EQ(forced[1], Format::fp64);
  EXPECT_EQ(forced[3], Format::fp64);
  EXPECT_EQ(forced[0], Format::fp16);
}

// =================================================================================
// 5. Symmetry
// =================================================================================

std::vector<Format> uniform_formats(std::size_t n, Format f)
{
  return std::vector<Format>(n, f);
}

// stored entry (r, c) of block b, found through the groups
double stored(const BlockJacobiStorage &s, std::int64_t b, int r, int c)
{
  std::int64_t first = 0;
  for (const BlockGroup &g : s.groups) {
    if (b < first + g.nblocks) return stored_entry(s, g, static_cast<int>(b - first), r, c);
    first += g.nblocks;
  }
  ADD_FAILURE() << "block " << b << " in no group";
  return kNaN;
}

TEST(BlockJacobiSymmetry, SymmetricBlocksHaveExactlySymmetricInverses)
{
  std::mt19937_64 rng(29);
  std::vector<Dense> blocks;
  for (int n : {2, 3, 5, 8, 13, 21, 32, 7, 16, 31})
    blocks.push_back(random_block(n, 1e3, true, 1.0, rng));
  for (int n : {4, 9, 32})
    blocks.push_back(random_block(n, 50.0, false, 1.0, rng));
  // a block symmetric but one ulp: not symmetric
  Dense almost = random_block(6, 10.0, true, 1.0, rng);
  almost(4, 1) = std::nextafter(almost(4, 1), 10.0);
  blocks.push_back(almost);
  const std::size_t nsym  = 10;
  const InvertedBlocks ib = invert_blocks(blocks, 4);
  int gj_asymmetric       = 0;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    ASSERT_EQ(ib.status[b], InversionStatus::ok);
    const Dense e = inverse_of(ib, static_cast<std::int64_t>(b));
    Dense gj      = blocks[b];
    ASSERT_EQ(gauss_jordan(gj), InversionStatus::ok);
    if (b < nsym) {
      EXPECT_EQ(ib.symmetric[b], 1u) << b;
      EXPECT_TRUE(is_exactly_symmetric(e.n, e.a.data())) << b;
      gj_asymmetric += !is_exactly_symmetric(gj.n, gj.a.data());
      // still the inverse: within rounding of Gauss-Jordan's
      for (std::size_t k = 0; k < e.a.size(); ++k)
        EXPECT_NEAR(e.a[k], gj.a[k], 1e-10 * my_norm1(gj)) << "block " << b << " entry " << k;
    } else {
      EXPECT_EQ(ib.symmetric[b], 0u) << b;
      for (std::size_t k = 0; k < e.a.size(); ++k)
        ASSERT_TRUE(same(e.a[k], gj.a[k])) << "block " << b << " entry " << k;
      if (e.n > 6) {
        EXPECT_FALSE(is_exactly_symmetric(e.n, e.a.data())) << b;
      }
    }
  }
  EXPECT_GT(gj_asymmetric, 0) << "the test should include symmetric blocks whose raw inverse is not symmetric";
  for (Format f : kFormats) {
    SCOPED_TRACE(format_name(f));
    const BlockJacobiStorage s = pack_block_jacobi(ib, uniform_formats(blocks.size(), f));
    for (std::size_t b = 0; b < nsym; ++b) {
      const int n = blocks[b].n;
      for (int r = 0; r < n; ++r)
        for (int c = 0; c < r; ++c) {
          const double a = stored(s, static_cast<std::int64_t>(b), r, c),
                       t = stored(s, static_cast<std::int64_t>(b), c, r);
          ASSERT_TRUE(same(a, t)) << "block " << b << " (" << r << "," << c << ") " << a << " vs " << t;
        }
    }
  }
  // policy all picks formats per block; symmetric blocks stay symmetric
  const BlockJacobiStorage s = pack_block_jacobi(ib, select_block_formats(ib, selection(FormatPolicy::all)));
  for (std::size_t b = 0; b < nsym; ++b)
    for (int r = 0; r < blocks[b].n; ++r)
      for (int c = 0; c < r; ++c)
        ASSERT_TRUE(same(stored(s, static_cast<std::int64_t>(b), r, c), stored(s, static_cast<std::int64_t>(b), c, r)));
}

// =================================================================================
// 6. Interleaved storage
// =================================================================================

double decode_raw(const BlockJacobiStorage &s, Format f, std::int64_t byte_offset, std::int64_t element)
{
  return dispatch_format(f, [&](auto tag) {
    using S = typename decltype(tag)::type;
    S v;
    const unsigned char *base = reinterpret_cast<const unsigned char *>(s.values.as<std::uint64_t>());
    std::memcpy(&v, base + byte_offset + element * static_cast<std::int64_t>(sizeof(S)), sizeof(S));
    return decode(v);
  });
}

void check_storage(const InvertedBlocks &ib, const std::vector<Format> &formats, int group_blocks)
{
  SCOPED_TRACE("group_blocks " + std::to_string(group_blocks));
  const BlockJacobiStorage s = pack_block_jacobi(ib, formats, group_blocks);
  const BlockPartition &p    = ib.partition;
  ASSERT_EQ(s.nrows, p.row_count());
  ASSERT_EQ(s.block_format.size(), static_cast<std::size_t>(p.block_count()));
  std::int64_t b = 0, expect_bytes = 0, expect_fp64 = 0, prev_end = 0;
  bool all_8_byte = true;
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    const BlockGroup &g = s.groups[gi];
    ASSERT_GE(g.nblocks, 1);
    ASSERT_LE(g.nblocks, group_blocks);
    ASSERT_LE(b + g.nblocks, p.block_count());
    ASSERT_EQ(g.row_begin, p.offsets[static_cast<std::size_t>(b)]) << "group " << gi;
    // documented: every group starts 8-byte aligned, at most 7 bytes after the previous group's values
    ASSERT_EQ(g.byte_offset % 8, 0) << "group " << gi;
    ASSERT_GE(g.byte_offset, prev_end) << "group " << gi;
    ASSERT_LE(g.byte_offset, prev_end + 7) << "group " << gi;
    const std::int64_t n = g.block_size, gbytes = n * n * g.nblocks * static_cast<std::int64_t>(format_bytes(g.format));
    ASSERT_LE(g.byte_offset + gbytes, s.value_bytes());
    spans.push_back({g.byte_offset, g.byte_offset + gbytes});
    prev_end   = g.byte_offset + gbytes;
    all_8_byte = all_8_byte && format_bytes(g.format) == 8;
    expect_bytes += gbytes;
    expect_fp64 += n * n * g.nblocks * 8;
    for (int i = 0; i < g.nblocks; ++i, ++b) {
      const std::size_t bb = static_cast<std::size_t>(b);
      ASSERT_EQ(p.block_size(b), g.block_size) << "block " << b;
      ASSERT_EQ(formats[bb], g.format) << "block " << b;
      ASSERT_EQ(s.block_format[bb], static_cast<std::uint8_t>(formats[bb])) << "block " << b;
      const Dense e = inverse_of(ib, b);
      for (int c = 0; c < g.block_size; ++c)
        for (int r = 0; r < g.block_size; ++r) {
          const double want = round_trip(g.format, e(r, c));
          const double got  = stored_entry(s, g, i, r, c);
          ASSERT_TRUE(same(got, want)) << "block " << b << " (" << r << "," << c << ") " << got << " vs " << want;
          // the documented layout: element (c * nblocks + i) * size + r of the group
          const double raw =
              decode_raw(s, g.format, g.byte_offset, (static_cast<std::int64_t>(c) * g.nblocks + i) * g.block_size + r);
          ASSERT_TRUE(same(raw, want)) << "layout: block " << b << " (" << r << "," << c << ")";
        }
    }
    // greedy grouping: a group ends only when it is full or the next block differs
    if (b < p.block_count() && g.nblocks < group_blocks) {
      const std::size_t nb = static_cast<std::size_t>(b);
      ASSERT_TRUE(p.block_size(b) != g.block_size || formats[nb] != g.format)
          << "group " << gi << " ends early at block " << b;
    }
  }
  ASSERT_EQ(b, p.block_count()) << "groups do not cover every block";
  std::sort(spans.begin(), spans.end());
  for (std::size_t k = 1; k < spans.size(); ++k)
    ASSERT_LE(spans[k - 1].second, spans[k].first) << "groups overlap";
  // value bytes: the values plus at most 7 bytes of padding per group (the header's promise)
  EXPECT_GE(s.value_bytes(), expect_bytes);
  EXPECT_LE(s.value_bytes(), expect_bytes + 7 * static_cast<std::int64_t>(s.groups.size()));
  EXPECT_LE(s.value_bytes(), (prev_end + 7) / 8 * 8);
  if (all_8_byte) {
    EXPECT_EQ(s.value_bytes(), expect_bytes);
  }
  EXPECT_EQ(s.fp64_bytes(), expect_fp64);
  // packed again into the memory of a storage being replaced (a Newton step's setup: here the same blocks all in
  // fp64, the largest, whose bytes are not zero where padding goes): the same bytes, padding included, in its memory
  BlockJacobiStorage old = pack_block_jacobi(ib, std::vector<Format>(formats.size(), Format::fp64), group_blocks);
  const unsigned char *old_memory = old.values.as<unsigned char>();
  const BlockJacobiStorage again  = pack_block_jacobi(ib, formats, group_blocks, &old);
  ASSERT_EQ(again.value_bytes(), s.value_bytes());
  EXPECT_EQ(0, std::memcmp(again.values.as<unsigned char>(), s.values.as<unsigned char>(),
                           static_cast<std::size_t>(s.value_bytes())));
  if (s.value_bytes() > 0) {
    EXPECT_EQ(again.values.as<unsigned char>(), old_memory);
  }
  ASSERT_EQ(again.groups.size(), s.groups.size());
}

TEST(BlockJacobiStorageLayout, RoundTripOfMixedSizesAndFormats)
{
  std::mt19937_64 rng(31);
  std::vector<Dense> blocks;
  std::vector<Format> formats;
  // runs of equal size and format (1..20 blocks), sizes 1..32, every format; some runs
  // change format only, some size only
  int size   = 5;
  Format fmt = Format::fp16;
  for (int run = 0; run < 60; ++run) {
    if (run % 3 != 1) size = 1 + static_cast<int>(rng() % 32);
    if (run % 3 != 2) fmt = kFormats[rng() % kFormatCount];
    const int len = 1 + static_cast<int>(rng() % 20);
    for (int k = 0; k < len; ++k) {
      blocks.push_back(
          random_block(size, 1e2, (rng() & 3) == 0, std::pow(10.0, static_cast<double>(rng() % 7) - 3), rng));
      formats.push_back(fmt);
    }
  }
  // blocks of every size in every format
  for (int n = 1; n <= 32; ++n)
    for (Format f : kFormats) {
      blocks.push_back(random_block(n, 10.0, false, 1.0, rng));
      formats.push_back(f);
    }
  const InvertedBlocks ib = invert_blocks(blocks, 2);
  ASSERT_EQ(ib.failed_blocks, 0);
  for (int gb : {1, 3, kDefaultGroupBlocks, 64})
    check_storage(ib, formats, gb);
}

TEST(BlockJacobiStorageLayout, SelectedFormatsAndDefaultGrouping)
{
  std::mt19937_64 rng(37);
  std::vector<Dense> blocks;
  for (int k = 0; k < 300; ++k)
    blocks.push_back(random_block(1 + static_cast<int>(rng() % 4), std::pow(10.0, static_cast<double>(rng() % 9)),
                                  false, (rng() & 1) ? 1e-7 : 1.0, rng));
  const InvertedBlocks ib = invert_blocks(blocks);
  const auto formats      = select_block_formats(ib, selection(FormatPolicy::all));
  check_storage(ib, formats, kDefaultGroupBlocks);
  const BlockJacobiStorage s = pack_block_jacobi(ib, formats);
  for (const BlockGroup &g : s.groups)
    EXPECT_LE(g.nblocks, kDefaultGroupBlocks);
}

TEST(BlockJacobiStorageLayout, UniformBlocksFillGroups)
{
  // 20 blocks of 4 in fp32, group_blocks 8: groups of 8, 8, 4 with 16*4 bytes per block
  std::vector<Dense> blocks;
  for (int k = 0; k < 20; ++k)
    blocks.push_back(diag({1.0 + k, 2.0, 3.0, 4.0}));
  const InvertedBlocks ib    = invert_blocks(blocks);
  const BlockJacobiStorage s = pack_block_jacobi(ib, uniform_formats(20, Format::fp32), 8);
  ASSERT_EQ(s.groups.size(), 3u);
  EXPECT_EQ(s.groups[0].nblocks, 8);
  EXPECT_EQ(s.groups[1].nblocks, 8);
  EXPECT_EQ(s.groups[2].nblocks, 4);
  EXPECT_EQ(s.groups[1].row_begin, 32);
  EXPECT_EQ(s.groups[2].row_begin, 64);
  EXPECT_EQ(s.value_bytes(), 20 * 16 * 4);
  EXPECT_EQ(s.fp64_bytes(), 20 * 16 * 8);
  EXPECT_EQ(s.nrows, 80);
  // block 9 = second of group 1: entry (0,0) is 1/10
  EXPECT_EQ(stored_entry(s, s.groups[1], 1, 0, 0), static_cast<double>(static_cast<float>(0.1)));
  EXPECT_EQ(stored_entry(s, s.groups[1], 1, 3, 3), 0.25);
  EXPECT_EQ(stored_entry(s, s.groups[1], 1, 1, 0), 0.0);
}

// Group b can follow group a in one loop: same format, size and block count, its rows and values right after a's.
bool continues(const BlockGroup &a, const BlockGroup &b)
{
  const std::int64_t bytes =
      std::int64_t(a.nblocks) * a.block_size * a.block_size * static_cast<std::int64_t>(format_bytes(a.format));
  return b.format == a.format && b.block_size == a.block_size && b.nblocks == a.nblocks &&
         b.row_begin == a.row_begin + std::int64_t(a.nblocks) * a.block_size && b.byte_offset == a.byte_offset + bytes;
}

// The storage's runs: every group once, in order; inside a run each group continues the one before; two runs
// never meet where one could continue the other.
void expect_runs_of(const BlockJacobiStorage &s)
{
  const std::int64_t ngroups = static_cast<std::int64_t>(s.groups.size());
  std::int64_t next          = 0;
  for (const GroupRun &run : s.runs) {
    ASSERT_EQ(run.first, next);
    ASSERT_LT(run.first, run.end);
    ASSERT_LE(run.end, ngroups);
    for (std::int64_t g = run.first + 1; g < run.end; ++g) {
      EXPECT_TRUE(continues(s.groups[static_cast<std::size_t>(g - 1)], s.groups[static_cast<std::size_t>(g)]))
          << "group " << g;
    }
    if (run.end < ngroups) {
      EXPECT_FALSE(
          continues(s.groups[static_cast<std::size_t>(run.end - 1)], s.groups[static_cast<std::size_t>(run.end)]))
          << "runs meet at group " << run.end;
    }
    next = run.end;
  }
  EXPECT_EQ(next, ngroups);
}

TEST(BlockJacobiStorageLayout, RunsAreTheGroupsOneLoopTakes)
{
  // 10 blocks of 3 in fp64, 10 in fp16, 5 blocks of 2 in fp16, groups of 8: groups 8, 2 | 8, 2 | 5, runs at every
  // change of format, size or block count
  std::vector<Dense> blocks;
  for (int k = 0; k < 25; ++k)
    blocks.push_back(k < 20 ? diag({1.0 + k, 2.0, 3.0}) : diag({1.0 + k, 2.0}));
  const InvertedBlocks ib = invert_blocks(blocks);
  std::vector<Format> formats(25, Format::fp16);
  std::fill(formats.begin(), formats.begin() + 10, Format::fp64);
  const BlockJacobiStorage s = pack_block_jacobi(ib, formats, 8);
  ASSERT_EQ(s.groups.size(), 5u);
  ASSERT_EQ(s.runs.size(), 5u);
  for (std::int64_t r = 0; r < 5; ++r) {
    EXPECT_EQ(s.runs[static_cast<std::size_t>(r)].first, r);
    EXPECT_EQ(s.runs[static_cast<std::size_t>(r)].end, r + 1);
  }
  expect_runs_of(s);
  // 40 blocks of 4 in fp32: groups 8 x 5, one run
  std::vector<Dense> fours(40, diag({1.0, 2.0, 3.0, 4.0}));
  const BlockJacobiStorage u = pack_block_jacobi(invert_blocks(fours), uniform_formats(40, Format::fp32), 8);
  ASSERT_EQ(u.runs.size(), 1u);
  EXPECT_EQ(u.runs[0].first, 0);
  EXPECT_EQ(u.runs[0].end, 5);
  // mixed sizes and selected formats, groups of 1, 3 and 8; an empty partition has no runs
  std::mt19937_64 rng(79);
  std::vector<Dense> mixed;
  for (int k = 0; k < 400; ++k)
    mixed.push_back(
        random_block(k % 7 < 5 ? 3 : 1 + static_cast<int>(rng() % 6), std::pow(10.0, rng() % 8), false, 1.0, rng));
  const InvertedBlocks im = invert_blocks(mixed);
  for (int gb : {1, 3, 8}) {
    SCOPED_TRACE("group_blocks " + std::to_string(gb));
    expect_runs_of(pack_block_jacobi(im, select_block_formats(im, selection(FormatPolicy::all)), gb));
  }
  const BlockJacobiStorage none = pack_block_jacobi(invert_blocks({}), {}, 8);
  EXPECT_TRUE(none.groups.empty());
  EXPECT_TRUE(none.runs.empty());
}

} // namespace

// =================================================================================
// 7. The chunked setup
// =================================================================================

// build_block_jacobi (a chunk of blocks at a time, no fp64 copy of all inverses) stores what the three passes store:
// the same format and the same stored entries for every block, the same counts, failures and kappa range; groups
// end at chunk ends as well.
TEST(BlockJacobiChunkedSetup, StoresWhatTheThreePassesStore)
{
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Dense> blocks;
  for (int k = 0; k < 700; ++k) {
    const int n = k % 5 == 4 ? 1 + static_cast<int>(rng() % 12) : 3; // mostly 3 x 3 blocks, some of other sizes
    const double scales[] = {1.0, 1e-5, 1e5, 1e40, 1e-300, 3e4};
    const double scale    = scales[rng() % (sizeof scales / sizeof scales[0])] * (0.5 + u(rng));
    blocks.push_back(random_block(n, std::pow(10.0, 6 * u(rng)), (rng() & 1) != 0, scale, rng));
  }
  blocks[100]             = diag({0.0, 1.0, 2.0}); // singular
  blocks[400]             = from_rows({{kInf}});   // not finite
  const BlockPartition p  = partition_of(blocks);
  const BlockCsr m        = assemble(p, blocks, 4);
  const InvertedBlocks ib = invert_diagonal_blocks(m.view(), p);
  for (const FormatSelection &sel : {selection(FormatPolicy::all, 1e-2), selection(FormatPolicy::ieee, 1e-4),
                                     selection(FormatPolicy::forced, 0.1, Format::fp16)}) {
    SelectionStats st3;
    const std::vector<Format> formats = select_block_formats(ib, sel, &st3);
    const BlockJacobiStorage three    = pack_block_jacobi(ib, formats);
    for (std::int64_t chunk : {std::int64_t(8), std::int64_t(24), std::int64_t(1) << 14}) {
      SCOPED_TRACE("policy " + std::string(format_policy_name(sel.policy)) + ", chunks of " + std::to_string(chunk));
      BlockJacobiStorage recycled = pack_block_jacobi(ib, formats); // (its memory is reused)
      const BlockJacobiSetup c    = build_block_jacobi(m.view(), p, sel, kDefaultGroupBlocks, &recycled, chunk);
      ASSERT_EQ(c.storage.block_format, three.block_format);
      ASSERT_EQ(c.storage.nrows, three.nrows);
      expect_runs_of(c.storage);
      for (int f = 0; f < kFormatCount; ++f)
        EXPECT_EQ(c.selection.blocks_per_format[f], st3.blocks_per_format[f]) << format_name(Format(f));
      EXPECT_EQ(c.selection.range_rejections, st3.range_rejections);
      EXPECT_EQ(c.selection.forced_fallbacks, st3.forced_fallbacks);
      EXPECT_EQ(c.failed_blocks, ib.failed_blocks);
      EXPECT_EQ(c.first_failed_block, ib.first_failed_block);
      EXPECT_EQ(c.first_failure, ib.status[static_cast<std::size_t>(ib.first_failed_block)]);
      double kmin = kInf, kmax = 0.0;
      for (std::int64_t b = 0; b < p.block_count(); ++b)
        if (ib.status[static_cast<std::size_t>(b)] == InversionStatus::ok) {
          kmin = std::min(kmin, ib.kappa[static_cast<std::size_t>(b)]);
          kmax = std::max(kmax, ib.kappa[static_cast<std::size_t>(b)]);
        }
      EXPECT_EQ(c.kappa_min, kmin);
      EXPECT_EQ(c.kappa_max, kmax);
      for (std::int64_t b = 0; b < p.block_count(); ++b) {
        const int n = p.block_size(b);
        for (int r = 0; r < n; ++r)
          for (int col = 0; col < n; ++col) {
            const double x = stored(three, b, r, col), y = stored(c.storage, b, r, col);
            ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << "block " << b << " entry " << r << "," << col;
          }
      }
      std::int64_t row = 0; // groups cover the rows in order, within the chunks
      for (const BlockGroup &g : c.storage.groups) {
        EXPECT_EQ(g.row_begin, row);
        EXPECT_EQ(g.byte_offset % 8, 0);
        row += std::int64_t(g.nblocks) * g.block_size;
      }
      EXPECT_EQ(row, p.row_count());
      EXPECT_LE(c.storage.value_bytes(), three.value_bytes() + 8 * (p.block_count() / chunk + 1));
      if (chunk >= p.block_count()) {
        EXPECT_EQ(c.storage.groups.size(), three.groups.size());
      }
    }
  }
}
