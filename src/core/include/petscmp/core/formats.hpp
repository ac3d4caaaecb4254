// Storage formats for matrix values and their conversions to and from fp64.
//
// This header is the only place that knows how each format is encoded. All
// other code asks it: the accessor decodes through it, the storage builder
// rounds through it, and dispatch_format() maps the runtime tag to a type.
//
// Formats (fpE,S = E exponent bits, S explicit significand bits):
//   fp64     IEEE binary64                                   (exact)
//   fp32     IEEE binary32,  fp8,23, round to nearest even   u = 2^-24
//   fp16     IEEE binary16,  fp5,10, round to nearest even   u = 2^-11
//   bf16     bfloat16,       fp8,7,  round to nearest even   u = 2^-8
//   fp11_20  upper 32 bits of a double, fp11,20, truncation  u = 2^-20
//   fp11_4   upper 16 bits of a double, fp11,4,  truncation  u = 2^-4
// The truncated formats keep the double's exponent, so they never overflow;
// they round toward zero (dropping low significand bits), as in the adaptive
// block-Jacobi paper, so their unit roundoff is one ulp, not half an ulp.
// Conversions from fp64 round once, directly from the double (never through
// fp32, which would round twice).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "petscmp/core/host_device.hpp"

#if (defined(__F16C__) || defined(__AVX512F__)) && !defined(PETSCMP_DEVICE_PASS)
#include <immintrin.h>
#endif

