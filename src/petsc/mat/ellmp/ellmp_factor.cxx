// Factorizations of ellmp matrices (PCLU, PCILU, PCCHOLESKY, PCICC, the
// sub-solvers of bjacobi and asm, and the external packages: MUMPS, SuperLU,
// SuperLU_DIST, UMFPACK, CHOLMOD, KLU): the factor AIJ would get from the
// package, whose symbolic and numeric steps are given the matrix's AIJ twin
// (an exact AIJ copy the matrix keeps, values refreshed from the stored ones).
// AIJ's symbolic step prepares the matrix it is given for the numeric step
// (its diagonal positions; MUMPS its triples), so both steps see the same
// twin: the factor is the one AIJ computes from the stored values (bitwise in
// lossless mode), at the memory of an AIJ copy while the twin lives.
#include <utility>

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

// fn(aij): A itself when it is not an ellmp matrix, else its AIJ twin (values current). A normal matrix (A^T A,
// A^H A: KSPLSQR's preconditioning matrix, which SPQR factors by reading its inner matrix as a SeqAIJ's arrays) of
// an ellmp matrix is given as the same normal matrix of the twin.
template <typename Fn> PetscErrorCode with_aij(Mat A, Fn &&fn)
{
  PetscBool hermitian = PETSC_FALSE, normal = PETSC_FALSE;
  PetscErrorCode (*twin)(Mat, Mat *) = nullptr;
  Mat inner = A, aij = nullptr, wrapped = nullptr;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATNORMALHERMITIAN, &hermitian));
  if (!hermitian) PetscCall(PetscObjectTypeCompare((PetscObject)A, MATNORMAL, &normal));
  if (hermitian) PetscCall(MatNormalHermitianGetMat(A, &inner));
  if (normal) PetscCall(MatNormalGetMat(A, &inner));
  PetscCall(PetscObjectQueryFunction((PetscObject)inner, "PetscMPTwin_C", &twin));
  if (!twin) {
    PetscCall(fn(A));
    PetscFunctionReturn(0);
  }
  PetscCall(twin(inner, &aij));
  if (hermitian)
    PetscCall(MatCreateNormalHermitian(aij, &wrapped));
  else if (normal)
    PetscCall(MatCreateNormal(aij, &wrapped));
  PetscCall(fn(wrapped ? wrapped : aij));
  PetscCall(MatDestroy(&wrapped));
  PetscFunctionReturn(0);
}

