/* Shared by the block-problem tutorials ex2 and ex3 (plain PETSc, no petscmp): the solve and its one
   parseable result line
     problem NAME n N dofs D mat_type T pc_type P iterations I true_residual R setup_seconds S
       solve_seconds Q pcapply_seconds A reason K
   CG (the user may change it) stopped on the unpreconditioned relative residual, the same test for
   every preconditioner; -repeat k solves k times from zero and reports median times (maxima over ranks);
   -set_variable_blocks b gives the matrix consecutive local blocks of b rows (for PCVPBJACOBI);
   -check_symmetry prints "symmetric 0|1" (MatIsSymmetric with tolerance 1e-10);
   -compare adds a second KSP on the same matrix, configured by options with the prefix cmp_ (its
   tolerances are the first one's), whose solves alternate with the first's in this one process (so
   both see the same machine state; separate runs of a memory-bound solve can differ by 30%): a second
   result line for it, then "compare pcapply_ratio R solve_ratio S" (first's median / second's). */
#ifndef BLOCKSOLVE_H
#define BLOCKSOLVE_H

#include <petscksp.h>
#include <stdlib.h>

typedef struct {
  PetscInt repeat;          /* -repeat */
  PetscInt variable_block;  /* -set_variable_blocks (0: none) */
  PetscBool check_symmetry; /* -check_symmetry */
  PetscBool compare;        /* -compare: a second KSP (prefix cmp_), solves alternated */
} BlockSolveOptions;

static PetscErrorCode BlockSolveOptionsRegister(MPI_Comm comm, BlockSolveOptions *o)
{
  PetscFunctionBeginUser;
  o->repeat         = 1;
  o->variable_block = 0;
  o->check_symmetry = PETSC_FALSE;
  o->compare        = PETSC_FALSE;
  PetscOptionsBegin(comm, NULL, "Solve options of the block tutorials", NULL);
  PetscCall(PetscOptionsInt("-repeat", "number of solves (median times reported)", NULL, o->repeat, &o->repeat, NULL));
  PetscCall(PetscOptionsInt("-set_variable_blocks", "MatSetVariableBlockSizes with local blocks of this size", NULL,
                            o->variable_block, &o->variable_block, NULL));
  PetscCall(PetscOptionsBool("-check_symmetry", "check MatIsSymmetric(A, 1e-10)", NULL, o->check_symmetry,
                             &o->check_symmetry, NULL));
  PetscCall(PetscOptionsBool("-compare", "also solve with a second KSP (options prefix cmp_), solves alternated", NULL,
                             o->compare, &o->compare, NULL));
  PetscOptionsEnd();
  PetscCheck(o->repeat >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-repeat must be at least 1");
  PetscCheck(o->variable_block >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-set_variable_blocks must be positive");
  PetscFunctionReturn(0);
}

static int BlockSolveCompareDouble(const void *a, const void *b)
{
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double BlockSolveMedian(PetscInt k, double *t)
{
  qsort(t, (size_t)k, sizeof(double), BlockSolveCompareDouble);
  return k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
}

/* Consecutive local blocks of bsize rows (the last one shorter when needed). */
static PetscErrorCode BlockSolveSetVariableBlocks(Mat A, PetscInt bsize)
{
  PetscInt m, nb, *bsizes;

  PetscFunctionBeginUser;
  PetscCall(MatGetLocalSize(A, &m, NULL));
  nb = (m + bsize - 1) / bsize;
  PetscCall(PetscMalloc1(nb, &bsizes));
  for (PetscInt i = 0; i < nb; i++)
    bsizes[i] = PetscMin(bsize, m - i * bsize);
  PetscCall(MatSetVariableBlockSizes(A, nb, bsizes));
  PetscCall(PetscFree(bsizes));
  PetscFunctionReturn(0);
}

/* One solver of the run: its KSP, solution and per-solve times. */
typedef struct {
  KSP ksp;
  Vec x;
  PetscLogDouble setup;
  double *tsolve, *tpc;
} BlockSolver;

/* CG stopped on ||b - A x|| / ||b|| (the same test for every PC), PCJACOBI unless the options say otherwise;
   a solver with a prefix takes the tolerances of `like` before its own options. */
static PetscErrorCode BlockSolverCreate(Mat A, Vec b, const char *prefix, KSP like, PetscInt repeat, BlockSolver *s)
{
  PC pc;
  PetscLogDouble t0, t1;

  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(b, &s->x));
  PetscCall(KSPCreate(PetscObjectComm((PetscObject)A), &s->ksp));
  if (prefix) PetscCall(KSPSetOptionsPrefix(s->ksp, prefix));
  PetscCall(KSPSetOperators(s->ksp, A, A));
  PetscCall(KSPSetType(s->ksp, KSPCG));
  PetscCall(KSPSetNormType(s->ksp, KSP_NORM_UNPRECONDITIONED));
  PetscCall(KSPGetPC(s->ksp, &pc));
  PetscCall(PCSetType(pc, PCJACOBI));
  if (like) {
    PetscReal rtol, abstol, dtol;
    PetscInt maxits;
    PetscCall(KSPGetTolerances(like, &rtol, &abstol, &dtol, &maxits));
    PetscCall(KSPSetTolerances(s->ksp, rtol, abstol, dtol, maxits));
  } else PetscCall(KSPSetTolerances(s->ksp, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, 100000));
  PetscCall(KSPSetFromOptions(s->ksp));
  PetscCallMPI(MPI_Barrier(PetscObjectComm((PetscObject)A)));
  PetscCall(PetscTime(&t0));
  PetscCall(KSPSetUp(s->ksp));
  PetscCall(PetscTime(&t1));
  s->setup = t1 - t0;
  PetscCall(PetscMalloc2(repeat, &s->tsolve, repeat, &s->tpc));
  PetscFunctionReturn(0);
}

/* Solve `rep` from zero: its time and its PCApply time (maxima over ranks). */
static PetscErrorCode BlockSolverSolve(BlockSolver *s, Vec b, PetscLogEvent pcapply_event, PetscInt rep)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)s->ksp);
  PetscEventPerfInfo perf;
  PetscLogDouble t0, t1, pc0;
  double local[2], global[2];

  PetscFunctionBeginUser;
  PetscCall(VecZeroEntries(s->x));
  PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, pcapply_event, &perf));
  pc0 = perf.time;
  PetscCallMPI(MPI_Barrier(comm));
  PetscCall(PetscTime(&t0));
  PetscCall(KSPSolve(s->ksp, b, s->x));
  PetscCall(PetscTime(&t1));
  PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, pcapply_event, &perf));
  local[0] = t1 - t0;
  local[1] = perf.time - pc0;
  PetscCall(MPIU_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, comm));
  s->tsolve[rep] = global[0];
  s->tpc[rep]    = global[1];
  PetscFunctionReturn(0);
}

