static char help[] = "Solves a 3D Poisson problem (7-point Laplacian on a DMDA) with KSP.\n"
                     "A plain PETSc program: petscmp is loaded only through runtime options, e.g.\n"
                     "  -dll_append /path/libpetscmp.so -dm_mat_type aijmp\n"
                     "  -n <int> : grid points per direction (default 48)\n\n";

#include <petscdmda.h>
#include <petscksp.h>

static PetscErrorCode AssembleLaplacian(DM da, Mat A)
{
  DMDALocalInfo info;
  MatStencil    row, col[7];
  PetscScalar   v[7];

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  for (PetscInt k = info.zs; k < info.zs + info.zm; k++)
    for (PetscInt j = info.ys; j < info.ys + info.ym; j++)
      for (PetscInt i = info.xs; i < info.xs + info.xm; i++) {
        PetscInt n = 0;
        row.i = i; row.j = j; row.k = k;
        const PetscInt di[6] = {-1, 1, 0, 0, 0, 0}, dj[6] = {0, 0, -1, 1, 0, 0}, dk[6] = {0, 0, 0, 0, -1, 1};
        for (int s = 0; s < 6; s++) {
          const PetscInt ii = i + di[s], jj = j + dj[s], kk = k + dk[s];
          if (ii < 0 || jj < 0 || kk < 0 || ii >= info.mx || jj >= info.my || kk >= info.mz) continue;
          col[n].i = ii; col[n].j = jj; col[n].k = kk; v[n++] = -1.0;
        }
        col[n] = row; v[n++] = 6.0;
        PetscCall(MatSetValuesStencil(A, 1, &row, n, col, v, INSERT_VALUES));
      }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  DM                 da;
  Mat                A;
  Vec                x, b, u, r;
  KSP                ksp;
  PetscInt           n = 48, its;
  PetscReal          rnorm, bnorm;
  PetscLogEvent      mult_event;
  PetscEventPerfInfo perf;
  MatType            type;
  PetscLogDouble     mem[2];

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscLogDefaultBegin()); /* to report the MatMult time */
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, n, n, n, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, NULL, &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateGlobalVector(da, &x));
  PetscCall(VecDuplicate(x, &b));
  PetscCall(VecDuplicate(x, &u));
  PetscCall(VecDuplicate(x, &r));
  PetscCall(VecSetRandom(u, NULL));
  /* the matrix's memory: the growth of the processes' resident memory over its creation, assembly and first
     two products (a type may make its product's data at a first product) */
  PetscCall(PetscMemoryGetCurrentUsage(&mem[0]));
  PetscCall(DMCreateMatrix(da, &A));
  PetscCall(AssembleLaplacian(da, A));
  PetscCall(MatMult(A, u, b));
  PetscCall(MatMult(A, u, b)); /* right-hand side of a known solution */
  PetscCall(PetscMemoryGetCurrentUsage(&mem[1]));
  mem[1] -= mem[0];
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &mem[1], 1, MPIU_PETSCLOGDOUBLE, MPI_SUM, PETSC_COMM_WORLD));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 5000));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, &its));

  /* true residual against the assembled operator */
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &rnorm));
  PetscCall(VecNorm(b, NORM_2, &bnorm));
  PetscCall(MatGetType(A, &type));
  PetscCall(PetscLogEventGetId("MatMult", &mult_event));
  PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, mult_event, &perf));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mat_type %s  iterations %" PetscInt_FMT "  true_residual %.6e  relative %.3e  MatMult_calls %d  MatMult_seconds %.4f  matrix_MB %.1f\n", type, its, (double)rnorm, (double)(rnorm / bnorm), perf.count, perf.time, (double)mem[1] / 1e6));

  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&u));
  PetscCall(VecDestroy(&r));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
