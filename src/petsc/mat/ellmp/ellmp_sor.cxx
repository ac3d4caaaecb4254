// MatSOR of seqellmp on the stored rows: PETSc's MatSOR_SeqAIJ (3.18) step for
// step, the sweeps in the kernel (kernels/sor.hpp), the inverted diagonal, its
// zero-pivot checks, the flag handling and the flop counts here, so that a
// sweep gives AIJ's result bit for bit and -log_view counts what AIJ counts.
// No AIJ copy is made: the memory ellmp saves stays saved under Gauss-Seidel
// smoothers (PCSOR, PCMG's Chebyshev/SOR levels).
//
// Where AIJ found inodes and omega is 1 with no shift, AIJ takes its inode SOR
// (MatSOR_SeqAIJ_Inode: block Gauss-Seidel over the inodes); its sweeps are
// replayed here too, on the stored rows, the nodes' diagonal blocks inverted
// by PETSc's own kernels as AIJ inverts them. Its Eisenstat keeps running on
// the AIJ twin, as do matrices with a row lacking its diagonal entry (AIJ then
// reads past the row) and copies the sweeps cannot walk in order (sor.hpp).
#include "mat/ellmp/ellmpimpl.h"
// (after PETSc's headers, which it needs)
#include <petsc/private/kernels/blockinvert.h>

