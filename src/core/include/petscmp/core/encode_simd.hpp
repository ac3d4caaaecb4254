// Encoding 8 values at once, for the storage builder: the same bits as the
// scalar encode_as<S> of formats.hpp, value by value (tests/core/test_formats.cpp
// checks every format against it on special and random bit patterns).
//
// Why: the build of a compact copy converts every nonzero of the matrix. One
// scalar conversion per value (with the tracking of the largest change) cost
// 5-7 ns per nonzero, 13-16 AIJ products on a FEM matrix; eight at once bring
// the build near the cost of reading the values.
//
// encode8 handles finite values. Inf and NaN keep their scalar encodings (NaN
// payloads, the software encoders), so a chunk holding one is reported and the
// caller encodes it value by value.
#pragma once

#include "petscmp/core/formats.hpp"

namespace petscmp {

#if defined(PETSCMP_HAVE_AVX512_DECODE)
namespace simd {

// Lanes of m whose value is Inf or NaN (exponent all ones).
inline __mmask8 nonfinite_lanes(__m512d v, __mmask8 m)
{
  const __m512i exponent = _mm512_set1_epi64(0x7ff0000000000000LL);
  return _mm512_mask_cmpeq_epi64_mask(m, _mm512_and_si512(_mm512_castpd_si512(v), exponent), exponent);
}

// n <= 8 values from v (lanes past n are 0), in an array that ends at `end`.
// A masked load that straddles cache lines is several times slower on AMD Zen
// 5, and rows start anywhere: a full chunk takes a plain load, and so does a
// short one (a stencil's 7 values) where 8 values from v lie before end, its
// lanes past n zeroed by an AND. Not maskz_mov: GCC folds a zero-masking move
// of a load back into a masked load.
inline __m512d load_upto8(const double *v, unsigned n, const double *end)
{
  if (n == 8) return _mm512_loadu_pd(v);
  if (end - v >= 8)
    return _mm512_castsi512_pd(
        _mm512_and_si512(_mm512_castpd_si512(_mm512_loadu_pd(v)), _mm512_movm_epi64(first_lanes(n))));
  return _mm512_maskz_loadu_pd(first_lanes(n), v);
}

// fp32_round_to_odd of 8 finite doubles, as bits.
inline __m256i round_to_odd8(__m512d v)
{
  const __m256 f         = _mm512_maskz_cvtpd_ps(0xff, v);
  const __m512d back     = _mm512_maskz_cvtps_pd(0xff, f);
  const __mmask8 inexact = _mm512_cmp_pd_mask(back, v, _CMP_NEQ_UQ);
  const __m512d abs_mask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7fffffffffffffffLL));
  const __mmask8 away =
      _mm512_mask_cmp_pd_mask(inexact, _mm512_and_pd(back, abs_mask), _mm512_and_pd(v, abs_mask), _CMP_GT_OQ);
  __m256i b = _mm256_castps_si256(f);
  b         = _mm256_mask_sub_epi32(b, away, b, _mm256_set1_epi32(1));
  return _mm256_mask_or_epi32(b, inexact, b, _mm256_set1_epi32(1));
}