/* The result line of a solver (its medians left in *solve and *pcapply), and its end. */
static PetscErrorCode BlockSolverReport(const char *problem, PetscInt n, Mat A, Vec b, PetscInt repeat, BlockSolver *s,
                                        double *solve, double *pcapply)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)A);
  PC pc;
  Vec r;
  PetscInt its, N;
  PetscReal rnorm, bnorm;
  double setup;
  MatType mtype;
  PCType ptype;
  KSPConvergedReason reason;

  PetscFunctionBeginUser;
  PetscCall(MPIU_Allreduce(&s->setup, &setup, 1, MPI_DOUBLE, MPI_MAX, comm));
  PetscCall(KSPGetIterationNumber(s->ksp, &its));
  PetscCall(KSPGetConvergedReason(s->ksp, &reason));
  /* true residual against the assembled operator */
  PetscCall(VecDuplicate(b, &r));
  PetscCall(MatMult(A, s->x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &rnorm));
  PetscCall(VecNorm(b, NORM_2, &bnorm));
  PetscCall(VecDestroy(&r));
  PetscCall(MatGetType(A, &mtype));
  PetscCall(KSPGetPC(s->ksp, &pc));
  PetscCall(PCGetType(pc, &ptype));
  PetscCall(VecGetSize(b, &N));
  *solve   = BlockSolveMedian(repeat, s->tsolve);
  *pcapply = BlockSolveMedian(repeat, s->tpc);
  PetscCall(PetscPrintf(
      comm,
      "problem %s n %" PetscInt_FMT " dofs %" PetscInt_FMT " mat_type %s pc_type %s iterations %" PetscInt_FMT
      " true_residual %.6e setup_seconds %.6f solve_seconds %.6f pcapply_seconds %.6f reason %s\n",
      problem, n, N, mtype, ptype, its, (double)(rnorm / bnorm), setup, *solve, *pcapply, KSPConvergedReasons[reason]));
  PetscCall(PetscFree2(s->tsolve, s->tpc));
  PetscCall(KSPDestroy(&s->ksp));
  PetscCall(VecDestroy(&s->x));
  PetscFunctionReturn(0);
}

/* Applies the matrix options, solves A x = b with CG and prints the result line (and, with -compare, the second
   solver's and the ratios). */
static PetscErrorCode BlockSolveRun(const char *problem, PetscInt n, Mat A, Vec b, const BlockSolveOptions *o)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)A);
  BlockSolver s[2];
  const PetscInt nsolvers = o->compare ? 2 : 1;
  PetscLogEvent pcapply_event;
  double solve[2], pcapply[2];

  PetscFunctionBeginUser;
  if (o->variable_block) PetscCall(BlockSolveSetVariableBlocks(A, o->variable_block));
  if (o->check_symmetry) {
    PetscBool sym;
    PetscCall(MatIsSymmetric(A, 1e-10, &sym));
    PetscCall(PetscPrintf(comm, "symmetric %d\n", (int)sym));
  }
  PetscCall(BlockSolverCreate(A, b, NULL, NULL, o->repeat, &s[0]));
  if (o->compare) PetscCall(BlockSolverCreate(A, b, "cmp_", s[0].ksp, o->repeat, &s[1]));
  PetscCall(PetscLogEventGetId("PCApply", &pcapply_event)); /* (registered with the PC package, by now loaded) */
  for (PetscInt rep = 0; rep < o->repeat; rep++)
    for (PetscInt k = 0; k < nsolvers; k++) PetscCall(BlockSolverSolve(&s[k], b, pcapply_event, rep));
  for (PetscInt k = 0; k < nsolvers; k++)
    PetscCall(BlockSolverReport(problem, n, A, b, o->repeat, &s[k], &solve[k], &pcapply[k]));
  if (o->compare)
    PetscCall(PetscPrintf(comm, "compare pcapply_ratio %.3f solve_ratio %.3f\n", pcapply[0] / pcapply[1],
                          solve[0] / solve[1]));
  PetscFunctionReturn(0);
}

#endif
