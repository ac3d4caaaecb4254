// OpenMP backend: each block's rows are split among threads by nonzeros.
// Within a row the summation order is the reference's (sequential or PETSc's
// inode pairs), so results are bitwise those of the reference for y = A x.
// The transpose accumulates per thread and adds the thread buffers in thread
// order: bitwise equal to the reference with one thread, to rounding otherwise.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "../prefetch.hpp"
#include "../row_dot.hpp"
#include "petscmp/core/omp.hpp"
#include "../spmv.hpp"

namespace petscmp {
namespace openmp {

namespace {

// set_gathered_x's choice; automatic until a test or benchmark sets it
std::atomic<GatheredX> &gathered_x_setting()
{
  static std::atomic<GatheredX> how{GatheredX::automatic};
  return how;
}

// First entry of `offsets[lo..hi]` (nondecreasing) that is >= target.
template <typename T>
std::int64_t lower_bound_index(const T *offsets, std::int64_t lo, std::int64_t hi, std::int64_t target)
{
  return std::lower_bound(offsets + lo, offsets + hi, static_cast<T>(target)) - offsets;
}

// The rows [begin, end) (block-local) that thread t of nt handles: equal
// shares of the block's nonzeros.
template <typename Index>
void thread_rows(const RowBlock &block, const Index *rowptr, int t, int nt, std::int64_t &begin, std::int64_t &end)
{
  const std::int64_t nrows = block.row_count();
  if (nt == 1) {
    begin = 0;
    end   = nrows;
    return;
  }
  auto cut = [&](int s) -> std::int64_t {
    if (s == 0) return 0;
    if (s == nt) return nrows;
    const std::int64_t target = block.nnz * s / nt;
    if (block.grouped()) return lower_bound_index(block.value_offsets.data(), 0, nrows, target);
    return lower_bound_index(rowptr, block.row_begin, block.row_end, block.value_base + target) - block.row_begin;
  };
  begin = cut(t);
  end   = cut(t + 1);
}

// Values converted ahead per chunk of whole rows (4 KiB of fp64, in L1): one
// bulk conversion per chunk instead of a masked one per row, none for fp64.
constexpr std::int64_t kChunk = 512; // even: PETSc's pairs never straddle chunks of a long row
// Rows handled together (independent accumulators) when their lengths agree.
constexpr int kRows = 4;

// Rows k0..k1 (block-local) of one block. Both layouts keep the values of
// consecutive block rows contiguous: row k's values start at voff(k), and
// voff(k + 1) - voff(k) is its length.
template <SumOrder Order, typename S, bool Grouped, typename Index>
void block_rows(const RowBlock &block, CsrPattern<Index> p, std::int64_t k0, std::int64_t k1, const double *x,
                const double *z, double *y)
{
  const auto vals           = make_range(values_of<S>(block), static_cast<std::size_t>(block.nnz));
  const Index *rowptr       = p.rowptr;
  const std::int64_t *voffs = block.value_offsets.data();
  const std::int32_t *rows  = block.rows.data();
  const std::int64_t rbegin = block.row_begin, vbase = block.value_base;
  auto row_of = [&](std::int64_t k) -> std::int64_t {
    if constexpr (Grouped)
      return rows[k];
    else
      return rbegin + k;
  };
  auto voff = [&](std::int64_t k) -> std::int64_t {
    if constexpr (Grouped)
      return voffs[k];
    else
      return static_cast<std::int64_t>(rowptr[rbegin + k]) - vbase;
  };
  alignas(64) double scratch[kChunk];
  ValuesAhead ahead(vals.data(), block.nnz);

  std::int64_t k = k0;
  while (k < k1) {
    const std::int64_t vb = voff(k);
    ahead.upto(vb);
    std::int64_t kend = k;
    while (kend < k1 && voff(kend + 1) - vb <= kChunk)
      ++kend;
    if (kend == k) { // one row longer than a chunk: its values piece by piece
      const std::int64_t row = row_of(k), n = voff(k + 1) - vb;
      const Index *c = p.cols + rowptr[row];
      double sum     = z ? z[row] : 0.0;
      for (std::int64_t e = 0; e < n; e += kChunk) {
        const std::int64_t m = std::min(kChunk, n - e);
        sum                  = row_dot_values<Order>(
            sum, vals.read_n(static_cast<std::size_t>(vb + e), static_cast<std::size_t>(m), scratch), c + e, m, x);
      }
      y[row] = sum;
      ++k;
      continue;
    }
    const double *v = vals.read_n(static_cast<std::size_t>(vb), static_cast<std::size_t>(voff(kend) - vb), scratch);
    for (; k + kRows <= kend; k += kRows) {
      std::int64_t row[kRows], off[kRows + 1];
      for (int i = 0; i <= kRows; ++i)
        off[i] = voff(k + i) - vb;
      const std::int64_t n = off[1] - off[0];
      bool equal           = true;
      for (int i = 1; i < kRows; ++i)
        equal &= off[i + 1] - off[i] == n;
      double sum[kRows];
      const double *vr[kRows];
      const Index *cr[kRows];
      for (int i = 0; i < kRows; ++i) {
        row[i] = row_of(k + i);
        sum[i] = z ? z[row[i]] : 0.0; // z may alias y: each row reads its z before any y is written
        vr[i]  = v + off[i];
        cr[i]  = p.cols + rowptr[row[i]];
      }
      if (equal)
        rows_dot_values<kRows, Order>(sum, vr, cr, n, x);
      else
        for (int i = 0; i < kRows; ++i)
          sum[i] = row_dot_values<Order>(sum[i], vr[i], cr[i], off[i + 1] - off[i], x);
      for (int i = 0; i < kRows; ++i)
        y[row[i]] = sum[i];
    }
    for (; k < kend; ++k) {
      const std::int64_t row = row_of(k), o = voff(k) - vb;
      y[row] = row_dot_values<Order>(z ? z[row] : 0.0, v + o, p.cols + rowptr[row], voff(k + 1) - vb - o, x);
    }
  }
}

// The slices [q0, q1) that thread t of nt handles: equal shares of the
// block's stored entries.
void thread_slices(const RowBlock &block, int t, int nt, std::int64_t &q0, std::int64_t &q1)
{
  const std::int64_t nslices = block.slice_count(), stored = block.stored_count();
  auto cut = [&](int s) -> std::int64_t {
    if (s == 0) return 0;
    if (s == nt) return nslices;
    return lower_bound_index(block.slice_offsets.data(), 0, nslices, stored * s / nt);
  };
  q0 = cut(t);
  q1 = cut(t + 1);
}

#if defined(PETSCMP_HAVE_AVX512_DECODE) || defined(PETSCMP_HAVE_AVX2_DECODE)
// Calls gathered(xs, cols) for the gathered slice q: entry e of lane l has
// column cols[8e + l] of xs, a 16-bit offset from the slice's base (narrow;
// xs = x + base) or a 32-bit column (xs = x). A padding entry's is 0.
template <typename Gathered>
inline void with_gathered_columns(const RowBlock &block, std::int64_t q, const double *x, Gathered &&gathered)
{
  if (block.narrow_slice(q))
    gathered(x + block.narrow_base(q), block.narrow_offsets(q));
  else
    gathered(x, block.cols.data() + block.slice_col_offsets[q]);
}

// xs[cols[0..3]] in one register, by four scalar loads: how the slice
// kernels read the x of gathered slices, instead of a gather instruction. On
// Zen 4 a gather of 8 doubles cost more than AIJ's scalar loop spends on 8
// nonzeros: Morton-numbered 7-point Laplacians ran at 0.8-0.9x AIJ's speed in
// cache and 0.6-0.7x from memory; with the loads 1.2-1.5x and 1.2-1.3x.
// A padding entry's column (0, or offset 0: the slice's base) is a valid x
// entry; the kernels mask or zero its product.
template <typename C> inline __m256d load_x4(const double *xs, const C *cols)
{
  const __m128d lo = _mm_loadh_pd(_mm_load_sd(xs + cols[0]), xs + cols[1]);
  const __m128d hi = _mm_loadh_pd(_mm_load_sd(xs + cols[2]), xs + cols[3]);
  return _mm256_insertf128_pd(_mm256_castpd128_pd256(lo), hi, 1);
}
#endif

#if defined(PETSCMP_HAVE_AVX512_DECODE)
// The 8 columns (or 16-bit offsets) of one entry of a gathered slice, as the indices of a gather.
inline __m256i column_indices8(const std::uint16_t *c)
{
  return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(c)));
}
inline __m256i column_indices8(const std::int32_t *c)
{
  return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c));
}

