// KSPMPRELAX: relaxed-precision Krylov. A thin wrapper around an inner KSP (CG, GMRES, any), whose operator is a
// split-storage aijmp matrix: after each inner iteration the read level of the products is set from the residual
// norm. By the theory of inexact Krylov methods (Simoncini and Szyld 2003; van den Eshof and Sleijpen 2004), the
// product at iteration k may carry an error of about eta * epsilon / |r_k| (epsilon: the residual norm asked for)
// without moving the attainable residual much: early iterations need the exact products, late ones do not. The
// wrapper reads the fewest segments whose truncation bound u_L (a relative change of each value below u_L, so
// |E| <= u_L |A|) satisfies u_L <= eta * epsilon / |r_k|. The inner method's residual is a recurrence; the wrapper
// finishes with the true residual read in full, and where that misses the tolerance, solves on at full precision
// from the current iterate.
#include <petsc/private/kspimpl.h>

#include <algorithm>
#include <cmath>

#include "petscmp.h"
#include "petscmp/core/segments.hpp"
#include "ksp/mprelax/mprelaximpl.h"

namespace {

constexpr int kMaxSegments = 4;

struct MPRelax {
  KSP inner         = nullptr;
  PetscReal eta     = 0.03;
  PetscReal margin  = 0.9; // the inner solve aims at margin * epsilon: the gap the relaxation opens stays inside
  PetscBool monitor = PETSC_FALSE;
  // the solve in progress
  Mat A                  = nullptr;
  PetscInt segments      = 0;
  PetscReal epsilon      = 0; // the residual norm asked for: max(rtol |r0|, abstol)
  PetscInt level         = 0; // the level the products read now
  PetscInt relaxed_level = 0; // the level the relaxation allows (falls with the residual)
  PetscInt next_level    = 0;
  PetscInt last_k        = 0; // the last iteration counted in level_its
  PetscInt restart       = 0; // the inner method's restart length (GMRES family), 0: none
  // the inner KSP's own convergence test, called by the wrapper's during a solve
  PetscErrorCode (*user_test)(KSP, PetscInt, PetscReal, KSPConvergedReason *, void *) = nullptr;
  void *user_ctx                                                                      = nullptr;
  PetscErrorCode (*user_destroy)(void *)                                              = nullptr;
  // the last solve
  PetscInt level_its[kMaxSegments] = {};
  PetscInt restarts                = 0; // full-precision continuations after a failed true-residual check
  PetscReal true_residual          = 0;
};

MPRelax *data_of(KSP ksp)
{
  return static_cast<MPRelax *>(ksp->data);
}

// The level of the next product after the inner method's convergence test with residual norm rnorm. The test runs after
// every iteration and, in a restarted method, again at the start of each cycle with the residual computed anew (the
// same k twice): the first of the two is followed by that restart's product.
void choose_level(MPRelax *d, PetscReal rnorm, bool restart_product_next)
{
  PetscInt level = d->segments;
  if (rnorm > 0)
    for (PetscInt l = 1; l < d->segments; ++l)
      if (petscmp::segment_read_bound((int)d->segments, (int)l) <= d->eta * d->epsilon / rnorm) {
        level = l;
        break;
      }
  // (the relaxed level only falls: an uptick of a residual recurrence does not make earlier products exact again)
  d->relaxed_level = PetscMin(level, d->relaxed_level);
  // A restart computes the residual anew: read at a reduced level, it would be the truncated operator's, and the
  // next cycle would converge to the truncated system's solution. That product reads every segment.
  d->next_level = restart_product_next ? d->segments : d->relaxed_level;
}

// The inner KSP's convergence test: the caller's test decides, then the level of the next product is set.
PetscErrorCode relax_converged(KSP inner, PetscInt k, PetscReal rnorm, KSPConvergedReason *reason, void *ctx)
{
  KSP outer  = static_cast<KSP>(ctx);
  MPRelax *d = data_of(outer);

  PetscFunctionBegin;
  const bool new_iteration = k > d->last_k;
  if (new_iteration) { // iterations last_k + 1 .. k read at the level set for them
    d->level_its[d->level - 1] += k - d->last_k;
    d->last_k = k;
  }
  PetscCall((*d->user_test)(inner, k, rnorm, reason, d->user_ctx));
  if (*reason) PetscFunctionReturn(0); // no more products in this solve
  const PetscInt relaxed_before = d->relaxed_level;
  choose_level(d, rnorm, d->restart > 0 && k > 0 && k % d->restart == 0 && new_iteration);
  if (d->monitor && d->relaxed_level != relaxed_before)
    PetscCall(PetscPrintf(PetscObjectComm((PetscObject)outer),
                          "  mprelax iteration %" PetscInt_FMT ": residual %.3e, read level %" PetscInt_FMT
                          " -> %" PetscInt_FMT " of %" PetscInt_FMT "\n",
                          k, (double)rnorm, relaxed_before, d->relaxed_level, d->segments));
  if (d->next_level != d->level) {
    d->level = d->next_level;
    PetscCall(MatAIJMPSetReadLevel(d->A, d->level));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode inner_ksp(KSP ksp, KSP *inner)
{
  MPRelax *d = data_of(ksp);
  const char *prefix;

  PetscFunctionBegin;
  if (!d->inner) {
    PetscCall(KSPCreate(PetscObjectComm((PetscObject)ksp), &d->inner));
    PetscCall(PetscObjectIncrementTabLevel((PetscObject)d->inner, (PetscObject)ksp, 1));
    PetscCall(KSPGetOptionsPrefix(ksp, &prefix));
    PetscCall(KSPSetOptionsPrefix(d->inner, prefix));
    PetscCall(KSPAppendOptionsPrefix(d->inner, "mprelax_"));
    PetscCall(KSPSetType(d->inner, KSPGMRES));
  }
  *inner = d->inner;
  PetscFunctionReturn(0);
}

PetscErrorCode KSPSetUp_MPRelax(KSP ksp)
{
  KSP inner;
  Mat A, P;

  PetscFunctionBegin;
  PetscCall(inner_ksp(ksp, &inner));
  PetscCall(KSPGetOperators(ksp, &A, &P));
  PetscCall(KSPSetOperators(inner, A, P));
  PetscCall(KSPSetPC(inner, ksp->pc)); // the outer KSP's preconditioner (-pc_type ...)
  // the inner residual norms are compared with the true residual's tolerance: unpreconditioned norms (CG-like
  // methods support them with a left preconditioner, GMRES-like ones with a right one)
  PetscBool left_only;
  PetscCall(PetscObjectTypeCompareAny((PetscObject)inner, &left_only, KSPCG, KSPPIPECG, KSPCGNE, KSPGROPPCG,
                                      KSPPIPECGRR, KSPBCGS, KSPRICHARDSON, KSPCHEBYSHEV, ""));
  if (!left_only) PetscCall(KSPSetPCSide(inner, PC_RIGHT));
  PetscCall(KSPSetNormType(inner, KSP_NORM_UNPRECONDITIONED));
  PetscCall(KSPSetUp(inner));
  PetscFunctionReturn(0);
}

PetscErrorCode true_residual_norm(Mat A, Vec x, Vec b, Vec r, PetscReal *norm)
{
  PetscFunctionBegin;
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, norm));
  PetscFunctionReturn(0);
}

PetscErrorCode KSPSolve_MPRelax(KSP ksp)
{
  MPRelax *d = data_of(ksp);
  KSP inner;
  Mat P;
  MatAIJMPStorage storage;
  PetscInt user_level, its;
  PetscReal r0norm, rnorm;
  Vec x = ksp->vec_sol, b = ksp->vec_rhs, r;

  PetscFunctionBegin;
  PetscCall(inner_ksp(ksp, &inner));
  PetscCall(KSPGetOperators(ksp, &d->A, &P));
  PetscCall(MatAIJMPGetStorage(d->A, &storage));
  d->segments = storage == MAT_AIJMP_SPLIT2 ? 2 : storage == MAT_AIJMP_SPLIT4 ? 4 : 0;
  std::fill(d->level_its, d->level_its + kMaxSegments, 0);
  d->restarts = 0;
  PetscCall(MatAIJMPGetReadLevel(d->A, &user_level));
  PetscCall(VecDuplicate(b, &r));
  // the tolerance is relative to the true initial residual, read in full
  if (d->segments) PetscCall(MatAIJMPSetReadLevel(d->A, d->segments));
  if (ksp->guess_zero) { // r0 = b: no product
    PetscCall(VecSet(x, 0.0));
    PetscCall(VecNorm(b, NORM_2, &r0norm));
  } else
    PetscCall(true_residual_norm(d->A, x, b, r, &r0norm));
  d->epsilon = PetscMax(ksp->rtol * r0norm, ksp->abstol);
  d->level   = d->segments;
  PetscCall(KSPSetTolerances(inner, 0.0, d->margin * d->epsilon, ksp->divtol, ksp->max_it));
  {
    PetscErrorCode (*get_restart)(KSP, PetscInt *) = nullptr;
    PetscCall(PetscObjectQueryFunction((PetscObject)inner, "KSPGMRESGetRestart_C", &get_restart));
    d->restart = 0;
    if (get_restart) PetscCall((*get_restart)(inner, &d->restart));
  }
  PetscCall(KSPSetInitialGuessNonzero(inner, ksp->guess_zero ? PETSC_FALSE : PETSC_TRUE)); // (x = 0: no product)
  if (d->segments) { // the level is chosen in the inner convergence test (it also runs before a restart's product)
    d->relaxed_level = d->segments;
    d->last_k        = 0;
    PetscCall(KSPGetAndClearConvergenceTest(inner, &d->user_test, &d->user_ctx, &d->user_destroy));
    PetscCall(KSPSetConvergenceTest(inner, relax_converged, ksp, nullptr));
  }
  PetscCall(KSPSolve(inner, b, x));
  PetscCall(KSPGetIterationNumber(inner, &its));
  if (d->segments) {
    PetscCall(KSPSetConvergenceTest(inner, d->user_test, d->user_ctx, d->user_destroy));
    d->level_its[d->level - 1] += its - d->last_k; // (iterations after the last test, if any)
    PetscCall(MatAIJMPSetReadLevel(d->A, d->segments));
  }
  ksp->its = its;
  // the true residual, read in full, decides; else on at full precision from here
  PetscCall(true_residual_norm(d->A, x, b, r, &rnorm));
  if (d->segments && rnorm > d->epsilon && ksp->its < ksp->max_it) {
    d->restarts++;
    if (d->monitor)
      PetscCall(PetscPrintf(PetscObjectComm((PetscObject)ksp),
                            "  mprelax: true residual %.3e misses %.3e: solving on reading every segment\n",
                            (double)rnorm, (double)d->epsilon));
    PetscCall(KSPSetTolerances(inner, 0.0, d->epsilon, ksp->divtol, ksp->max_it - ksp->its));
    PetscCall(KSPSetInitialGuessNonzero(inner, PETSC_TRUE));
    PetscCall(KSPSolve(inner, b, x));
    PetscCall(KSPGetIterationNumber(inner, &its));
    d->level_its[d->segments - 1] += its;
    ksp->its += its;
    PetscCall(true_residual_norm(d->A, x, b, r, &rnorm));
  }
  d->true_residual = rnorm;
  ksp->rnorm       = rnorm;
  PetscCall(KSPMonitor(ksp, ksp->its, rnorm));
  if (rnorm <= d->epsilon)
    ksp->reason = rnorm <= ksp->abstol ? KSP_CONVERGED_ATOL : KSP_CONVERGED_RTOL;
  else {
    KSPConvergedReason reason;
    PetscCall(KSPGetConvergedReason(inner, &reason));
    ksp->reason = reason < 0 ? reason : KSP_DIVERGED_ITS;
  }
  if (d->segments) PetscCall(MatAIJMPSetReadLevel(d->A, user_level));
  PetscCall(VecDestroy(&r));
  PetscFunctionReturn(0);
}

PetscErrorCode KSPView_MPRelax(KSP ksp, PetscViewer viewer)
{
  MPRelax *d = data_of(ksp);
  PetscBool ascii;
  KSP inner;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "  relaxed precision: products read the fewest segments whose bound u_L <= eta * "
                                   "epsilon / |r_k| (eta %g)\n",
                                   (double)d->eta));
  if (d->segments) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  last solve: iterations per read level"));
    PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
    for (PetscInt l = 0; l < d->segments; ++l)
      PetscCall(PetscViewerASCIIPrintf(viewer, " %" PetscInt_FMT ": %" PetscInt_FMT, l + 1, d->level_its[l]));
    PetscCall(PetscViewerASCIIPrintf(viewer, "; true residual %.3e; %" PetscInt_FMT " full-precision continuation(s)\n",
                                     (double)d->true_residual, d->restarts));
    PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  }
  PetscCall(inner_ksp(ksp, &inner));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(KSPView(inner, viewer));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

