// Formats: conversions fp64 <-> storage checked exhaustively (every 16-bit
// pattern) and against references that do not use the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "petscmp/core/encode_simd.hpp"
#include "petscmp/core/formats.hpp"

using namespace petscmp;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

bool is_nan16(std::uint16_t p, int exp_bits, int man_bits)
{
  const std::uint32_t expmax = (1u << exp_bits) - 1u;
  return ((p >> man_bits) & expmax) == expmax && (p & ((1u << man_bits) - 1u)) != 0;
}

// ---- independent values of binary16 / bfloat16 patterns (plain ldexp) ----------
double fp16_value(std::uint16_t p)
{
  const int e = (p >> 10) & 31, m = p & 1023;
  const double mag = e == 0 ? std::ldexp(m, -24) : (e == 31 ? (m ? std::nan("") : kInf) : std::ldexp(1024 + m, e - 25));
  return (p & 0x8000) ? -mag : mag;
}
double bf16_value(std::uint16_t p)
{
  const int e = (p >> 7) & 255, m = p & 127;
  const double mag =
      e == 0 ? std::ldexp(m, -133) : (e == 255 ? (m ? std::nan("") : kInf) : std::ldexp(128 + m, e - 134));
  return (p & 0x8000) ? -mag : mag;
}

// Round to nearest, ties to even, by enumeration: the finite nonnegative values
// of a format sorted, the two neighbours of |v| found by binary search.
struct RneTable {
  std::vector<double> vals; // ascending, finite, nonnegative
  std::vector<std::uint16_t> pats;
  double overflow_at; // |v| >= this rounds to Inf (max + half an ulp of max)
  std::uint16_t inf, sign;
};

RneTable make_table(double (*value)(std::uint16_t), int exp_bits, int man_bits)
{
  RneTable t;
  t.inf  = static_cast<std::uint16_t>(((1u << exp_bits) - 1u) << man_bits);
  t.sign = 0x8000;
  for (std::uint32_t p = 0; p < t.inf; ++p) {
    t.vals.push_back(value(static_cast<std::uint16_t>(p)));
    t.pats.push_back(static_cast<std::uint16_t>(p));
  }
  const double max = t.vals.back(), below = t.vals[t.vals.size() - 2];
  t.overflow_at = max + (max - below) / 2; // exact: a power of two apart
  return t;
}

std::uint16_t reference_rne(const RneTable &t, double v)
{
  const std::uint16_t sign = std::signbit(v) ? t.sign : 0;
  const double a           = std::fabs(v);
  if (a >= t.overflow_at) return sign | t.inf;
  const std::size_t hi = static_cast<std::size_t>(std::upper_bound(t.vals.begin(), t.vals.end(), a) - t.vals.begin());
  const std::size_t lo = hi - 1; // vals[0] == 0 <= a
  if (t.vals[lo] == a || hi == t.vals.size()) return sign | t.pats[lo];
  // Both differences are exact (Sterbenz, or a subtraction of zero).
  const double dlo = a - t.vals[lo], dhi = t.vals[hi] - a;
  if (dlo < dhi) return sign | t.pats[lo];
  if (dhi < dlo) return sign | t.pats[hi];
  return sign | ((t.pats[lo] & 1) ? t.pats[hi] : t.pats[lo]);
}

// Random doubles: sign, a binary exponent in [emin, emax], 52 random significand bits.
double random_double(std::mt19937_64 &rng, int emin, int emax)
{
  std::uniform_int_distribution<int> e(emin, emax);
  const std::uint64_t r = rng();
  const double m        = 1.0 + std::ldexp(static_cast<double>(r >> 12), -52);
  const double v        = std::ldexp(m, e(rng));
  return (r & 1) ? -v : v;
}

// Test values for a 16-bit format: random magnitudes in 1e-45..1e40, midpoints
// between neighbours (and their double neighbours), specials.
std::vector<double> sample_values(const RneTable &t, std::uint64_t seed, std::size_t n)
{
  std::mt19937_64 rng(seed);
  std::vector<double> out;
  out.reserve(n + 64);
  const double specials[] = {0.0,          -0.0,          kInf,       -kInf,         DBL_MAX,   -DBL_MAX, DBL_MIN,
                             DBL_TRUE_MIN, -DBL_TRUE_MIN, 1e-310,     -1e-310,       65504.0,   65519.99, 65520.0,
                             65536.0,      0x1.fep127,    0x1.ffp127, 0x1.fefffp127, 1e40,      -1e40,    1e-45,
                             0x1p-24,      0x1p-25,       0x1p-133,   0x1p-134,      0x1.8p-134};
  for (double s : specials)
    out.push_back(s);
  std::uniform_int_distribution<std::size_t> pick(0, t.vals.size() - 2);
  while (out.size() < n) {
    const int kind = static_cast<int>(rng() % 4);
    if (kind < 2) {
      out.push_back(random_double(rng, -150, 133)); // 1e-45 .. 1e40
    } else {
      const std::size_t i = pick(rng);
      const double mid    = (t.vals[i] + t.vals[i + 1]) / 2; // exact
      const double sgn    = (rng() & 1) ? -1.0 : 1.0;
      out.push_back(sgn * mid);
      out.push_back(sgn * std::nextafter(mid, kInf));
      out.push_back(sgn * std::nextafter(mid, 0.0));
    }
  }
  return out;
}

} // namespace

