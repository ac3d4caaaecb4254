// Split storage (after the CPMS idea of the modular-precision paper): every
// fp64 value is cut into Segments pieces of 64 / Segments bits, most
// significant first, and piece s of every value lives in plane s, an array of
// its own. Plane 0 holds the sign, the exponent and the leading significand
// bits, so any prefix of the planes is a value of the same range (no overflow,
// no underflow). Reading the first Read planes gives the double whose bits
// past them are zero: the value truncated toward zero to Read * 64 / Segments
// - 12 significand bits (relative change below 2^-(Read * 64 / Segments - 12));
// reading them all gives the value exactly, and the memory is that of fp64.
//
// Read = 1 is exactly a truncated format of formats.hpp (fp11_20 for 2
// segments, fp11_4 for 4): kernels read plane 0 as that format. For Read >= 2
// this header gives the storage type segment_read<Segments, Read>, read
// through a segment_ptr (a plane pointer and the planes' distance), with the
// decoders the kernels call on plain pointers of the other formats.
#pragma once

#include <cstddef>
#include <cstdint>

#include "petscmp/core/formats.hpp"

namespace petscmp {

template <int Segments> struct segment_word;
template <> struct segment_word<2> {
  using type = std::uint32_t;
};
template <> struct segment_word<4> {
  using type = std::uint16_t;
};

// The first Read of a value's Segments segments, joined: a storage type of
// its own for the kernels' templates (decode gives the truncated double).
template <int Segments, int Read> struct segment_read {
  static_assert(Read >= 2 && Read <= Segments, "Read = 1 is the head's truncated format");
  using word                 = typename segment_word<Segments>::type;
  static constexpr int bits  = 64 / Segments;
  static constexpr int shift = 64 - bits; // of segment 0
  std::uint64_t joined;
};
template <int Segments, int Read> PETSCMP_HOST_DEVICE inline double decode(segment_read<Segments, Read> s)
{
  return double_from_bits(s.joined);
}

// Entry i of split storage: segment s at p[s * plane + i].
template <int Segments, int Read> struct segment_ptr {
  using word = typename segment_word<Segments>::type;
  const word *p;
  std::ptrdiff_t plane;
  PETSCMP_HOST_DEVICE segment_ptr operator+(std::ptrdiff_t i) const { return {p + i, plane}; }
  PETSCMP_HOST_DEVICE segment_read<Segments, Read> operator[](std::ptrdiff_t i) const
  {
    std::uint64_t b = 0;
    for (int s = 0; s < Read; ++s)
      b |= static_cast<std::uint64_t>(p[s * plane + i]) << (64 - (s + 1) * (64 / Segments));
    return {b};
  }
};

// The pointer type a kernel reads Storage through: a plain pointer, or a
// segment_ptr for split storage.
template <typename Storage> struct storage_pointer {
  using type = const Storage *;
};
template <int Segments, int Read> struct storage_pointer<segment_read<Segments, Read>> {
  using type = segment_ptr<Segments, Read>;
};
template <typename Storage> using storage_pointer_t = typename storage_pointer<Storage>::type;

#if !defined(PETSCMP_HAVE_AVX512_DECODE)
template <int Segments, int Read> inline void decode_upto8(segment_ptr<Segments, Read> src, unsigned n, double *out)
{
  for (unsigned i = 0; i < n; ++i)
    out[i] = decode(src[i]);
}
#else
namespace detail {
// Segment s of 8 entries (lanes of m; others 0), widened to 64-bit lanes and
// moved to its place in the double.
template <int Segments, int Read, bool Plain>
inline __m512i segment8(segment_ptr<Segments, Read> src, int s, __mmask8 m)
{
  const auto *at   = src.p + s * src.plane;
  const __m512i sh = _mm512_set1_epi64(64 - (s + 1) * (64 / Segments));
  __m512i wide;
  if constexpr (Segments == 2) {
    const __m256i w =
        Plain ? plain_load(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(at))) : _mm256_maskz_loadu_epi32(m, at);
    wide = _mm512_maskz_cvtepu32_epi64(m, w);
  } else {
    const __m128i w =
        Plain ? plain_load(_mm_loadu_si128(reinterpret_cast<const __m128i *>(at))) : _mm_maskz_loadu_epi16(m, at);
    wide = _mm512_maskz_cvtepu16_epi64(m, w);
  }
  return _mm512_maskz_sllv_epi64(0xff, wide, sh);
}
template <int Segments, int Read, bool Plain> inline __m512d join8(segment_ptr<Segments, Read> src, __mmask8 m)
{
  __m512i b = segment8<Segments, Read, Plain>(src, 0, m);
  for (int s = 1; s < Read; ++s)
    b = _mm512_maskz_or_epi64(0xff, b, segment8<Segments, Read, Plain>(src, s, m));
  return _mm512_castsi512_pd(b);
}
} // namespace detail
template <int Segments, int Read> inline __m512d decode8(segment_ptr<Segments, Read> src, __mmask8 m)
{
  return detail::join8<Segments, Read, false>(src, m);
}
// 8 entries read with plain loads of every plane (the caller guarantees them
// readable: planes are padded), converted in the lanes of m.
template <int Segments, int Read> inline __m512d decode8_padded(segment_ptr<Segments, Read> src, __mmask8 m)
{
  return detail::join8<Segments, Read, true>(src, m);
}
template <int Segments, int Read> inline void decode_upto8(segment_ptr<Segments, Read> src, unsigned n, double *out)
{
  _mm512_storeu_pd(out, decode8(src, first_lanes(n)));
}
#endif