namespace petscmp {
namespace {

SeqELLMP *data_of(Mat A)
{
  return static_cast<SeqELLMP *>(A->data);
}

// The rows and diagonal for the matrix's current values (made again after any change of them).
PetscErrorCode update_rows(Mat A, SorState &s)
{
  SeqELLMP *d = data_of(A);
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  if (s.state == state && s.compact == d->compact.get()) PetscFunctionReturn(0);
  s.idiag_valid = false;
  s.inode_valid = s.inode_blocks_valid = false;
  PetscCall(guarded([&] { s.sweepable = reference::sor_rows(*d->compact, CsrPattern<PetscInt>{}, s.rows); }));
  s.state   = state;
  s.compact = d->compact.get();
  if (s.sweepable)
    PetscCall(
        PetscInfo(A, "petscmp: SOR sweeps the stored rows (%zu runs of rows; no AIJ copy)\n", s.rows.runs.size()));
  PetscFunctionReturn(0);
}

// PETSc's MatInvertDiagonal_SeqAIJ over the stored diagonal: 1 / a_ii for omega 1 without a positive shift (a zero
// pivot is an error, or with a negative shift a recorded factor error), else omega / (shift + a_ii).
PetscErrorCode invert_diagonal(Mat A, SorState &s, PetscReal omega, PetscReal fshift)
{
  const PetscInt m    = A->rmap->n;
  const double *mdiag = s.rows.diagonal.data();

  PetscFunctionBegin;
  if (fshift != s.shift || omega != s.omega) s.idiag_valid = false;
  if (s.idiag_valid) PetscFunctionReturn(0);
  PetscCall(guarded([&] {
    s.idiag.resize(static_cast<std::size_t>(m));
    s.work.resize(static_cast<std::size_t>(m));
  }));
  double *idiag = s.idiag.data();
  if (omega == 1.0 && PetscRealPart(fshift) <= 0.0) {
    for (PetscInt i = 0; i < m; i++) {
      if (!PetscAbsScalar(mdiag[i])) { // zero diagonal
        if (PetscRealPart(fshift)) {
          PetscCall(PetscInfo(A, "Zero diagonal on row %" PetscInt_FMT "\n", i));
          A->factorerrortype             = MAT_FACTOR_NUMERIC_ZEROPIVOT;
          A->factorerror_zeropivot_value = 0.0;
          A->factorerror_zeropivot_row   = i;
        } else
          SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_INCOMP, "Zero diagonal on row %" PetscInt_FMT, i);
      }
      idiag[i] = 1.0 / mdiag[i];
    }
    PetscCall(PetscLogFlops(m));
  } else {
    for (PetscInt i = 0; i < m; i++)
      idiag[i] = omega / (fshift + mdiag[i]);
    PetscCall(PetscLogFlops(2.0 * m));
  }
  s.idiag_valid = true;
  s.omega       = omega;
  s.shift       = fshift;
  PetscFunctionReturn(0);
}

// Whether this call makes only the sweeps of AIJ's inode SOR that are replayed on the stored rows: forward and/or
// backward, with or without a zero initial guess, or Eisenstat alone (as PCEisenstat asks it); not SOR_APPLY_UPPER
// (which AIJ's inode SOR leaves undone) nor Eisenstat with sweeps.
bool inode_sweeps_replayed(MatSORType flag)
{
  const int sweeps = SOR_FORWARD_SWEEP | SOR_BACKWARD_SWEEP | SOR_LOCAL_FORWARD_SWEEP | SOR_LOCAL_BACKWARD_SWEEP;
  return flag == SOR_EISENSTAT || ((flag & sweeps) && !(flag & ~(sweeps | SOR_ZERO_INITIAL_GUESS)));
}

// Whether the inodes of the last build are 1-5 rows each (AIJ's inode routines stop on larger nodes) and cover the
// rows; *room: the values of their diagonal blocks.
bool inode_sizes_fit(Mat A, PetscInt *room)
{
  PetscInt rows = 0;
  bool fit      = true;
  *room         = 0;
  for (PetscInt size : data_of(A)->inode_sizes) {
    fit = fit && size >= 1 && size <= 5;
    rows += size;
    *room += size * size;
  }
  return fit && rows == A->rmap->n;
}

// AIJ's inode diagonal blocks before their inversion (its bdiag), which its Eisenstat (t = b - D x) and
// MatMultDiagonalBlock read; *usable is false where the inodes of the last build are not the rows' patterns.
PetscErrorCode copy_inode_blocks(Mat A, SorState &s, bool *usable)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  if (!s.inode_blocks_valid) {
    s.inode_blocks_usable = false;
    PetscInt room;
    if (inode_sizes_fit(A, &room) && s.sweepable)
      PetscCall(guarded([&] {
        s.inode_sizes.assign(d->inode_sizes.begin(), d->inode_sizes.end()); // (the same sizes as the inverses')
        s.inode_blocks.resize(static_cast<std::size_t>(room));
        s.inode_blocks_usable = reference::inode_diagonal_blocks(*d->compact, CsrPattern<PetscInt>{}, s.rows,
                                                                 s.inode_sizes.data(), s.inode_blocks.data());
      }));
    s.inode_blocks_valid = true;
  }
  *usable = s.inode_blocks_usable;
  PetscFunctionReturn(0);
}