namespace petscmp {

enum class Format : std::uint8_t { fp64 = 0, fp32 = 1, fp16 = 2, bf16 = 3, fp11_20 = 4, fp11_4 = 5 };
inline constexpr int kFormatCount = 6;

// Storage types: distinct types so templates select the right decoder.
struct fp16_t {
  std::uint16_t bits;
};
struct bf16_t {
  std::uint16_t bits;
};
struct fp11_20_t {
  std::uint32_t bits;
};
struct fp11_4_t {
  std::uint16_t bits;
};

// Bit casts, host and device (the device side has the intrinsics for them).
PETSCMP_HOST_DEVICE inline std::uint64_t double_bits(double v)
{
#if defined(PETSCMP_DEVICE_PASS)
  return static_cast<std::uint64_t>(__double_as_longlong(v));
#else
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
#endif
}
PETSCMP_HOST_DEVICE inline double double_from_bits(std::uint64_t b)
{
#if defined(PETSCMP_DEVICE_PASS)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
#endif
}
PETSCMP_HOST_DEVICE inline std::uint32_t float_bits(float v)
{
#if defined(PETSCMP_DEVICE_PASS)
  return __float_as_uint(v);
#else
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
#endif
}
PETSCMP_HOST_DEVICE inline float float_from_bits(std::uint32_t b)
{
#if defined(PETSCMP_DEVICE_PASS)
  return __uint_as_float(b);
#else
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
#endif
}

namespace detail {

// Round a double to an IEEE-style binary format with ExpBits exponent bits and
// ManBits explicit significand bits (with subnormals, Inf and NaN), to nearest
// with ties to even. Returns the bit pattern in the low 1+ExpBits+ManBits bits.
template <int ExpBits, int ManBits> std::uint32_t encode_ieee_rne(double v)
{
  constexpr int bias          = (1 << (ExpBits - 1)) - 1;
  constexpr int emin          = 1 - bias;
  constexpr std::uint32_t inf = ((1u << ExpBits) - 1u) << ManBits;
  constexpr int sign_shift    = ExpBits + ManBits;

  const std::uint64_t b    = double_bits(v);
  const std::uint32_t sign = static_cast<std::uint32_t>(b >> 63) << sign_shift;
  const int dexp           = static_cast<int>((b >> 52) & 0x7ff);
  const std::uint64_t frac = b & ((std::uint64_t(1) << 52) - 1);

  if (dexp == 0x7ff) {
    if (frac == 0) return sign | inf;
    // NaN: keep the leading payload bits, force the quiet bit.
    const std::uint32_t payload = static_cast<std::uint32_t>(frac >> (52 - ManBits));
    return sign | inf | payload | (1u << (ManBits - 1));
  }
  if (dexp == 0 && frac == 0) return sign;

  // v = m * 2^(e - 52) with m the 53-bit integer significand.
  const std::uint64_t m = dexp ? (frac | (std::uint64_t(1) << 52)) : frac;
  const int e           = dexp ? dexp - 1023 : -1022;
  const bool normal     = e >= emin;
  const int shift       = (52 - ManBits) + (normal ? 0 : emin - e);
  if (shift > 62) return sign; // below half of the smallest subnormal: rounds to zero
  std::uint64_t q          = m >> shift;
  const std::uint64_t rem  = m & ((std::uint64_t(1) << shift) - 1);
  const std::uint64_t half = std::uint64_t(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;

  std::uint64_t bits;
  if (normal) {
    // q is in [2^ManBits, 2^(ManBits+1)]; a carry into the exponent is correct.
    bits = (static_cast<std::uint64_t>(e + bias) << ManBits) + (q - (std::uint64_t(1) << ManBits));
  } else {
    bits = q; // subnormal; q == 2^ManBits becomes the smallest normal
  }
  if (bits >= inf) return sign | inf; // overflow
  return sign | static_cast<std::uint32_t>(bits);
}

template <int ExpBits, int ManBits> PETSCMP_HOST_DEVICE double decode_ieee(std::uint32_t bits)
{
  constexpr int bias             = (1 << (ExpBits - 1)) - 1;
  constexpr std::uint32_t expmax = (1u << ExpBits) - 1u;
  const std::uint64_t sign       = static_cast<std::uint64_t>((bits >> (ExpBits + ManBits)) & 1u) << 63;
  const std::uint32_t exp        = (bits >> ManBits) & expmax;
  const std::uint64_t man        = bits & ((1u << ManBits) - 1u);
  if (exp == expmax) return double_from_bits(sign | (std::uint64_t(0x7ff) << 52) | (man << (52 - ManBits)));
  if (exp == 0) { // subnormal: man * 2^(1 - bias - ManBits), a product by a power of two (exact, no ldexp on devices)
    const double scale = double_from_bits(static_cast<std::uint64_t>(1023 + 1 - bias - ManBits) << 52);
    const double mag   = static_cast<double>(man) * scale;
    return sign ? -mag : mag;
  }
  const std::uint64_t dexp = static_cast<std::uint64_t>(static_cast<int>(exp) - bias + 1023);
  return double_from_bits(sign | (dexp << 52) | (man << (52 - ManBits)));
}

// Truncation of a double to its upper Bits bits; a NaN whose payload lies only
// in the dropped bits would turn into Inf, so it is made a quiet NaN.
template <int Bits> std::uint64_t truncate_double(double v)
{
  const std::uint64_t b = double_bits(v);
  std::uint64_t t       = b >> (64 - Bits);
  if (std::isnan(v)) t |= std::uint64_t(1) << (Bits - 13); // quiet bit of the kept significand
  return t;
}

} // namespace detail

// ---- encode (fp64 -> storage) -------------------------------------------------
inline double encode(double v, double *)
{
  return v;
}
inline float encode(double v, float *)
{
  return static_cast<float>(v);
} // hardware RNE
// fp16 and bf16 from a finite double in two steps without double rounding:
// first to fp32 rounding to odd (toward zero, last bit set when inexact),
// which keeps enough information for the second rounding, to nearest even
// (fp32 has at least 13 more significand bits than either format, at every
// magnitude where they differ), done by the hardware (F16C) or on fp32's bits.
// The result is the software encoder's (tests/core/test_formats.cpp).
inline float fp32_round_to_odd(double v)
{
  float f = static_cast<float>(v);
  if (static_cast<double>(f) == v) return f;
  std::uint32_t b = float_bits(f);
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) b -= 1u; // magnitude down one ulp: toward zero (f != 0 here)
  return float_from_bits(b | 1u);
}
inline fp16_t encode(double v, fp16_t *)
{
#if defined(__F16C__)
  if (std::isfinite(v)) return {static_cast<std::uint16_t>(_cvtss_sh(fp32_round_to_odd(v), _MM_FROUND_TO_NEAREST_INT))};
#endif
  return {static_cast<std::uint16_t>(detail::encode_ieee_rne<5, 10>(v))};
}
inline bf16_t encode(double v, bf16_t *)
{
  if (std::isfinite(v)) {
    const std::uint32_t b = float_bits(fp32_round_to_odd(v));
    return {static_cast<std::uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16)};
  }
  return {static_cast<std::uint16_t>(detail::encode_ieee_rne<8, 7>(v))};
}
inline fp11_20_t encode(double v, fp11_20_t *)
{
  return {static_cast<std::uint32_t>(detail::truncate_double<32>(v))};
}
inline fp11_4_t encode(double v, fp11_4_t *)
{
  return {static_cast<std::uint16_t>(detail::truncate_double<16>(v))};
}