// ---- exhaustive over all 16-bit patterns ---------------------------------------------

TEST(Formats, Fp16DecodeAllPatterns)
{
  for (std::uint32_t p = 0; p < 65536; ++p) {
    const fp16_t s{static_cast<std::uint16_t>(p)};
    const double hw = decode(s), portable = decode_fp16_portable(s), ref = fp16_value(s.bits);
    const double scaled = decode_fp16_by_scale(s); // the GPUs' decoder
    if (is_nan16(s.bits, 5, 10)) {
      ASSERT_TRUE(std::isnan(hw)) << std::hex << p;
      ASSERT_TRUE(std::isnan(portable)) << std::hex << p;
      ASSERT_EQ(std::signbit(hw), std::signbit(portable)) << std::hex << p;
      ASSERT_EQ(std::signbit(hw), (p & 0x8000) != 0) << std::hex << p;
      ASSERT_EQ(double_bits(scaled), double_bits(portable)) << std::hex << p; // the payload too
    } else {
      ASSERT_EQ(double_bits(hw), double_bits(portable)) << std::hex << p;
      ASSERT_EQ(double_bits(hw), double_bits(ref)) << std::hex << p;
      ASSERT_EQ(double_bits(scaled), double_bits(ref)) << std::hex << p;
    }
  }
}

// widen_n (the SIMD path where the build has it) gives each pattern's fp32 value:
// decode's, which the tests above check, NaNs as NaNs of the same sign.
template <typename Storage> void check_widen_all_patterns()
{
  std::vector<Storage> in(65536);
  for (std::uint32_t p = 0; p < 65536; ++p)
    in[p] = Storage{static_cast<std::uint16_t>(p)};
  std::vector<float> out(65536, -1.0f);
  widen_n(in.data(), in.size(), out.data());
  for (std::uint32_t p = 0; p < 65536; ++p) {
    const double want = decode(in[p]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(out[p])) << std::hex << p;
      ASSERT_EQ(std::signbit(out[p]), std::signbit(want)) << std::hex << p;
    } else {
      ASSERT_EQ(double_bits(static_cast<double>(out[p])), double_bits(want)) << std::hex << p;
    }
  }
}

TEST(Formats, WidenToFp32AllPatterns)
{
  check_widen_all_patterns<fp16_t>();
  check_widen_all_patterns<bf16_t>();
}

TEST(Formats, Fp16RoundTripAllPatterns)
{
  for (std::uint32_t p = 0; p < 65536; ++p) {
    const fp16_t s{static_cast<std::uint16_t>(p)};
    const fp16_t back = encode_as<fp16_t>(decode(s));
    if (is_nan16(s.bits, 5, 10)) {
      ASSERT_TRUE(is_nan16(back.bits, 5, 10)) << std::hex << p << " -> " << back.bits;
      ASSERT_EQ(back.bits & 0x8000, p & 0x8000) << std::hex << p;
    } else {
      ASSERT_EQ(back.bits, p) << std::hex << p;
      // The portable decoder round trips too.
      ASSERT_EQ(encode_as<fp16_t>(decode_fp16_portable(s)).bits, p) << std::hex << p;
    }
  }
}

TEST(Formats, Bf16DecodeAndRoundTripAllPatterns)
{
  for (std::uint32_t p = 0; p < 65536; ++p) {
    const bf16_t s{static_cast<std::uint16_t>(p)};
    const double d    = decode(s);
    const float f     = float_from_bits(p << 16);
    const bf16_t back = encode_as<bf16_t>(d);
    if (is_nan16(s.bits, 8, 7)) {
      ASSERT_TRUE(std::isnan(d)) << std::hex << p;
      ASSERT_EQ(std::signbit(d), (p & 0x8000) != 0) << std::hex << p;
      ASSERT_TRUE(is_nan16(back.bits, 8, 7)) << std::hex << p;
      ASSERT_EQ(back.bits & 0x8000, p & 0x8000) << std::hex << p;
    } else {
      ASSERT_EQ(double_bits(d), double_bits(static_cast<double>(f))) << std::hex << p;
      ASSERT_EQ(double_bits(d), double_bits(bf16_value(s.bits))) << std::hex << p;
      ASSERT_EQ(back.bits, p) << std::hex << p;
    }
  }
}