// AIJ's inverted inode diagonal blocks (MatSOR_SeqAIJ_Inode's first part): each node's block copied from the stored
// rows and inverted in place by PETSc's kernels, a zero pivot an error or a recorded factor error as AIJ has it.
// *usable is false where the inodes AIJ found at the last build are not the rows' (then the twin runs).
PetscErrorCode invert_inode_blocks(Mat A, SorState &s, PetscBool *usable)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  *usable = s.inode_usable ? PETSC_TRUE : PETSC_FALSE;
  if (s.inode_valid) PetscFunctionReturn(0);
  // (known for this state of the values once inode_valid is set)
  s.inode_usable = false;
  *usable        = PETSC_FALSE;
  PetscInt room;
  s.inode_valid = !inode_sizes_fit(A, &room);
  if (s.inode_valid) PetscFunctionReturn(0);
  bool inodes = false;
  PetscCall(guarded([&] {
    s.inode_sizes.assign(d->inode_sizes.begin(), d->inode_sizes.end());
    s.inode_inverses.resize(static_cast<std::size_t>(room));
    s.work.resize(static_cast<std::size_t>(A->rmap->n));
    inodes = reference::inode_diagonal_blocks(*d->compact, CsrPattern<PetscInt>{}, s.rows, s.inode_sizes.data(),
                                              s.inode_inverses.data());
  }));
  s.inode_valid = !inodes; // (the sizes of the last build are not the rows' patterns)
  if (s.inode_valid) PetscFunctionReturn(0);
  const PetscReal zeropivot = 100. * PETSC_MACHINE_EPSILON, shift = 0.0;
  const PetscBool allowzeropivot = PetscNot(A->erroriffailure);
  PetscBool zeropivotdetected    = PETSC_FALSE;
  MatScalar work[25];
  PetscInt ipvt[5], row = 0;
  MatScalar *block = s.inode_inverses.data();
  for (int size : s.inode_sizes) {
    switch (size) {
    case 1:
      if (PetscAbsScalar(block[0]) < zeropivot) {
        if (allowzeropivot) {
          A->factorerrortype             = MAT_FACTOR_NUMERIC_ZEROPIVOT;
          A->factorerror_zeropivot_value = PetscAbsScalar(block[0]);
          A->factorerror_zeropivot_row   = row;
          PetscCall(PetscInfo(A, "Zero pivot, row %" PetscInt_FMT "\n", row));
        } else
          SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MAT_LU_ZRPVT, "Zero pivot on row %" PetscInt_FMT, row);
      }
      block[0] = 1.0 / block[0];
      break;
    case 2:
      PetscCall(PetscKernel_A_gets_inverse_A_2(block, shift, allowzeropivot, &zeropivotdetected));
      break;
    case 3:
      PetscCall(PetscKernel_A_gets_inverse_A_3(block, shift, allowzeropivot, &zeropivotdetected));
      break;
    case 4:
      PetscCall(PetscKernel_A_gets_inverse_A_4(block, shift, allowzeropivot, &zeropivotdetected));
      break;
    default:
      PetscCall(PetscKernel_A_gets_inverse_A_5(block, ipvt, work, shift, allowzeropivot, &zeropivotdetected));
      break;
    }
    if (size > 1 && zeropivotdetected) A->factorerrortype = MAT_FACTOR_NUMERIC_ZEROPIVOT;
    block += size * size;
    row += size;
  }
  s.inode_valid  = true; // (not before: a zero pivot that stopped the inversion stops the next call too, as AIJ's)
  s.inode_usable = true;
  *usable        = PETSC_TRUE;
  PetscCall(PetscInfo(
      A, "petscmp: AIJ's inode SOR on the stored rows (%zu inodes, their diagonal blocks inverted; no AIJ copy)\n",
      s.inode_sizes.size()));
  PetscFunctionReturn(0);
}

// The sweeps a flag asks for (PETSc's bits as booleans), its iterations.
SorSweeps sweeps_of(MatSORType flag, PetscInt its)
{
  SorSweeps sweeps;
  sweeps.its        = its;
  sweeps.forward    = (flag & SOR_FORWARD_SWEEP) || (flag & SOR_LOCAL_FORWARD_SWEEP);
  sweeps.backward   = (flag & SOR_BACKWARD_SWEEP) || (flag & SOR_LOCAL_BACKWARD_SWEEP);
  sweeps.zero_guess = flag & SOR_ZERO_INITIAL_GUESS;
  return sweeps;
}

