// Block-Jacobi apply kernels: the reference backend against a dense product of
// the stored entries (bit for bit, columns summed in increasing order), the
// OpenMP backend against the reference for any thread count, and the accuracy
// the format selection promises, ||I - E~ D||_1 <= accuracy, end to end.
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

#include "block_jacobi_apply.hpp"
#include "prefetch.hpp"
#include "dense_blocks.hpp"
#include "petscmp/core/block_jacobi.hpp"

using namespace petscmp;
using namespace petscmp_test;

namespace {

constexpr double kU     = 0x1p-53;
const double kNaN       = std::numeric_limits<double>::quiet_NaN();
const Format kFormats[] = {Format::fp64, Format::fp32, Format::fp16, Format::bf16, Format::fp11_20, Format::fp11_4};

bool same(double a, double b)
{
  return double_bits(a) == double_bits(b);
}

double norm1(const Dense &d)
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

// Cheap well-conditioned blocks for large problems: random entries, dominant diagonal.
Dense dominant_block(int n, std::mt19937_64 &rng)
{
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Dense d(n);
  for (double &v : d.a)
    v = u(rng);
  for (int i = 0; i < n; ++i)
    d(i, i) = (rng() & 1 ? 1.0 : -1.0) * (n + 0.5 + u(rng));
  return d;
}

struct Problem {
  std::vector<Dense> blocks;
  BlockPartition partition;
  std::int32_t nrows = 0;
  std::vector<std::int32_t> rowptr{0}, cols;
  std::vector<double> vals;
  InvertedBlocks inverted;
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

// The block-diagonal CSR of the given blocks plus two coupling entries a row
// outside the block (which block-Jacobi ignores), then inverted.
Problem make_problem(std::vector<Dense> blocks, unsigned seed)
{
  std::mt19937_64 rng(seed);
  Problem p;
  p.blocks = std::move(blocks);
  std::vector<std::int64_t> sizes;
  for (const Dense &d : p.blocks) {
    sizes.push_back(d.n);
    p.nrows += d.n;
  }
  p.partition = partition_from_sizes(sizes.data(), static_cast<std::int64_t>(sizes.size()), p.nrows);
  for (std::size_t b = 0; b < p.blocks.size(); ++b) {
    const Dense &d           = p.blocks[b];
    const std::int64_t first = p.partition.offsets[b];
    for (int r = 0; r < d.n; ++r) {
      std::map<std::int32_t, double> row;
      for (int c = 0; c < d.n; ++c)
        row[static_cast<std::int32_t>(first + c)] = d(r, c);
      for (int k = 0; k < 2; ++k) {
        const std::int64_t col = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(p.nrows));
        if (col < first || col >= first + d.n) row[static_cast<std::int32_t>(col)] = 7.0;
      }
      for (const auto &e : row) {
        p.cols.push_back(e.first);
        p.vals.push_back(e.second);
      }
      p.rowptr.push_back(static_cast<std::int32_t>(p.vals.size()));
    }
  }
  p.inverted = invert_diagonal_blocks(p.view(), p.partition);
  return p;
}

std::vector<int> random_sizes(std::int64_t nrows, std::mt19937_64 &rng)
{
  // runs of equal sizes, so groups hold several blocks
  std::vector<int> s;
  std::int64_t n = 0;
  while (n < nrows) {
    const int size = 1 + static_cast<int>(rng() % kMaxBlockSize);
    const int len  = 1 + static_cast<int>(rng() % 12);
    for (int k = 0; k < len && n < nrows; ++k) {
      const int b = static_cast<int>(std::min<std::int64_t>(size, nrows - n));
      s.push_back(b);
      n += b;
    }
  }
  return s;
}

// Formats in runs (so groups fill), every format present.
std::vector<Format> random_formats(std::size_t nblocks, std::mt19937_64 &rng)
{
  std::vector<Format> f;
  while (f.size() < nblocks) {
    const Format x = kFormats[rng() % kFormatCount];
    const int len  = 1 + static_cast<int>(rng() % 20);
    for (int k = 0; k < len && f.size() < nblocks; ++k)
      f.push_back(x);
  }
  return f;
}

std::vector<double> random_vector(std::size_t n, unsigned seed)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  std::vector<double> v(n);
  for (auto &x : v)
    x = (rng() & 1 ? -1.0 : 1.0) * u(rng); // no zeros: the sign of a zero sum is not at stake
  return v;
}

