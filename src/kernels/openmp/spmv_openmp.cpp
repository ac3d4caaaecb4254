// OpenMP backend: each block's rows are split among threads by nonzeros.
// Within a row the summation order is the reference's (sequential or PETSc's
// inode pairs), so results are bitwise those of the reference for y = A x.
// The transpose accumulates per thread and adds the thread buffers in thread
// order: bitwise equal to the reference with one thread, to rounding otherwise.
#include <algorithm>
#include <cstdlib>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "../row_dot.hpp"
#include "../spmv.hpp"

namespace petscmp {
namespace openmp {

namespace {

int thread_id()
{
#if defined(_OPENMP)
  return omp_get_thread_num();
#else
  return 0;
#endif
}

// The team OpenMP actually gave, which may be smaller than requested
// (OMP_THREAD_LIMIT, OMP_DYNAMIC, nested regions): work is split over it.
int team_size()
{
#if defined(_OPENMP)
  return omp_get_num_threads();
#else
  return 1;
#endif
}

// First entry of `offsets[lo..hi]` (nondecreasing) that is >= target.
template <typename T> std::int64_t lower_bound_index(const T *offsets, std::int64_t lo, std::int64_t hi, std::int64_t target)
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

template <SumOrder Order, typename S, typename Index>
void block_rows(const RowBlock &block, CsrPattern<Index> p, std::int64_t k0, std::int64_t k1, const double *x,
                const double *z, double *y)
{
  const auto vals = make_range(block.values.as<S>(), static_cast<std::size_t>(block.nnz));
  if (block.grouped()) {
    for (std::int64_t k = k0; k < k1; ++k) {
      const std::int64_t row = block.rows[k], start = p.rowptr[row], n = p.rowptr[row + 1] - start;
      y[row] = row_dot_chunked<Order>(z ? z[row] : 0.0, vals.subrange(block.value_offsets[k], n), p.cols + start, n, x);
    }
  } else {
    const Index *rowptr = p.rowptr;
    for (std::int64_t row = block.row_begin + k0; row < block.row_begin + k1; ++row) {
      const std::int64_t start = rowptr[row], n = rowptr[row + 1] - start;
      y[row] = row_dot_chunked<Order>(z ? z[row] : 0.0, vals.subrange(start - block.value_base, n), p.cols + start, n, x);
    }
  }
}

} // namespace

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
  const char *env = std::getenv("OMP_NUM_THREADS");
  if (env && *env) return std::max(1, omp_get_max_threads());
#endif
  return 1;
}

template <typename Index>
void spmv(const CompactCsr &A, CsrPattern<Index> pattern, const double *x, const double *z, double *y, int nthreads)
{
  const int nt = threads_available() ? std::max(1, nthreads) : 1;
  if (A.entry_split()) { // the comparison baseline: two passes over the rows
    reference::spmv(A, pattern, x, z, y);
    return;
  }
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int t = thread_id(), team = team_size();
    if (!A.all_rows_covered) {
      // rows outside every block are empty; listed rows are overwritten below
      const std::int64_t r0 = A.nrows * t / team, r1 = A.nrows * (t + 1) / team;
      for (std::int64_t i = r0; i < r1; ++i) y[i] = z ? z[i] : 0.0;
#pragma omp barrier
    }
    for (const RowBlock &block : A.blocks) {
      std::int64_t k0, k1;
      thread_rows(block, pattern.rowptr, t, team, k0, k1);
      dispatch_format(block.format, [&](auto tag) {
        using S = typename decltype(tag)::type;
        // z aliasing y is safe: each row reads z[row] before writing y[row]
        if (A.order == SumOrder::paired) block_rows<SumOrder::paired, S>(block, pattern, k0, k1, x, z, y);
        else block_rows<SumOrder::sequential, S>(block, pattern, k0, k1, x, z, y);
      });
    }
  }
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
#pragma omp parallel num_threads(nt)
  {
    const int t = thread_id(), team = team_size();
    double *mine = partial.data() + static_cast<std::size_t>(ncols) * t;
    for (const RowBlock &block : A.blocks) {
      std::int64_t k0, k1;
      thread_rows(block, pattern.rowptr, t, team, k0, k1);
      dispatch_format(block.format, [&](auto tag) {
        using S         = typename decltype(tag)::type;
        const auto vals = make_range(block.values.as<S>(), static_cast<std::size_t>(block.nnz));
        for (std::int64_t k = k0; k < k1; ++k) {
          const std::int64_t row   = block.grouped() ? block.rows[k] : block.row_begin + k;
          const std::int64_t start = pattern.rowptr[row], n = pattern.rowptr[row + 1] - start;
          const std::int64_t off   = block.grouped() ? block.value_offsets[k] : start - block.value_base;
          for (std::int64_t e = 0; e < n; ++e) mine[pattern.cols[start + e]] += vals[off + e] * x[row];
        }
      });
    }
#pragma omp barrier
#pragma omp for schedule(static)
    for (std::int64_t j = 0; j < ncols; ++j) {
      double s = z ? z[j] : 0.0;
      for (int u = 0; u < nt; ++u) s += partial[static_cast<std::size_t>(ncols) * u + j];
      y[j] = s;
    }
  }
}

template void spmv<std::int32_t>(const CompactCsr &, CsrPattern<std::int32_t>, const double *, const double *,
                                 double *, int);
template void spmv<std::int64_t>(const CompactCsr &, CsrPattern<std::int64_t>, const double *, const double *,
                                 double *, int);
template void spmv_transpose<std::int32_t>(const CompactCsr &, CsrPattern<std::int32_t>, const double *,
                                           const double *, double *, int);
template void spmv_transpose<std::int64_t>(const CompactCsr &, CsrPattern<std::int64_t>, const double *,
                                           const double *, double *, int);

} // namespace openmp
} // namespace petscmp