// ---- encoders against independent references --------------------------------------

TEST(Formats, Fp16EncodeMatchesEnumeratedRne)
{
  const RneTable t = make_table(fp16_value, 5, 10);
  ASSERT_EQ(t.vals.back(), 65504.0);
  ASSERT_EQ(t.overflow_at, 65520.0);
  ASSERT_TRUE(std::is_sorted(t.vals.begin(), t.vals.end()));
  const std::vector<double> vs = sample_values(t, 1, 1000000);
  for (double v : vs) {
    const std::uint16_t got = encode_as<fp16_t>(v).bits, want = reference_rne(t, v);
    ASSERT_EQ(got, want) << std::hexfloat << v;
  }
}

TEST(Formats, Bf16EncodeMatchesEnumeratedRne)
{
  const RneTable t = make_table(bf16_value, 8, 7);
  ASSERT_EQ(t.vals.back(), 0x1.fep127);
  ASSERT_EQ(t.overflow_at, 0x1.ffp127);
  ASSERT_TRUE(std::is_sorted(t.vals.begin(), t.vals.end()));
  const std::vector<double> vs = sample_values(t, 2, 1000000);
  for (double v : vs) {
    const std::uint16_t got = encode_as<bf16_t>(v).bits, want = reference_rne(t, v);
    ASSERT_EQ(got, want) << std::hexfloat << v;
  }
}

TEST(Formats, Fp32EncoderMatchesHardware)
{
  std::mt19937_64 rng(3);
  std::vector<double> vs = {0.0,
                            -0.0,
                            kInf,
                            -kInf,
                            DBL_MAX,
                            -DBL_MAX,
                            1e-310,
                            -1e-310,
                            DBL_TRUE_MIN,
                            static_cast<double>(FLT_MAX),
                            std::nextafter(static_cast<double>(FLT_MAX), kInf),
                            0x1.ffffffp127,
                            std::nextafter(0x1.ffffffp127, 0.0),
                            0x1p-149,
                            0x1p-150,
                            std::nextafter(0x1p-150, 1.0),
                            0x1.8p-149,
                            0x1.fffffep-127};
  for (int i = 0; i < 400000; ++i) {
    vs.push_back(random_double(rng, -160, 130)); // float subnormals .. overflow
    // midpoints between adjacent floats and their neighbours
    const float f  = static_cast<float>(random_double(rng, -150, 127));
    const double m = (static_cast<double>(f) + static_cast<double>(std::nextafter(f, FLT_MAX))) / 2;
    if (std::isfinite(m)) {
      vs.push_back(m);
      vs.push_back(std::nextafter(m, kInf));
      vs.push_back(std::nextafter(m, -kInf));
    }
  }
  for (double v : vs) {
    const std::uint32_t got = detail::encode_ieee_rne<8, 23>(v), want = float_bits(static_cast<float>(v));
    ASSERT_EQ(got, want) << std::hexfloat << v;
    ASSERT_EQ(float_bits(encode_as<float>(v)), want);
  }
  // NaN: the hardware keeps the leading payload bits and sets the quiet bit; so does the encoder.
  for (std::uint64_t b : {0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000001ull, 0x7ff4000020000000ull,
                          0x7fffffffffffffffull, 0xfff0000100000000ull}) {
    const double v          = double_from_bits(b);
    const std::uint32_t got = detail::encode_ieee_rne<8, 23>(v);
    EXPECT_EQ(got, float_bits(static_cast<float>(v))) << std::hex << b;
    EXPECT_TRUE(std::isnan(float_from_bits(got)));
  }
}

// ---- specific cases -------------------------------------------------------------

