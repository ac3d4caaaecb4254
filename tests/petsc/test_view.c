static char help[] = "petscmp: a small program for the output checks (scripts grep its output): an aijmp matrix with mixed\n"
                     "values configured by MatSetFromOptions (-mat_aijmp_*), -mat_view, a few GMRES iterations with -ksp_view,\n"
                     "-log_view. -test_leak leaks one PetscMalloc (the negative control of the -malloc_dump check).\n\n";

#include <petscksp.h>
#include "petscmp_test.h"

int main(int argc, char **argv)
{
  TestMatOpts o;
  Mat         A;
  Vec         x, b;
  KSP         ksp;
  PetscBool   leak = PETSC_FALSE;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-test_leak", &leak, NULL));
  TestMatOptsDefault(&o, 60);
  PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
  PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, o.M, o.N));
  {
    PetscBool given;
    PetscCall(PetscOptionsHasName(NULL, NULL, "-mat_type", &given));
    if (!given) PetscCall(MatSetType(A, MATAIJMP)); /* else the type comes from MatSetFromOptions */
  }
  PetscCall(MatSetFromOptions(A));
  PetscCall(MatSeqAIJSetPreallocation(A, 12, NULL));
  PetscCall(MatMPIAIJSetPreallocation(A, 12, NULL, 12, NULL));
  PetscCall(TestMatSetEntries(A, &o, 1.0));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  /* -mat_view is handled by MatAssemblyEnd */
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(TestVecFill(b, 2));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPGMRES));
  PetscCall(KSPSetTolerances(ksp, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT, 3));
  {
    PC pc;
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCNONE));
  }
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));
  if (leak) {
    void *p;
    PetscCall(PetscMalloc(100, &p));
  }
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  return 0;
}
