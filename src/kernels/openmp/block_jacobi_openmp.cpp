// OpenMP block-Jacobi apply. Groups are split among threads. With AVX-512 each
// block keeps its sums in registers and adds column after column, decoded 8
// values at a time straight into registers; without, the same per block through
// a small buffer. Either way each sum adds its terms in increasing column order
// from 0.0, so results are the reference's bit for bit, for any group size.
#include <algorithm>

#include "../block_jacobi_apply.hpp"
#include "../omp.hpp"
#include "../spmv.hpp"
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

} // namespace

void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose, int nthreads)
{
  const std::int64_t ngroups    = static_cast<std::int64_t>(M.groups.size());
  [[maybe_unused]] const int nt = threads_available() ? std::max(1, nthreads) : 1;
PETSCMP_OMP(omp parallel for schedule(static) num_threads(nt) if (nt > 1))
for (std::int64_t gi = 0; gi < ngroups; ++gi) {
  const BlockGroup &g = M.groups[gi];
  dispatch_format(g.format, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if (transpose)
      apply_group_transpose<S>(M, g, x, y);
    else
      apply_group<S>(M, g, x, y);
  });
}
}

} // namespace openmp
} // namespace petscmp