// Whether the rows in the lanes of `live` (the first ones) are the first one's, + 1, + 2, ...
inline bool consecutive_rows(__m256i rows, __mmask8 live)
{
  const __m256i first = _mm256_broadcastd_epi32(_mm256_castsi256_si128(rows));
  const __m256i want  = _mm256_add_epi32(first, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return (_mm256_cmpeq_epi32_mask(rows, want) & live) == live;
}

// sum + the products of a gathered slice of `width` entries, value8(e) the
// values of entry e: the 8 rows in two registers of 4, x read by load_x4.
// Entry e is added in the rows that have it (masked), in the steps of the
// other slice kinds, so the sums are bitwise the same. Products of padding
// lanes are zeroed by the multiply's mask, so they raise no exception.
template <SumOrder Order, typename Value8, typename C>
inline __m512d gathered_slice_sums(__m512d sum8, __m256i lengths, std::int64_t width, Value8 value8, const double *xs,
                                   const C *cols)
{
  __m256d sum[2] = {_mm512_maskz_extractf64x4_pd(0xf, sum8, 0), _mm512_maskz_extractf64x4_pd(0xf, sum8, 1)};
  auto has_entry = [&](std::int64_t e) {
    return _mm256_cmpgt_epi32_mask(lengths, _mm256_set1_epi32(static_cast<int>(e)));
  };
  auto half     = [](__mmask8 m, int h) { return static_cast<__mmask8>(m >> (4 * h)); };
  auto products = [&](std::int64_t e, __mmask8 m, __m256d p[2]) {
    const __m512d v = value8(e);
    const C *c      = cols + e * kSliceRows;
    p[0]            = _mm256_maskz_mul_pd(m, _mm512_maskz_extractf64x4_pd(0xf, v, 0), load_x4(xs, c));
    p[1]            = _mm256_maskz_mul_pd(half(m, 1), _mm512_maskz_extractf64x4_pd(0xf, v, 1), load_x4(xs, c + 4));
  };
  std::int64_t j = 0;
  if constexpr (Order == SumOrder::paired) // sum += a_j x_j + a_j+1 x_j+1, then the odd one
    for (; j + 1 < width; j += 2) {
      const __mmask8 m0 = has_entry(j), m1 = has_entry(j + 1);
      __m256d p0[2], p1[2];
      products(j, m0, p0);
      products(j + 1, m1, p1);
      for (int h = 0; h < 2; ++h)
        sum[h] = _mm256_mask_add_pd(sum[h], half(m0, h), sum[h], _mm256_mask_add_pd(p0[h], half(m1, h), p0[h], p1[h]));
    }
  for (; j < width; ++j) {
    const __mmask8 m = has_entry(j);
    __m256d p[2];
    products(j, m, p);
    for (int h = 0; h < 2; ++h)
      sum[h] = _mm256_mask_add_pd(sum[h], half(m, h), sum[h], p[h]);
  }
  return _mm512_maskz_insertf64x4(0xff, _mm512_castpd256_pd512(sum[0]), sum[1], 1);
}
#endif

#if defined(PETSCMP_HAVE_AVX512_DECODE)
// Slices [q0, q1) of a sliced block, 8 rows per register: entry j of the 8
// rows is one read of 8 values through the accessor, one read of their x and
// one multiply. A gathered slice reads x with scalar loads, in two registers
// of 4 rows (gathered_slice_sums), or on Intel with one gather instruction
// (`gathers`: gathered_x_by_gathers), and masks the adds to the rows that have an
// entry j, so every row's sum takes exactly the reference's steps (no padding
// term is added; a narrow slice's 16-bit offsets index x from its base
// column); a shifted slice (all rows of one length, columns shifted by the
// lane) reads x with one plain load and adds in every lane; a patched slice
// reads the x of its rows as a gathered slice's with one masked plain load and
// one masked broadcast per patch.
template <SumOrder Order, typename S>
void slices_avx512(const RowBlock &block, std::int64_t q0, std::int64_t q1, const double *x, const double *z, double *y,
                   bool gathers)
{
  const auto vals          = make_range(values_of<S>(block), static_cast<std::size_t>(block.stored_count()));
  const std::int64_t nrows = block.row_count();
  const bool grouped       = block.grouped();
  const __m512d zero       = _mm512_setzero_pd();
  auto value8              = [&](std::int64_t at) { return vals.read8(static_cast<std::size_t>(at), 0xff); };
  ValuesAhead ahead(vals.data(), block.stored_count());
  for (std::int64_t q = q0; q < q1; ++q) {
    ahead.upto(block.slice_offsets[q]);
    const std::int64_t k0 = q * kSliceRows;
    const __mmask8 live   = first_lanes(static_cast<unsigned>(std::min<std::int64_t>(kSliceRows, nrows - k0)));
    const __m256i rows    = grouped ? _mm256_maskz_loadu_epi32(live, block.rows.data() + k0) : _mm256_setzero_si256();
    // a grouped slice whose rows follow each other (most slices of a block with a few rows set apart) reads z
    // and writes y as a run's slice does, without a gather and a scatter
    const bool scattered         = grouped && !consecutive_rows(rows, live);
    const std::int64_t first_row = grouped ? block.rows[static_cast<std::size_t>(k0)] : block.row_begin + k0;
    double *const yrun           = y + first_row;
    __m512d sum                  = zero;
    if (z)
      sum = scattered ? _mm512_mask_i32gather_pd(zero, live, rows, z, 8) : _mm512_maskz_loadu_pd(live, z + first_row);
    const std::int64_t base  = block.slice_offsets[q];
    const std::int64_t width = (block.slice_offsets[q + 1] - base) / kSliceRows;
    const std::int32_t *cols = block.cols.data() + block.slice_col_offsets[q];
    std::int64_t j           = 0;
    if (block.shifted_slice(q)) { // live is full: a shifted slice has 8 rows
      auto product = [&](std::int64_t e) {
        return _mm512_mul_pd(value8(base + e * kSliceRows), _mm512_loadu_pd(x + cols[e]));
      };
      if constexpr (Order == SumOrder::paired)
        for (; j + 1 < width; j += 2)
          sum = _mm512_add_pd(sum, _mm512_add_pd(product(j), product(j + 1)));
      for (; j < width; ++j)
        sum = _mm512_add_pd(sum, product(j));
    } else {
      const __m256i lengths = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(block.row_lengths.data() + k0));
      auto has_entry        = [&](std::int64_t e) {
        return _mm256_cmpgt_epi32_mask(lengths, _mm256_set1_epi32(static_cast<int>(e)));
      };
      // x_of(e, m): the x entries of entry e of the rows in m (the others 0)
      auto add_products = [&](auto x_of) {
        auto product = [&](std::int64_t e, __mmask8 m) {
          return _mm512_mul_pd(value8(base + e * kSliceRows), x_of(e, m));
        };
        if constexpr (Order == SumOrder::paired) { // sum += a_j x_j + a_j+1 x_j+1, then the odd one
          for (; j + 1 < width; j += 2) {
            const __mmask8 m0 = has_entry(j), m1 = has_entry(j + 1);
            const __m512d p0 = product(j, m0);
            const __m512d p1 = product(j + 1, m1);
            sum              = _mm512_mask_add_pd(sum, m0, sum, _mm512_mask_add_pd(p0, m1, p0, p1));
          }
        }
        for (; j < width; ++j) {
          const __mmask8 m = has_entry(j);
          sum              = _mm512_mask_add_pd(sum, m, sum, product(j, m));
        }
      };
      if (block.patched_slice(q)) { // one masked plain load, then the patched rows' x one by one
        const PatchedSlice patched = block.patched_columns(q);
        add_products([&](std::int64_t e, __mmask8 m) {
          const unsigned patches = patched.masks[e];
          __m512d xe             = _mm512_maskz_loadu_pd(static_cast<__mmask8>(m & ~patches), x + patched.bases[e]);
          for (unsigned bits = patches, i = patched.before[e]; bits; bits &= bits - 1)
            xe = _mm512_mask_broadcastsd_pd(xe, static_cast<__mmask8>(bits & -bits),
                                            _mm_load_sd(x + patched.patches[i++]));
          return xe;
        });
      } else if (gathers)
        with_gathered_columns(block, q, x, [&](const double *xs, auto slice_cols) {
          add_products([&](std::int64_t e, __mmask8 m) {
            return _mm512_mask_i32gather_pd(zero, m, column_indices8(slice_cols + e * kSliceRows), xs, 8);
          });
        });
      else
        with_gathered_columns(block, q, x, [&](const double *xs, auto slice_cols) {
          sum = gathered_slice_sums<Order>(
              sum, lengths, width, [&](std::int64_t e) { return value8(base + e * kSliceRows); }, xs, slice_cols);
        });
    }
    if (scattered)
      _mm512_mask_i32scatter_pd(y, live, rows, sum, 8);
    else
      _mm512_mask_storeu_pd(yrun, live, sum);
  }
}
#endif