TEST(Formats, Fp16SpecificCases)
{
  auto enc = [](double v) { return encode_as<fp16_t>(v).bits; };
  auto rt  = [](double v) { return decode(encode_as<fp16_t>(v)); };
  EXPECT_EQ(enc(1.0), 0x3c00);
  EXPECT_EQ(rt(1.0 + 0x1p-11), 1.0);                     // tie, 1.0 is even
  EXPECT_EQ(rt(1.0 + 3 * 0x1p-11), 1.0 + 0x1p-9);        // tie, rounds up to the even neighbour
  EXPECT_EQ(rt(1.0 + 0x1p-11 + 0x1p-40), 1.0 + 0x1p-10); // just above the tie
  EXPECT_EQ(enc(0x1p-24), 0x0001);                       // smallest subnormal
  EXPECT_EQ(enc(0x1p-25), 0x0000);                       // half of it: tie to even (zero)
  EXPECT_EQ(enc(-0x1p-25), 0x8000);                      // ... keeping the sign
  EXPECT_EQ(enc(std::nextafter(0x1p-25, 1.0)), 0x0001);
  EXPECT_EQ(enc(0x1.8p-24), 0x0002);   // 1.5 * 2^-24: tie, to the even 2 * 2^-24
  EXPECT_EQ(enc(0x1p-14), 0x0400);     // smallest normal
  EXPECT_EQ(enc(0x1.ff8p-15), 0x03ff); // largest subnormal
  EXPECT_EQ(enc(0x1.ffcp-15), 0x0400); // largest subnormal + half ulp: tie, carries into the normal range
  EXPECT_EQ(enc(65504.0), 0x7bff);
  EXPECT_EQ(enc(65519.99), 0x7bff);
  EXPECT_EQ(enc(std::nextafter(65520.0, 0.0)), 0x7bff);
  EXPECT_EQ(enc(65520.0), 0x7c00);
  EXPECT_EQ(enc(-65520.0), 0xfc00);
  EXPECT_EQ(enc(1e300), 0x7c00);
  EXPECT_EQ(enc(-0.0), 0x8000);
  EXPECT_EQ(enc(0.0), 0x0000);
  EXPECT_EQ(enc(kInf), 0x7c00);
  EXPECT_EQ(enc(-kInf), 0xfc00);
  EXPECT_TRUE(is_nan16(enc(std::nan("")), 5, 10));
  EXPECT_TRUE(is_nan16(enc(double_from_bits(0x7ff0000000000001ull)), 5, 10)); // signalling, payload in low bits
  EXPECT_EQ(enc(-std::nan("")) & 0x8000, 0x8000);
  EXPECT_EQ(enc(DBL_TRUE_MIN), 0x0000);
  EXPECT_EQ(enc(-1e-310), 0x8000);
  EXPECT_EQ(enc(0.1), 0x2e66);
  EXPECT_EQ(enc(-2.0), 0xc000);
}

TEST(Formats, Bf16SpecificCases)
{
  auto enc = [](double v) { return encode_as<bf16_t>(v).bits; };
  EXPECT_EQ(enc(1.0), 0x3f80);
  EXPECT_EQ(enc(1.0 + 0x1p-8), 0x3f80); // tie to even
  EXPECT_EQ(enc(1.0 + 3 * 0x1p-8), 0x3f82);
  EXPECT_EQ(enc(0x1.fep127), 0x7f7f);
  EXPECT_EQ(enc(std::nextafter(0x1.ffp127, 0.0)), 0x7f7f);
  EXPECT_EQ(enc(0x1.ffp127), 0x7f80);
  EXPECT_EQ(enc(0x1p-133), 0x0001);
  EXPECT_EQ(enc(0x1p-134), 0x0000);
  EXPECT_EQ(enc(-0.0), 0x8000);
  EXPECT_EQ(enc(-kInf), 0xff80);
  EXPECT_TRUE(is_nan16(enc(double_from_bits(0x7ff0000000000001ull)), 8, 7));
  // Rounded once from the double, not via fp32 (double rounding would give 1.0):
  // 1 + 2^-8 + 2^-30 rounds to fp32 as 1 + 2^-8 (a tie for bf16, then to 1.0).
  EXPECT_EQ(enc(1.0 + 0x1p-8 + 0x1p-30), 0x3f81);
}

TEST(Formats, Fp16RoundsOnceNotThroughFp32)
{
  // 1 + 2^-11 + 2^-30: fp32 would round it to the fp16 tie 1 + 2^-11, then to 1.0.
  EXPECT_EQ(decode(encode_as<fp16_t>(1.0 + 0x1p-11 + 0x1p-30)), 1.0 + 0x1p-10);
}

// ---- truncated formats ---------------------------------------------------------------