// AIJ's flop counts, point and inode SOR alike: a sweep with a zero guess nz; later ones 2 nz forward, and backward
// 2 nz (whole rows) or nz (after a forward sweep saved the lower part)
PetscErrorCode log_sweep_flops(const SorSweeps &sweeps, PetscLogDouble nz)
{
  PetscLogDouble flops = 0;

  PetscFunctionBegin;
  if (sweeps.zero_guess) flops += (sweeps.forward ? nz : 0) + (sweeps.backward ? nz : 0);
  const std::int64_t later = sweeps.zero_guess ? sweeps.its - 1 : sweeps.its;
  if (later > 0)
    flops += later * ((sweeps.forward ? 2.0 * nz : 0) + (sweeps.backward ? (sweeps.forward ? nz : 2.0 * nz) : 0));
  PetscCall(PetscLogFlops(flops));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode MatMultDiagonalBlock_SeqELLMP(Mat A, Vec bb, Vec xx)
{
  SeqELLMP *d = data_of(A);
  SorState &s = d->sor;
  const PetscScalar *b;
  PetscScalar *x;
  bool usable = false;

  PetscFunctionBegin;
  PetscCheck(d->compact, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
             "petscmp: the ellmp matrix must be assembled before MatMultDiagonalBlock");
  PetscCall(update_rows(A, s));
  PetscCall(copy_inode_blocks(A, s, &usable));
  PetscCheck(usable, PETSC_COMM_SELF, PETSC_ERR_SUP,
             "petscmp: MatMultDiagonalBlock reads the diagonal blocks of the inodes found at the last assembly, and "
             "this matrix's rows do not hold them (a row without its diagonal entry, or nodes whose rows differ)");
  PetscCall(VecGetArray(xx, &x));
  PetscCall(VecGetArrayRead(bb, &b));
  PetscCall(guarded([&] {
    reference::inode_block_product(s.inode_sizes.data(), static_cast<std::int64_t>(s.inode_sizes.size()),
                                   s.inode_blocks.data(), b, x);
  }));
  PetscCall(PetscLogFlops(2.0 * static_cast<PetscLogDouble>(s.inode_blocks.size())));
  PetscCall(VecRestoreArrayRead(bb, &b));
  PetscCall(VecRestoreArray(xx, &x));
  PetscFunctionReturn(0);
}

PetscErrorCode MatSOR_SeqELLMP(Mat A, Vec bb, PetscReal omega, MatSORType flag, PetscReal fshift, PetscInt its,
                               PetscInt lits, Vec xx)
{
  SeqELLMP *d = data_of(A);
  SorState &s = d->sor;
  const PetscScalar *b;
  PetscScalar *x;

  PetscFunctionBegin;
  PetscCheck(d->compact, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
             "petscmp: the ellmp matrix must be assembled before MatSOR");
  const bool inode_sor      = d->inodes && omega == 1.0 && fshift == 0.0; // AIJ's MatSOR_SeqAIJ_Inode
  const bool inode_replayed = inode_sor && inode_sweeps_replayed(flag);
  PetscBool inodes_cover    = PETSC_TRUE;
  if ((!inode_sor || inode_replayed) && !d->settings.sor_aij_copy) PetscCall(update_rows(A, s));
  if (inode_replayed && !d->settings.sor_aij_copy && s.sweepable) PetscCall(invert_inode_blocks(A, s, &inodes_cover));
  if ((inode_sor && !inode_replayed) || d->settings.sor_aij_copy || !s.sweepable || !inodes_cover) {
    PetscObjectState state;
    PetscCall(PetscObjectStateGet((PetscObject)A, &state));
    if (s.told_copy != state) // (once per state of the values)
      PetscCall(PetscInfo(A, "petscmp: SOR on an AIJ copy of the matrix (AIJ's memory while it lives): %s\n",
                          d->settings.sor_aij_copy ? "-mat_ellmp_sor_aij_copy"
                          : inode_sor && !inode_replayed
                              ? "AIJ's inode SOR (inodes, omega 1, no shift) for SOR_APPLY_UPPER or Eisenstat with "
                                "sweeps"
                          : !inodes_cover ? "AIJ's inode SOR, and the inodes found at the last build are not the rows'"
                                          : "a row has no diagonal entry, or the rows are stored out of order"));
    s.told_copy = state;
    PetscCall((OpsThroughTwin<SeqELLMPTwin, SeqELLMPStoreValues>::sor(A, bb, omega, flag, fshift, its, lits, xx)));
    PetscFunctionReturn(0);
  }
  if (inode_replayed && flag == SOR_EISENSTAT) { // AIJ's inode Eisenstat
    bool usable;
    PetscCall(copy_inode_blocks(A, s, &usable)); // (the sizes of the inverses, which were usable)
    PetscCheck(usable, PETSC_COMM_SELF, PETSC_ERR_PLIB, "petscmp: the inodes' blocks were inverted but not copied");
    PetscCall(VecGetArray(xx, &x));
    PetscCall(VecGetArrayRead(bb, &b));
    PetscCall(guarded([&] {
      reference::sor_inode_eisenstat(*d->compact, CsrPattern<PetscInt>{}, s.rows, s.inode_sizes.data(),
                                     static_cast<std::int64_t>(s.inode_sizes.size()), s.inode_blocks.data(),
                                     s.inode_inverses.data(), s.work.data(), b, x);
    }));
    // AIJ's counts: nz for each triangular solve, a node's worth for t = b - D x
    PetscCall(PetscLogFlops(2.0 * static_cast<PetscLogDouble>(d->compact->stats.nnz) +
                            static_cast<PetscLogDouble>(s.inode_sizes.size())));
    PetscCall(VecRestoreArrayRead(bb, &b));
    PetscCall(VecRestoreArray(xx, &x));
    PetscFunctionReturn(0);
  }
  if (inode_replayed) {                            // AIJ's inode SOR
    const SorSweeps sweeps = sweeps_of(flag, its); // (AIJ's inode SOR ignores lits)
    PetscCall(VecGetArray(xx, &x));
    PetscCall(VecGetArrayRead(bb, &b));
    PetscCall(guarded([&] {
      reference::sor_inode(*d->compact, CsrPattern<PetscInt>{}, s.rows, s.inode_sizes.data(),
                           static_cast<std::int64_t>(s.inode_sizes.size()), s.inode_inverses.data(), sweeps,
                           s.work.data(), b, x);
    }));
    PetscCall(log_sweep_flops(sweeps, static_cast<PetscLogDouble>(d->compact->stats.nnz)));
    PetscCall(VecRestoreArrayRead(bb, &b));
    PetscCall(VecRestoreArray(xx, &x));
    PetscFunctionReturn(0);
  }
  its = its * lits;
  PetscCall(invert_diagonal(A, s, omega, fshift));
  const CompactCsr &c = *d->compact;
  const CsrPattern<PetscInt> p{}; // every block holds its own indices
  const PetscLogDouble nz = static_cast<PetscLogDouble>(c.stats.nnz), m = A->rmap->n;
  PetscCall(VecGetArray(xx, &x));
  PetscCall(VecGetArrayRead(bb, &b));
  if (flag == SOR_APPLY_UPPER) { // (U + D/omega) b
    PetscCall(guarded([&] { reference::sor_apply_upper(c, p, s.rows, omega, fshift, b, x); }));
    PetscCall(PetscLogFlops(nz));
  } else {
    PetscCheck(flag != SOR_APPLY_LOWER, PETSC_COMM_SELF, PETSC_ERR_SUP, "SOR_APPLY_LOWER is not implemented");
    if (flag & SOR_EISENSTAT) {
      PetscCall(guarded([&] { reference::sor_eisenstat(c, p, s.rows, omega, s.idiag.data(), s.work.data(), b, x); }));
      PetscCall(PetscLogFlops(6.0 * m - 1 + 2.0 * nz));
    } else {
      SorSweeps sweeps = sweeps_of(flag, its);
      sweeps.omega     = omega;
      sweeps.shift     = fshift;
      PetscCall(guarded([&] { reference::sor(c, p, s.rows, sweeps, s.idiag.data(), s.work.data(), b, x); }));
      PetscCall(log_sweep_flops(sweeps, nz));
    }
  }
  PetscCall(VecRestoreArrayRead(bb, &b));
  PetscCall(VecRestoreArray(xx, &x));
  PetscFunctionReturn(0);
}

} // namespace petscmp
