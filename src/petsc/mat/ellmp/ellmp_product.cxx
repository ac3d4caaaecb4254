// Matrix products (MatMatMult, MatPtAP, MatRARt, MatTransposeMatMult, ...: GAMG, Galerkin multigrid) with ellmp
// operands: AIJ's own product routines, run with every ellmp operand replaced by its AIJ twin (an AIJ copy kept
// by the matrix, its values refreshed from the stored ones) for the duration of each phase. The operands the user
// gave stay in the product; the result is an AIJ matrix.
#include "mat/ellmp/ellmpimpl.h"

namespace petscmp {
namespace {

constexpr const char *kSymbolic = "PetscMPProductSymbolic_C", *kNumeric = "PetscMPProductNumeric_C";

// X's AIJ twin when X is an ellmp matrix, else X.
PetscErrorCode aij_operand(Mat X, Mat *T)
{
  PetscErrorCode (*twin)(Mat, Mat *) = nullptr;

  PetscFunctionBegin;
  *T = X;
  if (X) PetscCall(PetscObjectQueryFunction((PetscObject)X, "PetscMPTwin_C", &twin));
  if (twin) PetscCall(twin(X, T));
  PetscFunctionReturn(0);
}

// fn() with the product's operands replaced by AIJ ones, then put back (also after an error).
template <typename Fn> PetscErrorCode with_aij_operands(Mat C, Fn &&fn)
{
  Mat_Product *p = C->product;
  Mat given[3]   = {p->A, p->B, p->C}, aij[3];

  PetscFunctionBegin;
  for (int k = 0; k < 3; ++k)
    PetscCall(aij_operand(given[k], &aij[k]));
  p->A                      = aij[0];
  p->B                      = aij[1];
  p->C                      = aij[2];
  const PetscErrorCode ierr = fn();
  p->A                      = given[0];
  p->B                      = given[1];
  p->C                      = given[2];
  PetscCall(ierr);
  PetscFunctionReturn(0);
}

// Keeps AIJ's phase under `key` and installs ours in its place.
template <typename Op> PetscErrorCode wrap(Mat C, Op &slot, Op ours, const char *key)
{
  PetscFunctionBegin;
  if (slot && slot != ours) {
    PetscCall(PetscObjectComposeFunction((PetscObject)C, key, slot));
    slot = ours;
  }
  PetscFunctionReturn(0);
}

// AIJ's phase of the product (kept on C under `key`) with the operands' AIJ twins.
PetscErrorCode run_phase(Mat C, const char *key, const char *phase)
{
  PetscErrorCode (*aij_phase)(Mat) = nullptr;

  PetscFunctionBegin;
  PetscCall(PetscObjectQueryFunction((PetscObject)C, key, &aij_phase));
  PetscCheck(aij_phase, PETSC_COMM_SELF, PETSC_ERR_PLIB, "petscmp: the product lost its %s phase", phase);
  PetscCall(with_aij_operands(C, [&] { return aij_phase(C); }));
  PetscFunctionReturn(0);
}

PetscErrorCode product_numeric(Mat C)
{
  return run_phase(C, kNumeric, "numeric");
}

PetscErrorCode product_symbolic(Mat C)
{
  PetscFunctionBegin;
  PetscCall(run_phase(C, kSymbolic, "symbolic"));
  PetscCall(wrap(C, C->ops->productnumeric, product_numeric, kNumeric));
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode MatProductSetFromOptions_ELLMP(Mat C)
{
  PetscFunctionBegin;
  PetscCall(with_aij_operands(C, [&] { return MatProductSetFromOptions(C); }));
  PetscCall(wrap(C, C->ops->productsymbolic, product_symbolic, kSymbolic));
  PetscFunctionReturn(0);
}

PetscErrorCode ELLMPComposeProducts(Mat A, bool seq, PetscErrorCode (*twin)(Mat, Mat *), bool on)
{
  PetscObject o    = (PetscObject)A;
  const char *self = seq ? "seqellmp" : "mpiellmp";
  // AIJ, dense and MAIJ (multigrid interpolation with several components) partners, and ellmp itself
  const char *others[4] = {seq ? "seqaij" : "mpiaij", seq ? "seqdense" : "mpidense", seq ? "seqmaij" : "mpimaij", self};
  char name[128];

  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction(o, "PetscMPTwin_C", on ? twin : nullptr));
  for (const char *other : others) { // PETSc looks these up when the operands' types differ
    PetscCall(PetscSNPrintf(name, sizeof name, "MatProductSetFromOptions_%s_%s_C", self, other));
    PetscCall(PetscObjectComposeFunction(o, name, on ? MatProductSetFromOptions_ELLMP : nullptr));
    PetscCall(PetscSNPrintf(name, sizeof name, "MatProductSetFromOptions_%s_%s_C", other, self));
    PetscCall(PetscObjectComposeFunction(o, name, on ? MatProductSetFromOptions_ELLMP : nullptr));
  }
  PetscFunctionReturn(0);
}

} // namespace petscmp