// AIJ's numeric step (kept on F under `key`) on the AIJ copy of A, its values rewritten from A's.
PetscErrorCode run_numeric(const char *key, Mat F, Mat A, const MatFactorInfo *info)
{
  Numeric aij_numeric = nullptr;

  PetscFunctionBegin;
  PetscCall(PetscObjectQueryFunction((PetscObject)F, key, &aij_numeric));
  PetscCheck(aij_numeric, PETSC_COMM_SELF, PETSC_ERR_PLIB, "petscmp: the factor lost its numeric step");
  PetscCall(with_aij(A, [&](Mat aij) { return aij_numeric(F, aij, info); }));
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
  PetscCall(with_aij(A, [&](Mat aij) { return aij_symbolic(F, aij, args...); }));
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

// The packages ellmp offers the factors of, where PETSc has them for AIJ (in the order a default is taken).
constexpr const char *kSolvers[] = {MATSOLVERPETSC,   MATSOLVERMUMPS,   MATSOLVERSUPERLU_DIST, MATSOLVERSUPERLU,
                                    MATSOLVERUMFPACK, MATSOLVERCHOLMOD, MATSOLVERKLU};
constexpr int kSolverCount       = sizeof(kSolvers) / sizeof(kSolvers[0]);

PetscErrorCode get_factor(const char *solver, Mat A, MatFactorType ftype, Mat *F)
{
  Mat shape; // an empty AIJ of A's layout: what the package's AIJ factor is made from

  PetscFunctionBegin;
  PetscCall(MatCreate(PetscObjectComm((PetscObject)A), &shape));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)shape, "petscmp_internal_")); // (not the user's -mat_view)
  PetscCall(MatSetSizes(shape, A->rmap->n, A->cmap->n, A->rmap->N, A->cmap->N));
  PetscCall(MatSetBlockSizesFromMats(shape, A, A));
  PetscCall(MatSetType(shape, MATAIJ));
  PetscCall(MatSetUp(shape));
  PetscCall(MatAssemblyBegin(shape, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(shape, MAT_FINAL_ASSEMBLY));
  PetscCall(MatGetFactor(shape, solver, ftype, F));
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

template <int S> PetscErrorCode get_factor_of(Mat A, MatFactorType ftype, Mat *F)
{
  return get_factor(kSolvers[S], A, ftype, F);
}

// Registers for `type` every package and factorization PETSc offers for `aij_type`.
template <int... S> PetscErrorCode register_factors(std::integer_sequence<int, S...>, MatType type, MatType aij_type)
{
  PetscErrorCode (*const getters[])(Mat, MatFactorType, Mat *) = {get_factor_of<S>...};

  PetscFunctionBegin;
  for (int k = 0; k < kSolverCount; ++k)
    for (MatFactorType f : {MAT_FACTOR_LU, MAT_FACTOR_ILU, MAT_FACTOR_CHOLESKY, MAT_FACTOR_ICC}) {
      PetscBool found_solver = PETSC_FALSE, found_type = PETSC_FALSE;
      PetscErrorCode (*aij_factor)(Mat, MatFactorType, Mat *) = nullptr;
      PetscCall(MatSolverTypeGet(kSolvers[k], aij_type, f, &found_solver, &found_type, &aij_factor));
      if (aij_factor) PetscCall(MatSolverTypeRegister(kSolvers[k], type, f, getters[k]));
    }
  PetscFunctionReturn(0);
}

// QR (PCQR: SPQR), whose steps are composed functions; SPQR also factors the
// normal matrices of ellmp matrices (with_aij gives it those of the twins).
using QRSymbolic                  = PetscErrorCode (*)(Mat, Mat, IS, const MatFactorInfo *);
constexpr const char *kQRSymbolic = "PetscMPQRSymbolic_C", *kQRNumeric = "PetscMPQRNumeric_C";

PetscErrorCode qr_numeric(Mat F, Mat A, const MatFactorInfo *info)
{
  return run_numeric(kQRNumeric, F, A, info);
}

// Puts `ours` in front of F's composed function `name` (the factor's own kept under `key`).
template <typename Fn> PetscErrorCode wrap_composed(Mat F, const char *name, const char *key, Fn ours)
{
  Fn theirs = nullptr;

  PetscFunctionBegin;
  PetscCall(PetscObjectQueryFunction((PetscObject)F, name, &theirs));
  if (theirs && theirs != ours) {
    PetscCall(PetscObjectComposeFunction((PetscObject)F, key, theirs));
    PetscCall(PetscObjectComposeFunction((PetscObject)F, name, ours));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode qr_symbolic(Mat F, Mat A, IS col, const MatFactorInfo *info)
{
  PetscFunctionBegin;
  PetscCall(run_symbolic<QRSymbolic>(kQRSymbolic, F, A, col, info));
  PetscCall(wrap_composed<Numeric>(F, "MatQRFactorNumeric_C", kQRNumeric, qr_numeric));
  PetscFunctionReturn(0);
}

// Puts qr_symbolic in front of the QR factor's own symbolic step.
PetscErrorCode wrap_qr_symbolic(Mat F)
{
  return wrap_composed<QRSymbolic>(F, "MatQRFactorSymbolic_C", kQRSymbolic, qr_symbolic);
}

// SPQR's own factor makers, kept before ours replace them.
PetscErrorCode (*spqr_of_seqaij)(Mat, MatFactorType, Mat *)  = nullptr;
PetscErrorCode (*spqr_of_normal)(Mat, MatFactorType, Mat *)  = nullptr;
PetscErrorCode (*spqr_of_normalh)(Mat, MatFactorType, Mat *) = nullptr;

// A QR factor of a seqellmp matrix: SPQR's factor of a SeqAIJ of its shape.
PetscErrorCode get_qr_factor_seqellmp(Mat A, MatFactorType ftype, Mat *F)
{
  PetscFunctionBegin;
  PetscCall(get_factor(MATSOLVERSPQR, A, ftype, F));
  if (*F) PetscCall(wrap_qr_symbolic(*F));
  PetscFunctionReturn(0);
}

// SPQR's factor of a normal matrix, whose steps read an ellmp inner matrix through its twin.
template <PetscErrorCode (**Original)(Mat, MatFactorType, Mat *)>
PetscErrorCode get_qr_factor_normal(Mat A, MatFactorType ftype, Mat *F)
{
  PetscFunctionBegin;
  PetscCall((*Original)(A, ftype, F));
  if (*F) PetscCall(wrap_qr_symbolic(*F));
  PetscFunctionReturn(0);
}

PetscErrorCode register_qr_factors(void)
{
  PetscBool found_solver = PETSC_FALSE, found_type = PETSC_FALSE;

  PetscFunctionBegin;
  if (spqr_of_seqaij || spqr_of_normal || spqr_of_normalh)
    PetscFunctionReturn(0); // once: a replacement must not find itself
  PetscCall(MatSolverTypeGet(MATSOLVERSPQR, MATSEQAIJ, MAT_FACTOR_QR, &found_solver, &found_type, &spqr_of_seqaij));
  PetscCall(MatSolverTypeGet(MATSOLVERSPQR, MATNORMAL, MAT_FACTOR_QR, &found_solver, &found_type, &spqr_of_normal));
  PetscCall(
      MatSolverTypeGet(MATSOLVERSPQR, MATNORMALHERMITIAN, MAT_FACTOR_QR, &found_solver, &found_type, &spqr_of_normalh));
  if (spqr_of_seqaij)
    PetscCall(MatSolverTypeRegister(MATSOLVERSPQR, MATSEQELLMP, MAT_FACTOR_QR, get_qr_factor_seqellmp));
  if (spqr_of_normal)
    PetscCall(MatSolverTypeRegister(MATSOLVERSPQR, MATNORMAL, MAT_FACTOR_QR, get_qr_factor_normal<&spqr_of_normal>));
  if (spqr_of_normalh)
    PetscCall(MatSolverTypeRegister(MATSOLVERSPQR, MATNORMALHERMITIAN, MAT_FACTOR_QR,
                                    get_qr_factor_normal<&spqr_of_normalh>));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode ELLMPRegisterFactors(void)
{
  PetscFunctionBegin;
  PetscCall(register_qr_factors());
  PetscCall(register_factors(std::make_integer_sequence<int, kSolverCount>{}, MATSEQELLMP, MATSEQAIJ));
  PetscCall(register_factors(std::make_integer_sequence<int, kSolverCount>{}, MATMPIELLMP, MATMPIAIJ));
  PetscFunctionReturn(0);
}

} // namespace petscmp