// y_i[r] = sum_c stored(r, c) x_i[c], c increasing, from 0.0 (transpose: stored(c, r)).
std::vector<double> dense_apply(const BlockJacobiStorage &s, const std::vector<double> &x, bool transpose)
{
  std::vector<double> y(static_cast<std::size_t>(s.nrows), kNaN);
  for (const BlockGroup &g : s.groups)
    for (int i = 0; i < g.nblocks; ++i) {
      const std::int64_t base = g.row_begin + static_cast<std::int64_t>(i) * g.block_size;
      for (int r = 0; r < g.block_size; ++r) {
        double acc = 0.0;
        for (int c = 0; c < g.block_size; ++c)
          acc += (transpose ? stored_entry(s, g, i, c, r) : stored_entry(s, g, i, r, c)) *
                 x[static_cast<std::size_t>(base + c)];
        y[static_cast<std::size_t>(base + r)] = acc;
      }
    }
  return y;
}

void expect_same(const std::vector<double> &got, const std::vector<double> &want, const char *what)
{
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(same(got[i], want[i])) << what << ": row " << i << ": " << got[i] << " vs " << want[i];
}

void check_reference(const BlockJacobiStorage &s, unsigned seed)
{
  const std::vector<double> x = random_vector(static_cast<std::size_t>(s.nrows), seed);
  for (bool transpose : {false, true}) {
    SCOPED_TRACE(transpose ? "transpose" : "no transpose");
    std::vector<double> y(x.size(), kNaN);
    reference::block_jacobi_apply(s, x.data(), y.data(), transpose);
    expect_same(y, dense_apply(s, x, transpose), "reference");
  }
}

std::int64_t count_format(const BlockJacobiStorage &s, Format f)
{
  return std::count(s.block_format.begin(), s.block_format.end(), static_cast<std::uint8_t>(f));
}

// =================================================================================
// 7. reference against the dense product
// =================================================================================

TEST(BlockJacobiApplyReference, EveryFormatEveryBlockSize)
{
  std::mt19937_64 rng(41);
  std::vector<Dense> blocks;
  for (int n = 1; n <= kMaxBlockSize; ++n)
    for (int k = 0; k < 3; ++k)
      blocks.push_back(random_block(n, 30.0, (k & 1) != 0, 1.0, rng));
  for (int n : {3, 32, 1, 17})
    blocks.push_back(random_block(n, 10.0, false, 1.0, rng));
  const Problem p = make_problem(std::move(blocks), 1);
  ASSERT_EQ(p.inverted.failed_blocks, 0);
  for (Format f : kFormats) {
    SCOPED_TRACE(format_name(f));
    const std::vector<Format> formats(p.blocks.size(), f);
    for (int gb : {1, kDefaultGroupBlocks, 64}) {
      const BlockJacobiStorage s = pack_block_jacobi(p.inverted, formats, gb);
      ASSERT_EQ(count_format(s, f), static_cast<std::int64_t>(p.blocks.size()));
      check_reference(s, 100 + static_cast<unsigned>(gb));
    }
  }
}

TEST(BlockJacobiApplyReference, ForcedPolicyPerFormat)
{
  std::mt19937_64 rng(43);
  std::vector<Dense> blocks;
  for (int k = 0; k < 200; ++k)
    blocks.push_back(random_block(1 + static_cast<int>(rng() % kMaxBlockSize), 5.0, (k & 1) != 0, 1.0, rng));
  const Problem p = make_problem(std::move(blocks), 2);
  for (Format f : kFormats) {
    SCOPED_TRACE(format_name(f));
    FormatSelection sel;
    sel.policy   = FormatPolicy::forced;
    sel.forced   = f;
    sel.accuracy = 1.0; // kappa <= ~5 * 32: every format admissible, no range problems at scale 1
    SelectionStats st;
    const BlockJacobiStorage s = pack_block_jacobi(p.inverted, select_block_formats(p.inverted, sel, &st));
    EXPECT_GT(count_format(s, f), 150);
    check_reference(s, 7);
  }
}