#if defined(PETSCMP_HAVE_AVX2_DECODE)
// Whether rows[0..8) are rows[0], rows[0] + 1, ... (a grouped block's rows in a sorted window may be any order).
inline bool consecutive_rows8(const std::int32_t *rows)
{
  const __m256i listed = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(rows));
  const __m256i want   = _mm256_add_epi32(_mm256_set1_epi32(rows[0]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_movemask_epi8(_mm256_cmpeq_epi32(listed, want)) == -1;
}

// Slices [q0, q1) of a sliced block with AVX2 (no AVX-512): the steps of
// slices_avx512, the 8 rows of a slice in two registers of 4. A gathered
// slice's adds are blended into the rows that have an entry j (x read by
// scalar loads, load_x4, and zeroed in the other rows), so every row's sum
// takes exactly the reference's steps; a shifted slice reads x with two plain
// loads, a patched one with two masked plain loads and one blend per patch.
template <SumOrder Order, typename S>
void slices_avx2(const RowBlock &block, std::int64_t q0, std::int64_t q1, const double *x, const double *z, double *y)
{
  const auto vals          = values_of<S>(block);
  const std::int64_t nrows = block.row_count();
  const bool grouped       = block.grouped();
  const __m256d zero       = _mm256_setzero_pd();
  ValuesAhead ahead(vals, block.stored_count());
  for (std::int64_t q = q0; q < q1; ++q) {
    ahead.upto(block.slice_offsets[q]);
    const std::int64_t k0 = q * kSliceRows;
    const int live        = static_cast<int>(std::min<std::int64_t>(kSliceRows, nrows - k0));
    // 8 rows that follow each other: a run's full slice, or a grouped one's (a block with a few rows set apart)
    const std::int32_t *listed   = grouped ? block.rows.data() + k0 : nullptr;
    const bool contiguous        = live == kSliceRows && (!grouped || consecutive_rows8(listed));
    const std::int64_t first_row = grouped ? listed[0] : block.row_begin + k0;
    __m256d sum[2]               = {zero, zero};
    if (z && contiguous) {
      sum[0] = _mm256_loadu_pd(z + first_row);
      sum[1] = _mm256_loadu_pd(z + first_row + 4);
    } else if (z) {
      alignas(32) double start[kSliceRows] = {};
      for (int i = 0; i < live; ++i)
        start[i] = z[block.row(k0 + i)];
      sum[0] = _mm256_load_pd(start);
      sum[1] = _mm256_load_pd(start + 4);
    }
    const std::int64_t base  = block.slice_offsets[q];
    const std::int64_t width = (block.slice_offsets[q + 1] - base) / kSliceRows;
    const std::int32_t *cols = block.cols.data() + block.slice_col_offsets[q];
    std::int64_t j           = 0;
    if (block.shifted_slice(q)) { // 8 rows of one length
      auto add_products = [&](std::int64_t e, __m256d p[2]) {
        __m256d v[2];
        decode8(vals + base + e * kSliceRows, v);
        const double *xs = x + cols[e];
        p[0]             = _mm256_mul_pd(v[0], _mm256_loadu_pd(xs));
        p[1]             = _mm256_mul_pd(v[1], _mm256_loadu_pd(xs + 4));
      };
      if constexpr (Order == SumOrder::paired)
        for (; j + 1 < width; j += 2) {
          __m256d p0[2], p1[2];
          add_products(j, p0);
          add_products(j + 1, p1);
          for (int h = 0; h < 2; ++h)
            sum[h] = _mm256_add_pd(sum[h], _mm256_add_pd(p0[h], p1[h]));
        }
      for (; j < width; ++j) {
        __m256d p[2];
        add_products(j, p);
        for (int h = 0; h < 2; ++h)
          sum[h] = _mm256_add_pd(sum[h], p[h]);
      }
    } else {
      const __m256i lengths = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(block.row_lengths.data() + k0));
      // rows 4h..4h+3 that have an entry e, as 64-bit lane masks
      auto has_entry = [&](std::int64_t e, __m256d m[2]) {
        const __m256i in = _mm256_cmpgt_epi32(lengths, _mm256_set1_epi32(static_cast<int>(e)));
        m[0]             = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(in)));
        m[1]             = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm256_extracti128_si256(in, 1)));
      };
      // x_of(e, m, xe): the x entries of entry e of the rows in m (the others 0), rows 4h..4h+3 in xe[h]
      auto add_products = [&](auto x_of) {
        auto products = [&](std::int64_t e, const __m256d m[2], __m256d p[2]) {
          __m256d v[2], xe[2];
          decode8(vals + base + e * kSliceRows, v);
          x_of(e, m, xe);
          p[0] = _mm256_mul_pd(v[0], xe[0]);
          p[1] = _mm256_mul_pd(v[1], xe[1]);
        };
        if constexpr (Order == SumOrder::paired) // sum += a_j x_j + a_j+1 x_j+1, then the odd one
          for (; j + 1 < width; j += 2) {
            __m256d m0[2], m1[2], p0[2], p1[2];
            has_entry(j, m0);
            has_entry(j + 1, m1);
            products(j, m0, p0);
            products(j + 1, m1, p1);
            for (int h = 0; h < 2; ++h) {
              const __m256d pair = _mm256_blendv_pd(p0[h], _mm256_add_pd(p0[h], p1[h]), m1[h]);
              sum[h]             = _mm256_blendv_pd(sum[h], _mm256_add_pd(sum[h], pair), m0[h]);
            }
          }
        for (; j < width; ++j) {
          __m256d m[2], p[2];
          has_entry(j, m);
          products(j, m, p);
          for (int h = 0; h < 2; ++h)
            sum[h] = _mm256_blendv_pd(sum[h], _mm256_add_pd(sum[h], p[h]), m[h]);
        }
      };
      if (block.patched_slice(q)) { // two masked plain loads, then the patched rows' x one by one
        const PatchedSlice patched = block.patched_columns(q);
        const __m256i lane_bits    = _mm256_setr_epi64x(1, 2, 4, 8);
        add_products([&](std::int64_t e, const __m256d m[2], __m256d xe[2]) {
          const unsigned patches = patched.masks[e];
          const double *xs       = x + patched.bases[e];
          for (int h = 0; h < 2; ++h) {
            const __m256i bits   = _mm256_set1_epi64x(static_cast<long long>((patches >> (4 * h)) & 0xfu));
            const __m256i patch  = _mm256_cmpeq_epi64(_mm256_and_si256(bits, lane_bits), lane_bits);
            const __m256i loaded = _mm256_andnot_si256(patch, _mm256_castpd_si256(m[h]));
            xe[h]                = _mm256_maskload_pd(xs + 4 * h, loaded);
          }
          for (unsigned bits = patches, i = patched.before[e]; bits; bits &= bits - 1) {
            const unsigned l = static_cast<unsigned>(__builtin_ctz(bits));
            const __m256d in = _mm256_castsi256_pd(
                _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(1ll << (l % 4)), lane_bits), lane_bits));
            xe[l / 4] = _mm256_blendv_pd(xe[l / 4], _mm256_broadcast_sd(x + patched.patches[i++]), in);
          }
        });
      } else
        with_gathered_columns(block, q, x, [&](const double *xs, auto slice_cols) {
          add_products([&](std::int64_t e, const __m256d m[2], __m256d xe[2]) {
            for (int h = 0; h < 2; ++h) // x of padding lanes zeroed: their products raise no exception
              xe[h] = _mm256_and_pd(load_x4(xs, slice_cols + e * kSliceRows + 4 * h), m[h]);
          });
        });
    }
    if (contiguous) {
      _mm256_storeu_pd(y + first_row, sum[0]);
      _mm256_storeu_pd(y + first_row + 4, sum[1]);
    } else {
      alignas(32) double out[kSliceRows];
      _mm256_store_pd(out, sum[0]);
      _mm256_store_pd(out + 4, sum[1]);
      for (int i = 0; i < live; ++i)
        y[block.row(k0 + i)] = out[i];
    }
  }
}
#endif

