static char help[] = "petscmp: MatDuplicate and MatConvert between MATAIJ and MATAIJMP keep values, types and the storage setting.\n"
                     "  -M <rows> (default 90)\n\n";

#include "petscmp_test.h"

static PetscMPIInt size;
static Vec         x, g_y1, g_y2;

/* MatMult of X equals MatMult of Ref bitwise */
static PetscErrorCode CheckSameMult(Mat X, Mat Ref, const char *what)
{
  PetscFunctionBeginUser;
  PetscCall(MatMult(X, x, g_y1));
  PetscCall(MatMult(Ref, x, g_y2));
  PetscCall(TestCheckBitwise(g_y1, g_y2, what));
  PetscFunctionReturn(0);
}

/* X has type seq<base>/mpi<base>; in parallel its blocks are seq<blockbase> */
static PetscErrorCode CheckTypes(Mat X, PetscBool mp, const char *what)
{
  char buf[256];

  PetscFunctionBeginUser;
  PetscCall(TestCheckType(X, size == 1 ? (mp ? MATSEQAIJMP : MATSEQAIJ) : (mp ? MATMPIAIJMP : MATMPIAIJ), what));
  if (size > 1) {
    Mat Ad, Ao;
    PetscCall(TestLocalBlocks(X, &Ad, &Ao));
    PetscCall(PetscSNPrintf(buf, sizeof buf, "%s (diagonal block)", what));
    PetscCall(TestCheckType(Ad, mp ? MATSEQAIJMP : MATSEQAIJ, buf));
    PetscCall(PetscSNPrintf(buf, sizeof buf, "%s (off-diagonal block)", what));
    PetscCall(TestCheckType(Ao, mp ? MATSEQAIJMP : MATSEQAIJ, buf));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckStorage(Mat X, MatAIJMPStorage expected, const char *what)
{
  MatAIJMPStorage st;
  MatAIJMPInfo    info;

  PetscFunctionBeginUser;
  PetscCall(MatAIJMPGetStorage(X, &st));
  TEST_CHECK(PETSC_COMM_WORLD, st == expected, "%s: storage %s, expected %s", what, MatAIJMPStorages[st], MatAIJMPStorages[expected]);
  PetscCall(MatAIJMPGetInfo(X, &info));
  TEST_CHECK(PETSC_COMM_WORLD, info.lossy == (expected != MAT_AIJMP_LOSSLESS), "%s: info.lossy %d", what, (int)info.lossy);
  if (expected == MAT_AIJMP_FP16) TEST_CHECK(PETSC_COMM_WORLD, info.nnz[PETSCMP_FP16] > 0, "%s: nothing stored in fp16", what);
  PetscFunctionReturn(0);
}

/* X is not an aijmp matrix any more: MatAIJMPGetInfo errors, MatAIJMPGetStorage says lossless */
static PetscErrorCode CheckNotMP(Mat X, const char *what)
{
  MatAIJMPInfo    info;
  MatAIJMPStorage st;
  PetscErrorCode  ierr;

  PetscFunctionBeginUser;
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  ierr = MatAIJMPGetInfo(X, &info);
  PetscCall(PetscPopErrorHandler());
  TEST_CHECK(PETSC_COMM_WORLD, ierr == PETSC_ERR_ARG_WRONG, "%s: MatAIJMPGetInfo on a non-aijmp matrix returned %d", what, (int)ierr);
  PetscCall(MatAIJMPGetStorage(X, &st));
  TEST_CHECK(PETSC_COMM_WORLD, st == MAT_AIJMP_LOSSLESS, "%s: storage of a non-aijmp matrix %s", what, MatAIJMPStorages[st]);
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt    M = 90;
  TestMatOpts o;
  Mat         Aaij, Amp, B, C, X;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-M", &M, NULL));
  TestMatOptsDefault(&o, M);
  o.inode = PETSC_TRUE;
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &Aaij));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &Amp));
  PetscCall(MatCreateVecs(Aaij, &x, &g_y1));
  PetscCall(VecDuplicate(g_y1, &g_y2));
  PetscCall(TestVecFill(x, 3));
  PetscCall(CheckTypes(Amp, PETSC_TRUE, "created aijmp"));
  PetscCall(CheckSameMult(Amp, Aaij, "created aijmp"));

  /* ---- MatDuplicate: lossless and fp16 storage survive, values copied or not ---- */
  for (int lossy = 0; lossy < 2; lossy++) {
    const MatAIJMPStorage st = lossy ? MAT_AIJMP_FP16 : MAT_AIJMP_LOSSLESS;
    PetscInt              nd;
    PetscCall(MatAIJMPSetStorage(Amp, st));
    PetscCall(MatMult(Amp, x, g_y1)); /* a compact copy exists before the duplicate */

    PetscCall(MatDuplicate(Amp, MAT_COPY_VALUES, &B));
    PetscCall(CheckTypes(B, PETSC_TRUE, "MatDuplicate(MAT_COPY_VALUES)"));
    PetscCall(CheckStorage(B, st, "MatDuplicate(MAT_COPY_VALUES)"));
    PetscCall(CheckSameMult(B, Amp, "MatDuplicate(MAT_COPY_VALUES) vs original"));
    if (!lossy) PetscCall(CheckSameMult(B, Aaij, "MatDuplicate(MAT_COPY_VALUES) vs AIJ"));
    else {
      PetscCall(MatMult(B, x, g_y1));
      PetscCall(MatMult(Aaij, x, g_y2));
      PetscCall(TestVecBitDiff(g_y1, g_y2, &nd));
      TEST_CHECK(PETSC_COMM_WORLD, nd > 0, "MatDuplicate of an fp16 matrix multiplies exactly like AIJ: storage lost");
    }
    /* the duplicate is independent of the original */
    PetscCall(MatScale(B, 2.0));
    PetscCall(CheckSameMult(Amp, Amp, "original after scaling the duplicate (self)"));
    if (!lossy) PetscCall(CheckSameMult(Amp, Aaij, "original after scaling the duplicate"));
    PetscCall(MatDestroy(&B));

    PetscCall(MatDuplicate(Amp, MAT_DO_NOT_COPY_VALUES, &B));
    PetscCall(CheckTypes(B, PETSC_TRUE, "MatDuplicate(MAT_DO_NOT_COPY_VALUES)"));
    PetscCall(CheckStorage(B, st, "MatDuplicate(MAT_DO_NOT_COPY_VALUES)"));
    PetscCall(MatMult(B, x, g_y1));
    {
      PetscReal nrm;
      PetscCall(VecNorm(g_y1, NORM_INFINITY, &nrm));
      TEST_CHECK(PETSC_COMM_WORLD, nrm == 0.0, "MatDuplicate(MAT_DO_NOT_COPY_VALUES): MatMult gives |y| = %g, expected 0", (double)nrm);
    }
    PetscCall(TestMatSetEntries(B, &o, 1.0));
    PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
    PetscCall(CheckSameMult(B, Amp, "MatDuplicate(MAT_DO_NOT_COPY_VALUES) + values set"));
    PetscCall(MatDestroy(&B));

    PetscCall(MatDuplicate(Amp, MAT_SHARE_NONZERO_PATTERN, &B));
    PetscCall(CheckTypes(B, PETSC_TRUE, "MatDuplicate(MAT_SHARE_NONZERO_PATTERN)"));
    PetscCall(CheckStorage(B, st, "MatDuplicate(MAT_SHARE_NONZERO_PATTERN)"));
    PetscCall(TestMatSetEntries(B, &o, 1.0));
    PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
    PetscCall(CheckSameMult(B, Amp, "MatDuplicate(MAT_SHARE_NONZERO_PATTERN) + values set"));
    PetscCall(MatDestroy(&B));
  }

  /* ---- aijmp -> aij (Amp stores fp16; the fp64 master values come back exactly) ---- */
  PetscCall(MatConvert(Amp, MATAIJ, MAT_INITIAL_MATRIX, &B));
  PetscCall(CheckTypes(B, PETSC_FALSE, "MatConvert(aijmp -> aij, MAT_INITIAL_MATRIX)"));
  PetscCall(CheckSameMult(B, Aaij, "MatConvert(aijmp -> aij, MAT_INITIAL_MATRIX)"));
  PetscCall(CheckNotMP(B, "MatConvert(aijmp -> aij, MAT_INITIAL_MATRIX)"));
  PetscCall(CheckTypes(Amp, PETSC_TRUE, "the source of MatConvert(MAT_INITIAL_MATRIX)"));
  PetscCall(CheckStorage(Amp, MAT_AIJMP_FP16, "the source of MatConvert(MAT_INITIAL_MATRIX)"));

  /* MAT_REUSE_MATRIX: new values in Amp reach B */
  PetscCall(MatScale(Amp, 3.0));
  PetscCall(MatScale(Aaij, 3.0));
  PetscCall(MatConvert(Amp, MATAIJ, MAT_REUSE_MATRIX, &B));
  PetscCall(CheckTypes(B, PETSC_FALSE, "MatConvert(aijmp -> aij, MAT_REUSE_MATRIX)"));
  PetscCall(CheckSameMult(B, Aaij, "MatConvert(aijmp -> aij, MAT_REUSE_MATRIX)"));
  PetscCall(MatDestroy(&B));
  PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_LOSSLESS));
  PetscCall(CheckSameMult(Amp, Aaij, "aijmp after MatConvert(MAT_REUSE_MATRIX)"));

  /* ---- aij -> aijmp ---- */
  PetscCall(MatConvert(Aaij, MATAIJMP, MAT_INITIAL_MATRIX, &C));
  PetscCall(CheckTypes(C, PETSC_TRUE, "MatConvert(aij -> aijmp, MAT_INITIAL_MATRIX)"));
  PetscCall(CheckStorage(C, MAT_AIJMP_LOSSLESS, "MatConvert(aij -> aijmp, MAT_INITIAL_MATRIX)"));
  PetscCall(CheckSameMult(C, Aaij, "MatConvert(aij -> aijmp, MAT_INITIAL_MATRIX)"));
  PetscCall(CheckTypes(Aaij, PETSC_FALSE, "the source of MatConvert(aij -> aijmp)"));
  PetscCall(MatScale(Aaij, -0.5));
  PetscCall(MatConvert(Aaij, MATAIJMP, MAT_REUSE_MATRIX, &C));
  PetscCall(CheckTypes(C, PETSC_TRUE, "MatConvert(aij -> aijmp, MAT_REUSE_MATRIX)"));
  PetscCall(CheckSameMult(C, Aaij, "MatConvert(aij -> aijmp, MAT_REUSE_MATRIX)"));
  PetscCall(MatDestroy(&C));
  /* explicit concrete type names */
  PetscCall(MatConvert(Aaij, size == 1 ? MATSEQAIJMP : MATMPIAIJMP, MAT_INITIAL_MATRIX, &C));
  PetscCall(CheckTypes(C, PETSC_TRUE, "MatConvert(aij -> seqaijmp/mpiaijmp)"));
  PetscCall(CheckSameMult(C, Aaij, "MatConvert(aij -> seqaijmp/mpiaijmp)"));
  PetscCall(MatConvert(C, size == 1 ? MATSEQAIJ : MATMPIAIJ, MAT_INITIAL_MATRIX, &B));
  PetscCall(CheckTypes(B, PETSC_FALSE, "MatConvert(seqaijmp/mpiaijmp -> seqaij/mpiaij)"));
  PetscCall(CheckSameMult(B, Aaij, "MatConvert(seqaijmp/mpiaijmp -> seqaij/mpiaij)"));
  PetscCall(MatDestroy(&B));
  PetscCall(MatDestroy(&C));

  /* ---- in place, both ways, twice ---- */
  PetscCall(MatDuplicate(Aaij, MAT_COPY_VALUES, &X));
  for (int round = 0; round < 2; round++) {
    PetscCall(MatConvert(X, MATAIJMP, MAT_INPLACE_MATRIX, &X));
    PetscCall(CheckTypes(X, PETSC_TRUE, "MatConvert(aij -> aijmp, MAT_INPLACE_MATRIX)"));
    PetscCall(MatAIJMPSetStorage(X, MAT_AIJMP_FP16));
    PetscCall(CheckStorage(X, MAT_AIJMP_FP16, "MatConvert(aij -> aijmp, MAT_INPLACE_MATRIX)"));
    PetscCall(MatAIJMPSetStorage(X, MAT_AIJMP_LOSSLESS));
    PetscCall(CheckSameMult(X, Aaij, "MatConvert(aij -> aijmp, MAT_INPLACE_MATRIX)"));
    PetscCall(MatConvert(X, MATAIJ, MAT_INPLACE_MATRIX, &X));
    PetscCall(CheckTypes(X, PETSC_FALSE, "MatConvert(aijmp -> aij, MAT_INPLACE_MATRIX)"));
    PetscCall(CheckNotMP(X, "MatConvert(aijmp -> aij, MAT_INPLACE_MATRIX)"));
    PetscCall(CheckSameMult(X, Aaij, "MatConvert(aijmp -> aij, MAT_INPLACE_MATRIX)"));
    /* an AIJ again: MatSetValues + assembly keeps it plain AIJ */
    PetscCall(TestMatSetEntries(X, &o, -1.5)); /* = Aaij, scaled by 3 and -0.5 above */
    PetscCall(MatAssemblyBegin(X, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(X, MAT_FINAL_ASSEMBLY));
    PetscCall(CheckTypes(X, PETSC_FALSE, "converted back and reassembled"));
    PetscCall(CheckSameMult(X, Aaij, "converted back and reassembled"));
  }
  PetscCall(MatDestroy(&X));

  /* aijmp -> aijmp: a copy of the same type */
  PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_BF16));
  PetscCall(MatConvert(Amp, MATAIJMP, MAT_INITIAL_MATRIX, &C));
  PetscCall(CheckTypes(C, PETSC_TRUE, "MatConvert(aijmp -> aijmp)"));
  PetscCall(CheckStorage(C, MAT_AIJMP_BF16, "MatConvert(aijmp -> aijmp)"));
  PetscCall(CheckSameMult(C, Amp, "MatConvert(aijmp -> aijmp)"));
  PetscCall(MatDestroy(&C));

  PetscCall(MatDestroy(&Amp));
  PetscCall(MatDestroy(&Aaij));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&g_y1));
  PetscCall(VecDestroy(&g_y2));
  int rc = TestFinish();
  PetscCall(PetscFinalize());
  return rc;
}