TEST(BlockJacobiApplyReference, MixedFormatsAndSelectedFormats)
{
  std::mt19937_64 rng(47);
  std::vector<Dense> blocks;
  const std::vector<int> sizes = random_sizes(6000, rng);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double scales[] = {1.0, 1.0, 1e-6, 1e6, 1e-12, 1e9, 1e200, 1e-200};
  for (int n : sizes)
    blocks.push_back(random_block(n, std::pow(10.0, 6 * u(rng)), (rng() & 1) != 0, scales[rng() % 8], rng));
  const Problem p = make_problem(std::move(blocks), 3);
  ASSERT_EQ(p.inverted.failed_blocks, 0);
  {
    SCOPED_TRACE("random formats");
    const std::vector<Format> formats = random_formats(p.blocks.size(), rng);
    for (int gb : {1, 3, kDefaultGroupBlocks})
      check_reference(pack_block_jacobi(p.inverted, formats, gb), 11);
  }
  for (double acc : {1e-1, 1e-2, 1e-4}) {
    SCOPED_TRACE("policy all, accuracy " + std::to_string(acc));
    FormatSelection sel;
    sel.policy                 = FormatPolicy::all;
    sel.accuracy               = acc;
    const BlockJacobiStorage s = pack_block_jacobi(p.inverted, select_block_formats(p.inverted, sel));
    int used                   = 0;
    for (Format f : kFormats)
      used += count_format(s, f) > 0;
    // accuracy 1e-4 rules out the 16-bit formats (fp16 needs kappa <= 0.2): fp32, fp11_20, fp64 remain
    EXPECT_GE(used, acc < 1e-3 ? 3 : 4);
    check_reference(s, 13);
  }
}

TEST(BlockJacobiApplyReference, KnownSmallResult)
{
  // diag blocks [2] and [[1,1],[0,1]] (inverse [[1,-1],[0,1]]), fp64:
  // x = (4, 3, 5): y = (2, 3 - 5, 5) = (2, -2, 5); transpose: (2, 3, -3 + 5) = (2, 3, 2)
  std::vector<Dense> blocks;
  Dense a(1);
  a(0, 0) = 2.0;
  Dense b(2);
  b(0, 0) = 1.0;
  b(0, 1) = 1.0;
  b(1, 1) = 1.0;
  blocks.push_back(a);
  blocks.push_back(b);
  const Problem p = make_problem(std::move(blocks), 4);
  for (Format f : kFormats) {
    SCOPED_TRACE(format_name(f));
    const BlockJacobiStorage s = pack_block_jacobi(p.inverted, std::vector<Format>(2, f));
    const double x[]           = {4.0, 3.0, 5.0};
    double y[3]                = {kNaN, kNaN, kNaN};
    reference::block_jacobi_apply(s, x, y, false);
    EXPECT_EQ(y[0], 2.0);
    EXPECT_EQ(y[1], -2.0);
    EXPECT_EQ(y[2], 5.0);
    reference::block_jacobi_apply(s, x, y, true);
    EXPECT_EQ(y[0], 2.0);
    EXPECT_EQ(y[1], 3.0);
    EXPECT_EQ(y[2], 2.0);
  }
}

// =================================================================================
// 8. OpenMP against reference
// =================================================================================