// Slices [q0, q1) without AVX-512: each row through the reference's row_dot.
template <SumOrder Order, typename S>
void slices_portable(const RowBlock &block, std::int64_t q0, std::int64_t q1, const double *x, const double *z,
                     double *y)
{
  const auto vals               = make_range(values_of<S>(block), static_cast<std::size_t>(block.stored_count()));
  const std::int64_t nrows      = block.row_count();
  const std::int64_t *no_rowptr = nullptr; // a sliced block never reads the master
  for (std::int64_t k = q0 * kSliceRows; k < std::min(nrows, q1 * kSliceRows); ++k) {
    const std::int64_t row = block.row(k);
    with_row_entries(block, no_rowptr, no_rowptr, k,
                     [&](auto cols, std::int64_t first, std::int64_t stride, std::int64_t n) {
                       y[row] = row_dot<Order>(z ? z[row] : 0.0, vals.subrange(first, 0), cols, n, x, stride);
                     });
  }
}

// (gathers: how the AVX-512 kernel reads the x of gathered slices; the others use scalar loads)
template <SumOrder Order, typename S>
void slices(const RowBlock &block, std::int64_t q0, std::int64_t q1, const double *x, const double *z, double *y,
            [[maybe_unused]] bool gathers)
{
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  slices_avx512<Order, S>(block, q0, q1, x, z, y, gathers);
#elif defined(PETSCMP_HAVE_AVX2_DECODE)
  slices_avx2<Order, S>(block, q0, q1, x, z, y);
#else
  slices_portable<Order, S>(block, q0, q1, x, z, y);
#endif
}