template <typename Storage> inline Storage encode_as(double v)
{
  return encode(v, static_cast<Storage *>(nullptr));
}

// ---- decode (storage -> fp64), exact -----------------------------------------
PETSCMP_HOST_DEVICE inline double decode(double s)
{
  return s;
}
PETSCMP_HOST_DEVICE inline double decode(float s)
{
  return static_cast<double>(s);
}
// Portable decoder, used where no hardware conversion exists and by the tests
// that check the hardware path against it.
PETSCMP_HOST_DEVICE inline double decode_fp16_portable(fp16_t s)
{
  return detail::decode_ieee<5, 10>(s.bits);
}
// The GPUs' decoder, without a conversion instruction: fp16's sign, exponent
// and mantissa moved into a double's places make a double of the same
// significand whose exponent is 1008 too small (a double subnormal where the
// half is one), so one multiply by 2^1008 gives the value, exactly. Inf and
// NaN, chosen without a branch, are built from the bits (a NaN keeps its
// payload as on the host). On an H200 the two conversions f16 -> f32 -> f64
// (and before them the portable decoder's branches, which doubled the fp16
// SpMV's registers) made fp16 slower than bf16.
PETSCMP_HOST_DEVICE inline double decode_fp16_by_scale(fp16_t s)
{
  const std::uint64_t sign = static_cast<std::uint64_t>(s.bits & 0x8000u) << 48;
  const std::uint64_t special =
      sign | (std::uint64_t(0x7ff) << 52) | (static_cast<std::uint64_t>(s.bits & 0x3ffu) << 42);
  const double scaled = double_from_bits(sign | (static_cast<std::uint64_t>(s.bits & 0x7fffu) << 42)) * 0x1p1008;
  return (s.bits & 0x7c00u) == 0x7c00u ? double_from_bits(special) : scaled;
}
PETSCMP_HOST_DEVICE inline double decode(fp16_t s)
{
#if defined(PETSCMP_DEVICE_PASS)
  return decode_fp16_by_scale(s);
#elif defined(__F16C__)
  // vmovd + vcvtph2ps + vcvtss2sd on one register: each instruction writes the
  // register it merges into, so consecutive decodes stay independent (the
  // single vcvtsh2sd would merge into, and wait for, an unrelated register).
  const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(s.bits));
  return _mm_cvtsd_f64(_mm_cvtss_sd(_mm_castps_pd(f), f));
#else
  return decode_fp16_portable(s);
#endif
}
PETSCMP_HOST_DEVICE inline double decode(bf16_t s)
{
  return static_cast<double>(float_from_bits(static_cast<std::uint32_t>(s.bits) << 16));
}
PETSCMP_HOST_DEVICE inline double decode(fp11_20_t s)
{
  return double_from_bits(static_cast<std::uint64_t>(s.bits) << 32);
}
PETSCMP_HOST_DEVICE inline double decode(fp11_4_t s)
{
  return double_from_bits(static_cast<std::uint64_t>(s.bits) << 48);
}

// ---- bulk decode of up to 8 values (one SIMD conversion, never reads past n) --
template <typename Storage> inline void decode_upto8(const Storage *src, unsigned n, double *out)
{
  for (unsigned i = 0; i < n; ++i)
    out[i] = decode(src[i]);
}
// GCC 12 warns about the unmasked conversions (bug 105593): zero-masking forms throughout.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__F16C__) &&                     \
    !defined(PETSCMP_DEVICE_PASS)
