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
#include "prefetch.hpp"

namespace petscmp {
namespace reference {
void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose);
} // namespace reference
namespace openmp {
// How fp64 groups of small blocks (1 to 8 rows) are applied: eight blocks per AVX-512 register (`interleaved`,
// AVX2: a block's rows per register), or block after block with scalar sums, the loop PCPBJACOBI runs over its
// inverses (`blockwise`). Both add each row's products in the reference's order: the same result bit for bit.
// fp64 values give SIMD nothing to decode, and which one is faster depends on the machine and on what ran before
// (Zen 5: interleaved 1.1-1.3x blockwise alone, 0.63-1.16x inside a CG solve), so PCAPBJACOBI times both.
enum class Fp64SmallBlocks { interleaved, blockwise };

struct ApplyOptions {
  int nthreads = 1;
  // y by streaming stores where the apply moves this many bytes or more (values, x and y): tests reach that path
  // with small storages.
  std::int64_t stream_stores_from = kStreamStoresFromBytes;
  Fp64SmallBlocks fp64_small      = Fp64SmallBlocks::interleaved;
};

void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose,
                        const ApplyOptions &options);
void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose, int nthreads);
} // namespace openmp
} // namespace petscmp
