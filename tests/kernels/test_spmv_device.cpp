// The GPU kernels (cuda_hip/) against the reference backend, bitwise, in every
// storage mode, layout of the CPU copy, summation order and read level:
// products with the SELL copy of A and of A^T (the transpose). Built
// twice: against the emulated backend (the same kernel source run on the host:
// every machine, CI included, under the sanitizers too) and, where a GPU
// backend is built, against the device (PETSCMP_TEST_GPU; the tests skip when
// the machine has no usable device).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "block_jacobi_apply.hpp"
#include "csr_matrices.hpp"
#include "cuda_hip/block_jacobi_apply.hpp" // block_format_chunks
#include "cuda_hip/sell_spmv.hpp"          // kWarpRowGroup
#include "device.hpp"
#include "petscmp/core/compact_csr.hpp"
#include "petscmp/core/sell_copy.hpp"
#include "spmv.hpp"

using namespace petscmp;
using namespace petscmp_test;

namespace petscmp {
void PrintTo(StorageMode m, std::ostream *os)
{
  *os << storage_mode_name(m);
}
} // namespace petscmp

namespace {

bool same(double a, double b)
{
  return std::memcmp(&a, &b, sizeof a) == 0;
}

#if defined(PETSCMP_TEST_GPU)
bool skip_without_device()
{
  static bool told = false; // say why once, not in every test
  std::string why;
  if (gpu::device_available(&why)) return false;
  if (!told) std::printf("no %s device: %s\n", gpu::backend_name(), why.c_str());
  told = true;
  return true;
}
#define SKIP_WITHOUT_DEVICE()                                                                                          \
  do {                                                                                                                 \
    if (skip_without_device()) GTEST_SKIP() << "no usable GPU on this machine";                                        \
  } while (0)
#else
#define SKIP_WITHOUT_DEVICE() (void)0
#endif

// y = A x (+ z) by the backend under test; with alias, z is passed as y (y
// holds z on entry).
void backend_spmv(const SellCopy &S, int read, const std::vector<double> &x, const std::vector<double> *z,
                  std::vector<double> &y, bool alias, WarpRows how)
{
  if (alias) y = *z;
#if defined(PETSCMP_TEST_GPU)
  gpu::DeviceSell d(S);
  gpu::DeviceVector dx(x.size()), dy(y.size()), dz(z ? z->size() : 0);
  dx.upload(x.data());
  dy.upload(y.data());
  if (z && !alias) dz.upload(z->data());
  gpu::spmv(d, read, dx.data(), alias ? dy.data() : z ? dz.data() : nullptr, dy.data(), how);
  gpu::synchronize();
  dy.download(y.data());
#else
  emulated::spmv(S, read, x.data(), alias ? y.data() : z ? z->data() : nullptr, y.data(), how);
#endif
}

std::vector<int> read_levels(StorageMode mode)
{
  const int n = storage_mode_segments(mode);
  std::vector<int> levels{0};
  for (int r = 1; r < n; ++r)
    levels.push_back(r);
  return levels;
}

// The ways of taking long rows to test on S: both where S has warp-per-row parts.
std::vector<WarpRows> warp_row_variants(const SellCopy &S)
{
  for (const SellPart &p : S.parts)
    if (p.warp_rows) return {WarpRows::one, WarpRows::grouped};
  return {WarpRows::one};
}

// Every row in exactly one part, the lengths adding up to the nonzeros.
void expect_rows_covered(const SellCopy &S)
{
  std::vector<int> seen(static_cast<std::size_t>(S.nrows), 0);
  std::int64_t entries = 0;
  for (const SellPart &p : S.parts)
    for (std::size_t l = 0; l < p.rows.size(); ++l)
      if (p.rows[l] >= 0) {
        ++seen[static_cast<std::size_t>(p.rows[l])];
        entries += p.lengths[l];
      } else {
        ASSERT_EQ(p.lengths[l], 0) << "a padding lane has entries";
      }
  for (std::size_t i = 0; i < seen.size(); ++i)
    ASSERT_EQ(seen[i], 1) << "row " << i << " is in " << seen[i] << " parts";
  EXPECT_EQ(entries, S.nnz);
}

template <typename Index>
void compare_with_reference(const Matrix<Index> &a, StorageMode mode, SumOrder order, Layout layout, int slice_rows)
{
  SCOPED_TRACE(std::string(storage_mode_name(mode)) + (order == SumOrder::paired ? " paired " : " sequential ") +
               layout_name(layout) + " index " + std::to_string(8 * sizeof(Index)) + " slice " +
               std::to_string(slice_rows));
  StorageOptions opts;
  opts.mode         = mode;
  opts.min_run_rows = 32;
  opts.order        = order;
  opts.layout       = layout;
  CompactCsr A      = build_compact_csr(a.view(), opts);
  const SellCopy S  = make_sell_copy(A, a.rowptr.data(), a.cols.data(), slice_rows);
  expect_rows_covered(S);
  const std::size_t nr = static_cast<std::size_t>(a.nrows), nc = static_cast<std::size_t>(a.ncols);
  const std::vector<double> x = random_vector(nc, 301), z = random_vector(nr, 302);
  const std::vector<double> xt = random_vector(nr, 303), zt = random_vector(nc, 304);
  for (int read : read_levels(mode)) {
    SCOPED_TRACE("segments read " + std::to_string(read));
    A.read_segments = read;
    std::vector<double> ref(nr), refz(nr);
    reference::spmv(A, a.pattern(), x.data(), nullptr, ref.data());
    reference::spmv(A, a.pattern(), x.data(), z.data(), refz.data());
    for (WarpRows how : warp_row_variants(S)) {
      SCOPED_TRACE(how == WarpRows::grouped ? "long rows grouped" : "long rows one a warp");
      std::vector<double> y(nr, 5.0), yz(nr, 5.0), ya(nr, 5.0);
      backend_spmv(S, read, x, nullptr, y, false, how);
      backend_spmv(S, read, x, &z, yz, false, how);
      backend_spmv(S, read, x, &z, ya, true, how);
      for (std::size_t i = 0; i < nr; ++i) {
        ASSERT_TRUE(same(y[i], ref[i])) << "row " << i << ": " << y[i] << " vs " << ref[i];
        ASSERT_TRUE(same(yz[i], refz[i])) << "row " << i;
        ASSERT_TRUE(same(ya[i], refz[i])) << "row " << i << " (z aliasing y)";
      }
    }
    // the transpose: a product with the SELL copy of A^T at this read level
    const SellCopy T = make_sell_transpose(A, a.rowptr.data(), a.cols.data(), read, slice_rows);
    expect_rows_covered(T);
    std::vector<double> reft(nc), reftz(nc);
    reference::spmv_transpose(A, a.pattern(), xt.data(), nullptr, reft.data());
    reference::spmv_transpose(A, a.pattern(), xt.data(), zt.data(), reftz.data());
    for (WarpRows how : warp_row_variants(T)) {
      SCOPED_TRACE(how == WarpRows::grouped ? "transpose, long rows grouped" : "transpose, long rows one a warp");
      std::vector<double> t(nc, 5.0), tz(nc, 5.0), ta(nc, 5.0);
      backend_spmv(T, 0, xt, nullptr, t, false, how);
      backend_spmv(T, 0, xt, &zt, tz, false, how);
      backend_spmv(T, 0, xt, &zt, ta, true, how);
      for (std::size_t j = 0; j < nc; ++j) {
        ASSERT_TRUE(same(t[j], reft[j])) << "column " << j << ": " << t[j] << " vs " << reft[j];
        ASSERT_TRUE(same(tz[j], reftz[j])) << "column " << j;
        ASSERT_TRUE(same(ta[j], reftz[j])) << "column " << j << " (z aliasing y)";
      }
    }
  }
}

const RowRecipe kRows{4096, 5, 11, 8, 997};
// Rows of 5 to about 360 entries (of 400 columns): most longer than
// kWarpRowLength, in A and in A^T (warp-per-row parts), the rest in slices.
const RowRecipe kLongRows{64, 5, 900};

template <typename Index> void run_mode(StorageMode mode, int slice_rows)
{
  for (Shape shape : {Shape::fragmented, Shape::runs}) { // a format per row / runs of one format
    const Matrix<Index> a =
        random_matrix<Index>(Index(20000), Index(5000), shape, 61 + static_cast<unsigned>(shape), kRows);
    for (Layout layout : {Layout::csr, Layout::sliced})
      for (SumOrder order : {SumOrder::sequential, SumOrder::paired})
        compare_with_reference(a, mode, order, layout, slice_rows);
  }
  RowRecipe node_rows     = kRows; // nodes of 1..5 rows, 16-bit column offsets but for one node in eight
  node_rows.max_node_rows = 5;
  node_rows.node_window   = 20000;
  const Matrix<Index> n   = random_matrix<Index>(Index(20000), Index(60000), Shape::runs, 62, node_rows);
  for (SumOrder order : {SumOrder::sequential, SumOrder::paired})
    compare_with_reference(n, mode, order, Layout::node, slice_rows);
  const Matrix<Index> s27 = stencil_matrix<Index>(Index(16), 27, Shape::runs, 63, 1024); // shifted and narrow slices
  compare_with_reference(s27, mode, SumOrder::paired, Layout::sliced, slice_rows);
  compare_with_reference(s27, mode, SumOrder::sequential, Layout::automatic, slice_rows);
  // columns anywhere in 150000: slices wider than 16-bit offsets reach (32-bit columns)
  const Matrix<Index> w = random_matrix<Index>(Index(20000), Index(150000), Shape::fragmented, 66, kRows);
  compare_with_reference(w, mode, SumOrder::paired, Layout::csr, slice_rows);
  // an MPI matrix's off-diagonal block: rectangular, mostly empty rows
  const Matrix<Index> b = random_matrix<Index>(Index(20000), Index(3000), Shape::mostly_empty, 64, kRows);
  compare_with_reference(b, mode, SumOrder::paired, Layout::csr, slice_rows);
  // long rows: a warp per row, the products added in both orders
  const Matrix<Index> l = random_matrix<Index>(Index(600), Index(400), Shape::runs, 65, kLongRows);
  compare_with_reference(l, mode, SumOrder::paired, Layout::csr, slice_rows);
  compare_with_reference(l, mode, SumOrder::sequential, Layout::sliced, slice_rows);
}

class SpmvDevice : public ::testing::TestWithParam<StorageMode> {};

} // namespace