// The nodes [n0, n1) that thread t of nt handles: equal shares of the
// block's nonzeros.
void thread_nodes(const RowBlock &block, int t, int nt, std::int64_t &n0, std::int64_t &n1)
{
  const std::int64_t nnodes = static_cast<std::int64_t>(block.nodes.size());
  auto cut                  = [&](int s) -> std::int64_t {
    if (s == 0) return 0;
    if (s == nt) return nnodes;
    const std::int64_t target = block.nnz * s / nt;
    return std::lower_bound(block.nodes.begin(), block.nodes.end(), target,
                                             [](const NodeInfo &nd, std::int64_t v) { return nd.values < v; }) -
           block.nodes.begin();
  };
  n0 = cut(t);
  n1 = cut(t + 1);
}

#if defined(PETSCMP_HAVE_AVX512_DECODE)
// sum + the node's products, all its rows in the lanes of m: entry e of the
// rows is one read of the node's adjacent values (a plain load: the block's
// values are padded) and one broadcast of x. Each lane takes exactly
// row_dot's steps for its row; lanes outside m stay 0 and raise nothing.
template <SumOrder Order, typename V, typename C>
inline __m512d node_sums(__m512d sum, V v, int rows, __mmask8 m, const C *cols, std::int64_t n, const double *x)
{
  auto product = [&](std::int64_t e) {
    return _mm512_maskz_mul_pd(m, decode8_padded(v + e * rows, m), _mm512_set1_pd(x[cols[e]]));
  };
  std::int64_t e = 0;
  if constexpr (Order == SumOrder::paired)
    for (; e + 1 < n; e += 2)
      sum = _mm512_add_pd(sum, _mm512_add_pd(product(e), product(e + 1)));
  for (; e < n; ++e)
    sum = _mm512_add_pd(sum, product(e));
  return sum;
}

// node_sums for nodes of R <= 4 rows, two entries per register: lanes [0, R)
// hold entry e of the rows and lanes [R, 2R) entry e + 1, which are adjacent in
// the node's values. One decode, one multiply and one lane shift serve two
// entries (half the conversions of node_sums: on machines without AVX512-FP16
// the fp16/bf16 conversions, not the bytes, bound the product). The sums take
// node_sums' steps exactly, so the results are bitwise the same.
template <SumOrder Order, int R, typename V, typename C>
inline __m512d node_sums_two_per_register(__m512d sum, V v, const C *cols, std::int64_t n, const double *x)
{
  static_assert(R >= 1 && 2 * R <= 8, "two entries of the node must fit in one register");
  constexpr __mmask8 low = static_cast<__mmask8>((1u << R) - 1), both = static_cast<__mmask8>((1u << (2 * R)) - 1);
  constexpr __mmask8 high = static_cast<__mmask8>(both & ~low);
  std::int64_t e          = 0;
  for (; e + 1 < n; e += 2) {
    const __m512d xe  = _mm512_mask_broadcastsd_pd(_mm512_set1_pd(x[cols[e]]), high, _mm_load_sd(x + cols[e + 1]));
    const __m512d p   = _mm512_maskz_mul_pd(both, decode8_padded(v + e * R, both), xe);
    const __m512i pi  = _mm512_castpd_si512(p);
    const __m512d p_1 = _mm512_castsi512_pd(_mm512_maskz_alignr_epi64(low, pi, pi, R)); // entry e + 1 to [0, R)
    if constexpr (Order == SumOrder::paired)
      sum = _mm512_add_pd(sum, _mm512_maskz_add_pd(low, p, p_1));
    else
      sum = _mm512_add_pd(_mm512_maskz_add_pd(low, sum, p), p_1);
  }
  if (e < n)
    sum = _mm512_add_pd(sum, _mm512_maskz_mul_pd(low, decode8_padded(v + e * R, low), _mm512_set1_pd(x[cols[e]])));
  return sum;
}

template <SumOrder Order, typename V, typename C>
inline __m512d node_sums_any(__m512d sum, V v, int rows, __mmask8 m, const C *cols, std::int64_t n, const double *x)
{
  switch (rows) {
  case 2:
    return node_sums_two_per_register<Order, 2>(sum, v, cols, n, x);
  case 3:
    return node_sums_two_per_register<Order, 3>(sum, v, cols, n, x);
  case 4:
    return node_sums_two_per_register<Order, 4>(sum, v, cols, n, x);
  default:
    return node_sums<Order>(sum, v, rows, m, cols, n, x);
  }
}

