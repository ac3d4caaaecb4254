static char help[] =
    "KSPMPJACOBI benchmark: Jacobi iterations to a relative true residual on the 27-point operator, AIJ with\n"
    "KSPRICHARDSON + PCJACOBI against KSPMPJACOBI on split-storage aijmp copies, each strategy, alternated in one "
    "run.\n"
    "  -n27 <int>       grid points per direction (default 167: 125M nonzeros, 1.5 GB of AIJ)\n"
    "  -diag <real>     diagonal of the operator: diag + uniform[-1, 1] (default 16; 27 converges in a few "
    "iterations,\n"
    "                   smaller values slower)\n"
    "  -rtol <real>     relative true residual to reach (default 1e-8)\n"
    "  -reps <int>      solves per variant, in rotating order; medians (default 3)\n"
    "  -krylov <bool>   instead: GMRES on AIJ against KSPMPRELAX (relaxed-precision GMRES) on split storage\n"
    "  -stream_mib <int>, -stream_reps <int>: the STREAM triad reference\n\n";

#include <petscksp.h>

#include "bench_common.h"
#include "bench_matrices.h"
#include "petscmp.h"

#define NVAR 9

typedef struct {
  const char *name;
  const char *type; /* the KSP */
  int storage;      /* 0: AIJ, 2: split2, 4: split4 */
  KSPMPJacobiStrategy strategy;
  const char *steps_rtol; /* strategy steps: -ksp_mpjacobi_steps_rtol */
} Variant;

typedef struct {
  KSP ksp;
  double t[64];
  PetscInt its;
  double relres, share;
  KSPConvergedReason reason;
} Result;