#if defined(PETSCMP_HAVE_AVX2_DECODE)
template <int Segments, int Read> inline __m256d decode4(segment_ptr<Segments, Read> src)
{
  __m256i b = _mm256_setzero_si256();
  for (int s = 0; s < Read; ++s) {
    const auto *at = src.p + s * src.plane;
    __m256i wide;
    if constexpr (Segments == 2)
      wide = _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i *>(at)));
    else
      wide = _mm256_cvtepu16_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(at)));
    b = _mm256_or_si256(b, _mm256_sllv_epi64(wide, _mm256_set1_epi64x(64 - (s + 1) * (64 / Segments))));
  }
  return _mm256_castsi256_pd(b);
}
template <int Segments, int Read> inline void decode8(segment_ptr<Segments, Read> src, __m256d v[2])
{
  v[0] = decode4(src);
  v[1] = decode4(src + 4);
}
template <int Segments, int Read> inline void decode8(segment_ptr<Segments, Read> src, double *out)
{
  __m256d v[2];
  decode8(src, v);
  _mm256_storeu_pd(out, v[0]);
  _mm256_storeu_pd(out + 4, v[1]);
}
#endif

template <int Segments, int Read> inline void decode_n(segment_ptr<Segments, Read> src, std::size_t n, double *out)
{
  std::size_t i = 0;
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  for (; i + 8 <= n; i += 8)
    decode_upto8(src + static_cast<std::ptrdiff_t>(i), 8u, out + i);
#elif defined(PETSCMP_HAVE_AVX2_DECODE)
  for (; i + 8 <= n; i += 8)
    decode8(src + static_cast<std::ptrdiff_t>(i), out + i);
#endif
  for (; i < n; ++i)
    out[i] = decode(src[static_cast<std::ptrdiff_t>(i)]);
}

template <int Segments, int Read> struct storage_traits<segment_read<Segments, Read>> {
  static constexpr Format format          = Format::fp64;
  static constexpr const char *name       = Segments == 2 ? "split2" : "split4";
  static constexpr int unit_roundoff_exp2 = Read == Segments ? -53 : -(Read * (64 / Segments) - 12);
  static double max_finite() { return storage_traits<double>::max_finite(); }
  static double min_normal() { return storage_traits<double>::min_normal(); }
};

// Calls fn(type_tag<Storage>{}) with the type that reads `read` of `segments`
// segments (read 0 or past them: all): the head's truncated format for one.
template <typename Fn> decltype(auto) dispatch_segments(int segments, int read, Fn &&fn)
{
  if (read <= 0 || read > segments) read = segments;
  if (segments == 2) return read == 1 ? fn(type_tag<fp11_20_t>{}) : fn(type_tag<segment_read<2, 2>>{});
  switch (read) {
  case 1:
    return fn(type_tag<fp11_4_t>{});
  case 2:
    return fn(type_tag<segment_read<4, 2>>{});
  case 3:
    return fn(type_tag<segment_read<4, 3>>{});
  default:
    return fn(type_tag<segment_read<4, 4>>{});
  }
}

// The relative change of a value read at `read` of `segments` segments: below
// 2^-(read * 64 / segments - 12); 0 when every segment is read.
inline double segment_read_bound(int segments, int read)
{
  if (read <= 0 || read >= segments) return 0.0;
  return std::ldexp(1.0, -(read * (64 / segments) - 12));
}

} // namespace petscmp