#define PETSCMP_HAVE_AVX512_DECODE 1
inline __mmask8 first_lanes(unsigned n)
{
  return static_cast<__mmask8>((1u << n) - 1u);
}
// ---- 8 values (lanes of mask m) straight into a register, for kernels that keep
// their sums in registers (the block-Jacobi apply). Unselected lanes are 0.
inline __m512d decode8(const double *src, __mmask8 m)
{
  return _mm512_maskz_loadu_pd(m, src);
}
inline __m512d decode8(const float *src, __mmask8 m)
{
  return _mm512_maskz_cvtps_pd(0xff, _mm256_maskz_loadu_ps(m, src));
}
inline __m512d decode8(const fp16_t *src, __mmask8 m)
{
#if defined(__AVX512FP16__) // one exact conversion fp16 -> fp64 instead of two (via fp32): the same value
  return _mm512_cvtph_pd(_mm_castsi128_ph(_mm_maskz_loadu_epi16(m, src)));
#else
  return _mm512_maskz_cvtps_pd(0xff, _mm256_cvtph_ps(_mm_maskz_loadu_epi16(m, src)));
#endif
}
inline __m512d decode8(const bf16_t *src, __mmask8 m)
{
  const __m256i w = _mm256_slli_epi32(_mm256_maskz_cvtepu16_epi32(0xff, _mm_maskz_loadu_epi16(m, src)), 16);
  return _mm512_maskz_cvtps_pd(0xff, _mm256_castsi256_ps(w));
}
inline __m512d decode8(const fp11_20_t *src, __mmask8 m)
{
  return _mm512_castsi512_pd(
      _mm512_maskz_slli_epi64(0xff, _mm512_maskz_cvtepu32_epi64(0xff, _mm256_maskz_loadu_epi32(m, src)), 32));
}
inline __m512d decode8(const fp11_4_t *src, __mmask8 m)
{
  return _mm512_castsi512_pd(
      _mm512_maskz_slli_epi64(0xff, _mm512_maskz_cvtepu16_epi64(0xff, _mm_maskz_loadu_epi16(m, src)), 48));
}
// ---- 8 values read with one plain (unmasked) load, converted in the lanes of m
// (others 0). A masked load of data that straddles cache lines is several
// times slower than a plain one on AMD Zen 5 (measured: 6.6 vs 20.8 GB/s on
// interleaved 3-row nodes), so kernels that read short runs at any offset use
// these; the caller guarantees that 8 values from src are readable (padding).
// The conversion is masked, so values outside m raise no exception.
// A plain load kept in a register: without the empty asm the compiler folds it
// into the masked conversion as a masked memory operand, the slow form.
template <typename V> inline V plain_load(V v)
{
  __asm__("" : "+v"(v));
  return v;
}
inline __m512d decode8_padded(const double *src, __mmask8 m)
{
  return _mm512_maskz_mov_pd(m, plain_load(_mm512_loadu_pd(src)));
}
inline __m512d decode8_padded(const float *src, __mmask8 m)
{
  return _mm512_maskz_cvtps_pd(m, plain_load(_mm256_loadu_ps(src)));
}
inline __m512d decode8_padded(const fp16_t *src, __mmask8 m)
{
  const __m128i h = plain_load(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src)));
  return _mm512_maskz_cvtps_pd(m, _mm256_maskz_cvtph_ps(m, h));
}
inline __m512d decode8_padded(const bf16_t *src, __mmask8 m)
{
  const __m128i h = plain_load(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src)));
  return _mm512_maskz_cvtps_pd(m, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_maskz_cvtepu16_epi32(m, h), 16)));
}
inline __m512d decode8_padded(const fp11_20_t *src, __mmask8 m)
{
  const __m256i w = plain_load(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(src)));
  return _mm512_castsi512_pd(_mm512_maskz_slli_epi64(m, _mm512_maskz_cvtepu32_epi64(m, w), 32));
}
inline __m512d decode8_padded(const fp11_4_t *src, __mmask8 m)
{
  const __m128i h = plain_load(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src)));
  return _mm512_castsi512_pd(_mm512_maskz_slli_epi64(m, _mm512_maskz_cvtepu16_epi64(m, h), 48));
}
// the bulk read of up to 8 values: the register decode, stored
inline void decode_upto8(const fp16_t *src, unsigned n, double *out)
{
  _mm512_storeu_pd(out, decode8(src, first_lanes(n)));
}
inline void decode_upto8(const bf16_t *src, unsigned n, double *out)
{
  _mm512_storeu_pd(out, decode8(src, first_lanes(n)));
}
inline void decode_upto8(const float *src, unsigned n, double *out)
{
  _mm512_storeu_pd(out, decode8(src, first_lanes(n)));
}
inline void decode_upto8(const fp11_20_t *src, unsigned n, double *out)
{
  _mm512_storeu_pd(out, decode8(src, first_lanes(n)));
}
inline void decode_upto8(const fp11_4_t *src, unsigned n, double *out)
{
  _mm512_storeu_pd(out, decode8(src, first_lanes(n)));
}
#endif