// The OpenMP apply against the reference, bitwise, on 1-3 threads, with each kernel for fp64 small blocks
// (interleaved, blockwise). With stream_stores_from (>= 0), with that threshold of streaming stores, y at the
// start of an allocation (16-byte aligned: the streaming stores) and one value further (8 bytes off: plain stores
// instead).
void compare_openmp(const BlockJacobiStorage &s, unsigned seed, std::int64_t stream_stores_from = -1)
{
  const std::vector<double> x = random_vector(static_cast<std::size_t>(s.nrows), seed);
  const std::size_t shifts    = stream_stores_from < 0 ? 1 : 2;
  for (bool transpose : {false, true}) {
    SCOPED_TRACE(transpose ? "transpose" : "no transpose");
    std::vector<double> ref(x.size(), kNaN);
    reference::block_jacobi_apply(s, x.data(), ref.data(), transpose);
    for (int nt : {1, 2, 3})
      for (openmp::Fp64SmallBlocks kernel : {openmp::Fp64SmallBlocks::interleaved, openmp::Fp64SmallBlocks::blockwise})
        for (std::size_t shift = 0; shift < shifts; ++shift) {
          SCOPED_TRACE("threads " + std::to_string(nt) + ", y " + std::to_string(8 * shift) + " bytes off, fp64 " +
                       (kernel == openmp::Fp64SmallBlocks::blockwise ? "blockwise" : "interleaved"));
          std::vector<double> room(x.size() + 1, kNaN);
          ASSERT_EQ(reinterpret_cast<std::uintptr_t>(room.data()) % 16, 0u);
          double *y = room.data() + shift;
          openmp::ApplyOptions options;
          options.nthreads   = nt;
          options.fp64_small = kernel;
          if (stream_stores_from >= 0) options.stream_stores_from = stream_stores_from;
          openmp::block_jacobi_apply(s, x.data(), y, transpose, options);
          expect_same(std::vector<double>(y, y + x.size()), ref, "openmp");
        }
  }
}

TEST(BlockJacobiApplyOpenmp, MatchesReferenceOnALargePartition)
{
  std::mt19937_64 rng(53);
  const std::vector<int> sizes = random_sizes(100003, rng);
  std::vector<Dense> blocks;
  for (int n : sizes)
    blocks.push_back(dominant_block(n, rng));
  const Problem p = make_problem(std::move(blocks), 5);
  ASSERT_EQ(p.inverted.failed_blocks, 0);
  ASSERT_EQ(p.nrows, 100003);
  const std::vector<Format> formats = random_formats(sizes.size(), rng);
  for (int gb : {1, 5, kDefaultGroupBlocks}) {
    SCOPED_TRACE("group_blocks " + std::to_string(gb));
    compare_openmp(pack_block_jacobi(p.inverted, formats, gb), 17);
  }
  for (Format f : {Format::fp16, Format::fp64}) {
    SCOPED_TRACE(format_name(f));
    compare_openmp(pack_block_jacobi(p.inverted, std::vector<Format>(sizes.size(), f)), 19);
  }
  FormatSelection sel;
  compare_openmp(pack_block_jacobi(p.inverted, select_block_formats(p.inverted, sel)), 23);
}

// pack_block_jacobi takes any group_blocks (the header sets no upper limit): groups of
// 32 blocks of 32 rows hold 1024 rows, the apply must handle them.
TEST(BlockJacobiApplyOpenmp, GroupsLargerThanTheDefault)
{
  std::mt19937_64 rng(57);
  std::vector<Dense> blocks;
  for (int k = 0; k < 200; ++k)
    blocks.push_back(dominant_block(k < 100 ? 32 : 1 + static_cast<int>(rng() % 32), rng));
  const Problem p = make_problem(std::move(blocks), 7);
  for (int gb : {16, 32, 100}) {
    SCOPED_TRACE("group_blocks " + std::to_string(gb));
    const std::vector<Format> formats(p.blocks.size(), Format::fp32);
    const BlockJacobiStorage s = pack_block_jacobi(p.inverted, formats, gb);
    ASSERT_EQ(s.groups.front().nblocks, std::min(gb, 100));
    check_reference(s, 41);
    compare_openmp(s, 43);
  }
}

TEST(BlockJacobiApplyOpenmp, FewerBlocksThanThreads)
{
  std::mt19937_64 rng(59);
  for (int nblocks : {1, 2, 3, 5}) {
    std::vector<Dense> blocks;
    for (int k = 0; k < nblocks; ++k)
      blocks.push_back(dominant_block(1 + static_cast<int>(rng() % 32), rng));
    const Problem p = make_problem(std::move(blocks), 6);
    compare_openmp(pack_block_jacobi(p.inverted, random_formats(static_cast<std::size_t>(nblocks), rng), 1), 29);
    compare_openmp(pack_block_jacobi(p.inverted, random_formats(static_cast<std::size_t>(nblocks), rng)), 31);
  }
}