// The storage of 8 values in a register, and the values it decodes to.
// store_all writes all 8 with a plain store: a masked store does not forward
// to the narrower loads that read it back (a stall per load on AMD Zen 5).
template <typename S> struct Encoded8;
template <> struct Encoded8<double> {
  __m512d bits;
  void store(double *dst, __mmask8 m) const { _mm512_mask_storeu_pd(dst, m, bits); }
  void store_all(double *dst) const { _mm512_storeu_pd(dst, bits); }
  __m512d decoded() const { return bits; }
};
template <> struct Encoded8<float> {
  __m256 bits;
  void store(float *dst, __mmask8 m) const { _mm256_mask_storeu_ps(dst, m, bits); }
  void store_all(float *dst) const { _mm256_storeu_ps(dst, bits); }
  __m512d decoded() const { return _mm512_maskz_cvtps_pd(0xff, bits); }
};
template <> struct Encoded8<fp16_t> {
  __m128i bits;
  void store(fp16_t *dst, __mmask8 m) const { _mm_mask_storeu_epi16(dst, m, bits); }
  void store_all(fp16_t *dst) const { _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), bits); }
  __m512d decoded() const { return _mm512_maskz_cvtps_pd(0xff, _mm256_maskz_cvtph_ps(0xff, bits)); }
};
template <> struct Encoded8<bf16_t> {
  __m128i bits;
  __m256 as_fp32; // the stored values as fp32 (bf16 is fp32's upper half): decoded without unpacking bits
  void store(bf16_t *dst, __mmask8 m) const { _mm_mask_storeu_epi16(dst, m, bits); }
  void store_all(bf16_t *dst) const { _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), bits); }
  __m512d decoded() const { return _mm512_maskz_cvtps_pd(0xff, as_fp32); }
};
template <> struct Encoded8<fp11_20_t> {
  __m256i bits;
  void store(fp11_20_t *dst, __mmask8 m) const { _mm256_mask_storeu_epi32(dst, m, bits); }
  void store_all(fp11_20_t *dst) const { _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst), bits); }
  __m512d decoded() const
  {
    return _mm512_castsi512_pd(_mm512_maskz_slli_epi64(0xff, _mm512_maskz_cvtepu32_epi64(0xff, bits), 32));
  }
};
template <> struct Encoded8<fp11_4_t> {
  __m128i bits;
  void store(fp11_4_t *dst, __mmask8 m) const { _mm_mask_storeu_epi16(dst, m, bits); }
  void store_all(fp11_4_t *dst) const { _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), bits); }
  __m512d decoded() const
  {
    return _mm512_castsi512_pd(_mm512_maskz_slli_epi64(0xff, _mm512_maskz_cvtepu16_epi64(0xff, bits), 48));
  }
};

// encode_as<S> of 8 finite values (lanes holding Inf or NaN are not encoded
// as the scalar encoder would: check nonfinite_lanes first).
inline Encoded8<double> encode8(__m512d v, double *)
{
  return {v};
}
inline Encoded8<float> encode8(__m512d v, float *)
{
  return {_mm512_maskz_cvtpd_ps(0xff, v)};
}
inline Encoded8<fp16_t> encode8(__m512d v, fp16_t *)
{
  return {_mm256_maskz_cvtps_ph(0xff, _mm256_castsi256_ps(round_to_odd8(v)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
inline Encoded8<bf16_t> encode8(__m512d v, bf16_t *)
{
  const __m256i b       = round_to_odd8(v);
  const __m256i odd     = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)), odd),
                                           _mm256_set1_epi32(~0xffff));
  return {_mm256_maskz_cvtepi32_epi16(0xff, _mm256_srli_epi32(rounded, 16)), _mm256_castsi256_ps(rounded)};
}
inline Encoded8<fp11_20_t> encode8(__m512d v, fp11_20_t *)
{
  return {_mm512_maskz_cvtepi64_epi32(0xff, _mm512_maskz_srli_epi64(0xff, _mm512_castpd_si512(v), 32))};
}
inline Encoded8<fp11_4_t> encode8(__m512d v, fp11_4_t *)
{
  return {_mm512_maskz_cvtepi64_epi16(0xff, _mm512_maskz_srli_epi64(0xff, _mm512_castpd_si512(v), 48))};
}
template <typename S> inline Encoded8<S> encode8_as(__m512d v)
{
  return encode8(v, static_cast<S *>(nullptr));
}

// encode8_as<bf16_t> for lanes whose magnitude is 0 or in bf16's normal range
// [2^-126, max finite]; other lanes get wrong bits (the caller tests the range
// and rewrites them). There the significand is rounded to bf16's 8 bits in the
// double itself (round to nearest even: add half an ulp less one, plus the
// kept last bit, then cut), which makes the value exact in fp32 and in bf16:
// 8 operations for the general path's 15 (round to odd in fp32, then round
// again), which bound a bf16 build on AMD Zen 5.
inline Encoded8<bf16_t> encode8_bf16_in_normal_range(__m512d v)
{
  constexpr int kCut    = 52 - 7; // double significand bits below bf16's
  const __m512i bits    = _mm512_castpd_si512(v);
  const __m512i last    = _mm512_and_si512(_mm512_maskz_srli_epi64(0xff, bits, kCut), _mm512_set1_epi64(1));
  const __m512i half    = _mm512_set1_epi64((std::int64_t{1} << (kCut - 1)) - 1);
  const __m512i rounded = _mm512_and_si512(_mm512_add_epi64(_mm512_add_epi64(bits, half), last),
                                           _mm512_set1_epi64(~((std::int64_t{1} << kCut) - 1)));
  const __m256 f        = _mm512_maskz_cvtpd_ps(0xff, _mm512_castsi512_pd(rounded)); // exact
  return {_mm256_maskz_cvtepi32_epi16(0xff, _mm256_maskz_srli_epi32(0xff, _mm256_castps_si256(f), 16)), f};
}

} // namespace simd
#endif