TEST_P(SpmvDevice, BitwiseReferenceInt32)
{
  SKIP_WITHOUT_DEVICE();
  run_mode<std::int32_t>(GetParam(), kGpuSliceRows);
}
TEST_P(SpmvDevice, BitwiseReferenceInt64)
{
  SKIP_WITHOUT_DEVICE();
  run_mode<std::int64_t>(GetParam(), kGpuSliceRows);
}
#if !defined(PETSCMP_TEST_GPU)
// The kernel takes the slice height from the copy: 7 rows (no divisor of the
// block size) reads lanes and padding right too.
TEST_P(SpmvDevice, BitwiseReferenceOddSliceHeight)
{
  run_mode<std::int32_t>(GetParam(), 7);
}
#endif

INSTANTIATE_TEST_SUITE_P(Modes, SpmvDevice,
                         ::testing::Values(StorageMode::lossless, StorageMode::fp32, StorageMode::fp16,
                                           StorageMode::bf16, StorageMode::fp11_20, StorageMode::fp11_4,
                                           StorageMode::tolerance, StorageMode::rowsplit, StorageMode::split2,
                                           StorageMode::split4),
                         [](const ::testing::TestParamInfo<StorageMode> &info) {
                           return std::string(storage_mode_name(info.param));
                         });