// Small blocks (1 to 8 rows) take their own kernels: 8 rows of several blocks per
// register, whole groups of 8 blocks streamed in storage order, partial groups and
// the vector's last rows with masks. Every size, every format alone and mixed, block
// counts that leave every remainder, group sizes that are and are not 8.
TEST(BlockJacobiApplyOpenmp, SmallBlocksEverySizeFormatAndRemainder)
{
  std::mt19937_64 rng(71);
  for (int n = 1; n <= 8; ++n)
    for (int nblocks : {1, 2, 7, 8, 9, 16, 8 * 5 + 3, 8 * 7 + 5}) {
      SCOPED_TRACE("block size " + std::to_string(n) + ", blocks " + std::to_string(nblocks));
      std::vector<Dense> blocks;
      for (int k = 0; k < nblocks; ++k)
        blocks.push_back(dominant_block(n, rng));
      const Problem p = make_problem(std::move(blocks), 9);
      ASSERT_EQ(p.inverted.failed_blocks, 0);
      for (Format f : kFormats) {
        SCOPED_TRACE(format_name(f));
        for (int gb : {1, 3, kDefaultGroupBlocks, 13})
          compare_openmp(pack_block_jacobi(p.inverted, std::vector<Format>(static_cast<std::size_t>(nblocks), f), gb),
                         47);
      }
      for (int gb : {5, kDefaultGroupBlocks})
        compare_openmp(pack_block_jacobi(p.inverted, random_formats(static_cast<std::size_t>(nblocks), rng), gb), 53);
    }
}

// Storage of kPrefetchFromBytes or more: the loop over a run's full groups asks for
// values ahead of it, and stops asking for the last groups of the run. Runs of
// every small size in each format, cut by the threads' shares and by a group of
// another size in the middle, long enough that each format's storage streams;
// and the same with y written by streaming stores and by plain ones (the
// threshold at 0 and at its largest).
TEST(BlockJacobiApplyOpenmp, SmallBlocksStreamedFromMemory)
{
  std::mt19937_64 rng(83);
  for (int n : {1, 3, 8})
    for (Format f : {Format::fp64, Format::fp32, Format::fp16}) {
      SCOPED_TRACE("block size " + std::to_string(n) + ", " + format_name(f));
      const std::int64_t nblocks =
          kPrefetchFromBytes / (n * n * static_cast<std::int64_t>(format_bytes(f))) + 8 * 3 + 5;
      std::vector<Dense> blocks;
      for (std::int64_t k = 0; k < nblocks; ++k)
        blocks.push_back(dominant_block(k == nblocks / 2 ? n % 8 + 1 : n, rng));
      const Problem p            = make_problem(std::move(blocks), 11);
      const BlockJacobiStorage s = pack_block_jacobi(p.inverted, std::vector<Format>(p.blocks.size(), f));
      ASSERT_GE(s.value_bytes(), kPrefetchFromBytes);
      ASSERT_GE(s.runs.size(), 3u); // full groups, (a short one,) the other size, full groups(, a short one)
      ASSERT_GT(s.runs.front().end - s.runs.front().first, 500); // (the values ahead: 1 to 256 groups)
      compare_openmp(s, 67);
      compare_openmp(s, 67, 0);                                        // streaming stores
      compare_openmp(s, 67, std::numeric_limits<std::int64_t>::max()); // plain stores
    }
}

// Runs of different small sizes and formats one after another (the kernels switch
// between runs of groups), and large blocks mixed in.
TEST(BlockJacobiApplyOpenmp, SmallBlocksMixedSizes)
{
  std::mt19937_64 rng(73);
  std::vector<Dense> blocks;
  std::int64_t rows = 0;
  while (rows < 20000) {
    const int n   = rng() % 10 == 0 ? 9 + static_cast<int>(rng() % 24) : 1 + static_cast<int>(rng() % 8);
    const int len = 1 + static_cast<int>(rng() % 30);
    for (int k = 0; k < len; ++k, rows += n)
      blocks.push_back(dominant_block(n, rng));
  }
  const Problem p = make_problem(std::move(blocks), 10);
  ASSERT_EQ(p.inverted.failed_blocks, 0);
  for (int gb : {1, 6, kDefaultGroupBlocks, 16}) {
    SCOPED_TRACE("group_blocks " + std::to_string(gb));
    compare_openmp(pack_block_jacobi(p.inverted, random_formats(p.blocks.size(), rng), gb), 59);
  }
  FormatSelection sel;
  compare_openmp(pack_block_jacobi(p.inverted, select_block_formats(p.inverted, sel)), 61);
}