TEST(Formats, TruncatedFormatsKeepUpperBits)
{
  std::mt19937_64 rng(4);
  for (int i = 0; i < 200000; ++i) {
    double v = random_double(rng, -1022, 1023);
    if (i % 50 == 0) v = double_from_bits(rng() & 0x000fffffffffffffull); // double subnormals
    const std::uint64_t b = double_bits(v);
    const fp11_20_t a     = encode_as<fp11_20_t>(v);
    const fp11_4_t c      = encode_as<fp11_4_t>(v);
    ASSERT_EQ(a.bits, static_cast<std::uint32_t>(b >> 32)) << std::hexfloat << v;
    ASSERT_EQ(c.bits, static_cast<std::uint16_t>(b >> 48)) << std::hexfloat << v;
    const double da = decode(a), dc = decode(c);
    ASSERT_EQ(double_bits(da), b & 0xffffffff00000000ull);
    ASSERT_EQ(double_bits(dc), b & 0xffff000000000000ull);
    // toward zero, same sign
    ASSERT_LE(std::fabs(da), std::fabs(v));
    ASSERT_LE(std::fabs(dc), std::fabs(v));
    ASSERT_EQ(std::signbit(da), std::signbit(v));
    if (std::fabs(v) >= DBL_MIN) {
      ASSERT_LT(std::fabs(da - v), 0x1p-20 * std::fabs(v)) << std::hexfloat << v;
      ASSERT_LT(std::fabs(dc - v), 0x1p-4 * std::fabs(v)) << std::hexfloat << v;
    }
  }
}

TEST(Formats, TruncatedFormatsSpecials)
{
  EXPECT_EQ(decode(encode_as<fp11_20_t>(DBL_MAX)), 0x1.fffffp1023);
  EXPECT_EQ(decode(encode_as<fp11_4_t>(DBL_MAX)), 0x1.fp1023);
  EXPECT_EQ(decode(encode_as<fp11_4_t>(-DBL_MAX)), -0x1.fp1023);
  EXPECT_EQ(decode(encode_as<fp11_20_t>(kInf)), kInf);
  EXPECT_EQ(decode(encode_as<fp11_4_t>(-kInf)), -kInf);
  EXPECT_EQ(double_bits(decode(encode_as<fp11_4_t>(-0.0))), double_bits(-0.0));
  EXPECT_EQ(decode(encode_as<fp11_4_t>(1.0 + 0x1p-4 + 0x1p-5)), 1.0 + 0x1p-4); // truncation, not rounding
  EXPECT_EQ(decode(encode_as<fp11_4_t>(-1.999)), -0x1.fp0);
  // NaNs whose payload lies only in the dropped bits stay NaN (would be Inf otherwise).
  for (std::uint64_t b : {0x7ff0000000000001ull, 0xfff0000000000001ull, 0x7ff0000080000000ull}) {
    const double v = double_from_bits(b);
    EXPECT_TRUE(std::isnan(decode(encode_as<fp11_20_t>(v)))) << std::hex << b;
    EXPECT_TRUE(std::isnan(decode(encode_as<fp11_4_t>(v)))) << std::hex << b;
    EXPECT_EQ(std::signbit(decode(encode_as<fp11_4_t>(v))), std::signbit(v));
  }
  EXPECT_TRUE(std::isnan(decode(encode_as<fp11_4_t>(double_from_bits(0x7ff0000100000000ull)))));
  // A quiet NaN is kept bit for bit.
  EXPECT_EQ(double_bits(decode(encode_as<fp11_4_t>(double_from_bits(0x7ff8000000000000ull)))), 0x7ff8000000000000ull);
}

// ---- classification, unit roundoff ------------------------------------------------

TEST(Formats, ClassifyConversion)
{
  EXPECT_EQ(classify_conversion(Format::fp16, 0.5), Conversion::exact);
  EXPECT_EQ(classify_conversion(Format::fp16, 0.1), Conversion::rounded);
  EXPECT_EQ(classify_conversion(Format::fp16, 1e5), Conversion::overflowed);
  EXPECT_EQ(classify_conversion(Format::fp16, -65520.0), Conversion::overflowed);
  EXPECT_EQ(classify_conversion(Format::fp16, 65519.0), Conversion::rounded);
  EXPECT_EQ(classify_conversion(Format::fp16, 1e-8), Conversion::underflowed);
  EXPECT_EQ(classify_conversion(Format::fp16, 0x1p-24), Conversion::exact);
  EXPECT_EQ(classify_conversion(Format::fp16, 0x1.8p-24), Conversion::underflowed); // 1/3 relative error
  EXPECT_EQ(classify_conversion(Format::fp32, 1e-310), Conversion::underflowed);
  EXPECT_EQ(classify_conversion(Format::fp32, 1e-40), Conversion::underflowed);
  EXPECT_EQ(classify_conversion(Format::fp32, 1e39), Conversion::overflowed);
  EXPECT_EQ(classify_conversion(Format::fp32, 0.1), Conversion::rounded);
  EXPECT_EQ(classify_conversion(Format::bf16, 1e39), Conversion::overflowed);
  EXPECT_EQ(classify_conversion(Format::fp11_4, 1e-310), Conversion::underflowed);
  EXPECT_EQ(classify_conversion(Format::fp11_4, DBL_MAX), Conversion::rounded);
  EXPECT_EQ(classify_conversion(Format::fp64, 0.1), Conversion::exact);
  EXPECT_EQ(classify_conversion(Format::fp64, 1e-320), Conversion::exact);
  EXPECT_EQ(classify_conversion(Format::fp16, kInf), Conversion::exact);
  EXPECT_EQ(classify_conversion(Format::fp16, -0.0), Conversion::exact);
  EXPECT_EQ(classify_conversion(Format::fp16, double_from_bits(0x7ff8000000000000ull)), Conversion::exact);
  EXPECT_EQ(classify_conversion(Format::fp16, double_from_bits(0x7ff8000000000001ull)), Conversion::nan_payload);
  EXPECT_EQ(classify_conversion(Format::fp11_20, double_from_bits(0x7ff8000000000001ull)), Conversion::nan_payload);
  EXPECT_EQ(classify_conversion(Format::fp64, double_from_bits(0x7ff8000000000001ull)), Conversion::exact);
}