template <SumOrder Order, typename S>
void nodes_avx512(const RowBlock &block, std::int64_t n0, std::int64_t n1, const double *x, const double *z, double *y)
{
  const auto vals = values_of<S>(block);
  ValuesAhead ahead(vals, block.stored_count());
  for (std::int64_t i = n0; i < n1; ++i) {
    const NodeInfo &nd      = block.nodes[i];
    const std::int64_t row0 = block.row(nd.first);
    const __mmask8 m        = first_lanes(nd.rows);
    ahead.upto(nd.values);
    __m512d sum = z ? _mm512_maskz_loadu_pd(m, z + row0) : _mm512_setzero_pd();
    with_node_columns(block, nd, x, [&](auto cols, const double *xs) {
      sum = node_sums_any<Order>(sum, vals + nd.values, nd.rows, m, cols, nd.length, xs);
    });
    _mm512_mask_storeu_pd(y + row0, m, sum);
  }
}
#endif

#if defined(PETSCMP_HAVE_AVX2_DECODE)
// AVX2 (no AVX-512): a node's rows in NR registers of 4 (NR = 1 for nodes of up
// to 4 rows, 2 up to 8); entry e of the rows is one read of the node's adjacent
// values (plain loads: the block's values are padded), lanes past the node's
// rows zeroed, times one broadcast of x. Each lane takes exactly row_dot's
// steps for its row; the lanes past the rows are never stored.
template <SumOrder Order, int NR, typename V, typename C>
inline void node_sums_avx2(__m256d sum[NR], V v, int rows, __m256d last_lanes, const C *cols, std::int64_t n,
                           const double *x)
{
  auto products = [&](std::int64_t e, __m256d p[NR]) {
    const __m256d xe = _mm256_broadcast_sd(x + cols[e]);
    const V ve       = v + e * rows;
    for (int k = 0; k < NR; ++k) {
      const __m256d d = k + 1 < NR ? decode4(ve + 4 * k) : _mm256_and_pd(decode4(ve + 4 * k), last_lanes);
      p[k]            = _mm256_mul_pd(d, xe);
    }
  };
  std::int64_t e = 0;
  if constexpr (Order == SumOrder::paired)
    for (; e + 1 < n; e += 2) {
      __m256d p0[NR], p1[NR];
      products(e, p0);
      products(e + 1, p1);
      for (int k = 0; k < NR; ++k)
        sum[k] = _mm256_add_pd(sum[k], _mm256_add_pd(p0[k], p1[k]));
    }
  for (; e < n; ++e) {
    __m256d p[NR];
    products(e, p);
    for (int k = 0; k < NR; ++k)
      sum[k] = _mm256_add_pd(sum[k], p[k]);
  }
}

template <SumOrder Order, int NR, typename S>
inline void node_avx2(const RowBlock &block, const NodeInfo &nd, const double *x, const double *z, double *y)
{
  const std::int64_t row0 = block.row(nd.first);
  const int tail          = nd.rows - 4 * (NR - 1); // rows in the last register, 1..4
  const __m256i lanes     = _mm256_cmpgt_epi64(_mm256_set1_epi64x(tail), _mm256_setr_epi64x(0, 1, 2, 3));
  __m256d sum[NR];
  for (int k = 0; k < NR; ++k)
    sum[k] = !z           ? _mm256_setzero_pd()
             : k + 1 < NR ? _mm256_loadu_pd(z + row0 + 4 * k)
                          : _mm256_maskload_pd(z + row0 + 4 * k, lanes);
  with_node_columns(block, nd, x, [&](auto cols, const double *xs) {
    node_sums_avx2<Order, NR>(sum, values_of<S>(block) + nd.values, nd.rows, _mm256_castsi256_pd(lanes), cols,
                              nd.length, xs);
  });
  for (int k = 0; k + 1 < NR; ++k)
    _mm256_storeu_pd(y + row0 + 4 * k, sum[k]);
  _mm256_maskstore_pd(y + row0 + 4 * (NR - 1), lanes, sum[NR - 1]);
}

template <SumOrder Order, typename S>
void nodes_avx2(const RowBlock &block, std::int64_t n0, std::int64_t n1, const double *x, const double *z, double *y)
{
  ValuesAhead ahead(values_of<S>(block), block.stored_count());
  for (std::int64_t i = n0; i < n1; ++i) {
    const NodeInfo &nd = block.nodes[i];
    ahead.upto(nd.values);
    if (nd.rows <= 4)
      node_avx2<Order, 1, S>(block, nd, x, z, y);
    else
      node_avx2<Order, 2, S>(block, nd, x, z, y);
  }
}
#endif

// Nodes [n0, n1) without AVX-512: each row through the reference's node_row_dot.
template <SumOrder Order, typename S>
void nodes_portable(const RowBlock &block, std::int64_t n0, std::int64_t n1, const double *x, const double *z,
                    double *y)
{
  const auto vals = make_range(values_of<S>(block), static_cast<std::size_t>(block.nnz));
  for (std::int64_t i = n0; i < n1; ++i) {
    const NodeInfo &nd      = block.nodes[i];
    const std::int64_t row0 = block.row(nd.first);
    const auto node_vals =
        vals.subrange(static_cast<std::size_t>(nd.values), static_cast<std::size_t>(nd.length) * nd.rows);
    with_node_columns(block, nd, x, [&](auto cols, const double *xs) {
      for (int r = 0; r < nd.rows; ++r)
        y[row0 + r] = node_row_dot<Order>(z ? z[row0 + r] : 0.0, node_vals, r, nd.rows, cols, nd.length, xs);
    });
  }
}

template <SumOrder Order, typename S>
void nodes(const RowBlock &block, std::int64_t n0, std::int64_t n1, const double *x, const double *z, double *y)
{
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  nodes_avx512<Order, S>(block, n0, n1, x, z, y);
#elif defined(PETSCMP_HAVE_AVX2_DECODE)
  nodes_avx2<Order, S>(block, n0, n1, x, z, y);
#else
  nodes_portable<Order, S>(block, n0, n1, x, z, y);
#endif
}

// Transpose of nodes [n0, n1) into y: entry e of all the node's rows, in row
// order, then entry e + 1; each y entry receives its terms in row order.
template <typename S>
void nodes_transpose(const RowBlock &block, std::int64_t n0, std::int64_t n1, const double *x, double *y)
{
  const auto vals = make_range(values_of<S>(block), static_cast<std::size_t>(block.nnz));
  for (std::int64_t i = n0; i < n1; ++i) {
    const NodeInfo &nd      = block.nodes[i];
    const std::int64_t row0 = block.row(nd.first);
    with_node_columns(block, nd, y, [&](auto cols, double *ys) {
      for (std::int64_t e = 0; e < nd.length; ++e) {
        double t = ys[cols[e]];
        for (int r = 0; r < nd.rows; ++r)
          t += vals[nd.values + e * nd.rows + r] * x[row0 + r];
        ys[cols[e]] = t;
      }
    });
  }
}

} // namespace