// Zeros in x: each sum starts from +0.0 as in the reference, so a block whose
// products are all -0.0 gives +0.0 (a kernel starting from its first product
// would give -0.0 and differ bitwise).
TEST(BlockJacobiApplyOpenmp, ZeroSumsHaveTheReferenceSign)
{
  std::mt19937_64 rng(79);
  for (int n = 1; n <= 8; ++n) {
    std::vector<Dense> blocks;
    for (int k = 0; k < 21; ++k)
      blocks.push_back(dominant_block(n, rng));
    const Problem p = make_problem(std::move(blocks), 11);
    for (Format f : kFormats) {
      const BlockJacobiStorage s = pack_block_jacobi(p.inverted, std::vector<Format>(p.blocks.size(), f));
      std::vector<double> x      = random_vector(static_cast<std::size_t>(s.nrows), 83);
      for (std::size_t i = 0; i < x.size(); i += 2)
        x[i] = 0.0;
      for (std::size_t i = 0; i < x.size(); ++i) // whole blocks of zeros, every third block
        if ((i / static_cast<std::size_t>(n)) % 3 == 0) x[i] = (i & 1) ? 0.0 : -0.0;
      for (bool transpose : {false, true}) {
        std::vector<double> ref(x.size(), kNaN), y(x.size(), kNaN);
        reference::block_jacobi_apply(s, x.data(), ref.data(), transpose);
        openmp::block_jacobi_apply(s, x.data(), y.data(), transpose, 1);
        expect_same(y, ref, "zeros");
        EXPECT_TRUE(same(ref[0], 0.0)) << "n " << n; // -0.0 would have another bit pattern
      }
    }
  }
}

// =================================================================================
// 9. End-to-end accuracy
// =================================================================================