namespace {

// A diagonal SELL copy whose row i stores the bit pattern patterns[i] in S:
// y = -0 + v * 1 is the decoded value v itself (signed zeros included), so the
// product shows what the kernel's decoder gives for every pattern.
template <typename S, typename Bits> SellCopy diagonal_of_patterns(const std::vector<Bits> &patterns)
{
  SellCopy c;
  c.nrows = c.ncols = static_cast<std::int64_t>(patterns.size());
  c.nnz             = c.nrows;
  SellPart p;
  p.format                = storage_traits<S>::format;
  p.slices                = (c.nrows + c.slice_rows - 1) / c.slice_rows;
  const std::size_t lanes = static_cast<std::size_t>(p.slices * c.slice_rows);
  p.rows.assign(lanes, -1);
  p.lengths.assign(lanes, 0);
  p.slice_offsets.resize(static_cast<std::size_t>(p.slices + 1));
  for (std::int64_t q = 0; q <= p.slices; ++q)
    p.slice_offsets[static_cast<std::size_t>(q)] = q * c.slice_rows;
  p.cols.assign(lanes, 0);
  p.values.resize(lanes * sizeof(S));
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    p.rows[i]    = static_cast<std::int32_t>(i);
    p.lengths[i] = 1;
    p.cols[i]    = static_cast<std::int32_t>(i);
    std::memcpy(p.values.as<unsigned char>() + i * sizeof(S), &patterns[i], sizeof(S));
  }
  c.parts.push_back(std::move(p));
  return c;
}

