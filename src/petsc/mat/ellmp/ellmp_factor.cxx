// Factorizations of seqellmp matrices (PCLU, PCILU, PCCHOLESKY, PCICC, and the
// sub-solvers of bjacobi): PETSc's own SeqAIJ factor, whose symbolic and
// numeric steps are given an exact AIJ copy of the stored matrix. AIJ's
// symbolic step prepares the matrix it is given for the numeric step (its
// diagonal positions), so the factor keeps that copy and each numeric step
// rewrites its values from the stored ones: the factor is the one AIJ computes
// from the stored values (bitwise in lossless mode), at the memory of an AIJ
// copy for the factor's life.
#include "mat/ellmp/ellmpimpl.h"

namespace petscmp {
namespace {

using LUSymbolic       = PetscErrorCode (*)(Mat, Mat, IS, IS, const MatFactorInfo *);
using CholeskySymbolic = PetscErrorCode (*)(Mat, Mat, IS, const MatFactorInfo *);
using Numeric          = PetscErrorCode (*)(Mat, Mat, const MatFactorInfo *);

// The SeqAIJ factor's own steps, kept on the factor object under these names.
constexpr const char *kLUSymbolic = "PetscMPLUSymbolic_C", *kILUSymbolic = "PetscMPILUSymbolic_C",
                     *kCholeskySymbolic = "PetscMPCholeskySymbolic_C", *kICCSymbolic = "PetscMPICCSymbolic_C",
                     *kLUNumeric = "PetscMPLUNumeric_C", *kCholeskyNumeric = "PetscMPCholeskyNumeric_C";

constexpr const char *kCopy = "PetscMPAIJCopy";

// fn(aij): A itself when it is not seqellmp, else the AIJ copy the factor F keeps (made by the symbolic step; its
// values rewritten from A's for a numeric step).
template <typename Fn> PetscErrorCode with_aij(Mat F, Mat A, bool symbolic, Fn &&fn)
{
  PetscBool ellmp;
  Mat aij = A;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATSEQELLMP, &ellmp));
  if (!ellmp) {
    PetscCall(fn(A));
    PetscFunctionReturn(0);
  }
  if (symbolic) {
    PetscCall(SeqELLMPToAIJ(A, &aij));
    PetscCall(PetscObjectCompose((PetscObject)F, kCopy, (PetscObject)aij));
    PetscCall(MatDestroy(&aij)); // F holds it
  }
  PetscCall(PetscObjectQuery((PetscObject)F, kCopy, (PetscObject *)&aij));
  PetscCheck(aij, PETSC_COMM_SELF, PETSC_ERR_ORDER, "petscmp: the numeric factorization needs the symbolic one first");
  if (!symbolic) PetscCall(SeqELLMPRefreshAIJ(A, aij));
  PetscCall(fn(aij));
  PetscFunctionReturn(0);
}

// AIJ's numeric step (kept on F under `key`) on the AIJ copy of A, its values rewritten from A's.
PetscErrorCode run_numeric(const char *key, Mat F, Mat A, const MatFactorInfo *info)
{
  Numeric aij_numeric = nullptr;

  PetscFunctionBegin;
  PetscCall(PetscObjectQueryFunction((PetscObject)F, key, &aij_numeric));
  PetscCheck(aij_numeric, PETSC_COMM_SELF, PETSC_ERR_PLIB, "petscmp: the factor lost its numeric step");
  PetscCall(with_aij(F, A, false, [&](Mat aij) { return aij_numeric(F, aij, info); }));
  PetscFunctionReturn(0);
}

PetscErrorCode lu_numeric(Mat F, Mat A, const MatFactorInfo *info)
{
  return run_numeric(kLUNumeric, F, A, info);
}
PetscErrorCode cholesky_numeric(Mat F, Mat A, const MatFactorInfo *info)
{
  return run_numeric(kCholeskyNumeric, F, A, info);
}

