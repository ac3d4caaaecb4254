// Private to the ellmp glue: the data a seqellmp matrix carries in A->data.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include <petscdm.h> // MatGetDM, MatFDColoringUseDM (a DM's coloring)

#include "mat/aijmp/aijmpimpl.h"
#include "petscmp/core/compact_rows.hpp"
#include "sor.hpp"

namespace petscmp {

// An AIJ copy of an ellmp matrix kept across calls by the operations that need AIJ's own arrays for longer than one
// call: SOR, and finite-difference Jacobians by coloring (whose setup keeps addresses into the matrix's values). It
// costs AIJ's memory while it lives; its values follow the matrix's (refreshed when the matrix's state moved on), and
// it is made anew when the pattern changes.
struct AIJTwin {
  Mat aij                  = nullptr;
  PetscObjectState synced  = -1; // the matrix's state its values are
  PetscObjectState pattern = -1; // the matrix's nonzero state it was made for
};

// MatSOR on the stored rows (ellmp_sor.cxx): how the sweeps walk them and PETSc's inverted diagonal, for one state
// of the values (SeqAIJ keeps the like: its diag, idiag, mdiag and ssor_work arrays).
struct SorState {
  PetscObjectState state    = -1; // the matrix's state `rows` was made for (-1: none yet)
  const CompactCsr *compact = nullptr;
  bool sweepable            = false; // the stored rows can be swept (else SOR runs on the AIJ twin)
  SorRows rows;
  bool idiag_valid = false;
  PetscReal omega = 1, shift = 0; // what idiag was made with
  std::vector<double> idiag, work;
  // AIJ's inode SOR (inodes, omega 1, no shift): the inodes' sizes (AIJ's inodes at the last build, as int; the same
  // for both arrays of blocks below, each writing them when it is made) and their inverted diagonal blocks, node after
  // node
  bool inode_valid = false, inode_usable = false; // (usable: the sizes are the rows' inodes)
  std::vector<int> inode_sizes;
  std::vector<double> inode_inverses;
  // the blocks not inverted, for Eisenstat and MatMultDiagonalBlock (made at their first call for the values; usable:
  // the sizes are the rows' inodes)
  std::vector<double> inode_blocks;
  bool inode_blocks_valid = false, inode_blocks_usable = false;
  PetscObjectState told_copy = -1; // the state -info was last told a call went to the AIJ copy
};

struct SeqELLMP {
  AIJMPSettings settings; // storage options (-mat_ellmp_*); the kernel fields are not used
  // Receives MatSetValues (and the preallocation) until MatAssemblyEnd turns it
  // into `compact`; null while the matrix is assembled.
  Mat assembly = nullptr;
  // The nonzero state of `assembly` right after it was filled from `compact`:
  // unchanged at MatAssemblyEnd means the same pattern (the layout is kept).
  PetscObjectState reopened_pattern = -1;
  std::unique_ptr<CompactCsr> compact; // the matrix (null before the first assembly)
  CompactRowMap row_map;               // made at the first MatGetRow/MatGetValues of a copy
  std::vector<PetscInt> row_cols;      // MatGetRow's buffers
  std::vector<PetscScalar> row_vals;
  PetscInt cached_row = -1;                             // the row the buffers hold (MatGetValues)
  std::vector<std::pair<MatOption, PetscBool>> options; // MatSetOption calls, given to each assembly matrix
  PetscInt64 full_builds = 0, value_builds = 0;
  AIJTwin twin;
  SorState sor;
  PetscLogDouble aij_allocated = 0, aij_mallocs = 0; // SeqAIJ's MatGetInfo figures of the last assembly (reported)
  std::vector<PetscInt> rowij_i, rowij_j;            // MatGetRowIJ's arrays, held until MatRestoreRowIJ
  std::vector<PetscScalar> block_inverse;            // MatInvertBlockDiagonal's result, owned by the matrix
  PetscInt inodes = 0, inode_limit = 0;
  std::vector<PetscInt> inode_sizes; // (MatInodeGetInodeSizes, orderings)   // SeqAIJ's inodes at the last build (its
                                     // summation order, kept)
  double aij_bytes = 0; // bytes SeqAIJ's product would read (its inode kernel where it finds inodes), at the last build
  GatheredXSelection gathered_x;        // the read of x in gathered slices (-mat_ellmp_gathered_x auto)
  std::unique_ptr<DeviceMirror> device; // products on device vectors (common/device_backend.h), made at the first
};

// Marks B, a duplicate of an assembled matrix holding its storage, assembled as MatAssemblyEnd would (its own step
// has nothing to do), without MatAssemblyEnd's -mat_view: AIJ's duplicates are not viewed either.
inline PetscErrorCode ELLMPMarkAssembled(Mat B)
{
  PetscFunctionBegin;
  B->preallocated     = PETSC_TRUE;
  B->assembled        = PETSC_TRUE;
  B->ass_nonzerostate = B->nonzerostate;
  B->insertmode       = NOT_SET_VALUES;
  B->num_ass++;
  PetscCall(PetscObjectStateIncrease((PetscObject)B));
  PetscFunctionReturn(0);
}

// For mpiellmp, whose diagonal and off-diagonal blocks are seqellmp matrices it stores itself.
// A block of m x n with block sizes rbs x cbs (internal options prefix), with the parent's settings.
PetscErrorCode SeqELLMPCreateBlock(PetscInt m, PetscInt n, PetscInt rbs, PetscInt cbs, const AIJMPSettings &settings,
                                   Mat *B);
// The settings of a seqellmp matrix (an mpiellmp's block: the parent sets the read level before its products).
PetscErrorCode SeqELLMPGetSettings(Mat A, AIJMPSettings **s);
// Moves B's stored copy out (its memory reused by the next build); B holds none afterwards.
PetscErrorCode SeqELLMPTakeCompact(Mat B, std::unique_ptr<CompactCsr> &c);
// Makes c, built from the assembled SeqAIJ block aij, B's matrix, and B assembled.
PetscErrorCode SeqELLMPStore(Mat B, Mat aij, std::unique_ptr<CompactCsr> c, bool value_only, bool same_pattern);
// The last reads of B's rows before B is stored anew (a reassembly): a reader of its rows in ascending order (no row
// map) and a release that gives their values back to the system as they are read (release(r) after rows [0, r)).
// B's values are undefined from the first release until it is stored: the caller keeps them from being read (an
// mpiellmp marks its blocks not assembled). with_indices: the column indices go too (B holds a pattern, see
// SeqELLMPHoldsAPattern), and B's copy is neither reused nor read until it is stored anew.
PetscErrorCode SeqELLMPLastReads(Mat B, std::unique_ptr<CompactRowReader> &rows,
                                 std::unique_ptr<CompactValuesRelease> &release, bool with_indices = false);
// Whether B holds a pattern assembled without values, as DMs preallocate matrices (compact_holds_a_pattern).
PetscErrorCode SeqELLMPHoldsAPattern(Mat B, bool *zeros);
const CompactCsr *SeqELLMPCompact(Mat B);
// A new assembled SeqAIJ matrix holding B's stored values (exactly).
PetscErrorCode SeqELLMPToAIJ(Mat B, Mat *aij);
// Rewrites the values of aij, an AIJ copy of B with B's pattern, with B's stored values.
PetscErrorCode SeqELLMPRefreshAIJ(Mat B, Mat aij);
// B's AIJ twin, its values B's (seq).
PetscErrorCode SeqELLMPTwin(Mat B, Mat *aij);
// Stores the values of aij (an AIJ matrix with B's pattern, assembled) as B's (a value-only rebuild).
PetscErrorCode SeqELLMPStoreValues(Mat B, Mat aij);
// y = D x, D the block diagonal of AIJ's inodes (PCEisenstat's diagonal scaling where AIJ has inodes); the op is set
// only where the last build found inodes, as SeqAIJ sets it.
PetscErrorCode MatMultDiagonalBlock_SeqELLMP(Mat A, Vec x, Vec y);
// MatSOR of seqellmp: PETSc's MatSOR_SeqAIJ sweeps over the stored rows, and where AIJ would use its inode SOR
// (inodes, omega 1, no shift) that SOR and its Eisenstat, bit for bit AIJ's; on the AIJ twin for SOR_APPLY_UPPER
// with inodes, Eisenstat with sweeps, where a row has no diagonal entry, and with -mat_ellmp_sor_aij_copy
// (ellmp_sor.cxx).
PetscErrorCode MatSOR_SeqELLMP(Mat A, Vec b, PetscReal omega, MatSORType flag, PetscReal shift, PetscInt its,
                               PetscInt lits, Vec x);
// The operations ellmp runs on its AIJ twin (seq and MPI): SOR and finite-difference coloring; Twin gives the twin
// with the matrix's values, Store stores the twin's values back after a coloring filled them.
template <PetscErrorCode (*Twin)(Mat, Mat *), PetscErrorCode (*Store)(Mat, Mat)> struct OpsThroughTwin {
  static PetscErrorCode sor(Mat A, Vec b, PetscReal omega, MatSORType flag, PetscReal shift, PetscInt its,
                            PetscInt lits, Vec x)
  {
    Mat T = nullptr;
    PetscFunctionBegin;
    PetscCall(Twin(A, &T));
    // the twin's own operation, as MPIAIJ calls its blocks': the vectors may be an MPI matrix's (this is its
    // diagonal block), whose local arrays are the block's
    PetscCall((*T->ops->sor)(T, b, omega, flag, shift, its, lits, x));
    PetscFunctionReturn(0);
  }
  static PetscErrorCode fdcoloringcreate(Mat A, ISColoring coloring, MatFDColoring c)
  {
    Mat T = nullptr;
    PetscFunctionBegin;
    PetscCall(Twin(A, &T));
    PetscCheck(T->ops->fdcoloringcreate, PETSC_COMM_SELF, PETSC_ERR_SUP, "petscmp: AIJ has no coloring here");
    PetscCall((*T->ops->fdcoloringcreate)(T, coloring, c));
    PetscFunctionReturn(0);
  }
  static PetscErrorCode fdcoloringsetup(Mat A, ISColoring coloring, MatFDColoring c)
  {
    Mat T = nullptr;
    PetscFunctionBegin;
    PetscCall(Twin(A, &T));
    // the twin has the matrix's local-to-global mappings (a coloring in local, ghosted numbering needs them)
    if (A->rmap->mapping || A->cmap->mapping)
      PetscCall(MatSetLocalToGlobalMapping(T, A->rmap->mapping, A->cmap->mapping));
    if (A->ops->fdcoloringapply != fdcoloringapply) {
      // MatFDColoringUseDM replaced the matrix's apply step by the DM's (ghosted vectors, then AIJ's step, which
      // would write into the twin only): the twin takes the DM's route, and the matrix stores the twin's values
      DM dm = nullptr;
      PetscCall(MatGetDM(A, &dm));
      if (dm) PetscCall(MatSetDM(T, dm));
      PetscCall(MatFDColoringUseDM(T, c));
      A->ops->fdcoloringapply = fdcoloringapply;
    }
    PetscCall((*T->ops->fdcoloringsetup)(T, coloring, c));
    PetscFunctionReturn(0);
  }
  // the coloring writes the Jacobian's values into the twin (whose value addresses its setup kept); they become
  // the matrix's
  static PetscErrorCode fdcoloringapply(Mat J, MatFDColoring c, Vec x, void *ctx)
  {
    Mat T = nullptr;
    PetscFunctionBegin;
    PetscCall(Twin(J, &T));
    PetscCall((*T->ops->fdcoloringapply)(T, c, x, ctx));
    PetscCall(Store(J, T));
    PetscFunctionReturn(0);
  }
  static void install(MatOps o)
  {
    o->sor              = sor;
    o->fdcoloringcreate = fdcoloringcreate;
    o->fdcoloringsetup  = fdcoloringsetup;
    o->fdcoloringapply  = fdcoloringapply;
  }
};
// MatSetFromOptions and MatELLMPSetStorage of an ellmp type: Data (with `settings`) from DataOf, Stored(d) whether
// it holds an assembled matrix, which a change of a setting that changes stored values stores anew through
// Change::run (from its stored values: the matrix is what it stores).
template <typename Data, Data *(*DataOf)(Mat), bool (*Stored)(const Data *), typename Change> struct SettingsOf {
  template <typename Fn> static PetscErrorCode change(Mat A, Fn &&fn)
  {
    Data *d = DataOf(A);
    PetscFunctionBegin;
    const StorageOptions before = d->settings.opts;
    PetscCall(fn(d->settings));
    if (StorageChanged(before, d->settings.opts) && Stored(d))
      PetscCall(Change::run(A, [](Mat) { return PetscErrorCode(0); }));
    PetscFunctionReturn(0);
  }
  static PetscErrorCode setfromoptions(Mat A, PetscOptionItems *)
  {
    return change(A, [&](AIJMPSettings &s) { return AIJMPSetFromOptions(A, s, "ellmp"); });
  }
  static PetscErrorCode setstorage(Mat A, MatAIJMPStorage storage)
  {
    return change(A, [&](AIJMPSettings &s) {
      s.opts.mode = static_cast<StorageMode>(storage);
      s.explicitly_set |= kSetStorage;
      return PetscErrorCode(0);
    });
  }
};
// MatProductSetFromOptions for products with ellmp operands: AIJ's routines on the operands' AIJ twins
// (ellmp_product.cxx). Each ellmp type composes "PetscMPTwin_C" (its twin).
PetscErrorCode MatProductSetFromOptions_ELLMP(Mat C);
// Composes (on) or removes the names products and factorizations look ellmp up by: "PetscMPTwin_C" and PETSc's
// type-keyed product names with AIJ and dense partners. seq: seqellmp, else mpiellmp.
PetscErrorCode ELLMPComposeProducts(Mat A, bool seq, PetscErrorCode (*twin)(Mat, Mat *), bool on);
// Registers MatGetFactor for seqellmp and mpiellmp with every package PETSc offers for AIJ: the package's AIJ
// factor, whose symbolic and numeric steps get the matrix's AIJ twin (ellmp_factor.cxx).
PetscErrorCode ELLMPRegisterFactors(void);
// Gives M, an AIJ copy that stands in for A (a conversion through AIJ, an
// operation through AIJ, the AIJ twin), what PETSc code may ask of A besides
// its values: A's local-to-global maps, the DM that made A and what is known
// of A's symmetry. PETSc 3.18's MatConvert to MATIS cuts a matrix made by a
// DM along the DM's subdomains: without the maps and DM, A's copy was cut
// along its own rows (another GDSW coarse space in snes ex56 and ex17 on 4
// ranks). MatCreateGraph adds the transpose unless the matrix is known to be
// symmetric: without the flags, GAMG's graph of an SPD ellmp matrix rounded
// otherwise than AIJ's (other HEM aggregates in ksp ex54f).
PetscErrorCode ELLMPCarryIdentity(Mat A, Mat M);
// The AIJ matrix of `type` that MatLoad reads A's file into, before A stores
// it: options prefix of its own (the user's -mat_view is not for it), A's
// name (HDF5 files hold matrices by name), A's block size or
// -matload_block_size under A's prefix.
PetscErrorCode ELLMPNewLoadMatrix(Mat A, MatType type, Mat *M);
// The ellmp part of -mat_view ::ascii_info: aijmp's report and the memory per nonzero against AIJ's (memory: bytes
// held, rows: the global row count).
PetscErrorCode ELLMPViewReport(PetscViewer viewer, const MatAIJMPInfo &info, const AIJMPSettings &settings,
                               int format_group, double memory, PetscInt64 rows);
// Adds B's copy to info (formats, bytes with AIJ's inode-aware bytes, builds) and gives its inode count.
PetscErrorCode SeqELLMPReport(Mat B, MatAIJMPInfo &info, PetscInt *inodes, PetscInt *inode_limit);

// Whether a storage setting that changes the stored values changed (an assembled matrix is then stored anew).
inline bool StorageChanged(const StorageOptions &a, const StorageOptions &b)
{
  return a.mode != b.mode || a.layout != b.layout || a.tolerance != b.tolerance || a.range != b.range ||
         a.range_factor != b.range_factor || a.row_fraction != b.row_fraction || a.format_group != b.format_group;
}

// fn(M) on a temporary AIJ copy M of A made by make_copy (to_aij, to_mpiaij): the operations ellmp leaves to AIJ
// (submatrices, overlaps, orderings).
template <typename Fn> PetscErrorCode WithAIJCopy(Mat A, PetscErrorCode (*make_copy)(Mat, Mat *), Fn &&fn)
{
  Mat M;

  PetscFunctionBegin;
  PetscCall(make_copy(A, &M));
  PetscCall(fn(M));
  PetscCall(MatDestroy(&M));
  PetscFunctionReturn(0);
}

// The operations that change values: AIJ does the arithmetic on an AIJ matrix holding the stored values and the
// result is stored anew. Change::run(A, fn) runs fn on that matrix and stores it; Copy makes an AIJ copy of an
// ellmp operand of AXPY.
template <typename Change, PetscErrorCode (*Copy)(Mat, Mat *)> struct ValueChangesThroughAIJ {
  static PetscErrorCode scale(Mat A, PetscScalar a)
  {
    return Change::run(A, [a](Mat M) { return MatScale(M, a); });
  }
  static PetscErrorCode shift(Mat A, PetscScalar a)
  {
    return Change::run(A, [a](Mat M) { return MatShift(M, a); });
  }
  static PetscErrorCode diagonalscale(Mat A, Vec l, Vec r)
  {
    return Change::run(A, [l, r](Mat M) { return MatDiagonalScale(M, l, r); });
  }
  static PetscErrorCode diagonalset(Mat A, Vec d, InsertMode mode)
  {
    return Change::run(A, [d, mode](Mat M) { return MatDiagonalSet(M, d, mode); });
  }
  static PetscErrorCode zerorows(Mat A, PetscInt n, const PetscInt rows[], PetscScalar diag, Vec x, Vec b)
  {
    return Change::run(A, [=](Mat M) { return MatZeroRows(M, n, rows, diag, x, b); });
  }
  static PetscErrorCode zerorowscolumns(Mat A, PetscInt n, const PetscInt rows[], PetscScalar diag, Vec x, Vec b)
  {
    return Change::run(A, [=](Mat M) { return MatZeroRowsColumns(M, n, rows, diag, x, b); });
  }
  static PetscErrorCode axpy(Mat Y, PetscScalar a, Mat X, MatStructure str)
  {
    PetscBool x_same_type;
    Mat x_aij = X;

    PetscFunctionBegin;
    PetscCall(PetscObjectTypeCompare((PetscObject)X, ((PetscObject)Y)->type_name, &x_same_type));
    if (x_same_type) PetscCall(Copy(X, &x_aij));
    PetscCall(Change::run(Y, [&](Mat M) { return MatAXPY(M, a, x_aij, str); }));
    if (x_same_type) PetscCall(MatDestroy(&x_aij));
    PetscFunctionReturn(0);
  }
  static void install(MatOps o)
  {
    o->scale           = scale;
    o->shift           = shift;
    o->diagonalscale   = diagonalscale;
    o->diagonalset     = diagonalset;
    o->zerorows        = zerorows;
    o->zerorowscolumns = zerorowscolumns;
    o->axpy            = axpy;
  }
};

// The operations ellmp leaves to AIJ, on a temporary copy made by Copy (to_aij, to_mpiaij): submatrices (their
// results are AIJ, for the sub-solvers of bjacobi and asm) and overlaps.
template <PetscErrorCode (*Copy)(Mat, Mat *)> struct OpsThroughAIJ {
  static PetscErrorCode createsubmatrices(Mat A, PetscInt n, const IS irow[], const IS icol[], MatReuse scall,
                                          Mat *submat[])
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatCreateSubMatrices(M, n, irow, icol, scall, submat); });
  }
  static PetscErrorCode createsubmatrix(Mat A, IS isrow, IS iscol, MatReuse scall, Mat *sub)
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatCreateSubMatrix(M, isrow, iscol, scall, sub); });
  }
  static PetscErrorCode increaseoverlap(Mat A, PetscInt n, IS is[], PetscInt ov)
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatIncreaseOverlap(M, n, is, ov); });
  }
  static PetscErrorCode createsubmatricesmpi(Mat A, PetscInt n, const IS irow[], const IS icol[], MatReuse scall,
                                             Mat *submat[])
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatCreateSubMatricesMPI(M, n, irow, icol, scall, submat); });
  }
  static PetscErrorCode issymmetric(Mat A, PetscReal tol, PetscBool *flg)
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatIsSymmetric(M, tol, flg); });
  }
  static PetscErrorCode ishermitian(Mat A, PetscReal tol, PetscBool *flg)
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatIsHermitian(M, tol, flg); });
  }
  static PetscErrorCode isstructurallysymmetric(Mat A, PetscBool *flg)
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatIsStructurallySymmetric(M, flg); });
  }
  static PetscErrorCode getrowmaxabs(Mat A, Vec v, PetscInt idx[])
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatGetRowMaxAbs(M, v, idx); });
  }
  static PetscErrorCode getcolumnreductions(Mat A, PetscInt type, PetscReal *reductions)
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatGetColumnReductions(M, type, reductions); });
  }
  // the transpose is AIJ (in place: the matrix becomes AIJ's transpose)
  static PetscErrorCode transpose(Mat A, MatReuse reuse, Mat *B)
  {
    Mat M;
    PetscFunctionBegin;
    PetscCall(Copy(A, &M));
    if (reuse == MAT_INPLACE_MATRIX) {
      PetscCall(MatTranspose(M, MAT_INPLACE_MATRIX, &M));
      PetscCall(MatHeaderReplace(A, &M));
    } else {
      PetscCall(MatTranspose(M, reuse, B));
      PetscCall(MatDestroy(&M));
    }
    PetscFunctionReturn(0);
  }
  static PetscErrorCode norm(Mat A, NormType type, PetscReal *nrm)
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatNorm(M, type, nrm); });
  }
  static PetscErrorCode creategraph(Mat A, PetscBool sym, PetscBool scale, PetscReal filter, Mat *graph)
  {
    return WithAIJCopy(A, Copy, [&](Mat M) { return MatCreateGraph(M, sym, scale, filter, graph); });
  }
  // conversions to any other type: AIJ's
  static PetscErrorCode convert(Mat A, MatType type, MatReuse reuse, Mat *B)
  {
    Mat M;
    PetscFunctionBegin;
    PetscCall(Copy(A, &M));
    PetscCall(PetscObjectSetOptionsPrefix((PetscObject)M, ((PetscObject)A)->prefix));
    if (reuse == MAT_INPLACE_MATRIX) {
      PetscCall(MatConvert(M, type, MAT_INPLACE_MATRIX, &M));
      PetscCall(MatHeaderReplace(A, &M));
    } else {
      PetscCall(MatConvert(M, type, reuse, B));
      PetscCall(MatDestroy(&M));
    }
    PetscFunctionReturn(0);
  }
  static void install(MatOps o)
  {
    o->norm                    = norm;
    o->issymmetric             = issymmetric;
    o->ishermitian             = ishermitian;
    o->isstructurallysymmetric = isstructurallysymmetric;
    o->getrowmaxabs            = getrowmaxabs;
    o->getcolumnreductions     = getcolumnreductions;
    o->transpose               = transpose;
    o->createsubmatricesmpi    = createsubmatricesmpi;
    o->creategraph             = creategraph;
    o->convert                 = convert;
    o->createsubmatrices       = createsubmatrices;
    o->createsubmatrix         = createsubmatrix;
    o->increaseoverlap         = increaseoverlap;
  }
};

// PETSc's MPI linear solver server (-mpi_linear_solver_server) reads SeqAIJ's private arrays of the matrix it is
// given: refused with an error rather than a crash.
inline PetscErrorCode ELLMPCheckNotLinearSolverServer(Mat A)
{
  PetscBool server = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(PetscOptionsHasName(((PetscObject)A)->options, nullptr, "-mpi_linear_solver_server", &server));
  PetscCheck(!server, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP,
             "petscmp: ellmp cannot be used with -mpi_linear_solver_server, which reads SeqAIJ's private arrays; use "
             "-mat_type aijmp");
  PetscFunctionReturn(0);
}

} // namespace petscmp

PETSC_INTERN PetscErrorCode MatCreate_SeqELLMP(Mat);
PETSC_INTERN PetscErrorCode MatCreate_MPIELLMP(Mat);