void set_gathered_x(GatheredX how)
{
  gathered_x_setting().store(how, std::memory_order_relaxed);
}

bool gathered_x_by_gathers(GatheredX how)
{
  if (how == GatheredX::automatic) how = gathered_x_setting().load(std::memory_order_relaxed);
  switch (how) {
  case GatheredX::gathers:
    return true;
  case GatheredX::scalar_loads:
    return false;
  case GatheredX::automatic:
    break;
  }
#if defined(__x86_64__) || defined(__i386__)
  static const bool intel = __builtin_cpu_is("intel");
  return intel;
#else
  return false;
#endif
}

double gathered_x_share(const CompactCsr &A)
{
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  std::int64_t gathered = 0, stored = 0;
  for (const RowBlock &b : A.blocks) {
    stored += b.stored_count();
    if (!b.sliced()) continue;
    for (std::int64_t q = 0; q < b.slice_count(); ++q)
      if (!b.shifted_slice(q) && !b.patched_slice(q)) gathered += b.slice_offsets[q + 1] - b.slice_offsets[q];
  }
  return stored ? static_cast<double>(gathered) / static_cast<double>(stored) : 0.0;
#else
  (void)A;
  return 0.0;
#endif
}

bool threads_available()
{
#if defined(_OPENMP)
  return true;
#else
  return false;
#endif
}

int default_thread_count()
{
#if defined(_OPENMP)
  // looked up once: a search of the environment on every product and apply cost a tenth of the time of a small
  // block-Jacobi apply (3000 rows)
  static const bool asked = [] {
    const char *env = std::getenv("OMP_NUM_THREADS");
    return env && *env;
  }();
  if (asked) return std::max(1, omp_get_max_threads());
#endif
  return 1;
}

namespace {
// The units the kernels of block b go through: nodes, slices or rows; [k0, k1)
// are the block rows of unit u.
void unit_rows(const RowBlock &b, std::int64_t u, std::int64_t &k0, std::int64_t &k1)
{
  if (b.node_layout()) {
    k0 = b.nodes[static_cast<std::size_t>(u)].first;
    k1 = k0 + b.nodes[static_cast<std::size_t>(u)].rows;
  } else if (b.sliced()) {
    k0 = u * kSliceRows;
    k1 = std::min(b.row_count(), k0 + kSliceRows);
  } else {
    k0 = u;
    k1 = u + 1;
  }
}

// The matrix row unit u of block b starts at. A grouped block's units follow
// its row list: increasing, but for rows sorted by length within windows of
// 256 rows.
inline std::int64_t unit_first_row(const RowBlock &b, std::int64_t u)
{
  std::int64_t k0, k1;
  unit_rows(b, u, k0, k1);
  return b.row(k0);
}

// The units [k0, k1) of its share of block b that thread t of team handles.
template <typename Index>
void thread_units(const RowBlock &block, CsrPattern<Index> pattern, int t, int team, std::int64_t &k0, std::int64_t &k1)
{
  if (block.node_layout())
    thread_nodes(block, t, team, k0, k1);
  else if (block.sliced())
    thread_slices(block, t, team, k0, k1);
  else
    thread_rows(block, pattern.rowptr, t, team, k0, k1);
}

// Blocks whose rows interleave (grouped blocks: rowsplit's per-row formats, a
// lossless copy's rows of two formats, long rows set apart) are read a window
// of kInterleaveRows matrix rows at a time, each block's units of the window
// in turn, so that the x and y entries the window's rows touch are read from
// memory once, not once per block: with two grouped blocks read one after the
// other, the second pass over x and over y cost rowsplit 20-40% of a product
// (Zen 5, mixed 205^3 operator). A window's y is 64 KiB, and x near it on a
// locally numbered mesh: both stay in L2. Each unit is still read once, by the
// same kernel: the products are the same bits in any order of units.
constexpr std::int64_t kInterleaveRows      = 8192;
constexpr std::size_t kMaxInterleavedBlocks = 8;
inline bool interleave_blocks(const CompactCsr &A)
{
  if (A.blocks.size() < 2 || A.blocks.size() > kMaxInterleavedBlocks) return false;
  for (const RowBlock &b : A.blocks)
    if (b.grouped()) return true;
  return false; // (run blocks hold consecutive rows: read in turn, they already go through x and y once)
}

// y = A x (+ z), unit u of a block read at unit_level(block, u) segments of
// split storage (0: all): each thread's units in runs of one level, each run
// through the block's kernel at that level; gathered slices read x by
// gathers or by scalar loads (`gathers`).
template <typename Index, typename UnitLevel>
void spmv_units(const CompactCsr &A, CsrPattern<Index> pattern, UnitLevel unit_level, const double *x, const double *z,
                double *y, int nthreads, bool gathers)
{
  const int nt = threads_available() ? std::max(1, nthreads) : 1;
  auto run     = [&](const RowBlock &block, std::int64_t k0, std::int64_t k1) {
    for (std::int64_t u0 = k0; u0 < k1;) {
      const int read  = unit_level(block, u0);
      std::int64_t u1 = u0 + 1;
      while (u1 < k1 && unit_level(block, u1) == read)
        ++u1;
      dispatch_block_values(block, read, [&](auto tag) {
        using S = typename decltype(tag)::type;
        // z aliasing y is safe: each row reads z[row] before writing y[row]
        dispatch_order(A.order, [&](auto order) {
          constexpr SumOrder O = decltype(order)::value;
          if (block.node_layout())
            nodes<O, S>(block, u0, u1, x, z, y);
          else if (block.sliced())
            slices<O, S>(block, u0, u1, x, z, y, gathers);
          else if (block.grouped())
            block_rows<O, S, true>(block, pattern, u0, u1, x, z, y);
          else
            block_rows<O, S, false>(block, pattern, u0, u1, x, z, y);
        });
      });
      u0 = u1;
    }
  };
  const bool interleaved = interleave_blocks(A);
  auto units             = [&](const int t, const int team) {
    if (!A.all_rows_covered) {
      // rows outside every block are empty; listed rows are overwritten below
      const std::int64_t r0 = A.nrows * t / team, r1 = A.nrows * (t + 1) / team;
      for (std::int64_t i = r0; i < r1; ++i)
        y[i] = z ? z[i] : 0.0;
      PETSCMP_OMP(omp barrier)
    }
    if (!interleaved) {
      for (const RowBlock &block : A.blocks) {
        std::int64_t k0, k1;
        thread_units(block, pattern, t, team, k0, k1);
        run(block, k0, k1);
      }
      return;
    }
    std::int64_t next[kMaxInterleavedBlocks], end[kMaxInterleavedBlocks];
    std::int64_t window  = std::numeric_limits<std::int64_t>::max(); // the first row of the thread's units
    const std::size_t nb = A.blocks.size();
    for (std::size_t i = 0; i < nb; ++i) {
      thread_units(A.blocks[i], pattern, t, team, next[i], end[i]);
      if (next[i] < end[i]) window = std::min(window, unit_first_row(A.blocks[i], next[i]));
    }
    for (bool left = window != std::numeric_limits<std::int64_t>::max(); left;) {
      window += kInterleaveRows; // units starting before it
      left = false;
      for (std::size_t i = 0; i < nb; ++i) {
        std::int64_t u1 = next[i];
        while (u1 < end[i] && unit_first_row(A.blocks[i], u1) < window)
          ++u1;
        if (u1 > next[i]) run(A.blocks[i], next[i], u1);
        next[i] = u1;
        left |= u1 < end[i];
      }
    }
  };
  run_team(nt, units); // (the barrier above, orphaned, binds to run_team's region where there is one)
}
} // namespace