TEST(Formats, UnitRoundoffValues)
{
  EXPECT_EQ(unit_roundoff(Format::fp64), 0x1p-53);
  EXPECT_EQ(unit_roundoff(Format::fp32), 0x1p-24);
  EXPECT_EQ(unit_roundoff(Format::fp16), 0x1p-11);
  EXPECT_EQ(unit_roundoff(Format::bf16), 0x1p-8);
  EXPECT_EQ(unit_roundoff(Format::fp11_20), 0x1p-20);
  EXPECT_EQ(unit_roundoff(Format::fp11_4), 0x1p-4);
}

TEST(Formats, RangeLimits)
{
  EXPECT_EQ(max_finite(Format::fp16), 65504.0);
  EXPECT_EQ(max_finite(Format::bf16), 0x1.fep127);
  EXPECT_EQ(max_finite(Format::fp32), static_cast<double>(FLT_MAX));
  EXPECT_EQ(min_normal(Format::fp16), 0x1p-14);
  EXPECT_EQ(min_normal(Format::bf16), 0x1p-126);
  for (int i = 0; i < kFormatCount; ++i) {
    const Format f = static_cast<Format>(i);
    EXPECT_EQ(round_trip(f, max_finite(f)), max_finite(f)) << format_name(f);
    EXPECT_EQ(round_trip(f, -max_finite(f)), -max_finite(f)) << format_name(f);
    EXPECT_EQ(round_trip(f, min_normal(f)), min_normal(f)) << format_name(f);
    // just above max_finite (by more than the relative unit roundoff): overflow or, truncated, max_finite
    if (f != Format::fp64) {
      const double above = max_finite(f) * (1 + 2 * unit_roundoff(f));
      if (std::isfinite(above) && (f == Format::fp16 || f == Format::bf16 || f == Format::fp32)) {
        EXPECT_EQ(round_trip(f, above), kInf) << format_name(f);
      }
    }
  }
}

TEST(Formats, RelativeErrorWithinUnitRoundoff)
{
  std::mt19937_64 rng(5);
  for (int i = 0; i < kFormatCount; ++i) {
    const Format f = static_cast<Format>(i);
    const int emin = std::ilogb(min_normal(f)), emax = std::ilogb(max_finite(f));
    const double u = unit_roundoff(f);
    double worst   = 0.0;
    for (int k = 0; k < 100000; ++k) {
      double v = random_double(rng, emin, emax);
      if (std::fabs(v) > max_finite(f)) v = std::copysign(max_finite(f), v);
      const double r   = round_trip(f, v);
      const double err = std::fabs(r - v) / std::fabs(v);
      ASSERT_LE(err, u) << format_name(f) << " " << std::hexfloat << v;
      ASSERT_EQ(relative_error(f, v), err);
      ASSERT_TRUE(classify_conversion(f, v) == Conversion::exact || classify_conversion(f, v) == Conversion::rounded);
      worst = std::max(worst, err);
    }
    // The bound is attained to within a factor 2 (it is not a loose bound).
    if (f != Format::fp64)
      EXPECT_GT(worst, u / 2) << format_name(f);
    else
      EXPECT_EQ(worst, 0.0);
  }
}

TEST(Formats, RelativeErrorSpecials)
{
  EXPECT_EQ(relative_error(Format::fp16, 1e5), kInf);
  EXPECT_EQ(relative_error(Format::fp16, 1e-9), 1.0); // flushed to zero
  EXPECT_EQ(relative_error(Format::fp16, std::nan("")), 0.0);
  EXPECT_EQ(relative_error(Format::fp16, kInf), 0.0);
  EXPECT_EQ(relative_error(Format::fp16, 0.0), 0.0);
  EXPECT_EQ(relative_error(Format::fp16, 0.5), 0.0);
  EXPECT_EQ(relative_error(Format::fp16, 0.1), std::fabs(0.0999755859375 - 0.1) / 0.1);
}

