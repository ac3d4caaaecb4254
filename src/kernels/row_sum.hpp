// The sum of one row's products in the order PETSc's SeqAIJ uses, written once
// for every backend: the CPU kernels, the emulated GPU backend and the CUDA and
// HIP kernels compile this same function, so a row sums bit for bit alike
// everywhere (with contraction off: -ffp-contract=off, nvcc -fmad=false).
#pragma once

#include <cstdint>
#include <type_traits>

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/host_device.hpp"
#include "petscmp/core/sum_order.hpp"

namespace petscmp {

// Calls fn(std::integral_constant-like tag) for the runtime summation order.
template <typename Fn> inline void dispatch_order(SumOrder order, Fn &&fn)
{
  if (order == SumOrder::paired)
    fn(std::integral_constant<SumOrder, SumOrder::paired>{});
  else
    fn(std::integral_constant<SumOrder, SumOrder::sequential>{});
}

// sum + sum_k vals[k s] * x[cols[k s]], k in [0, n), s = stride (1 in CSR
// order, kSliceRows in a slice); cols is a pointer, ShiftedColumns or NarrowColumns.
template <SumOrder Order, typename Storage, typename Columns>
PETSCMP_HOST_DEVICE inline double row_dot(double sum, reduced_range<Storage> vals, Columns cols, std::int64_t n,
                                          const double *x, std::int64_t stride = 1)
{
  if constexpr (Order == SumOrder::sequential) {
    for (std::int64_t k = 0; k < n; ++k)
      sum += vals[k * stride] * x[cols[k * stride]];
  } else { // PETSc's inode kernels: pairs of products, then the odd one
    std::int64_t k = 0;
    for (; k + 1 < n; k += 2)
      sum += vals[k * stride] * x[cols[k * stride]] + vals[(k + 1) * stride] * x[cols[(k + 1) * stride]];
    if (k < n) sum += vals[k * stride] * x[cols[k * stride]];
  }
  return sum;
}

} // namespace petscmp