template <typename Index>
void spmv(const CompactCsr &A, CsrPattern<Index> pattern, const double *x, const double *z, double *y, int nthreads,
          GatheredX how)
{
  if (A.entry_split()) { // the comparison baseline: two passes over the rows
    reference::spmv(A, pattern, x, z, y);
    return;
  }
  const int read = A.read_segments;
  spmv_units(
      A, pattern, [read](const RowBlock &, std::int64_t) { return read; }, x, z, y, nthreads,
      gathered_x_by_gathers(how));
}

template <typename Index>
void spmv_row_levels(const CompactCsr &A, CsrPattern<Index> pattern, const std::uint8_t *levels, const double *x,
                     const double *z, double *y, int nthreads, GatheredX how)
{
  if (A.entry_split()) throw StorageError("petscmp: per-row read levels need split storage, not an entry split");
  spmv_units(
      A, pattern,
      [levels](const RowBlock &block, std::int64_t u) {
        std::int64_t k0, k1;
        unit_rows(block, u, k0, k1);
        int level = 0;
        for (std::int64_t k = k0; k < k1; ++k)
          level = std::max<int>(level, levels[block.row(k)]);
        return level;
      },
      x, z, y, nthreads, gathered_x_by_gathers(how));
}

template <typename Index>
void spmv_transpose(const CompactCsr &A, CsrPattern<Index> pattern, const double *x, const double *z, double *y,
                    int nthreads)
{
  const int nt = threads_available() ? std::max(1, nthreads) : 1;
  if (nt == 1 || A.entry_split()) {
    reference::spmv_transpose(A, pattern, x, z, y);
    return;
  }
  const std::int64_t ncols = A.ncols;
  std::vector<double> partial(static_cast<std::size_t>(ncols) * nt, 0.0);
  run_team(nt, [&](const int t, const int team) {
    double *mine = partial.data() + static_cast<std::size_t>(ncols) * t;
    for (const RowBlock &block : A.blocks) {
      std::int64_t k0, k1;
      if (block.node_layout()) {
        thread_nodes(block, t, team, k0, k1);
        dispatch_block_values(block, A.read_segments,
                              [&](auto tag) { nodes_transpose<typename decltype(tag)::type>(block, k0, k1, x, mine); });
        continue;
      }
      if (block.sliced()) { // whole slices, as rows
        thread_slices(block, t, team, k0, k1);
        k0 = k0 * kSliceRows;
        k1 = std::min(block.row_count(), k1 * kSliceRows);
      } else {
        thread_rows(block, pattern.rowptr, t, team, k0, k1);
      }
      dispatch_block_values(block, A.read_segments, [&](auto tag) {
        using S         = typename decltype(tag)::type;
        const auto vals = make_range(values_of<S>(block), static_cast<std::size_t>(block.stored_count()));
        for (std::int64_t k = k0; k < k1; ++k) {
          const double xr = x[block.row(k)];
          with_row_entries(block, pattern.rowptr, pattern.cols, k,
                           [&](auto cols, std::int64_t first, std::int64_t stride, std::int64_t n) {
                             for (std::int64_t e = 0; e < n; ++e)
                               mine[cols[e * stride]] += vals[first + e * stride] * xr;
                           });
        }
      });
    }
    PETSCMP_OMP(omp barrier)
    PETSCMP_OMP(omp for schedule(static)) // (orphaned: binds to run_team's region)
    for (std::int64_t j = 0; j < ncols; ++j) {
      double s = z ? z[j] : 0.0;
      for (int u = 0; u < nt; ++u)
        s += partial[static_cast<std::size_t>(ncols) * u + j];
      y[j] = s;
    }
  });
}

template void spmv<std::int32_t>(const CompactCsr &, CsrPattern<std::int32_t>, const double *, const double *, double *,
                                 int, GatheredX);
template void spmv<std::int64_t>(const CompactCsr &, CsrPattern<std::int64_t>, const double *, const double *, double *,
                                 int, GatheredX);
template void spmv_row_levels<std::int32_t>(const CompactCsr &, CsrPattern<std::int32_t>, const std::uint8_t *,
                                            const double *, const double *, double *, int, GatheredX);
template void spmv_row_levels<std::int64_t>(const CompactCsr &, CsrPattern<std::int64_t>, const std::uint8_t *,
                                            const double *, const double *, double *, int, GatheredX);
template void spmv_transpose<std::int32_t>(const CompactCsr &, CsrPattern<std::int32_t>, const double *, const double *,
                                           double *, int);
template void spmv_transpose<std::int64_t>(const CompactCsr &, CsrPattern<std::int64_t>, const double *, const double *,
                                           double *, int);

} // namespace openmp
} // namespace petscmp