template <typename S, typename Bits> void expect_decodes(const std::vector<Bits> &patterns)
{
  static_assert(sizeof(S) == sizeof(Bits), "one pattern per stored value");
  const SellCopy c = diagonal_of_patterns<S>(patterns);
  const std::vector<double> x(patterns.size(), 1.0), z(patterns.size(), -0.0);
  std::vector<double> y(patterns.size());
  backend_spmv(c, 0, x, &z, y, false, WarpRows::one);
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    S s;
    std::memcpy(&s, &patterns[i], sizeof s);
    const double host = decode(s);
    if (std::isnan(host))
      ASSERT_TRUE(std::isnan(y[i])) << std::hex << +patterns[i];
    else
      ASSERT_TRUE(same(y[i], host)) << std::hex << +patterns[i] << ": " << y[i] << " vs " << host;
  }
}

std::vector<std::uint16_t> all_16bit_patterns()
{
  std::vector<std::uint16_t> p(65536);
  std::iota(p.begin(), p.end(), std::uint16_t{0});
  return p;
}

// 2^20 random 32-bit patterns and every exponent with the extreme significands.
std::vector<std::uint32_t> many_32bit_patterns()
{
  std::mt19937 rng(7);
  std::vector<std::uint32_t> p(1u << 20);
  for (auto &b : p)
    b = static_cast<std::uint32_t>(rng());
  return p;
}

} // namespace

// The decoders the kernels run (host-and-device functions of formats.hpp)
// against the CPU's, for every 16-bit pattern and 2^20 random 32-bit ones.
TEST(SpmvDeviceDecode, AllFp16Patterns)
{
  SKIP_WITHOUT_DEVICE();
  expect_decodes<fp16_t>(all_16bit_patterns());
}
TEST(SpmvDeviceDecode, AllBf16Patterns)
{
  SKIP_WITHOUT_DEVICE();
  expect_decodes<bf16_t>(all_16bit_patterns());
}
TEST(SpmvDeviceDecode, AllFp11_4Patterns)
{
  SKIP_WITHOUT_DEVICE();
  expect_decodes<fp11_4_t>(all_16bit_patterns());
}
TEST(SpmvDeviceDecode, RandomFp32AndFp11_20Patterns)
{
  SKIP_WITHOUT_DEVICE();
  expect_decodes<float>(many_32bit_patterns());
  expect_decodes<fp11_20_t>(many_32bit_patterns());
}

// The comparison above can fail: one changed bit of one stored value shows.
TEST(SpmvDeviceDecode, ComparisonSeesOneChangedBit)
{
  SKIP_WITHOUT_DEVICE();
  const Matrix<std::int32_t> a = random_matrix<std::int32_t>(4000, 1000, Shape::runs, 65, kRows);
  const CompactCsr A           = build_compact_csr(a.view(), StorageOptions{});
  SellCopy S                   = make_sell_copy(A, a.rowptr.data(), a.cols.data());
  const std::vector<double> x  = random_vector(1000, 66);
  std::vector<double> ref(4000), y(4000);
  reference::spmv(A, a.pattern(), x.data(), nullptr, ref.data());
  // the lowest bit of the first stored value of the first nonempty lane
  SellPart &p      = S.parts.front();
  std::size_t lane = 0;
  while (p.lengths[lane] == 0)
    ++lane;
  const std::int64_t at = p.slice_offsets[lane / S.slice_rows] + static_cast<std::int64_t>(lane % S.slice_rows);
  p.values.as<unsigned char>()[at * static_cast<std::int64_t>(format_bytes(p.format))] ^= 1u;
  backend_spmv(S, 0, x, nullptr, y, false, WarpRows::one);
  EXPECT_FALSE(same(y[static_cast<std::size_t>(p.rows[lane])], ref[static_cast<std::size_t>(p.rows[lane])]));
}

