// Block-Jacobi apply for groups of small blocks of one size N (1..8), the point
// blocks of FEM matrices. Private to the OpenMP backend.
//
// The storage needs no special layout: column c of all nb blocks of a group is
// stored contiguously, (c * nb + i) * N + r, so the column segment at offset
// k = i * N + r lines up with the group's rows k. Hence, over 8 rows at once
// (the same entry position of several blocks in one register, the point of the
// interleaved storage):
//   y[k] = sum_c E_c[k] * x[(k / N) * N + c],      c = 0, 1, ..., N - 1,
// where x[(k / N) * N + c], "x_c broadcast over its block", is one permutation
// of a 16-value window of x. Each y[k] adds its terms in the reference's order
// from 0.0, so the result is the reference's bit for bit (no FMA: the project
// compiles with -ffp-contract=off, and the intrinsics multiply and add apart).
// The transpose, y[i N + c] = sum_r E_c[i N + r] x[i N + r], sums within one
// stored column segment; it decodes 8 rows of each column at once and adds the
// products block by block.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "petscmp/core/accessor.hpp"

namespace petscmp {
namespace openmp {
namespace small_blocks {

inline constexpr int kMaxSmall = 8;

constexpr int gcd(int a, int b)
{
  return b == 0 ? a : gcd(b, a % b);
}

// Rows 8 p .. 8 p + 7 of a group start at a window of x that depends on p mod
// Period only: 8 Period rows are a whole number of blocks.
template <int N> inline constexpr int kPeriod = N / gcd(N, 8);

// Window start for the 8 rows beginning at row k0 (a multiple of 8): the first
// row of the block that holds row k0.
template <int N> constexpr int window_begin(int k0)
{
  return k0 / N * N;
}

// idx[p][c][l]: position in the 16-value window of x (starting at
// window_begin(8 p)) of x[(k / N) * N + c] for row k = 8 p + l.
template <int N> struct Permutations {
  alignas(64) std::int64_t idx[kPeriod<N>][N][8] = {};
  constexpr Permutations()
  {
    for (int p = 0; p < kPeriod<N>; ++p)
      for (int c = 0; c < N; ++c)
        for (int l = 0; l < 8; ++l)
          idx[p][c][l] = (8 * p + l) / N * N + c - window_begin<N>(8 * p);
  }
};

// How an apply meets memory: whether its values stream from memory (ask for
// them ahead: kPrefetchFromBytes) and whether it writes y with streaming stores
// (kStreamStoresFromBytes).
struct Streaming {
  bool prefetch = false, stores = false;
};

// y = E x block after block for the nb fp64 blocks of one group (E at its values, x and y at its first row): the
// loop PCPBJACOBI runs over its inverses, on the group's column-interleaved storage. Each y entry adds its N
// products from 0.0 in column order, as the reference does.
template <int N> inline void apply_blockwise(const double *E, int nb, const double *x, double *y)
{
  const std::size_t stride = static_cast<std::size_t>(nb) * N; // from column c to column c + 1
  for (int i = 0; i < nb; ++i, x += N, y += N) {
    const double *Ei = E + static_cast<std::size_t>(i) * N;
    double xb[N];
    for (int c = 0; c < N; ++c)
      xb[c] = x[c];
    for (int r = 0; r < N; ++r) {
      double sum = 0.0;
      for (int c = 0; c < N; ++c)
        sum += Ei[c * stride + r] * xb[c];
      y[r] = sum;
    }
  }
}

#if defined(PETSCMP_HAVE_AVX512_DECODE)
inline __mmask8 lanes_upto8(int n)
{
  return first_lanes(static_cast<unsigned>(std::clamp(n, 0, 8)));
}

// 8 full rows: unmasked loads and stores (a masked load is slower on this
// path even with every lane set).
template <int N, typename S>
inline __m512d rows8(const S *E, int rows, int k0, int p, const __m512d xlo, const __m512d xhi, __mmask8 live)
{
  static constexpr Permutations<N> perm{};
  __m512d sum = _mm512_setzero_pd();
#pragma GCC unroll 8
  for (int c = 0; c < N; ++c) {
    const __m512d xc = _mm512_permutex2var_pd(xlo, _mm512_load_si512(perm.idx[p][c]), xhi);
    sum = _mm512_add_pd(sum, _mm512_mul_pd(decode8(E + static_cast<std::size_t>(c) * rows + k0, live), xc));
  }
  return sum;
}

// A group of 8 blocks (8 N rows, N registers of sums), the default: the columns
// are read in storage order, so the values stream strictly forward (reading
// column by column within each 8 rows, 8 N apart, is 35% slower from memory).
template <int N, bool Stream = false, typename S>
__attribute__((always_inline)) inline void apply_full_group(const S *E, const double *x, double *y)
{
  static constexpr Permutations<N> perm{};
  __m512d sum[N], xlo[N], xhi[N];
#pragma GCC unroll 8
  for (int v = 0; v < N; ++v) {
    sum[v] = _mm512_setzero_pd();
    xlo[v] = _mm512_loadu_pd(x + window_begin<N>(8 * v));
    xhi[v] = _mm512_loadu_pd(x + window_begin<N>(8 * v) + 8);
  }
#pragma GCC unroll 8
  for (int c = 0; c < N; ++c)
#pragma GCC unroll 8
    for (int v = 0; v < N; ++v) {
      const __m512d xc = _mm512_permutex2var_pd(xlo[v], _mm512_load_si512(perm.idx[v % kPeriod<N>][c]), xhi[v]);
      sum[v]           = _mm512_add_pd(sum[v], _mm512_mul_pd(decode8(E + 8 * (c * N + v), 0xff), xc));
    }
#pragma GCC unroll 8
  for (int v = 0; v < N; ++v) {
    if constexpr (Stream) { // y 16-byte aligned (PETSc aligns vectors to 16, not 64): four streaming stores
      _mm_stream_pd(y + 8 * v, _mm512_extractf64x2_pd(sum[v], 0));
      _mm_stream_pd(y + 8 * v + 2, _mm512_extractf64x2_pd(sum[v], 1));
      _mm_stream_pd(y + 8 * v + 4, _mm512_extractf64x2_pd(sum[v], 2));
      _mm_stream_pd(y + 8 * v + 6, _mm512_extractf64x2_pd(sum[v], 3));
    } else
      _mm512_storeu_pd(y + 8 * v, sum[v]);
  }
}

// How far ahead of the group being applied apply_full_groups asks for values.
inline constexpr std::int64_t kValuesAheadBytes = 4096;

// `count` full groups stored one after the other (a run of groups of 8 blocks:
// values, x and y all contiguous), in one loop: no call per group, and the
// permutation indices stay in registers. s.prefetch (values streamed from
// memory): ask for one line of the values kValuesAheadBytes ahead per group.
// Zen 5, 0.8 GB of 3 x 3 inverses in one process, alternated: fp64 groups
// 6-14% faster with it, fp32 4-6%, fp16 within 2% either way. s.stores: y by
// streaming stores where it is 16-byte aligned, fenced before returning (other
// threads and the caller read y next).
template <int N, typename S>
void apply_full_groups(const S *E, std::int64_t count, const double *x, double *y, Streaming s)
{
  constexpr std::int64_t values = 8 * N * N;                                                        // of a group
  constexpr std::int64_t ahead  = (kValuesAheadBytes - 1) / (values * std::int64_t(sizeof(S))) + 1; // groups
  const std::int64_t asking     = s.prefetch ? count - ahead : 0; // the groups with one `ahead` further in the run
  auto groups                   = [&](auto stream) {
    for (std::int64_t g = 0; g < count; ++g) {
      if (g < asking) _mm_prefetch(reinterpret_cast<const char *>(E + (g + ahead) * values), _MM_HINT_T0);
      apply_full_group<N, decltype(stream)::value>(E + g * values, x + g * 8 * N, y + g * 8 * N);
    }
  };
  if (s.stores && reinterpret_cast<std::uintptr_t>(y) % 16 == 0) {
    groups(std::true_type{});
    _mm_sfence();
  } else
    groups(std::false_type{});
}

// y = E x for the nb blocks of one group; E points at the group's values, x and
// y at its first row, and x holds `avail` >= nb N values from there (the rest of
// the vector: windows may read past the group, never past the vector).
template <int N, typename S> inline void apply_group(const S *E, int nb, const double *x, double *y, std::int64_t avail)
{
  if (nb == 8 && window_begin<N>(8 * N - 8) + 16 <= avail) return apply_full_group<N>(E, x, y);
  const int rows = nb * N;
  int p = 0, k0 = 0;
  for (; k0 + 8 <= rows && window_begin<N>(k0) + 16 <= avail; k0 += 8) {
    const int wb = window_begin<N>(k0);
    _mm512_storeu_pd(y + k0, rows8<N>(E, rows, k0, p, _mm512_loadu_pd(x + wb), _mm512_loadu_pd(x + wb + 8), 0xff));
    p = p + 1 == kPeriod<N> ? 0 : p + 1;
  }
  for (; k0 < rows; k0 += 8) {
    const int wb        = window_begin<N>(k0);
    const __mmask8 live = lanes_upto8(rows - k0);
    const __m512d xlo   = _mm512_maskz_loadu_pd(lanes_upto8(rows - wb), x + wb);
    const __m512d xhi   = _mm512_maskz_loadu_pd(lanes_upto8(rows - wb - 8), x + wb + 8);
    _mm512_mask_storeu_pd(y + k0, live, rows8<N>(E, rows, k0, p, xlo, xhi, live));
    p = p + 1 == kPeriod<N> ? 0 : p + 1;
  }
}
#elif defined(PETSCMP_HAVE_AVX2_DECODE)
// AVX2 (no AVX-512): block by block, the block's n <= 4 NR sums in NR registers
// of 4, adding column after column (the reference's order): y_b += E_b(:, c) *
// x_b[c]. Column c of the block starts at E + c * stride; its values are read
// 4 at a time with plain loads, lanes past n zeroed. `whole`: 4 NR rows from
// the block's first lie in its group (the group's rows and each column's
// values are contiguous). Then the last column's load stays inside the group's
// values, and the sums are stored whole: the lanes past n land on the next
// blocks' rows, which are written next. Else the last column is copied out
// and the last register stored masked.
template <int NR, typename S>
inline void apply_block_avx2(const S *E, std::size_t stride, int n, bool whole, const double *xb, double *yb)
{
  const int tail        = n - 4 * (NR - 1); // lanes of the last register, 1..4
  const __m256i in_tail = _mm256_cmpgt_epi64(_mm256_set1_epi64x(tail), _mm256_setr_epi64x(0, 1, 2, 3));
  __m256d sum[NR];
  for (int v = 0; v < NR; ++v)
    sum[v] = _mm256_setzero_pd();
  for (int c = 0; c < n; ++c) {
    const __m256d xc = _mm256_broadcast_sd(xb + c);
    const S *col     = E + static_cast<std::size_t>(c) * stride;
    for (int v = 0; v + 1 < NR; ++v)
      sum[v] = _mm256_add_pd(sum[v], _mm256_mul_pd(decode4(col + 4 * v), xc));
    __m256d e;
    if (tail == 4 || whole || c + 1 < n)
      e = _mm256_and_pd(decode4(col + 4 * (NR - 1)), _mm256_castsi256_pd(in_tail));
    else {
      S rest[4] = {};
      std::copy(col + 4 * (NR - 1), col + n, rest);
      e = decode4(rest);
    }
    sum[NR - 1] = _mm256_add_pd(sum[NR - 1], _mm256_mul_pd(e, xc));
  }
  for (int v = 0; v + 1 < NR; ++v)
    _mm256_storeu_pd(yb + 4 * v, sum[v]);
  if (tail == 4 || whole)
    _mm256_storeu_pd(yb + 4 * (NR - 1), sum[NR - 1]);
  else
    _mm256_maskstore_pd(yb + 4 * (NR - 1), in_tail, sum[NR - 1]);
}

// Whole registers of rows: a unit of kUnitBlocks<N> blocks holds lcm(N, 4)
// rows, kUnitRegs<N> registers of 4 with no lane to spare (3 blocks of 3 rows
// would leave lanes idle; 4 blocks of 3 rows are 3 registers).
template <int N> inline constexpr int kUnitRows   = N * 4 / gcd(N, 4);
template <int N> inline constexpr int kUnitBlocks = kUnitRows<N> / N;
template <int N> inline constexpr int kUnitRegs   = kUnitRows<N> / 4;

// Lane masks: lane l of register r takes x from the unit's block (4 r + l) / N;
// a register spans at most two blocks (N >= 2), the second from lane
// from_second[r] on (4: none).
template <int N> struct UnitLanes {
  alignas(32) std::int64_t second[kUnitRegs<N>][4] = {};
  int first_block[kUnitRegs<N>]                    = {};
  bool two_blocks[kUnitRegs<N>]                    = {};
  constexpr UnitLanes()
  {
    for (int r = 0; r < kUnitRegs<N>; ++r) {
      first_block[r] = 4 * r / N;
      for (int l = 0; l < 4; ++l)
        second[r][l] = (4 * r + l) / N != first_block[r] ? -1 : 0;
      two_blocks[r] = (4 * r + 3) / N != first_block[r];
    }
  }
};

// y = E x for the kUnitBlocks<N> blocks of one unit (E: column 0 of its first
// block; column c at E + c * stride, the unit's kUnitRows<N> values of it
// contiguous). Row k adds E_c[k] * x[(k / N) N + c] for c = 0, 1, ...: the
// reference's order. x[(k / N) N + c] over a register is one broadcast of
// block b's x_c, or two blended.
template <int N, typename S> inline void apply_unit_avx2(const S *E, std::size_t stride, const double *x, double *y)
{
  static constexpr UnitLanes<N> lanes{};
  constexpr int R = kUnitRegs<N>;
  __m256d sum[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    sum[r] = _mm256_setzero_pd();
#pragma GCC unroll 8
  for (int c = 0; c < N; ++c) {
    const S *col = E + static_cast<std::size_t>(c) * stride;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m256d xc;
      if constexpr (N == 1)
        xc = _mm256_loadu_pd(x + 4 * r);
      else {
        const int b = lanes.first_block[r];
        xc          = _mm256_broadcast_sd(x + b * N + c);
        if (lanes.two_blocks[r])
          xc = _mm256_blendv_pd(
              xc, _mm256_broadcast_sd(x + (b + 1) * N + c),
              _mm256_castsi256_pd(_mm256_load_si256(reinterpret_cast<const __m256i *>(lanes.second[r]))));
      }
      sum[r] = _mm256_add_pd(sum[r], _mm256_mul_pd(decode4(col + 4 * r), xc));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    _mm256_storeu_pd(y + 4 * r, sum[r]);
}

// y = E x for the nb blocks of one group of blocks of size N: whole units, then
// the blocks left one by one
template <int N, typename S>
inline void apply_group(const S *E, int nb, const double *x, double *y, std::int64_t /*avail*/)
{
  const std::size_t stride = static_cast<std::size_t>(nb) * N;
  int i                    = 0;
  for (; i + kUnitBlocks<N> <= nb; i += kUnitBlocks<N>)
    apply_unit_avx2<N>(E + static_cast<std::size_t>(i) * N, stride, x + i * N, y + i * N);
  for (; i < nb; ++i)
    apply_block_avx2<(N + 3) / 4>(E + static_cast<std::size_t>(i) * N, stride, N, (nb - i) * N >= 4 * ((N + 3) / 4),
                                  x + i * N, y + i * N);
}
#else
// Portable: 8 rows at a time, their column segments decoded in bulk, the
// broadcast x spelled out; the compiler vectorizes the row loops.
template <int N, typename S>
inline void apply_group(const S *E, int nb, const double *x, double *y, std::int64_t /*avail*/)
{
  const int rows = nb * N;
  alignas(64) double e[8], sum[8];
  for (int k0 = 0; k0 < rows; k0 += 8) {
    const int len = std::min(8, rows - k0);
    std::fill(sum, sum + 8, 0.0);
    for (int c = 0; c < N; ++c) {
      decode_n(E + static_cast<std::size_t>(c) * rows + k0, static_cast<std::size_t>(len), e);
      for (int l = 0; l < len; ++l)
        sum[l] += e[l] * x[(k0 + l) / N * N + c];
    }
    std::copy(sum, sum + len, y + k0);
  }
}
#endif

// y = E^T x: y[i N + c] = sum_r E_c[i N + r] x[i N + r], r increasing from 0.0.
template <int N, typename S> inline void apply_group_transpose(const S *E, int nb, const double *x, double *y)
{
  const int rows = nb * N;
  alignas(64) double e[N][8];
  for (int i0 = 0; i0 < nb; i0 += 8 / N) { // the blocks whose rows fit in 8
    const int k0 = i0 * N, nblk = std::min(8 / N, nb - i0);
    for (int c = 0; c < N; ++c)
      decode_n(E + static_cast<std::size_t>(c) * rows + k0, static_cast<std::size_t>(nblk) * N, e[c]);
    for (int i = 0; i < nblk; ++i) {
      const double *xb = x + k0 + i * N;
#pragma GCC unroll 8
      for (int c = 0; c < N; ++c) {
        double sum = 0.0;
#pragma GCC unroll 8
        for (int r = 0; r < N; ++r)
          sum += e[c][i * N + r] * xb[r];
        y[k0 + i * N + c] = sum;
      }
    }
  }
}

} // namespace small_blocks
} // namespace openmp
} // namespace petscmp
