// OpenMP block-Jacobi apply. Groups are split among threads. Inside a group
// the inverse is streamed column by column (contiguous memory: column c of
// all blocks of the group), decoded 8 values at a time, and accumulated into
// per-row sums; each sum still adds its terms in increasing column order from
// 0.0, so results are the reference's bit for bit.
#include <algorithm>

#include "../block_jacobi_apply.hpp"
#include "../spmv.hpp"
#include "petscmp/core/accessor.hpp"

namespace petscmp {
namespace openmp {

namespace {

constexpr int kGroupValuesMax = kDefaultGroupBlocks * kMaxBlockSize; // one column of a group

// Decodes `count` stored values into out (fp64), 8 at a time.
template <typename S> inline void decode_run(reduced_range<S> v, std::size_t offset, int count, double *out)
{
  for (int k = 0; k < count; k += 8)
    v.read_upto8(offset + k, static_cast<unsigned>(std::min(8, count - k)), out + k);
}

template <typename S> void apply_group(const BlockJacobiStorage &M, const BlockGroup &g, const double *x, double *y)
{
  const int n = g.block_size, nb = g.nblocks, width = n * nb;
  const auto E     = make_range(M.values.as<S>() + g.byte_offset / static_cast<std::int64_t>(sizeof(S)),
                                static_cast<std::size_t>(nb) * n * n);
  const double *xg = x + g.row_begin;
  double *yg       = y + g.row_begin;
  alignas(64) double column[kGroupValuesMax];
  alignas(64) double sums[kGroupValuesMax];
  std::fill(sums, sums + width, 0.0);
  for (int c = 0; c < n; ++c) {
    decode_run(E, static_cast<std::size_t>(c) * width, width, column);
    for (int i = 0; i < nb; ++i) {
      const double xc = xg[i * n + c];
      double *s       = sums + i * n;
      const double *e = column + i * n;
      for (int r = 0; r < n; ++r)
        s[r] += e[r] * xc;
    }
  }
  std::copy(sums, sums + width, yg);
}

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
  const std::int64_t ngroups = static_cast<std::int64_t>(M.groups.size());
  const int nt               = threads_available() ? std::max(1, nthreads) : 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
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
