static char help[] = "petscmp linked directly: KSP solves with a MATAIJMP matrix (MatCreate + MatSetType(MATAIJMP)) give the\n"
                     "same iterations and bitwise the same solution as with MATAIJ (lossless), for several preconditioners;\n"
                     "a lossy (fp32) solve converges with a small true residual.\n"
                     "  -n <grid points per direction> (default 14)\n"
                     "  -pcs <list>: preconditioners (default serial jacobi,ilu,icc,lu,sor,gamg,cholesky;\n"
                     "                parallel jacobi,bjacobi,asm,sor,lu (MUMPS),gamg)\n\n";

#include <petscksp.h>
#include "petscmp_test.h"

/* A symmetric, diagonally dominant 2D 5-point operator whose off-diagonal weights come in fp16, fp32 and fp64
   classes by region, so rows are stored in different formats. Same matrix on any number of ranks. */
static PetscErrorCode CreateOperator(MatType type, PetscInt n, Mat *A)
{
  PetscInt rstart, rend, N = n * n;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_WORLD, A));
  PetscCall(MatSetSizes(*A, PETSC_DECIDE, PETSC_DECIDE, N, N));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, 5, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, 5, NULL, 4, NULL));
  PetscCall(MatGetOwnershipRange(*A, &rstart, &rend));
  for (PetscInt row = rstart; row < rend; row++) {
    const PetscInt i = row % n, j = row / n;
    const PetscInt nb[4][2] = {{i - 1, j}, {i + 1, j}, {i, j - 1}, {i, j + 1}};
    PetscInt       cols[5], nc = 0;
    double         vals[5], diag = 0;
    for (int k = 0; k < 4; k++) {
      const PetscInt ii = nb[k][0], jj = nb[k][1];
      if (ii < 0 || jj < 0 || ii >= n || jj >= n) continue;
      const PetscInt col = jj * n + ii, lo = PetscMin(row, col), hi = PetscMax(row, col);
      const int      cls = (int)((lo / (2 * n)) % 3); /* fp16, bf16 (unused: 1 -> fp64), fp32 */
      const double   w   = fabs(TestValue(cls == 1 ? VAL_FP64 : cls == 2 ? VAL_FP32 : VAL_FP16, TestHash(7, (uint64_t)lo, (uint64_t)hi)));
      cols[nc]           = col;
      vals[nc++]         = -w;
      diag += w;
    }
    cols[nc]   = row;
    vals[nc++] = diag + 1.0;
    PetscCall(MatSetValues(*A, 1, &row, nc, cols, vals, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode Solve(Mat A, const char *pctype, Vec b, Vec x, PetscInt *its, KSPConvergedReason *reason)
{
  KSP         ksp;
  PC          pc;
  PetscMPIInt size;
  PetscBool   same;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, pctype));
  PetscCall(PetscStrcmp(pctype, PCLU, &same));
  if (same && size > 1) PetscCall(PCFactorSetMatSolverType(pc, MATSOLVERMUMPS));
  PetscCall(PetscStrcmp(pctype, PCGAMG, &same));
  if (same) PetscCall(PCGAMGSetNSmooths(pc, 1));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 2000));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(VecZeroEntries(x));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, its));
  PetscCall(KSPGetConvergedReason(ksp, reason));
  PetscCall(KSPDestroy(&ksp));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscMPIInt        size;
  PetscInt           n = 14, npcs = 16, its_aij, its_mp;
  char              *pcs[16];
  PetscBool          flg;
  Mat                Aaij, Amp;
  Vec                b, x1, x2, r;
  KSPConvergedReason reason_aij, reason_mp;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetStringArray(NULL, NULL, "-pcs", pcs, &npcs, &flg));
  if (!flg) {
    const char *def1[] = {"jacobi", "ilu", "icc", "lu", "cholesky", "sor", "gamg"};
    const char *defp[] = {"jacobi", "bjacobi", "asm", "sor", "lu", "gamg"}; /* gamg last */
    npcs = size == 1 ? 7 : 6;
    for (PetscInt k = 0; k < npcs; k++) PetscCall(PetscStrallocpy(size == 1 ? def1[k] : defp[k], &pcs[k]));
  }

  PetscCall(CreateOperator(MATAIJ, n, &Aaij));
  PetscCall(CreateOperator(MATAIJMP, n, &Amp));
  PetscCall(TestCheckType(Amp, size == 1 ? MATSEQAIJMP : MATMPIAIJMP, "MatSetType(MATAIJMP)"));
  {
    MatAIJMPInfo info;
    PetscCall(MatAIJMPGetInfo(Amp, &info));
    TEST_CHECK(PETSC_COMM_WORLD, info.rows[PETSCMP_FP16] > 0 && info.rows[PETSCMP_FP64] > 0, "operator: expected fp16 and fp64 rows (%" PetscInt64_FMT ", %" PetscInt64_FMT ")",
               info.rows[PETSCMP_FP16], info.rows[PETSCMP_FP64]);
  }
  PetscCall(MatCreateVecs(Aaij, &x1, &b));
  PetscCall(VecDuplicate(x1, &x2));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(TestVecFill(b, 11));

  for (PetscInt k = 0; k < npcs; k++) {
    char what[128];
    PetscCall(Solve(Aaij, pcs[k], b, x1, &its_aij, &reason_aij));
    PetscCall(Solve(Amp, pcs[k], b, x2, &its_mp, &reason_mp));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "pc %-9s aij: %3" PetscInt_FMT " iterations (reason %d)  aijmp: %3" PetscInt_FMT " iterations (reason %d)\n", pcs[k], its_aij, (int)reason_aij, its_mp, (int)reason_mp));
    TEST_CHECK(PETSC_COMM_WORLD, reason_aij > 0 && reason_mp > 0, "pc %s: not converged (aij %d, aijmp %d)", pcs[k], (int)reason_aij, (int)reason_mp);
    TEST_CHECK(PETSC_COMM_WORLD, its_aij == its_mp, "pc %s: %" PetscInt_FMT " iterations with aij, %" PetscInt_FMT " with aijmp", pcs[k], its_aij, its_mp);
    PetscCall(PetscSNPrintf(what, sizeof what, "pc %s: solution", pcs[k]));
    PetscCall(PetscStrcmp(pcs[k], PCLU, &flg));
    if (flg && size > 1) {
      /* parallel MUMPS is not deterministic from run to run, even with plain AIJ: both solutions
         meet rtol 1e-10, so they agree to about 1e-10 relative (times the condition, small here) */
      PetscReal dn, xn;
      PetscCall(VecWAXPY(r, -1.0, x1, x2));
      PetscCall(VecNorm(r, NORM_2, &dn));
      PetscCall(VecNorm(x1, NORM_2, &xn));
      TEST_CHECK(PETSC_COMM_WORLD, dn <= 1e-8 * xn, "%s: aij and aijmp solutions differ by %g relative", what, (double)(dn / xn));
    } else PetscCall(TestCheckBitwise(x1, x2, what));
  }

  /* lossy: fp32 storage, CG + Jacobi converges; the residual against the assembled operator is small */
  {
    PetscReal rn, bn;
    PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_FP32));
    PetscCall(Solve(Amp, PCJACOBI, b, x2, &its_mp, &reason_mp));
    PetscCall(MatMult(Aaij, x2, r));
    PetscCall(VecAYPX(r, -1.0, b));
    PetscCall(VecNorm(r, NORM_2, &rn));
    PetscCall(VecNorm(b, NORM_2, &bn));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "fp32 storage, jacobi: %" PetscInt_FMT " iterations, true relative residual %.3e\n", its_mp, (double)(rn / bn)));
    TEST_CHECK(PETSC_COMM_WORLD, reason_mp > 0, "fp32 storage: not converged (%d)", (int)reason_mp);
    TEST_CHECK(PETSC_COMM_WORLD, rn / bn < 1e-6, "fp32 storage: true relative residual %g", (double)(rn / bn));
  }

  for (PetscInt k = 0; k < npcs; k++) PetscCall(PetscFree(pcs[k]));
  PetscCall(MatDestroy(&Aaij));
  PetscCall(MatDestroy(&Amp));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&x1));
  PetscCall(VecDestroy(&x2));
  PetscCall(VecDestroy(&r));
  int rc = TestFinish();
  PetscCall(PetscFinalize());
  return rc;
}