// ---- bulk decode of n values: full 8-wide conversions, one masked (AVX-512) or
// scalar tail; never reads past n. The kernels' decode-ahead of many rows.
#if !defined(PETSCMP_HAVE_AVX512_DECODE) && defined(__AVX2__) && defined(__F16C__) && !defined(PETSCMP_DEVICE_PASS)
#define PETSCMP_HAVE_AVX2_DECODE 1
// 4 stored values (a plain load: the caller guarantees 4 are readable) decoded
// into a register.
inline __m256d decode4(const double *src)
{
  return _mm256_loadu_pd(src);
}
inline __m256d decode4(const float *src)
{
  return _mm256_cvtps_pd(_mm_loadu_ps(src));
}
inline __m256d decode4(const fp16_t *src)
{
  return _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(src))));
}
inline __m256d decode4(const bf16_t *src)
{
  const __m128i w = _mm_slli_epi32(_mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(src))), 16);
  return _mm256_cvtps_pd(_mm_castsi128_ps(w));
}
inline __m256d decode4(const fp11_20_t *src)
{
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src));
  return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_cvtepu32_epi64(b), 32));
}
inline __m256d decode4(const fp11_4_t *src)
{
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(src));
  return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_cvtepu16_epi64(b), 48));
}
// 8 stored values decoded into two registers, values 0-3 and 4-7: the
// kernels' reads of a slice entry.
template <typename Storage> inline void decode8(const Storage *src, __m256d v[2])
{
  v[0] = decode4(src);
  v[1] = decode4(src + 4);
}
// the same 8 values, stored
template <typename Storage> inline void decode8(const Storage *src, double *out)
{
  __m256d v[2];
  decode8(src, v);
  _mm256_storeu_pd(out, v[0]);
  _mm256_storeu_pd(out + 4, v[1]);
}
#endif
template <typename Storage> inline void decode_n(const Storage *src, std::size_t n, double *out)
{
  std::size_t i = 0;
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  for (; i + 8 <= n; i += 8)
    decode_upto8(src + i, 8u, out + i);
  if (i < n) decode_upto8(src + i, static_cast<unsigned>(n - i), out + i);
#else
#if defined(PETSCMP_HAVE_AVX2_DECODE)
  if constexpr (!std::is_same_v<Storage, double>)
    for (; i + 8 <= n; i += 8)
      decode8(src + i, out + i);
#endif
  for (; i < n; ++i)
    out[i] = decode(src[i]);
#endif
}

// ---- fp16 and bf16 widened to fp32 (exact: fp32 holds every value of both), n
// a multiple of 8. Half the bytes stored of decode_n, for kernels that compute
// from fp32 copies (ellmp's SOR of a cache-resident slice).
inline void widen_n(const fp16_t *src, std::size_t n, float *out)
{
#if defined(__F16C__) && !defined(PETSCMP_DEVICE_PASS)
  for (std::size_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i))));
#else
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(decode(src[i]));
#endif
}
inline void widen_n(const bf16_t *src, std::size_t n, float *out)
{
#if defined(__AVX2__) && defined(__F16C__) && !defined(PETSCMP_DEVICE_PASS)
  for (std::size_t i = 0; i < n; i += 8) { // a bf16 is the upper half of its fp32
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i)));
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
  }
#else
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(decode(src[i]));
#endif
}

// ---- compile-time traits -------------------------------------------------------
template <typename Storage> struct storage_traits;
#define PETSCMP_STORAGE_TRAITS(T, F, NAME, UNIT_ROUNDOFF_EXP2, MAXVAL, MINNORMAL)                                      \
  template <> struct storage_traits<T> {                                                                               \
    static constexpr Format format          = Format::F;                                                               \
    static constexpr const char *name       = NAME;                                                                    \
    static constexpr int unit_roundoff_exp2 = UNIT_ROUNDOFF_EXP2;                                                      \
    static double max_finite() { return MAXVAL; }                                                                      \
    static double min_normal() { return MINNORMAL; }                                                                   \
  }
PETSCMP_STORAGE_TRAITS(double, fp64, "fp64", -53, std::numeric_limits<double>::max(),
                       std::numeric_limits<double>::min());