// Per block, with E the computed fp64 inverse, E~ the stored one, Delta = E~ - E:
//   I - E~ D = (I - E D) - Delta D,
//   ||Delta D||_1 <= ||Delta||_1 ||D||_1 = (||Delta||_1 / ||E||_1) kappa_1 <= accuracy
// by the selection rule (reduced-range formats: checked directly; the others:
// |Delta| <= u |E| entrywise in the normal range, and kappa_1 u <= accuracy).
// The Gauss-Jordan residual ||I - E D||_1 <= 33 n u kappa_1 (Higham sec. 14.4,
// growth <= 4, see the core tests), and forming E~ D - I in fp64 adds at most
// n u ||E~||_1 ||D||_1 <= n u (1 + accuracy) kappa_1. So
//   ||I - E~ D||_1 <= accuracy + 35 n u kappa_1          (with accuracy <= 1).
// For the vector: z = E~ fl(D x) computed by the kernel; fl(D x) has error
// <= n u |D||x| and the apply adds <= n u |E~||fl(D x)|, so
//   ||z - x||_1 / ||x||_1 <= accuracy + 38 n u kappa_1.
// kappa_2 <= 1e6 (kappa_1 <= n kappa_2) keeps the slack below 4e-6, far under the accuracies.
TEST(BlockJacobiApplyAccuracy, PreconditionerKeepsTheRequestedAccuracy)
{
  std::mt19937_64 rng(61);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Dense> blocks;
  const double scales[] = {1.0, 1.0, 1.0, 1e-5, 1e5, 1e-9, 1e-40, 1e40, 1e250, 1e-250};
  for (int k = 0; k < 1500; ++k) {
    const int n = 1 + static_cast<int>(rng() % kMaxBlockSize);
    blocks.push_back(random_block(n, std::pow(10.0, 6 * u(rng) * u(rng)), (k % 3) != 0, scales[rng() % 10], rng));
  }
  const Problem p = make_problem(std::move(blocks), 8);
  ASSERT_EQ(p.inverted.failed_blocks, 0);
  const std::vector<double> x = random_vector(static_cast<std::size_t>(p.nrows), 37);
  // y = D x over the diagonal blocks only
  std::vector<double> dx(x.size());
  for (std::size_t b = 0; b < p.blocks.size(); ++b) {
    const Dense &d           = p.blocks[b];
    const std::int64_t first = p.partition.offsets[b];
    for (int r = 0; r < d.n; ++r) {
      double s = 0.0;
      for (int c = 0; c < d.n; ++c)
        s += d(r, c) * x[static_cast<std::size_t>(first + c)];
      dx[static_cast<std::size_t>(first + r)] = s;
    }
  }
  for (double acc : {1e-1, 1e-2, 1e-3}) {
    for (FormatPolicy pol : {FormatPolicy::all, FormatPolicy::ieee, FormatPolicy::range_preserving}) {
      SCOPED_TRACE(std::string(format_policy_name(pol)) + " accuracy " + std::to_string(acc));
      FormatSelection sel;
      sel.policy                        = pol;
      sel.accuracy                      = acc;
      const std::vector<Format> formats = select_block_formats(p.inverted, sel);
      const BlockJacobiStorage s        = pack_block_jacobi(p.inverted, formats);
      std::vector<double> z(x.size(), kNaN);
      openmp::block_jacobi_apply(s, dx.data(), z.data(), false, 2);
      double worst[kFormatCount] = {};
      std::int64_t b             = 0;
      for (const BlockGroup &g : s.groups)
        for (int i = 0; i < g.nblocks; ++i, ++b) {
          const Dense &d     = p.blocks[static_cast<std::size_t>(b)];
          const int n        = d.n;
          const double kappa = p.inverted.kappa[static_cast<std::size_t>(b)];
          // ||I - E~ D||_1 from the stored entries
          Dense r(n);
          for (int rr = 0; rr < n; ++rr)
            for (int cc = 0; cc < n; ++cc) {
              double sum = 0.0;
              for (int k = 0; k < n; ++k)
                sum += stored_entry(s, g, i, rr, k) * d(k, cc);
              r(rr, cc) = (rr == cc ? 1.0 : 0.0) - sum;
            }
          const double res = norm1(r);
          EXPECT_LE(res, acc + 35.0 * n * kU * kappa)
              << "block " << b << " n " << n << " format " << format_name(g.format) << " kappa " << kappa;
          // the vector
          const std::int64_t first = p.partition.offsets[static_cast<std::size_t>(b)];
          double err = 0.0, nx = 0.0;
          for (int k = 0; k < n; ++k) {
            err += std::fabs(z[static_cast<std::size_t>(first + k)] - x[static_cast<std::size_t>(first + k)]);
            nx += std::fabs(x[static_cast<std::size_t>(first + k)]);
          }
          EXPECT_LE(err / nx, acc + 38.0 * n * kU * kappa)
              << "block " << b << " n " << n << " format " << format_name(g.format) << " kappa " << kappa;
          worst[static_cast<int>(g.format)] = std::max(worst[static_cast<int>(g.format)], res / acc);
        }
      ASSERT_EQ(b, static_cast<std::int64_t>(p.blocks.size()));
      // the narrow formats are used, so the bound is exercised (not met by storing everything in fp64)
      std::int64_t narrow = 0;
      for (Format f : {Format::fp16, Format::bf16, Format::fp11_4})
        narrow += std::count(formats.begin(), formats.end(), f);
      std::int64_t fp64 = std::count(formats.begin(), formats.end(), Format::fp64);
      // (range preserving: fp11_4 needs kappa <= 16 accuracy, out of reach below accuracy 1/16)
      if (pol != FormatPolicy::range_preserving || acc >= 0.0625) {
        EXPECT_GT(narrow, 0);
      }
      EXPECT_LT(fp64, static_cast<std::int64_t>(formats.size()) / 2);
      for (int f = 0; f < kFormatCount; ++f)
        EXPECT_LE(worst[f], 1.01) << format_name(Format(f));
    }
  }
}

} // namespace