#if defined(PETSCMP_HAVE_AVX2_DECODE)
// Machines without AVX-512 (AVX2 and F16C): the same encodings 4 values at a
// time, stored to memory (the lanes are written one by one where a slice or
// a node spreads them).
namespace simd4 {

// Whether one of the 4 values is Inf or NaN.
inline bool any_nonfinite(__m256d v)
{
  const __m256i exponent = _mm256_set1_epi64x(0x7ff0000000000000LL);
  const __m256i e        = _mm256_and_si256(_mm256_castpd_si256(v), exponent);
  return !_mm256_testz_si256(_mm256_cmpeq_epi64(e, exponent), _mm256_set1_epi64x(-1));
}

// n <= 4 values from v, lanes past n 0; a plain load where 4 values from v lie
// before end (a row's last values, followed by the next row's)
inline __m256d load_upto4(const double *v, unsigned n, const double *end)
{
  const __m256i lanes = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  if (n == 4) return _mm256_loadu_pd(v);
  if (end - v >= 4) return _mm256_and_pd(_mm256_loadu_pd(v), _mm256_castsi256_pd(lanes));
  return _mm256_maskload_pd(v, lanes);
}

// the low 32 bits of each 64-bit lane
inline __m128i low_halves(__m256i x)
{
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
}

// fp32_round_to_odd of 4 finite doubles, as bits
inline __m128i round_to_odd4(__m256d v)
{
  const __m128 f        = _mm256_cvtpd_ps(v);
  const __m256d back    = _mm256_cvtps_pd(f);
  const __m256d sign    = _mm256_set1_pd(-0.0);
  const __m256d inexact = _mm256_cmp_pd(back, v, _CMP_NEQ_UQ);
  const __m256d away =
      _mm256_and_pd(inexact, _mm256_cmp_pd(_mm256_andnot_pd(sign, back), _mm256_andnot_pd(sign, v), _CMP_GT_OQ));
  const __m128i one = _mm_set1_epi32(1);
  const __m128i b   = _mm_sub_epi32(_mm_castps_si128(f), _mm_and_si128(low_halves(_mm256_castpd_si256(away)), one));
  return _mm_or_si128(b, _mm_and_si128(low_halves(_mm256_castpd_si256(inexact)), one));
}

// encode_as<S> of 4 finite values into out[0..4)
inline void encode4(__m256d v, double *out)
{
  _mm256_storeu_pd(out, v);
}
inline void encode4(__m256d v, float *out)
{
  _mm_storeu_ps(out, _mm256_cvtpd_ps(v));
}
inline void encode4(__m256d v, fp16_t *out)
{
  const __m128i h = _mm_cvtps_ph(_mm_castsi128_ps(round_to_odd4(v)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm_storel_epi64(reinterpret_cast<__m128i *>(out), h);
}
inline void encode4(__m256d v, bf16_t *out)
{
  const __m128i b       = round_to_odd4(v);
  const __m128i odd     = _mm_and_si128(_mm_srli_epi32(b, 16), _mm_set1_epi32(1));
  const __m128i rounded = _mm_add_epi32(_mm_add_epi32(b, _mm_set1_epi32(0x7fff)), odd);
  const __m128i upper   = _mm_srli_epi32(rounded, 16);
  _mm_storel_epi64(reinterpret_cast<__m128i *>(out), _mm_packus_epi32(upper, upper));
}
inline void encode4(__m256d v, fp11_20_t *out)
{
  _mm_storeu_si128(reinterpret_cast<__m128i *>(out), low_halves(_mm256_srli_epi64(_mm256_castpd_si256(v), 32)));
}
inline void encode4(__m256d v, fp11_4_t *out)
{
  const __m128i w = low_halves(_mm256_srli_epi64(_mm256_castpd_si256(v), 48));
  _mm_storel_epi64(reinterpret_cast<__m128i *>(out), _mm_packus_epi32(w, w));
}

} // namespace simd4
#endif

} // namespace petscmp