// ---- names, sizes -------------------------------------------------------------

TEST(Formats, NamesParseAndBytes)
{
  const char *names[]       = {"fp64", "fp32", "fp16", "bf16", "fp11_20", "fp11_4"};
  const std::size_t bytes[] = {8, 4, 2, 2, 4, 2};
  for (int i = 0; i < kFormatCount; ++i) {
    const Format f = static_cast<Format>(i);
    EXPECT_EQ(std::string(format_name(f)), names[i]);
    EXPECT_EQ(format_bytes(f), bytes[i]);
    Format g = Format::fp64;
    if (f == Format::fp64) g = Format::fp16;
    ASSERT_TRUE(parse_format(format_name(f), &g));
    EXPECT_EQ(g, f);
  }
  EXPECT_EQ(sizeof(fp16_t), 2u);
  EXPECT_EQ(sizeof(bf16_t), 2u);
  EXPECT_EQ(sizeof(fp11_20_t), 4u);
  EXPECT_EQ(sizeof(fp11_4_t), 2u);
  Format g = Format::fp32;
  EXPECT_FALSE(parse_format("FP16", &g));
  EXPECT_FALSE(parse_format("fp8", &g));
  EXPECT_FALSE(parse_format("", &g));
  EXPECT_FALSE(parse_format("fp11", &g));
  EXPECT_FALSE(parse_format(nullptr, &g));
  EXPECT_EQ(g, Format::fp32);
}

#if defined(PETSCMP_HAVE_AVX512_DECODE) || defined(PETSCMP_HAVE_AVX2_DECODE)
namespace {
// Values for the SIMD encoders: every format's edges, ties and 200000 random
// values around every range (subnormals, NaN and Inf included); a multiple of 8.
std::vector<double> encoder_test_values()
{
  std::vector<double> values = {0.0, -0.0, 65504.0, 65505.0, 65519.99, 65520.0, 0x1p-14, 0x1p-24, 0x1.8p-25, 0x1p-25,
                                0x1p-26, 0x1.fep127, 0x1.ffp127, 0x1p-126, 0x1p-133, 0x1p-149, 0x1p-150, FLT_MAX,
                                0x1.fffffefffffffp127, DBL_MAX, DBL_MIN, 0x1p-1074, 1.0 + 0x1p-23, 1.0 + 0x1p-24,
                                1.0 + 0x1p-10, 1.0 + 0x1p-11, 3.0, -7.5, 0.1, 1e300, -1e-300, 1.5 + 0x1p-8,
                                // near fp16's and bf16's ties: a double rounding (to fp32, then to the
                                // format) would land on the tie and round it to even
                                1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11 - 0x1p-40, 1.0 + 0x1p-8 + 0x1p-40,
                                1.0 + 0x1p-8 - 0x1p-40, -(1.0 + 0x1p-10 + 0x1p-11 + 0x1p-40),
                                std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 200000; ++i) {
    const int e = static_cast<int>(rng() % 340) - 170; // around every format's range, subnormals included
    double v    = std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, e) * (rng() & 1 ? 1 : -1);
    if (i % 7 == 0) v = double_from_bits(rng()); // any bit pattern, NaN and Inf included
    if (i % 5 == 0) v = double_from_bits(double_bits(v) & 0xfffffffff0000000ull); // ties of the narrow formats
    values.push_back(v);
  }
  while (values.size() % 8)
    values.push_back(1.0);
  return values;
}
} // namespace
#endif

#if defined(PETSCMP_HAVE_AVX512_DECODE)
// encode8 (8 values at once, used by the builder) gives encode_as's bits for
// every finite value, and nonfinite_lanes finds the others.
namespace {
template <typename S> void check_encode8(const std::vector<double> &values)
{
  for (std::size_t i = 0; i + 8 <= values.size(); i += 8) {
    const __m512d v          = _mm512_loadu_pd(values.data() + i);
    const __mmask8 nonfinite = simd::nonfinite_lanes(v, 0xff);
    for (int k = 0; k < 8; ++k)
      ASSERT_EQ(((nonfinite >> k) & 1) != 0, !std::isfinite(values[i + k])) << values[i + k];
    if (nonfinite) continue;
    const simd::Encoded8<S> enc = simd::encode8_as<S>(v);
    S got[8];
    double decoded[8];
    enc.store_all(got);
    _mm512_storeu_pd(decoded, enc.decoded());
    for (int k = 0; k < 8; ++k) {
      const S want = encode_as<S>(values[i + k]);
      ASSERT_EQ(0, std::memcmp(&got[k], &want, sizeof(S)))
          << storage_traits<S>::name << " of " << std::hexfloat << values[i + k];
      ASSERT_EQ(double_bits(decoded[k]), double_bits(decode(want))) << storage_traits<S>::name;
    }
  }
}
} // namespace