PetscErrorCode KSPSetFromOptions_MPRelax(KSP ksp, PetscOptionItems *PetscOptionsObject)
{
  MPRelax *d = data_of(ksp);
  KSP inner;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "KSP relaxed-precision Krylov options");
  PetscCall(PetscOptionsReal(
      "-ksp_mprelax_eta", "Products at iteration k read the fewest segments whose bound u_L <= eta * epsilon / |r_k|",
      "KSPMPRELAX", d->eta, &d->eta, nullptr));
  PetscCall(PetscOptionsReal("-ksp_mprelax_margin",
                             "The inner solve aims at margin * the tolerance, so that the gap between its recurrence "
                             "residual and the true one stays inside the tolerance",
                             "KSPMPRELAX", d->margin, &d->margin, nullptr));
  PetscCall(PetscOptionsBool("-ksp_mprelax_monitor", "Print each change of read level", "KSPMPRELAX", d->monitor,
                             &d->monitor, nullptr));
  PetscOptionsHeadEnd();
  PetscCheck(d->eta > 0, PetscObjectComm((PetscObject)ksp), PETSC_ERR_ARG_OUTOFRANGE,
             "-ksp_mprelax_eta must be positive, not %g", (double)d->eta);
  PetscCheck(d->margin > 0 && d->margin <= 1, PetscObjectComm((PetscObject)ksp), PETSC_ERR_ARG_OUTOFRANGE,
             "-ksp_mprelax_margin must lie in (0, 1], not %g", (double)d->margin);
  PetscCall(inner_ksp(ksp, &inner));
  PetscCall(KSPSetFromOptions(inner));
  PetscFunctionReturn(0);
}

