// Successive over-relaxation (Gauss-Seidel, SSOR, Eisenstat) on the stored rows
// of a CompactCsr: the sweeps of PETSc's MatSOR_SeqAIJ (PETSc 3.18, the path it
// takes where it does not use inodes), operation for operation and in the same
// order, so over the same values each sweep gives AIJ's result bit for bit.
//
// Only for copies whose rows SOR can walk in order: row-wise blocks with rows
// ascending inside each block (no length-sorted windows, no entry split), every
// row holding its diagonal entry, columns ascending in every row (sor_rows says
// whether A is such a copy). AIJ's own SOR on a matrix without a diagonal entry
// reads past the row; callers keep AIJ for those.
//
// Values are read in full (every segment of split storage): the sweeps see the
// matrix that is stored, as an AIJ copy of it would.
#pragma once

#include <cstdint>
#include <vector>

#include "prefetch.hpp"
#include "spmv.hpp"

namespace petscmp {

// How SOR walks A: runs of consecutive rows stored one after another in one
// block, in ascending row order, and each row's diagonal entry: its value as
// stored and its position (the row's entries before it are its lower
// triangle, those after it the upper one, columns ascending).
struct SorRows {
  struct Run {
    std::int64_t block = 0, first_row = 0, first_k = 0, count = 0; // rows first_row + j are block rows first_k + j
  };
  std::vector<Run> runs;
  std::vector<double> diagonal;
  std::vector<std::int32_t> diagonal_at; // the diagonal entry's position in its row (SeqAIJ's a->diag, per row)
  // Where every run is whole nodes of node-layout blocks: the runs as ranges of
  // nodes [node_begin, node_end) of one index width, rows first_row.. in row
  // order (a node walk then follows the nodes alone); else empty.
  struct NodeRun {
    std::int64_t block = 0, node_begin = 0, node_end = 0, first_row = 0;
    bool wide = false;
  };
  std::vector<NodeRun> node_runs;
  // Whether the walks ask for the rows ahead of them (the stored rows hold kPrefetchFromBytes or more); below, the
  // rows stay in cache from sweep to sweep and asking costs more than it brings.
  bool prefetch = true;
  // Per block, the columns of its patched slices expanded as a narrow slice's (16-bit offsets from base[q], one per
  // stored entry) where they lie within 2^16 of their smallest, else as a gathered slice's (32-bit columns): slice
  // q's start at offsets[at[q]] or, where base[q] < 0, at columns[at[q]] (at empty where the block has no patched
  // slice; -1 for the other slices). A sweep's rows then read plain indices: read through the slice's masks (more
  // instructions per entry, in a loop bound by its sums' latency) or expanded at each slice's start (its first row
  // waits), cache-resident 27-point fp32 sweeps ran at 0.66-0.96x AIJ's speed, and with 32-bit columns (more bytes
  // in L3) 5-10% slower than with the 16-bit offsets those slices had before they were patched.
  struct ExpandedSlices {
    std::vector<std::int64_t> at;
    std::vector<std::int32_t> base;
    std::vector<std::uint16_t> offsets;
    std::vector<std::int32_t> columns;
  };
  std::vector<ExpandedSlices> expanded;
};

// The sweeps of one MatSOR call (PETSc's flag bits as booleans).
struct SorSweeps {
  double omega = 1.0, shift = 0.0;
  std::int64_t its = 1; // PETSc's its * lits
  bool forward     = false;
  bool backward    = false;
  bool zero_guess  = false; // x is taken to be 0 on entry (the first sweeps do not read it)
};

namespace reference {
// Fills rows for A; false where SOR cannot run on A's stored rows (see above).
template <typename Index> bool sor_rows(const CompactCsr &A, CsrPattern<Index> pattern, SorRows &rows);
// x = sweeps of SOR on A x = b. idiag[i] is PETSc's inverted diagonal (1 / a_ii
// with omega 1 and no positive shift, else omega / (shift + a_ii)); work holds
// nrows values (the saved lower-triangle sums of symmetric sweeps).
template <typename Index>
void sor(const CompactCsr &A, CsrPattern<Index> pattern, const SorRows &rows, const SorSweeps &s, const double *idiag,
         double *work, const double *b, double *x);
// Eisenstat's trick: x = (L + E)^-1 A (U + E)^-1 b with E = D / omega, as AIJ's SOR_EISENSTAT computes it.
template <typename Index>
void sor_eisenstat(const CompactCsr &A, CsrPattern<Index> pattern, const SorRows &rows, double omega,
                   const double *idiag, double *work, const double *b, double *x);
// x = (U + (shift + D) / omega) b (SOR_APPLY_UPPER).
template <typename Index>
void sor_apply_upper(const CompactCsr &A, CsrPattern<Index> pattern, const SorRows &rows, double omega, double shift,
                     const double *b, double *x);

// AIJ's inode SOR (PETSc 3.18's MatSOR_SeqAIJ_Inode, which AIJ takes where it
// found inodes, omega is 1 and there is no shift): Gauss-Seidel over the
// inodes (runs of rows with one column pattern, sizes[0..nodes) in row order),
// each node's diagonal block applied through its inverse, the sums a pair of
// products at a time (`sum -= a0 x0 + a1 x1`, then the last entry alone). A
// forward sweep takes b minus the columns before the node (saved in t), then,
// unless the guess is zero, minus the columns after it; a backward sweep takes
// t (after a forward sweep) or b minus the columns after the node, and without
// a forward sweep and a zero guess, b minus the whole rows, added to x. A
// node's x (or its increment) is sum_c S_c inverse[c s + r], c ascending, as
// AIJ's unrolled expressions. The flags as AIJ reads them: the zero-guess
// sweeps, then its - 1 (or its) more; AIJ's inode SOR ignores lits.
// sor_inode_eisenstat is its SOR_EISENSTAT (the flag alone): x = (U + D)^-1 b
// node by node from the last (the columns after each node, as a backward
// sweep), t = b - D x (D the block diagonal, `blocks` not inverted: t_r = b_r
// - (x_0 d(r,0) + x_1 d(r,1) + ...)), then t = (L + D)^-1 t from the first
// node (the columns before each node, read from t) and x += t.
//
// inode_diagonal_blocks writes each node's s x s diagonal block as AIJ copies
// it before inverting it (column-major: blocks[k s + j] = a(row0 + j, row0 +
// k)), node after node; `inverses` is that array inverted by PETSc's kernels.
// It returns false where a node's rows do not share one column pattern (the
// sizes are not A's inodes). Both need rows from sor_rows and node sizes
// summing to A's rows.
template <typename Index>
bool inode_diagonal_blocks(const CompactCsr &A, CsrPattern<Index> pattern, const SorRows &rows, const int *sizes,
                           double *blocks);
template <typename Index>
void sor_inode(const CompactCsr &A, CsrPattern<Index> pattern, const SorRows &rows, const int *sizes,
               std::int64_t nodes, const double *inverses, const SorSweeps &sweeps, double *t, const double *b,
               double *x);
// y = D x for AIJ's inode block diagonal (`blocks` as inode_diagonal_blocks
// writes them): y_r = x_0 d(r,0) + x_1 d(r,1) + ..., left to right, as
// MatMultDiagonalBlock_SeqAIJ_Inode and AIJ's inode Eisenstat compute it.
void inode_block_product(const int *sizes, std::int64_t nodes, const double *blocks, const double *x, double *y);
template <typename Index>
void sor_inode_eisenstat(const CompactCsr &A, CsrPattern<Index> pattern, const SorRows &rows, const int *sizes,
                         std::int64_t nodes, const double *blocks, const double *inverses, double *t, const double *b,
                         double *x);
} // namespace reference

} // namespace petscmp
