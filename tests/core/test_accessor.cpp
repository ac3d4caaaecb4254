// The accessor: reads decode the stored element, writes round once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "petscmp/core/accessor.hpp"

using namespace petscmp;

namespace {

template <typename S> std::uint64_t raw_bits(const S &s)
{
  std::uint64_t b = 0;
  std::memcpy(&b, &s, sizeof s);
  return b;
}

template <typename S> class AccessorTest : public ::testing::Test {};
using StorageTypes = ::testing::Types<double, float, fp16_t, bf16_t, fp11_20_t, fp11_4_t>;
TYPED_TEST_SUITE(AccessorTest, StorageTypes);

std::vector<double> test_values(std::size_t n, unsigned seed)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mant(-2.0, 2.0);
  std::uniform_int_distribution<int> ex(-20, 20);
  std::vector<double> v(n);
  for (auto &x : v) x = std::ldexp(mant(rng), ex(rng));
  v[0] = 0.0;
  v[1] = -1.0;
  v[2] = 0.1;
  return v;
}

} // namespace

TYPED_TEST(AccessorTest, RangeReadsDecodedElements)
{
  using S                       = TypeParam;
  const std::vector<double> src = test_values(257, 11);
  std::vector<S> data(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) data[i] = encode_as<S>(src[i]);
  const reduced_range<S> r = make_range(data.data(), data.size());
  ASSERT_EQ(r.length(), data.size());
  ASSERT_EQ(r.data(), data.data());
  const Format f = storage_traits<S>::format;
  for (std::size_t i = 0; i < data.size(); ++i) {
    ASSERT_EQ(double_bits(r[i]), double_bits(decode(data[i]))) << i;
    ASSERT_EQ(double_bits(r[i]), double_bits(round_trip(f, src[i]))) << i;
    if (std::fabs(src[i]) >= min_normal(f) && std::fabs(src[i]) <= max_finite(f)) {
      ASSERT_LE(std::fabs(r[i] - src[i]), unit_roundoff(f) * std::fabs(src[i])) << i;
    }
  }
  // sub-ranges: element k of subrange(off, len) is element off + k
  for (std::size_t off : {std::size_t(0), std::size_t(1), std::size_t(100), std::size_t(250)}) {
    const std::size_t len = data.size() - off < 7 ? data.size() - off : 7;
    const auto sub        = r.subrange(off, len);
    ASSERT_EQ(sub.length(), len);
    ASSERT_EQ(sub.data(), data.data() + off);
    for (std::size_t k = 0; k < len; ++k) ASSERT_EQ(double_bits(sub[k]), double_bits(decode(data[off + k])));
  }
  // nested sub-ranges add their offsets
  const auto nested = r.subrange(10, 50).subrange(5, 3);
  EXPECT_EQ(double_bits(nested[0]), double_bits(decode(data[15])));
  EXPECT_EQ(double_bits(nested[2]), double_bits(decode(data[17])));
}

TYPED_TEST(AccessorTest, WriterStoresRoundedOnce)
{
  using S                       = TypeParam;
  const std::vector<double> src = test_values(100, 12);
  std::vector<S> data(src.size());
  const reduced_writer<S> w(data.data(), data.size());
  ASSERT_EQ(w.length(), data.size());
  for (std::size_t i = 0; i < src.size(); ++i) w.store(i, src[i]);
  for (std::size_t i = 0; i < src.size(); ++i) {
    ASSERT_EQ(raw_bits(data[i]), raw_bits(encode_as<S>(src[i]))) << i;
    ASSERT_EQ(double_bits(w.load(i)), double_bits(decode(data[i]))) << i;
  }
  // Overwriting one element leaves its neighbours alone.
  const S before = data[41], after = data[43];
  w.store(42, -3.0);
  EXPECT_EQ(w.load(42), -3.0);
  EXPECT_EQ(raw_bits(data[41]), raw_bits(before));
  EXPECT_EQ(raw_bits(data[43]), raw_bits(after));
}

TEST(Accessor, Fp16RangeOverAllPatterns)
{
  std::vector<fp16_t> data(65536);
  for (std::uint32_t p = 0; p < 65536; ++p) data[p].bits = static_cast<std::uint16_t>(p);
  const auto r = make_range(data.data(), data.size());
  for (std::uint32_t p = 0; p < 65536; ++p) {
    const double want = decode_fp16_portable(data[p]);
    if (std::isnan(want)) ASSERT_TRUE(std::isnan(r[p]));
    else ASSERT_EQ(double_bits(r[p]), double_bits(want)) << p;
  }
}

TEST(Accessor, FloatArithmeticType)
{
  std::vector<bf16_t> data = {encode_as<bf16_t>(1.5), encode_as<bf16_t>(-0x1p-100), encode_as<bf16_t>(3e38)};
  const reduced_range<bf16_t, float> r(data.data(), data.size());
  EXPECT_EQ(r[0], 1.5f);
  EXPECT_EQ(r[1], -0x1p-100f);
  EXPECT_EQ(static_cast<double>(r[2]), decode(data[2]));
}