// 16-bit column offsets where every slice of a part spans less than 2^16
// columns (the products above run both kinds), 32-bit columns elsewhere.
TEST(SellCopy, NarrowColumnsWhereSlicesAllowThem)
{
  const Matrix<std::int32_t> near = random_matrix<std::int32_t>(20000, 60000, Shape::runs, 68, kRows);
  const Matrix<std::int32_t> far  = random_matrix<std::int32_t>(20000, 150000, Shape::runs, 69, kRows);
  const CompactCsr A              = build_compact_csr(near.view(), StorageOptions{}),
                   B              = build_compact_csr(far.view(), StorageOptions{});
  const SellCopy S                = make_sell_copy(A, near.rowptr.data(), near.cols.data());
  const SellCopy T                = make_sell_copy(B, far.rowptr.data(), far.cols.data());
  for (const SellPart &p : S.parts) {
    EXPECT_TRUE(p.narrow());
    EXPECT_TRUE(p.cols.empty());
    EXPECT_EQ(p.narrow_cols.size(), static_cast<std::size_t>(p.stored()));
  }
  for (const SellPart &p : T.parts) {
    EXPECT_FALSE(p.narrow());
    EXPECT_EQ(p.cols.size(), static_cast<std::size_t>(p.stored()));
  }
  // the offsets give back every column
  for (const SellPart &p : S.parts)
    for (std::int64_t l = 0; l < static_cast<std::int64_t>(p.rows.size()); ++l) {
      if (p.rows[static_cast<std::size_t>(l)] < 0) continue;
      const std::int32_t row   = p.rows[static_cast<std::size_t>(l)];
      const std::int64_t first = p.slice_offsets[static_cast<std::size_t>(l / S.slice_rows)] + l % S.slice_rows;
      for (std::int32_t e = 0; e < p.lengths[static_cast<std::size_t>(l)]; ++e)
        ASSERT_EQ(p.slice_base[static_cast<std::size_t>(l / S.slice_rows)] +
                      p.narrow_cols[static_cast<std::size_t>(first + e * S.slice_rows)],
                  near.cols[static_cast<std::size_t>(near.rowptr[static_cast<std::size_t>(row)] + e)]);
    }
}

// Rows longer than kWarpRowLength go to warp-per-row parts (slices of one
// row, no padding), every other row to slices of 32; in A and in A^T.
TEST(SellCopy, LongRowsHaveWarpPerRowParts)
{
  const Matrix<std::int32_t> a = random_matrix<std::int32_t>(600, 400, Shape::runs, 65, kLongRows);
  const CompactCsr A           = build_compact_csr(a.view(), StorageOptions{});
  // the rows of S in warp-per-row parts and in slices, each checked
  // and a warp-per-row part whose last group of kWarpRowGroup rows (a warp's) is partial
  bool partial_group = false;
  auto count         = [&](const SellCopy &S, std::int64_t &long_rows, std::int64_t &short_rows) {
    long_rows = short_rows = 0;
    for (const SellPart &p : S.parts) {
      if (p.warp_rows && p.rows.size() % kWarpRowGroup != 0) partial_group = true;
      for (std::size_t l = 0; l < p.rows.size(); ++l) {
        if (p.rows[l] < 0) continue;
        if (p.warp_rows) {
          ++long_rows;
          ASSERT_GT(p.lengths[l], kWarpRowLength);
          ASSERT_EQ(p.slice_offsets[l + 1] - p.slice_offsets[l], p.lengths[l]) << "a long row is padded";
        } else {
          ++short_rows;
          ASSERT_LE(p.lengths[l], kWarpRowLength);
        }
      }
    }
    EXPECT_EQ(long_rows + short_rows, S.nrows);
  };
  std::int64_t long_rows = 0, short_rows = 0;
  count(make_sell_copy(A, a.rowptr.data(), a.cols.data()), long_rows, short_rows);
  EXPECT_GT(long_rows, 100);
  EXPECT_GT(short_rows, 100);
  count(make_sell_transpose(A, a.rowptr.data(), a.cols.data()), long_rows, short_rows);
  EXPECT_GT(long_rows, 100);
  EXPECT_TRUE(partial_group);
}

