// The SpMV kernels every backend provides, over a CompactCsr whose row
// structure is the master CSR (row pointers and column indices).
//   spmv:            y = A x        (z == nullptr)   or  y = A x + z   (z may alias y)
//   spmv_transpose:  y = A^T x      (z == nullptr)   or  y = A^T x + z (z may alias y)
//   spmv_row_levels: spmv where each row reads at least its own number of
//                    segments of split storage, levels[row] (1 .. segments):
//                    the rows a kernel reads together (a node, a slice of 8
//                    rows) read the highest level among them, once; every
//                    row's result is bitwise that of spmv at that level
// All arithmetic is fp64; values are read through the accessor.
#pragma once

#include "petscmp/core/compact_csr.hpp"

namespace petscmp {

template <typename Index> struct CsrPattern {
  const Index *rowptr = nullptr;
  const Index *cols   = nullptr;
};

namespace reference {
template <typename Index>
void spmv(const CompactCsr &A, CsrPattern<Index> pattern, const double *x, const double *z, double *y);
template <typename Index>
void spmv_transpose(const CompactCsr &A, CsrPattern<Index> pattern, const double *x, const double *z, double *y);
template <typename Index>
void spmv_row_levels(const CompactCsr &A, CsrPattern<Index> pattern, const std::uint8_t *levels, const double *x,
                     const double *z, double *y);
} // namespace reference

namespace openmp {
// Threads used when nothing asks for more: 1, so that one MPI rank per core
// never oversubscribes. OMP_NUM_THREADS, when set in the environment the
// process started with, is honoured.
int default_thread_count();
// Whether this build has OpenMP threads at all.
bool threads_available();
// How the AVX-512 slice kernels read the 8 x entries of an entry of a gathered
// slice (neither shifted nor patched): one gather instruction, or 8 scalar
// loads into two registers of 4. The sums are bitwise the same either way, so
// a caller may time both on its matrix and keep the faster (aijmp's
// -mat_aijmp_gathered_x auto). automatic: set_gathered_x's process-wide
// setting, and where that is automatic too, the vendor rule: gathers on Intel
// processors, where they ran 1.09-1.29x faster (a Sapphire Rapids-class Xeon:
// Morton-numbered stencils, the mixed operator), scalar loads elsewhere: on
// Zen 4 and Zen 5 a gather of 8 doubles cost more than AIJ's scalar loop
// spends on 8 nonzeros. The AVX2 kernels always use scalar loads.
enum class GatheredX { automatic, scalar_loads, gathers };
void set_gathered_x(GatheredX how);                               // process-wide; tests and benchmarks force either
bool gathered_x_by_gathers(GatheredX how = GatheredX::automatic); // what the AVX-512 slice kernels do for `how`
// The share of A's stored entries in gathered slices that this build's slice
// kernels read as `GatheredX` says: 0 without the AVX-512 kernels, and for
// copies without gathered slices (stencils' shifted slices, nodes, CSR order).
double gathered_x_share(const CompactCsr &A);
template <typename Index>
void spmv(const CompactCsr &A, CsrPattern<Index> pattern, const double *x, const double *z, double *y, int nthreads,
          GatheredX how = GatheredX::automatic);
template <typename Index>
void spmv_transpose(const CompactCsr &A, CsrPattern<Index> pattern, const double *x, const double *z, double *y,
                    int nthreads);
template <typename Index>
void spmv_row_levels(const CompactCsr &A, CsrPattern<Index> pattern, const std::uint8_t *levels, const double *x,
                     const double *z, double *y, int nthreads, GatheredX how = GatheredX::automatic);
} // namespace openmp

} // namespace petscmp