// After AIJ's symbolic step has installed its numeric step: keep it, install ours.
PetscErrorCode wrap_numeric(Mat F)
{
  PetscFunctionBegin;
  if (F->ops->lufactornumeric && F->ops->lufactornumeric != lu_numeric) {
    PetscCall(PetscObjectComposeFunction((PetscObject)F, kLUNumeric, F->ops->lufactornumeric));
    F->ops->lufactornumeric = lu_numeric;
  }
  if (F->ops->choleskyfactornumeric && F->ops->choleskyfactornumeric != cholesky_numeric) {
    PetscCall(PetscObjectComposeFunction((PetscObject)F, kCholeskyNumeric, F->ops->choleskyfactornumeric));
    F->ops->choleskyfactornumeric = cholesky_numeric;
  }
  PetscFunctionReturn(0);
}

// AIJ's symbolic step (kept on F under `key`) on the AIJ copy of A.
template <typename Symbolic, typename... Args> PetscErrorCode run_symbolic(const char *key, Mat F, Mat A, Args... args)
{
  Symbolic aij_symbolic = nullptr;

  PetscFunctionBegin;
  PetscCall(PetscObjectQueryFunction((PetscObject)F, key, &aij_symbolic));
  PetscCheck(aij_symbolic, PETSC_COMM_SELF, PETSC_ERR_PLIB, "petscmp: the factor lost its symbolic step");
  PetscCall(with_aij(F, A, true, [&](Mat aij) { return aij_symbolic(F, aij, args...); }));
  PetscCall(wrap_numeric(F));
  PetscFunctionReturn(0);
}

PetscErrorCode lu_symbolic(Mat F, Mat A, IS row, IS col, const MatFactorInfo *info)
{
  return run_symbolic<LUSymbolic>(kLUSymbolic, F, A, row, col, info);
}
PetscErrorCode ilu_symbolic(Mat F, Mat A, IS row, IS col, const MatFactorInfo *info)
{
  return run_symbolic<LUSymbolic>(kILUSymbolic, F, A, row, col, info);
}
PetscErrorCode cholesky_symbolic(Mat F, Mat A, IS perm, const MatFactorInfo *info)
{
  return run_symbolic<CholeskySymbolic>(kCholeskySymbolic, F, A, perm, info);
}
PetscErrorCode icc_symbolic(Mat F, Mat A, IS perm, const MatFactorInfo *info)
{
  return run_symbolic<CholeskySymbolic>(kICCSymbolic, F, A, perm, info);
}

} // namespace

PetscErrorCode MatGetFactor_SeqELLMP_PETSc(Mat A, MatFactorType ftype, Mat *F)
{
  Mat shape; // an empty SeqAIJ of A's sizes: what PETSc's SeqAIJ factor is made from

  PetscFunctionBegin;
  PetscCall(MatCreate(PETSC_COMM_SELF, &shape));
  PetscCall(MatSetSizes(shape, A->rmap->n, A->cmap->n, A->rmap->n, A->cmap->n));
  PetscCall(MatSetBlockSizesFromMats(shape, A, A));
  PetscCall(MatSetType(shape, MATSEQAIJ));
  PetscCall(MatSeqAIJSetPreallocation(shape, 0, nullptr));
  PetscCall(MatAssemblyBegin(shape, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(shape, MAT_FINAL_ASSEMBLY));
  PetscCall(MatGetFactor(shape, MATSOLVERPETSC, ftype, F));
  PetscCall(MatDestroy(&shape));
  if (!*F) PetscFunctionReturn(0);
  Mat f = *F;
  if (f->ops->lufactorsymbolic) {
    PetscCall(PetscObjectComposeFunction((PetscObject)f, kLUSymbolic, f->ops->lufactorsymbolic));
    f->ops->lufactorsymbolic = lu_symbolic;
  }
  if (f->ops->ilufactorsymbolic) {
    PetscCall(PetscObjectComposeFunction((PetscObject)f, kILUSymbolic, f->ops->ilufactorsymbolic));
    f->ops->ilufactorsymbolic = ilu_symbolic;
  }
  if (f->ops->choleskyfactorsymbolic) {
    PetscCall(PetscObjectComposeFunction((PetscObject)f, kCholeskySymbolic, f->ops->choleskyfactorsymbolic));
    f->ops->choleskyfactorsymbolic = cholesky_symbolic;
  }
  if (f->ops->iccfactorsymbolic) {
    PetscCall(PetscObjectComposeFunction((PetscObject)f, kICCSymbolic, f->ops->iccfactorsymbolic));
    f->ops->iccfactorsymbolic = icc_symbolic;
  }
  PetscFunctionReturn(0);
}

} // namespace petscmp
