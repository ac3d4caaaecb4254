// The dot product of one stored row with x, in the summation order PETSc's
// SeqAIJ uses. Shared by the backends so the order is defined once.
#pragma once

#include <cstdint>

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/compact_csr.hpp"

namespace petscmp {

// sum + sum_k vals[k] * x[cols[k]], k in [0, n)
template <SumOrder Order, typename Storage, typename ColIndex>
inline double row_dot(double sum, reduced_range<Storage> vals, const ColIndex *cols, std::int64_t n, const double *x)
{
  if constexpr (Order == SumOrder::sequential) {
    for (std::int64_t k = 0; k < n; ++k) sum += vals[k] * x[cols[k]];
  } else { // PETSc's inode kernels: pairs of products, then the odd one
    std::int64_t k = 0;
    for (; k + 1 < n; k += 2) sum += vals[k] * x[cols[k]] + vals[k + 1] * x[cols[k + 1]];
    if (k < n) sum += vals[k] * x[cols[k]];
  }
  return sum;
}

// The same sum, bitwise: the row's values are first converted 8 at a time
// through the accessor's bulk read, then multiplied and added in the order of
// row_dot. Fewer instructions per entry than one scalar convert each, and no
// convert that merges into (and waits for) an unrelated register.
template <SumOrder Order, typename Storage, typename ColIndex>
inline double row_dot_chunked(double sum, reduced_range<Storage> vals, const ColIndex *cols, std::int64_t n,
                              const double *x)
{
  alignas(64) double buf[8];
  for (std::int64_t k0 = 0; k0 < n; k0 += 8) {
    const unsigned m = n - k0 < 8 ? static_cast<unsigned>(n - k0) : 8u;
    vals.read_upto8(static_cast<std::size_t>(k0), m, buf);
    const ColIndex *c = cols + k0;
    if constexpr (Order == SumOrder::sequential) {
      for (unsigned k = 0; k < m; ++k) sum += buf[k] * x[c[k]];
    } else { // pairs never straddle chunks: 8 is even
      unsigned k = 0;
      for (; k + 1 < m; k += 2) sum += buf[k] * x[c[k]] + buf[k + 1] * x[c[k + 1]];
      if (k < m) sum += buf[k] * x[c[k]];
    }
  }
  return sum;
}

// row_dot over values already converted to fp64 (a pointer the accessor's
// read_n returned): the same sum, bitwise.
template <SumOrder Order, typename ColIndex>
inline double row_dot_values(double sum, const double *v, const ColIndex *cols, std::int64_t n, const double *x)
{
  if constexpr (Order == SumOrder::sequential) {
    for (std::int64_t k = 0; k < n; ++k)
      sum += v[k] * x[cols[k]];
  } else {
    std::int64_t k = 0;
    for (; k + 1 < n; k += 2)
      sum += v[k] * x[cols[k]] + v[k + 1] * x[cols[k + 1]];
    if (k < n) sum += v[k] * x[cols[k]];
  }
  return sum;
}

// R rows of equal length n at once, R independent accumulators: row i's sum is
// exactly row_dot_values(sum[i], v[i], cols[i], n, x); only the rows' operations
// are interleaved (R dependence chains instead of one), never reordered within a row.
template <int R, SumOrder Order, typename ColIndex>
inline void rows_dot_values(double *sum, const double *const *v, const ColIndex *const *cols, std::int64_t n,
                            const double *x)
{
  double s[R];
  for (int i = 0; i < R; ++i)
    s[i] = sum[i];
  if constexpr (Order == SumOrder::sequential) {
    for (std::int64_t k = 0; k < n; ++k)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        s[i] += v[i][k] * x[cols[i][k]];
  } else {
    std::int64_t k = 0;
    for (; k + 1 < n; k += 2)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        s[i] += v[i][k] * x[cols[i][k]] + v[i][k + 1] * x[cols[i][k + 1]];
    if (k < n)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        s[i] += v[i][k] * x[cols[i][k]];
  }
  for (int i = 0; i < R; ++i)
    sum[i] = s[i];
}

// Calls fn(std::integral_constant-like tag) for the runtime summation order.
template <typename Fn> inline void dispatch_order(SumOrder order, Fn &&fn)
{
  if (order == SumOrder::paired) fn(std::integral_constant<SumOrder, SumOrder::paired>{});
  else fn(std::integral_constant<SumOrder, SumOrder::sequential>{});
}

} // namespace petscmp