TEST(Formats, Encode8MatchesScalarEncoders)
{
  const std::vector<double> values = encoder_test_values();
  check_encode8<double>(values);
  check_encode8<float>(values);
  check_encode8<fp16_t>(values);
  check_encode8<bf16_t>(values);
  check_encode8<fp11_20_t>(values);
  check_encode8<fp11_4_t>(values);
}

// The short bf16 encoder of uniform bf16 copies gives encode_as's bits for 0
// and every magnitude in bf16's normal range (ties, the range's ends, values
// that round up to the next binade), and other bits for some subnormals.
TEST(Formats, Bf16NormalRangeEncoderMatchesScalarInItsRange)
{
  const double lo = 0x1p-126, hi = 0x1.fep127;
  std::vector<double> values = {0.0,
                                -0.0,
                                lo,
                                -lo,
                                hi,
                                -hi,
                                1.0 + 0x1p-8,
                                1.0 + 0x1p-8 + 0x1p-9,
                                1.0 + 0x1p-9,
                                0x1.ffp0,
                                0x1.fe8p0,
                                0x1.fffffffffffffp0,
                                0x1.fdfffffffffffp127};
  std::mt19937_64 rng(77);
  for (int i = 0; i < 200000; ++i) {
    double v = std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, static_cast<int>(rng() % 253) - 126);
    if (i % 3 == 0) v = double_from_bits(double_bits(v) & 0xffffe00000000000ull) + 0.0; // ties and exact values
    values.push_back(rng() & 1 ? v : -v);
  }
  while (values.size() % 8)
    values.push_back(1.0);
  for (std::size_t i = 0; i < values.size(); i += 8) {
    bf16_t got[8];
    simd::encode8_bf16_in_normal_range(_mm512_loadu_pd(values.data() + i)).store_all(got);
    for (int k = 0; k < 8; ++k) {
      const double v = values[i + k];
      ASSERT_TRUE(v == 0.0 || (std::fabs(v) >= lo && std::fabs(v) <= hi)) << std::hexfloat << v;
      const bf16_t want = encode_as<bf16_t>(v);
      ASSERT_EQ(0, std::memcmp(&got[k], &want, sizeof want)) << std::hexfloat << v;
    }
  }
  bf16_t below[8]; // outside the range the short path is not the encoder: a subnormal it rounds differently
  simd::encode8_bf16_in_normal_range(_mm512_set1_pd(0x1.4ecp-129)).store_all(below);
  const bf16_t want = encode_as<bf16_t>(0x1.4ecp-129);
  EXPECT_NE(0, std::memcmp(&below[0], &want, sizeof want));
}
#endif

#if defined(PETSCMP_HAVE_AVX2_DECODE)
// The AVX2 encoders (4 values at once, the builder without AVX-512) give
// encode_as's bits for every finite value, decode4 reads them back as decode
// does, and any_nonfinite finds Inf and NaN.
namespace {
template <typename S> void check_encode4(const std::vector<double> &values)
{
  for (std::size_t i = 0; i + 4 <= values.size(); i += 4) {
    const __m256d v = _mm256_loadu_pd(values.data() + i);
    bool finite     = true;
    for (int k = 0; k < 4; ++k)
      finite = finite && std::isfinite(values[i + k]);
    ASSERT_EQ(simd4::any_nonfinite(v), !finite) << values[i];
    if (!finite) continue;
    S got[4];
    double decoded[4];
    simd4::encode4(v, got);
    _mm256_storeu_pd(decoded, decode4(got));
    for (int k = 0; k < 4; ++k) {
      const S want = encode_as<S>(values[i + k]);
      ASSERT_EQ(0, std::memcmp(&got[k], &want, sizeof(S)))
          << storage_traits<S>::name << " of " << std::hexfloat << values[i + k];
      ASSERT_EQ(double_bits(decoded[k]), double_bits(decode(want))) << storage_traits<S>::name;
    }
  }
}
} // namespace

TEST(Formats, Encode4MatchesScalarEncoders)
{
  const std::vector<double> values = encoder_test_values();
  check_encode4<double>(values);
  check_encode4<float>(values);
  check_encode4<fp16_t>(values);
  check_encode4<bf16_t>(values);
  check_encode4<fp11_20_t>(values);
  check_encode4<fp11_4_t>(values);
}
#endif
