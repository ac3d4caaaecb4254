// OpenMP block-Jacobi apply. Groups are split among threads; each thread walks its groups by the storage's runs
// (groups of one format, size and count of blocks, one after the other), so the format and size are dispatched once
// per run, not once per group. Blocks of 1 to 8 rows take the small-block kernels (block_jacobi_small.hpp: 8 rows of
// several blocks per register). Larger blocks, with AVX-512: each block keeps its sums in registers and adds column
// after column, decoded 8 values at a time straight into registers; without, the same per block through a small
// buffer. Either way each sum adds its terms in increasing column order from 0.0, so results are the reference's bit
// for bit, for any group size.
#include <algorithm>
#include <type_traits>

#include "../block_jacobi_apply.hpp"
#include "../prefetch.hpp"
#include "petscmp/core/omp.hpp"
#include "../spmv.hpp"
#include "block_jacobi_small.hpp"
#include "petscmp/core/accessor.hpp"

namespace petscmp {
namespace openmp {

namespace {

// Decodes `count` stored values into out (fp64), 8 at a time.
template <typename S> inline void decode_run(reduced_range<S> v, std::size_t offset, int count, double *out)
{
  for (int k = 0; k < count; k += 8)
    v.read_upto8(offset + k, static_cast<unsigned>(std::min(8, count - k)), out + k);
}

#if defined(PETSCMP_HAVE_AVX512_DECODE)
// y_b = E_b x_b with the block's sums in NV registers of 8 lanes (block size
// n <= 8 NV): y_b += E_b(:, c) * x_b[c] for c = 0, 1, ..., the reference's order
// for every row. Column c of block i of a group starts at first + c * stride.
template <int NV, typename S>
inline void apply_block(reduced_range<S> E, std::size_t first, std::size_t stride, int n, const double *xb, double *yb)
{
  const __mmask8 last = first_lanes(static_cast<unsigned>(n - 8 * (NV - 1)));
  __m512d sums[NV];
  for (int v = 0; v < NV; ++v)
    sums[v] = _mm512_setzero_pd();
  for (int c = 0; c < n; ++c) {
    const __m512d xc      = _mm512_set1_pd(xb[c]);
    const std::size_t col = first + static_cast<std::size_t>(c) * stride;
    for (int v = 0; v < NV; ++v)
      sums[v] = _mm512_add_pd(sums[v], _mm512_mul_pd(E.read8(col + 8 * v, v == NV - 1 ? last : 0xff), xc));
  }
  for (int v = 0; v < NV; ++v)
    _mm512_mask_storeu_pd(yb + 8 * v, v == NV - 1 ? last : 0xff, sums[v]);
}

template <int NV, typename S> void apply_blocks(reduced_range<S> E, const BlockGroup &g, const double *x, double *y)
{
  const int n = g.block_size, nb = g.nblocks;
  for (int i = 0; i < nb; ++i) {
    const std::int64_t base = g.row_begin + std::int64_t(i) * n;
    apply_block<NV>(E, static_cast<std::size_t>(i) * n, static_cast<std::size_t>(nb) * n, n, x + base, y + base);
  }
}

template <typename S> void apply_group(const BlockJacobiStorage &M, const BlockGroup &g, const double *x, double *y)
{
  const auto E = make_range(M.values.as<S>() + g.byte_offset / static_cast<std::int64_t>(sizeof(S)),
                            static_cast<std::size_t>(g.nblocks) * g.block_size * g.block_size);
  switch ((g.block_size + 7) / 8) {
  case 1:
    apply_blocks<1>(E, g, x, y);
    break;
  case 2:
    apply_blocks<2>(E, g, x, y);
    break;
  case 3:
    apply_blocks<3>(E, g, x, y);
    break;
  default:
    apply_blocks<4>(E, g, x, y);
  }
}
#elif defined(PETSCMP_HAVE_AVX2_DECODE)
// AVX2: each block's sums in registers of 4 (small_blocks::apply_block_avx2).
template <int NR, typename S> void apply_blocks_avx2(const S *E, const BlockGroup &g, const double *x, double *y)
{
  const int n = g.block_size, nb = g.nblocks;
  for (int i = 0; i < nb; ++i) {
    const std::int64_t base = g.row_begin + std::int64_t(i) * n;
    small_blocks::apply_block_avx2<NR>(E + static_cast<std::size_t>(i) * n, static_cast<std::size_t>(nb) * n, n,
                                       (nb - i) * n >= 4 * NR, x + base, y + base);
  }
}

template <typename S> void apply_group(const BlockJacobiStorage &M, const BlockGroup &g, const double *x, double *y)
{
  const S *E = M.values.as<S>() + g.byte_offset / static_cast<std::int64_t>(sizeof(S));
  switch ((g.block_size + 3) / 4) {
  case 1:
    return apply_blocks_avx2<1>(E, g, x, y);
  case 2:
    return apply_blocks_avx2<2>(E, g, x, y);
  case 3:
    return apply_blocks_avx2<3>(E, g, x, y);
  case 4:
    return apply_blocks_avx2<4>(E, g, x, y);
  case 5:
    return apply_blocks_avx2<5>(E, g, x, y);
  case 6:
    return apply_blocks_avx2<6>(E, g, x, y);
  case 7:
    return apply_blocks_avx2<7>(E, g, x, y);
  default:
    return apply_blocks_avx2<8>(E, g, x, y);
  }
}
#else
// Portable: one block at a time, its column segments decoded 8 at a time, the
// sums in a small array the compiler vectorizes.
template <typename S> void apply_group(const BlockJacobiStorage &M, const BlockGroup &g, const double *x, double *y)
{
  const int n = g.block_size, nb = g.nblocks;
  const auto E = make_range(M.values.as<S>() + g.byte_offset / static_cast<std::int64_t>(sizeof(S)),
                            static_cast<std::size_t>(nb) * n * n);
  alignas(64) double column[kMaxBlockSize];
  alignas(64) double sums[kMaxBlockSize];
  for (int i = 0; i < nb; ++i) {
    const double *xb = x + g.row_begin + std::int64_t(i) * n;
    std::fill(sums, sums + n, 0.0);
    for (int c = 0; c < n; ++c) {
      decode_run(E, static_cast<std::size_t>(c * nb + i) * n, n, column);
      for (int r = 0; r < n; ++r)
        sums[r] += column[r] * xb[c];
    }
    std::copy(sums, sums + n, y + g.row_begin + std::int64_t(i) * n);
  }
}
#endif

template <typename S>
void apply_group_transpose(const BlockJacobiStorage &M, const BlockGroup &g, const double *x, double *y)
{
  const int n = g.block_size, nb = g.nblocks;
  const auto E = make_range(M.values.as<S>() + g.byte_offset / static_cast<std::int64_t>(sizeof(S)),
                            static_cast<std::size_t>(nb) * n * n);
  alignas(64) double column[kMaxBlockSize];
  for (int i = 0; i < nb; ++i) {
    const double *xb = x + g.row_begin + std::int64_t(i) * n;
    double *yb       = y + g.row_begin + std::int64_t(i) * n;
    for (int c = 0; c < n; ++c) {
      decode_run(E, static_cast<std::size_t>(c * nb + i) * n, n, column);
      double sum = 0.0;
      for (int r = 0; r < n; ++r)
        sum += column[r] * xb[r];
      yb[c] = sum;
    }
  }
}

template <typename S> const S *group_values(const BlockJacobiStorage &M, const BlockGroup &g)
{
  return M.values.as<S>() + g.byte_offset / static_cast<std::int64_t>(sizeof(S));
}

#if defined(PETSCMP_HAVE_AVX512_DECODE)
// Of `count` full groups (8 blocks) of a run from g on, those whose x windows end
// inside the vector: the groups apply_full_groups can take (only the last few
// rows of a vector cut a window).
template <int N> std::int64_t whole_windows(const BlockJacobiStorage &M, const BlockGroup *g, std::int64_t count)
{
  const std::int64_t room = M.nrows - g->row_begin - (small_blocks::window_begin<N>(8 * N - 8) + 16);
  return room < 0 ? 0 : std::min(count, room / (8 * N) + 1);
}
#endif

// What one apply's runs share: how it meets memory, and which kernel takes fp64 small blocks.
struct RunSettings {
  small_blocks::Streaming streaming;
  bool fp64_blockwise = false; // Fp64SmallBlocks::blockwise
};

// Groups [g, end) of one run: one format S, one block size N <= 8.
template <int N, typename S>
void apply_small_run(const BlockJacobiStorage &M, const BlockGroup *g, const BlockGroup *end, const double *x,
                     double *y, bool transpose, const RunSettings &settings)
{
  if constexpr (std::is_same_v<S, double>)
    if (settings.fp64_blockwise && !transpose) {
      for (; g != end; ++g)
        small_blocks::apply_blockwise<N>(group_values<S>(M, *g), g->nblocks, x + g->row_begin, y + g->row_begin);
      return;
    }
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  if (!transpose && g->nblocks == 8) {
    const std::int64_t full = whole_windows<N>(M, g, end - g);
    if (full)
      small_blocks::apply_full_groups<N>(group_values<S>(M, *g), full, x + g->row_begin, y + g->row_begin,
                                         settings.streaming);
    g += full;
  }
#endif
  for (; g != end; ++g) {
    if (transpose)
      small_blocks::apply_group_transpose<N>(group_values<S>(M, *g), g->nblocks, x + g->row_begin, y + g->row_begin);
    else
      small_blocks::apply_group<N>(group_values<S>(M, *g), g->nblocks, x + g->row_begin, y + g->row_begin,
                                   M.nrows - g->row_begin);
  }
}

template <typename S>
void apply_run(const BlockJacobiStorage &M, const BlockGroup *g, const BlockGroup *end, const double *x, double *y,
               bool transpose, const RunSettings &settings)
{
  switch (g->block_size) {
  case 1:
    return apply_small_run<1, S>(M, g, end, x, y, transpose, settings);
  case 2:
    return apply_small_run<2, S>(M, g, end, x, y, transpose, settings);
  case 3:
    return apply_small_run<3, S>(M, g, end, x, y, transpose, settings);
  case 4:
    return apply_small_run<4, S>(M, g, end, x, y, transpose, settings);
  case 5:
    return apply_small_run<5, S>(M, g, end, x, y, transpose, settings);
  case 6:
    return apply_small_run<6, S>(M, g, end, x, y, transpose, settings);
  case 7:
    return apply_small_run<7, S>(M, g, end, x, y, transpose, settings);
  case 8:
    return apply_small_run<8, S>(M, g, end, x, y, transpose, settings);
  default:
    for (; g != end; ++g) {
      if (transpose)
        apply_group_transpose<S>(M, *g, x, y);
      else
        apply_group<S>(M, *g, x, y);
    }
  }
}

// Groups [first, last) (a thread's share): the storage's runs that meet it, each
// cut to it and dispatched once.
void apply_groups(const BlockJacobiStorage &M, std::int64_t first, std::int64_t last, const double *x, double *y,
                  bool transpose, const RunSettings &settings)
{
  if (first >= last) return; // (more threads than groups)
  auto run = std::upper_bound(M.runs.begin(), M.runs.end(), first,
                              [](std::int64_t g, const GroupRun &r) { return g < r.first; });
  for (--run; first < last; ++run) {
    const std::int64_t end = std::min(last, run->end);
    const BlockGroup *g    = M.groups.data() + first;
    dispatch_format(g->format, [&](auto tag) {
      apply_run<typename decltype(tag)::type>(M, g, M.groups.data() + end, x, y, transpose, settings);
    });
    first = end;
  }
}

} // namespace

void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose, int nthreads)
{
  ApplyOptions options;
  options.nthreads = nthreads;
  block_jacobi_apply(M, x, y, transpose, options);
}

void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose,
                        const ApplyOptions &options)
{
  const std::int64_t ngroups = static_cast<std::int64_t>(M.groups.size());
  const int nt               = threads_available() ? std::max(1, options.nthreads) : 1;
  RunSettings settings;
  settings.streaming.prefetch = M.value_bytes() >= kPrefetchFromBytes;
  settings.streaming.stores =
      M.value_bytes() + 2 * M.nrows * std::int64_t(sizeof(double)) >= options.stream_stores_from;
  settings.fp64_blockwise = options.fp64_small == Fp64SmallBlocks::blockwise;
  run_team(nt, [&](int t, int count) { // contiguous shares of the groups, like schedule(static)
    apply_groups(M, ngroups * t / count, ngroups * (t + 1) / count, x, y, transpose, settings);
  });
}

} // namespace openmp
} // namespace petscmp