// Threads fill the slices of the copy: the copy is the same, every array byte for byte, with nodes, slices,
// split planes, narrow and wide columns and long rows.
TEST(SellCopy, ThreadsMakeTheSameCopy)
{
  RowRecipe nodes                              = kRows;
  nodes.max_node_rows                          = 4;
  const Matrix<std::int32_t> mats[]            = {random_matrix<std::int32_t>(9000, 9000, Shape::fragmented, 70, nodes),
                                                  random_matrix<std::int32_t>(9000, 150000, Shape::runs, 71, kRows)};
  const std::pair<StorageMode, Layout> kinds[] = {{StorageMode::lossless, Layout::automatic},
                                                  {StorageMode::fp16, Layout::sliced},
                                                  {StorageMode::split4, Layout::node},
                                                  {StorageMode::fp32, Layout::csr}};
  for (const auto &a : mats)
    for (const auto &[mode, layout] : kinds) {
      StorageOptions opts;
      opts.mode            = mode;
      opts.layout          = layout;
      const CompactCsr A   = build_compact_csr(a.view(), opts);
      const SellCopy one   = make_sell_copy(A, a.rowptr.data(), a.cols.data(), kGpuSliceRows, 1);
      const SellCopy three = make_sell_copy(A, a.rowptr.data(), a.cols.data(), kGpuSliceRows, 3);
      ASSERT_EQ(one.parts.size(), three.parts.size());
      for (std::size_t i = 0; i < one.parts.size(); ++i) {
        const SellPart &p = one.parts[i], &q = three.parts[i];
        EXPECT_EQ(p.format, q.format);
        EXPECT_EQ(p.segments, q.segments);
        EXPECT_EQ(p.warp_rows, q.warp_rows);
        EXPECT_EQ(p.rows, q.rows);
        EXPECT_EQ(p.lengths, q.lengths);
        EXPECT_EQ(p.slice_offsets, q.slice_offsets);
        auto same_array = [](const auto &u, const auto &v) {
          return u.size() == v.size() && (u.empty() || std::memcmp(u.data(), v.data(), u.size() * sizeof u[0]) == 0);
        };
        EXPECT_TRUE(same_array(p.cols, q.cols));
        EXPECT_TRUE(same_array(p.narrow_cols, q.narrow_cols));
        EXPECT_EQ(p.slice_base, q.slice_base);
        ASSERT_EQ(p.values.size(), q.values.size());
        EXPECT_EQ(std::memcmp(p.values.as<unsigned char>(), q.values.as<unsigned char>(), p.values.size()), 0)
            << storage_mode_name(mode) << " " << layout_name(layout) << ": part " << i << "'s values differ";
      }
    }
}

TEST(SellCopy, EntrySplitIsRefused)
{
  const Matrix<std::int32_t> a = random_matrix<std::int32_t>(100, 100, Shape::runs, 67, kRows);
  StorageOptions opts;
  opts.mode          = StorageMode::entrysplit;
  const CompactCsr A = build_compact_csr(a.view(), opts);
  EXPECT_THROW(make_sell_copy(A, a.rowptr.data(), a.cols.data()), StorageError);
}

namespace {

// A block-diagonal matrix whose dense blocks (sizes 1..32, drawn) are
// diagonally dominant, its inverses packed in drawn formats, groups of
// group_blocks blocks. every_block (0 to kFormatCount - 1): all blocks in that
// format instead.
BlockJacobiStorage random_block_jacobi(std::int64_t nrows, int group_blocks, unsigned seed, int every_block = -1)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<std::int64_t> sizes;
  for (std::int64_t rows = 0; rows < nrows;) {
    const int s = rng() % 4 == 0 ? 1 + static_cast<int>(rng() % kMaxBlockSize) : 1 + static_cast<int>(rng() % 6);
    sizes.push_back(std::min<std::int64_t>(s, nrows - rows));
    rows += sizes.back();
  }
  const BlockPartition p = partition_from_sizes(sizes.data(), static_cast<std::int64_t>(sizes.size()), nrows);
  Matrix<std::int32_t> a;
  a.nrows = a.ncols = static_cast<std::int32_t>(nrows);
  for (std::int64_t b = 0; b < p.block_count(); ++b)
    for (std::int64_t r = p.offsets[b]; r < p.offsets[b + 1]; ++r) {
      for (std::int64_t c = p.offsets[b]; c < p.offsets[b + 1]; ++c) {
        a.cols.push_back(static_cast<std::int32_t>(c));
        a.vals.push_back(r == c ? p.block_size(b) + 1.0 : u(rng));
      }
      a.rowptr.push_back(static_cast<std::int32_t>(a.cols.size()));
    }
  const InvertedBlocks inv = invert_diagonal_blocks(a.view(), p);
  std::vector<Format> formats(static_cast<std::size_t>(p.block_count()));
  for (Format &f : formats) // runs of one format, as the selection makes them, and single blocks
    f = static_cast<Format>(every_block >= 0 ? every_block
                            : rng() % 3 == 0 ? rng() % kFormatCount
                                             : (&f - formats.data()) / 40 % kFormatCount);
  return pack_block_jacobi(inv, formats, group_blocks);
}