PetscErrorCode KSPReset_MPRelax(KSP ksp)
{
  PetscFunctionBegin;
  if (data_of(ksp)->inner) PetscCall(KSPReset(data_of(ksp)->inner));
  PetscFunctionReturn(0);
}

PetscErrorCode KSPDestroy_MPRelax(KSP ksp)
{
  MPRelax *d = data_of(ksp);

  PetscFunctionBegin;
  PetscCall(KSPDestroy(&d->inner));
  delete d;
  ksp->data = nullptr;
  PetscFunctionReturn(0);
}

} // namespace

/*MC
   KSPMPRELAX - "mprelax": relaxed-precision Krylov. An inner KSP (prefix -mprelax_, GMRES by default, e.g.
   -mprelax_ksp_type cg) solves with the outer KSP's operator and preconditioner, and the read level of its products
   falls as its residual does

   Options Database Keys:
+  -mprelax_ksp_type <gmres> - the Krylov method (any KSP)
.  -ksp_mprelax_eta <0.03> - products at iteration k read the fewest segments whose bound u_L <= eta * epsilon / |r_k|
.  -ksp_mprelax_margin <0.9> - the inner solve aims at margin * epsilon (the relaxation's residual gap stays inside)
-  -ksp_mprelax_monitor - print each change of read level

   Notes:
   The operator should be `MATAIJMP` with `MAT_AIJMP_SPLIT2` or `MAT_AIJMP_SPLIT4` storage (otherwise this is the inner
   KSP). By inexact-Krylov theory (Simoncini and Szyld, SIAM J. Sci. Comput. 25, 2003; van den Eshof and Sleijpen,
   SIAM J. Matrix Anal. Appl. 26, 2004) the product at iteration k may be perturbed by E_k with |E_k| about
   epsilon / |r_k| while the gap between the true and the computed residual stays of the order of epsilon = rtol |r0|
   (the theory bounds the gap by a sum over the iterations of |E_k| |y_k|, so the constant depends on the method and
   on the conditioning). Reading L of n segments changes each value by less than u_L = 2^-(64 L / n - 12) relatively,
   |E| <= u_L |A|: the first products read every segment, the last ones the heads. The tolerances are the outer KSP's,
   relative to the true initial residual. The inner method's recurrence residual is not trusted: the wrapper
   computes the true residual, reading every segment, and where it misses the tolerance solves on at full precision
   from the current iterate; convergence is declared only on that true residual.

   Level: intermediate

.seealso: `KSPMPJACOBI`, `MatAIJMPSetReadLevel()`, `MATAIJMP`
M*/
PETSC_INTERN PetscErrorCode KSPCreate_MPRelax(KSP ksp)
{
  PetscFunctionBegin;
  ksp->data = new MPRelax();
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_UNPRECONDITIONED, PC_LEFT, 3));
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_UNPRECONDITIONED, PC_RIGHT, 2));
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_PRECONDITIONED, PC_LEFT, 2));
  ksp->ops->setup          = KSPSetUp_MPRelax;
  ksp->ops->solve          = KSPSolve_MPRelax;
  ksp->ops->reset          = KSPReset_MPRelax;
  ksp->ops->destroy        = KSPDestroy_MPRelax;
  ksp->ops->view           = KSPView_MPRelax;
  ksp->ops->setfromoptions = KSPSetFromOptions_MPRelax;
  ksp->ops->buildsolution  = KSPBuildSolutionDefault;
  ksp->ops->buildresidual  = KSPBuildResidualDefault;
  PetscFunctionReturn(0);
}