/* x_g in [0.5, 1.5), a function of the global index */
static PetscErrorCode FillB(Vec x)
{
  PetscInt lo, hi;
  PetscScalar *xa;

  PetscFunctionBeginUser;
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetArrayWrite(x, &xa));
  for (PetscInt g = lo; g < hi; g++)
    xa[g - lo] = 0.5 + (double)((uint64_t)(g * 2654435761u) % 1000003u) / 1000003.0;
  PetscCall(VecRestoreArrayWrite(x, &xa));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt n = 167, reps = 3, stream_mib = 256, stream_reps = 3;
  PetscReal diag = 16, rtol = 1e-8;
  Mat A, S2, S4;
  Vec b, x, r;
  double triad_gbs = 0, t;
  PetscInt64 triad_elems;
  PetscReal bnorm;
  MPI_Comm comm;
  PetscMPIInt size;
  Variant jacobi[NVAR] = {
      {"AIJ richardson+jacobi", KSPRICHARDSON, 0, KSP_MPJACOBI_FULL, NULL},
      {"split2 mpjacobi full", KSPMPJACOBI, 2, KSP_MPJACOBI_FULL, NULL},
      {"split2 residual", KSPMPJACOBI, 2, KSP_MPJACOBI_RESIDUAL, NULL},
      {"split2 steps 1e-5", KSPMPJACOBI, 2, KSP_MPJACOBI_STEPS, "1e-5"},
      {"split4 mpjacobi full", KSPMPJACOBI, 4, KSP_MPJACOBI_FULL, NULL},
      {"split4 residual", KSPMPJACOBI, 4, KSP_MPJACOBI_RESIDUAL, NULL},
      {"split4 steps", KSPMPJACOBI, 4, KSP_MPJACOBI_STEPS, "0.05,1e-5,1e-10"},
      {"split2 component", KSPMPJACOBI, 2, KSP_MPJACOBI_COMPONENT, NULL},
      {"split4 component", KSPMPJACOBI, 4, KSP_MPJACOBI_COMPONENT, NULL},
  };
  Variant krylov[NVAR] = {
      {"AIJ gmres", KSPGMRES, 0, KSP_MPJACOBI_FULL, NULL},
      {"split2 gmres (full)", KSPGMRES, 2, KSP_MPJACOBI_FULL, NULL},
      {"split2 mprelax gmres", KSPMPRELAX, 2, KSP_MPJACOBI_FULL, NULL},
      {"split4 mprelax gmres", KSPMPRELAX, 4, KSP_MPJACOBI_FULL, NULL},
  };
  Result res[NVAR];
  PetscBool use_krylov = PETSC_FALSE;
  int nvar;
  Variant *v;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n27", &n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-reps", &reps, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-stream_mib", &stream_mib, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-stream_reps", &stream_reps, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-diag", &diag, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-rtol", &rtol, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-krylov", &use_krylov, NULL));
  PetscCall(PetscMemzero(res, sizeof res));
  v    = use_krylov ? krylov : jacobi;
  nvar = use_krylov ? 4 : NVAR;
  PetscCheck(reps >= 1 && reps <= 64, comm, PETSC_ERR_ARG_OUTOFRANGE, "-reps must be 1..64");
  PetscCall(PrintCpu(comm));
  PetscCall(StreamTriad(comm, stream_mib, stream_reps, &triad_gbs, &triad_elems));
  PetscCall(PetscPrintf(comm, "%d rank(s); STREAM triad %.2f GB/s\n", size, triad_gbs));

  PetscCall(BuildStencil(comm, MATAIJ, n, 27, PETSC_FALSE, diag, 4242, &A));
  PetscCall(MatConvert(A, MATAIJMP, MAT_INITIAL_MATRIX, &S2));
  PetscCall(MatAIJMPSetStorage(S2, MAT_AIJMP_SPLIT2));
  PetscCall(MatConvert(A, MATAIJMP, MAT_INITIAL_MATRIX, &S4));
  PetscCall(MatAIJMPSetStorage(S4, MAT_AIJMP_SPLIT4));
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(FillB(b));
  PetscCall(VecNorm(b, NORM_2, &bnorm));
  PetscCall(MatMult(S2, b, r)); /* builds the copies */
  PetscCall(MatMult(S4, b, r));

  for (int k = 0; k < nvar; k++) {
    char prefix[16], name[64];
    Mat op = v[k].storage == 0 ? A : v[k].storage == 2 ? S2 : S4;
    PetscCall(PetscSNPrintf(prefix, sizeof prefix, "v%d_", k));
    PetscCall(KSPCreate(comm, &res[k].ksp));
    PetscCall(KSPSetOptionsPrefix(res[k].ksp, prefix));
    PetscCall(KSPSetOperators(res[k].ksp, op, op));
    PetscCall(KSPSetType(res[k].ksp, v[k].type));
    if (!strcmp(v[k].type, KSPGMRES)) PetscCall(KSPSetPCSide(res[k].ksp, PC_RIGHT));
    PetscCall(KSPMPJacobiSetStrategy(res[k].ksp, v[k].strategy));
    if (v[k].steps_rtol) {
      PetscCall(PetscSNPrintf(name, sizeof name, "-%sksp_mpjacobi_steps_rtol", prefix));
      PetscCall(PetscOptionsSetValue(NULL, name, v[k].steps_rtol));
    }
    PetscCall(KSPSetTolerances(res[k].ksp, rtol, 0.0, PETSC_DEFAULT, 100000));
    PetscCall(KSPSetNormType(res[k].ksp, KSP_NORM_UNPRECONDITIONED));
    {
      PC pc;
      PetscCall(KSPGetPC(res[k].ksp, &pc));
      PetscCall(PCSetType(pc, PCJACOBI));
    }
    PetscCall(KSPSetFromOptions(res[k].ksp));
    PetscCall(KSPSetUp(res[k].ksp));
  }
  PetscCall(PetscPrintf(
      comm,
      "\n27-point operator %" PetscInt_FMT "^3, diagonal %g + uniform[-1, 1], off-diagonal uniform[-1, "
      "1] (fp64 values); b in [0.5, 1.5); x0 = 0; rtol %g on the unpreconditioned residual\n"
      "%" PetscInt_FMT " rounds of all %d variants in rotating order, each solve timed alone (KSPSolve); medians\n",
      n, (double)diag, (double)rtol, reps, nvar));
  for (PetscInt rep = 0; rep < reps; rep++)
    for (int s = 0; s < nvar; s++) {
      const int k = (int)((s + rep) % nvar);
      PetscCall(VecSet(x, 0.0));
      PetscCallMPI(MPI_Barrier(comm));
      t = MPI_Wtime();
      PetscCall(KSPSolve(res[k].ksp, b, x));
      PetscCallMPI(MPI_Barrier(comm));
      res[k].t[rep] = MPI_Wtime() - t;
      PetscCall(KSPGetIterationNumber(res[k].ksp, &res[k].its));
      PetscCall(KSPGetConvergedReason(res[k].ksp, &res[k].reason));
      PetscCall(MatMult(A, x, r)); /* the true residual, by AIJ */
      PetscCall(VecAYPX(r, -1.0, b));
      PetscReal rn;
      PetscCall(VecNorm(r, NORM_2, &rn));
      res[k].relres = rn / bnorm;
      res[k].share  = 1.0;
      if (!strcmp(v[k].type, KSPMPJACOBI) && v[k].strategy == KSP_MPJACOBI_COMPONENT) {
        PetscReal share; /* (levels per row; checks counted) */
        PetscCall(KSPMPJacobiGetReadShare(res[k].ksp, &share));
        res[k].share = share;
      } else if (!strcmp(v[k].type, KSPMPJACOBI)) {
        PetscInt segments, its[4];
        double read = 0;
        PetscCall(KSPMPJacobiGetLevelIterations(res[k].ksp, &segments, its));
        for (PetscInt l = 0; l < segments; l++)
          read += (double)its[l] * (double)(l + 1) / (double)segments;
        res[k].share = res[k].its ? read / (double)res[k].its : 1.0;
      }
    }
  const double t_aij = median(res[0].t, reps);
  PetscCall(PetscPrintf(comm, "%-24s %10s %6s %12s %9s %12s %s\n", "variant", "s(med)", "its", "true rel.res", "vs AIJ",
                        "value bytes", "reason"));
  for (int k = 0; k < nvar; k++) {
    const double tk = median(res[k].t, reps);
    PetscCall(PetscPrintf(comm, "%-24s %10.3f %6" PetscInt_FMT " %12.3e %8.2fx %11.0f%% %s\n", v[k].name, tk,
                          res[k].its, res[k].relres, t_aij / tk, 100.0 * res[k].share,
                          KSPConvergedReasons[res[k].reason]));
  }
  PetscCall(PetscPrintf(comm, "value bytes: share of the segments read per iteration (full-level checks not counted, but for "
                              "the component strategy's; -ksp_view reports them)\n"));
  for (int k = 0; k < nvar; k++)
    PetscCall(KSPDestroy(&res[k].ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&r));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&S2));
  PetscCall(MatDestroy(&S4));
  PetscCall(PetscFinalize());
  return 0;
}