void backend_block_jacobi(const BlockJacobiStorage &M, const std::vector<double> &x, std::vector<double> &y,
                          bool transpose, ApplyRows how)
{
#if defined(PETSCMP_TEST_GPU)
  gpu::DeviceBlockJacobi d(M);
  gpu::DeviceVector dx(x.size()), dy(y.size());
  dx.upload(x.data());
  dy.upload(y.data());
  gpu::block_jacobi_apply(d, dx.data(), dy.data(), transpose, how);
  gpu::synchronize();
  dy.download(y.data());
#else
  emulated::block_jacobi_apply(M, x.data(), y.data(), transpose, how);
#endif
}

} // namespace

// apbjacobi's apply: bitwise the reference's, every format, block sizes 1-32,
// groups of 8 blocks (the default) and of 3, and the transpose, with every
// way of taking rows; then storage all in one format (fp16: 16-bit blocks
// read by pairs; fp32: the others), whose launch numbers its windows.
TEST(BlockJacobiDevice, BitwiseReference)
{
  SKIP_WITHOUT_DEVICE();
  const int kMixed = -1;
  for (int every_block : {kMixed, static_cast<int>(Format::fp16), static_cast<int>(Format::fp32)})
    for (int group_blocks : {kDefaultGroupBlocks, 3}) {
      const BlockJacobiStorage M =
          random_block_jacobi(30000, group_blocks, 71 + static_cast<unsigned>(group_blocks), every_block);
      SCOPED_TRACE("every block in format " + std::to_string(every_block) + ", groups of " +
                   std::to_string(group_blocks));
      const std::size_t all_windows = static_cast<std::size_t>((M.nrows + kChunkRows - 1) / kChunkRows);
      if (every_block == kMixed) {
        for (int f = 0; f < kFormatCount; ++f) { // every format, its windows listed: some, not all, hold its rows
          ASSERT_GT(std::count(M.block_format.begin(), M.block_format.end(), f), 10) << "format " << f << " too rare";
          const std::size_t windows = block_format_chunks(M, static_cast<Format>(f)).size();
          ASSERT_GT(windows, 10u);
          ASSERT_LT(windows, all_windows);
        }
      } else {
        ASSERT_TRUE(block_format_chunks(M, static_cast<Format>(every_block)).empty()) << "the windows are numbered";
      }
      std::int64_t paired = 0; // rows the row-pair apply reads as pairs (and groups it cannot: odd starts, odd sizes)
      for (const BlockGroup &g : M.groups)
        if (format_bytes(g.format) == 2 && g.block_size % 2 == 0 && g.row_begin % 2 == 0)
          paired += std::int64_t{g.nblocks} * g.block_size;
      if (every_block != static_cast<int>(Format::fp32)) {
        ASSERT_GT(paired, 1000);
      }
      const std::vector<double> x = random_vector(static_cast<std::size_t>(M.nrows), 72);
      for (bool transpose : {false, true})
        for (ApplyRows how : {ApplyRows::one, ApplyRows::two, ApplyRows::pairs}) {
          std::vector<double> ref(x.size()), y(x.size(), 5.0);
          reference::block_jacobi_apply(M, x.data(), ref.data(), transpose);
          backend_block_jacobi(M, x, y, transpose, how);
          for (std::size_t i = 0; i < x.size(); ++i)
            ASSERT_TRUE(same(y[i], ref[i])) << "row " << i << (transpose ? " (transpose)" : "") << ", rows a thread "
                                            << static_cast<int>(how) << " (0 one, 1 two, 2 row pairs)";
        }
    }
}
