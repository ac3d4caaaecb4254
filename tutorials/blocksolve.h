/* Shared by the block-problem tutorials ex2 and ex3 (plain PETSc, no petscmp): the solve and its one
   parseable result line
     problem NAME n N dofs D mat_type T pc_type P iterations I true_residual R setup_seconds S
       solve_seconds Q pcapply_seconds A reason K
   CG (the user may change it) stopped on the unpreconditioned relative residual, the same test for
   every preconditioner; -repeat k solves k times from zero and reports median times (maxima over ranks);
   -set_variable_blocks b gives the matrix consecutive local blocks of b rows (for PCVPBJACOBI);
   -check_symmetry prints "symmetric 0|1" (MatIsSymmetric with tolerance 1e-10). */
#ifndef BLOCKSOLVE_H
#define BLOCKSOLVE_H

#include <petscksp.h>
#include <stdlib.h>

typedef struct {
  PetscInt repeat;          /* -repeat */
  PetscInt variable_block;  /* -set_variable_blocks (0: none) */
  PetscBool check_symmetry; /* -check_symmetry */
} BlockSolveOptions;

static PetscErrorCode BlockSolveOptionsRegister(MPI_Comm comm, BlockSolveOptions *o)
{
  PetscFunctionBeginUser;
  o->repeat         = 1;
  o->variable_block = 0;
  o->check_symmetry = PETSC_FALSE;
  PetscOptionsBegin(comm, NULL, "Solve options of the block tutorials", NULL);
  PetscCall(PetscOptionsInt("-repeat", "number of solves (median times reported)", NULL, o->repeat, &o->repeat, NULL));
  PetscCall(PetscOptionsInt("-set_variable_blocks", "MatSetVariableBlockSizes with local blocks of this size", NULL,
                            o->variable_block, &o->variable_block, NULL));
  PetscCall(PetscOptionsBool("-check_symmetry", "check MatIsSymmetric(A, 1e-10)", NULL, o->check_symmetry,
                             &o->check_symmetry, NULL));
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

/* Applies the matrix options, solves A x = b with CG and prints the result line. */
static PetscErrorCode BlockSolveRun(const char *problem, PetscInt n, Mat A, Vec b, const BlockSolveOptions *o)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)A);
  KSP ksp;
  PC pc;
  Vec x, r;
  PetscInt its, N;
  PetscReal rnorm, bnorm;
  PetscLogEvent pcapply_event;
  PetscEventPerfInfo perf;
  PetscLogDouble t0, t1, pc0, setup;
  double *tsolve, *tpc, local[2], global[2];
  MatType mtype;
  PCType ptype;
  KSPConvergedReason reason;

  PetscFunctionBeginUser;
  if (o->variable_block) PetscCall(BlockSolveSetVariableBlocks(A, o->variable_block));
  if (o->check_symmetry) {
    PetscBool sym;
    PetscCall(MatIsSymmetric(A, 1e-10, &sym));
    PetscCall(PetscPrintf(comm, "symmetric %d\n", (int)sym));
  }
  PetscCall(VecDuplicate(b, &x));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(KSPCreate(comm, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(
      KSPSetNormType(ksp, KSP_NORM_UNPRECONDITIONED)); /* stop on ||b - A x|| / ||b||, the same test for every PC */
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCJACOBI));
  PetscCall(KSPSetTolerances(ksp, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, 100000));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(PetscLogEventGetId("PCApply", &pcapply_event));

  PetscCallMPI(MPI_Barrier(comm));
  PetscCall(PetscTime(&t0));
  PetscCall(KSPSetUp(ksp));
  PetscCall(PetscTime(&t1));
  setup = t1 - t0;
  PetscCall(PetscMalloc2(o->repeat, &tsolve, o->repeat, &tpc));
  for (PetscInt rep = 0; rep < o->repeat; rep++) {
    PetscCall(VecZeroEntries(x));
    PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, pcapply_event, &perf));
    pc0 = perf.time;
    PetscCallMPI(MPI_Barrier(comm));
    PetscCall(PetscTime(&t0));
    PetscCall(KSPSolve(ksp, b, x));
    PetscCall(PetscTime(&t1));
    PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, pcapply_event, &perf));
    local[0] = t1 - t0;
    local[1] = perf.time - pc0;
    PetscCall(MPIU_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, comm));
    tsolve[rep] = global[0];
    tpc[rep]    = global[1];
  }
  PetscCall(MPIU_Allreduce(&setup, &global[0], 1, MPI_DOUBLE, MPI_MAX, comm));
  setup = global[0];
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetConvergedReason(ksp, &reason));

  /* true residual against the assembled operator */
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &rnorm));
  PetscCall(VecNorm(b, NORM_2, &bnorm));
  PetscCall(MatGetType(A, &mtype));
  PetscCall(PCGetType(pc, &ptype));
  PetscCall(VecGetSize(b, &N));
  PetscCall(PetscPrintf(
      comm,
      "problem %s n %" PetscInt_FMT " dofs %" PetscInt_FMT " mat_type %s pc_type %s iterations %" PetscInt_FMT
      " true_residual %.6e setup_seconds %.6f solve_seconds %.6f pcapply_seconds %.6f reason %s\n",
      problem, n, N, mtype, ptype, its, (double)(rnorm / bnorm), setup, BlockSolveMedian(o->repeat, tsolve),
      BlockSolveMedian(o->repeat, tpc), KSPConvergedReasons[reason]));
  PetscCall(PetscFree2(tsolve, tpc));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&r));
  PetscFunctionReturn(0);
}

#endif
