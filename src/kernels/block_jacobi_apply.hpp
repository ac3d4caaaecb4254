// Block-Jacobi apply kernels every backend provides:
//   y = M^{-1} x   (transpose == false)   y_i = E_i x_i
//   y = M^{-T} x   (transpose == true)    y_i = E_i^T x_i
// E_i read through the accessor in its stored format; fp64 arithmetic. Each
// output entry is a sum over the block's columns (rows for the transpose) in
// increasing order, so every backend gives the reference's result bit for bit.
// x and y must not alias.
#pragma once

#include <cstdint>

#include "petscmp/core/block_jacobi.hpp"

namespace petscmp {
namespace reference {
void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose);
} // namespace reference
namespace openmp {
void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose, int nthreads);
// As above, y written by streaming stores where the apply moves stream_stores_from bytes or more (values, x and y;
// the default kStreamStoresFromBytes, kernels/prefetch.hpp): tests reach that path with small storages.
void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose, int nthreads,
                        std::int64_t stream_stores_from);
} // namespace openmp
} // namespace petscmp