PETSCMP_STORAGE_TRAITS(float, fp32, "fp32", -24, std::numeric_limits<float>::max(), std::numeric_limits<float>::min());
PETSCMP_STORAGE_TRAITS(fp16_t, fp16, "fp16", -11, 65504.0, 0x1p-14);
PETSCMP_STORAGE_TRAITS(bf16_t, bf16, "bf16", -8, 0x1.fep127, std::numeric_limits<float>::min());
PETSCMP_STORAGE_TRAITS(fp11_20_t, fp11_20, "fp11_20", -20, 0x1.fffffp1023, std::numeric_limits<double>::min());
PETSCMP_STORAGE_TRAITS(fp11_4_t, fp11_4, "fp11_4", -4, 0x1.fp1023, std::numeric_limits<double>::min());
#undef PETSCMP_STORAGE_TRAITS

template <typename T> struct type_tag {
  using type = T;
};

// Calls fn(type_tag<Storage>{}) with the storage type of a runtime format tag:
// the single map from Format to C++ type.
template <typename Fn> decltype(auto) dispatch_format(Format f, Fn &&fn)
{
  switch (f) {
  case Format::fp32:
    return fn(type_tag<float>{});
  case Format::fp16:
    return fn(type_tag<fp16_t>{});
  case Format::bf16:
    return fn(type_tag<bf16_t>{});
  case Format::fp11_20:
    return fn(type_tag<fp11_20_t>{});
  case Format::fp11_4:
    return fn(type_tag<fp11_4_t>{});
  case Format::fp64:
  default:
    return fn(type_tag<double>{});
  }
}

// ---- runtime properties ----------------------------------------------------------
inline const char *format_name(Format f)
{
  return dispatch_format(f, [](auto tag) { return storage_traits<typename decltype(tag)::type>::name; });
}
inline std::size_t format_bytes(Format f)
{
  return dispatch_format(f, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}
// Largest relative error of a conversion of a value in the normal range.
inline double unit_roundoff(Format f)
{
  return dispatch_format(
      f, [](auto tag) { return std::ldexp(1.0, storage_traits<typename decltype(tag)::type>::unit_roundoff_exp2); });
}
inline double max_finite(Format f)
{
  return dispatch_format(f, [](auto tag) { return storage_traits<typename decltype(tag)::type>::max_finite(); });
}
inline double min_normal(Format f)
{
  return dispatch_format(f, [](auto tag) { return storage_traits<typename decltype(tag)::type>::min_normal(); });
}
// Parses a format name ("fp64", "fp32", "fp16", "bf16", "fp11_20", "fp11_4").
bool parse_format(const char *name, Format *f);

// The value v becomes after storage in format f.
inline double round_trip(Format f, double v)
{
  return dispatch_format(f, [v](auto tag) {
    using S = typename decltype(tag)::type;
    return decode(encode_as<S>(v));
  });
}

// How one conversion went; the builders decide with it.
enum class Conversion : std::uint8_t {
  exact,       // the stored value is bit for bit v (NaN payloads included)
  rounded,     // relative error within the format's unit roundoff
  underflowed, // v is finite and nonzero, but its relative error exceeds u (subnormal or flushed to zero)
  overflowed,  // v is finite, the stored value is not
  nan_payload  // v is NaN/Inf and the stored value is NaN/Inf, but not bitwise equal
};
inline Conversion classify_conversion(Format f, double v)
{
  const double r = round_trip(f, v);
  if (double_bits(r) == double_bits(v)) return Conversion::exact;
  if (!std::isfinite(v)) return Conversion::nan_payload;
  if (!std::isfinite(r)) return Conversion::overflowed;
  if (std::fabs(r - v) > unit_roundoff(f) * std::fabs(v)) return Conversion::underflowed;
  return Conversion::rounded;
}
// Relative error |stored - v| / |v| (0 when exact; infinity when not finite).
inline double relative_error(Format f, double v)
{
  const double r = round_trip(f, v);
  if (double_bits(r) == double_bits(v) || (std::isnan(r) && std::isnan(v))) return 0.0;
  if (!std::isfinite(r) || !std::isfinite(v)) return std::numeric_limits<double>::infinity();
  if (v == 0.0) return r == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::fabs(r - v) / std::fabs(v);
}

} // namespace petscmp
