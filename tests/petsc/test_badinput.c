static char help[] = "petscmp: bad and unusual input. NaN/Inf entries and inputs, values beyond the range of the narrow\n"
                     "formats, subnormals, empty rows, an empty matrix, rectangular matrices, a rank without rows,\n"
                     "products with an unassembled matrix, invalid settings through the API and the options database.\n"
                     "  -skip_errors: leave out the error cases\n\n";

#include "petscmp_test.h"

static PetscMPIInt size, rank;

/* y = A x, A x + z, A^T x, A^T x + z for Amp and Aaij: bitwise (lossless) or within the bound (u > 0). Also checks
   that no infinity appears where AIJ's result is finite. */
static PetscErrorCode CompareAll(Mat Amp, Mat Aaij, double u, Vec xin, const char *label)
{
  Vec      x, xt, y1, y2, yt1, yt2, z, zt;
  char     what[256];
  PetscInt nd;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(Aaij, &xt, &x));
  PetscCall(VecDuplicate(x, &y1));
  PetscCall(VecDuplicate(x, &y2));
  PetscCall(VecDuplicate(x, &z));
  PetscCall(VecDuplicate(xt, &yt1));
  PetscCall(VecDuplicate(xt, &yt2));
  PetscCall(VecDuplicate(xt, &zt));
  if (xin) PetscCall(VecCopy(xin, xt));
  else PetscCall(TestVecFill(xt, 3));
  PetscCall(TestVecFill(x, 4));
  PetscCall(TestVecFill(z, 5));
  PetscCall(TestVecFill(zt, 6));
  for (int p = 0; p < 4; p++) {
    const PetscBool tr = p >= 2 ? PETSC_TRUE : PETSC_FALSE, add = p % 2 ? PETSC_TRUE : PETSC_FALSE;
    Vec             in = tr ? x : xt, ya = tr ? yt1 : y1, yb = tr ? yt2 : y2, zz = tr ? zt : z;
    static const char *names[4] = {"MatMult", "MatMultAdd", "MatMultTranspose", "MatMultTransposeAdd"};
    if (!tr && !add) {
      PetscCall(MatMult(Amp, in, ya));
      PetscCall(MatMult(Aaij, in, yb));
    } else if (!tr) {
      PetscCall(MatMultAdd(Amp, in, zz, ya));
      PetscCall(MatMultAdd(Aaij, in, zz, yb));
    } else if (!add) {
      PetscCall(MatMultTranspose(Amp, in, ya));
      PetscCall(MatMultTranspose(Aaij, in, yb));
    } else {
      PetscCall(MatMultTransposeAdd(Amp, in, zz, ya));
      PetscCall(MatMultTransposeAdd(Aaij, in, zz, yb));
    }
    PetscCall(PetscSNPrintf(what, sizeof what, "%s: %s", label, names[p]));
    if (u == 0) PetscCall(TestCheckBitwise(ya, yb, what));
    else PetscCall(TestCheckBound(Aaij, tr, in, add ? zz : NULL, ya, yb, u, what, &nd));
    {
      const PetscScalar *a, *b;
      PetscInt           n, newinf = 0;
      PetscCall(VecGetLocalSize(ya, &n));
      PetscCall(VecGetArrayRead(ya, &a));
      PetscCall(VecGetArrayRead(yb, &b));
      for (PetscInt i = 0; i < n; i++)
        if (isfinite(b[i]) && !isfinite(a[i])) newinf++;
      PetscCall(VecRestoreArrayRead(ya, &a));
      PetscCall(VecRestoreArrayRead(yb, &b));
      PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &newinf, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
      TEST_CHECK(PETSC_COMM_WORLD, newinf == 0, "%s: %" PetscInt_FMT " non-finite entries where AIJ's are finite", what, newinf);
    }
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&xt));
  PetscCall(VecDestroy(&y1));
  PetscCall(VecDestroy(&y2));
  PetscCall(VecDestroy(&z));
  PetscCall(VecDestroy(&yt1));
  PetscCall(VecDestroy(&yt2));
  PetscCall(VecDestroy(&zt));
  PetscFunctionReturn(0);
}

/* Sets the given (global row, col, value) entries in both matrices and assembles. */
static PetscErrorCode SetSpecial(Mat A, PetscInt n, const PetscInt rows[], const PetscInt cols[], const double vals[])
{
  PetscInt rstart, rend;

  PetscFunctionBeginUser;
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  for (PetscInt k = 0; k < n; k++)
    if (rows[k] >= rstart && rows[k] < rend) PetscCall(MatSetValues(A, 1, &rows[k], 1, &cols[k], &vals[k], INSERT_VALUES));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static const struct {
  MatAIJMPStorage st;
  double          u;
} lossy[] = {
  {MAT_AIJMP_FP32, 0x1p-24}, {MAT_AIJMP_FP16, 0x1p-11}, {MAT_AIJMP_BF16, 0x1p-8}, {MAT_AIJMP_FP11_20, 0x1p-20}, {MAT_AIJMP_FP11_4, 0x1p-4}, {MAT_AIJMP_TOLERANCE, 1e-3}, {MAT_AIJMP_ROWSPLIT, 0x1p-24}, {MAT_AIJMP_ENTRYSPLIT, 0x1p-24},
};
#define NLOSSY ((int)(sizeof lossy / sizeof lossy[0]))

/* lossless bitwise, then every lossy mode within its bound */
static PetscErrorCode CompareModes(Mat Amp, Mat Aaij, Vec xin, const char *label)
{
  char buf[256];

  PetscFunctionBeginUser;
  PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_LOSSLESS));
  PetscCall(PetscSNPrintf(buf, sizeof buf, "%s, lossless", label));
  PetscCall(CompareAll(Amp, Aaij, 0.0, xin, buf));
  for (int k = 0; k < NLOSSY; k++) {
    MatAIJMPInfo info;
    PetscCall(MatAIJMPSetStorage(Amp, lossy[k].st));
    PetscCall(PetscSNPrintf(buf, sizeof buf, "%s, %s", label, MatAIJMPStorages[lossy[k].st]));
    PetscCall(CompareAll(Amp, Aaij, lossy[k].u, xin, buf));
    PetscCall(MatAIJMPGetInfo(Amp, &info));
    for (int f = 0; f < PETSCMP_NUM_FORMATS; f++) {
      static const double fu[PETSCMP_NUM_FORMATS] = {0.0, 0x1p-24, 0x1p-11, 0x1p-8, 0x1p-20, 0x1p-4};
      TEST_CHECK(PETSC_COMM_WORLD, info.max_rel_error[f] <= fu[f] && !isnan(info.max_rel_error[f]), "%s: max_rel_error[%s] = %g", buf, PetscMPFormats[f], (double)info.max_rel_error[f]);
    }
  }
  PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_LOSSLESS));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestNaNInf(void)
{
  TestMatOpts o;
  Mat         Amp, Aaij;
  PetscInt    rows[6], cols[6], c12[12];
  double      vals[6] = {NAN, INFINITY, -INFINITY, NAN, INFINITY, -NAN};
  Vec         x;

  PetscFunctionBeginUser;
  TestMatOptsDefault(&o, 60);
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &Aaij));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &Amp));
  for (int k = 0; k < 6; k++) { /* rows 3, 13, 23, ...: existing positions, so the patterns agree */
    rows[k] = 3 + 10 * k;
    (void)TestRowCols(&o, rows[k], c12);
    cols[k] = c12[k % 2];
  }
  PetscCall(SetSpecial(Aaij, 6, rows, cols, vals));
  PetscCall(SetSpecial(Amp, 6, rows, cols, vals));
  PetscCall(CompareModes(Amp, Aaij, NULL, "NaN/Inf entries"));

  /* Inf and NaN in the input vector, finite matrix */
  PetscCall(MatDestroy(&Amp));
  PetscCall(MatDestroy(&Aaij));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &Aaij));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &Amp));
  PetscCall(MatCreateVecs(Aaij, &x, NULL));
  PetscCall(TestVecFill(x, 3));
  if (rank == 0) {
    const PetscInt    idx[2] = {5, 40};
    const PetscScalar v[2]   = {INFINITY, NAN};
    PetscCall(VecSetValues(x, 2, idx, v, INSERT_VALUES));
  }
  PetscCall(VecAssemblyBegin(x));
  PetscCall(VecAssemblyEnd(x));
  PetscCall(CompareModes(Amp, Aaij, x, "NaN/Inf in x"));
  PetscCall(VecDestroy(&x));
  PetscCall(MatDestroy(&Amp));
  PetscCall(MatDestroy(&Aaij));
  PetscFunctionReturn(0);
}

/* huge, tiny, fp16-edge and subnormal values: fallbacks to wider formats, never an overflow */
static PetscErrorCode TestRange(void)
{
  TestMatOpts o;
  Mat         Amp, Aaij;
  enum { NV = 12 };
  const double vals[NV] = {1e6, 1e300, -1e300, 65504.0, 65520.0, -65536.0, 1e-300, 1e-310, 3e38, 4e38, 1.5e-5, DBL_MAX};
  PetscInt     rows[NV], cols[NV], c12[12];

  PetscFunctionBeginUser;
  TestMatOptsDefault(&o, 60);
  o.valuekind = VAL_FP16; /* small integers elsewhere: the special value decides the row's format */
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &Aaij));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &Amp));
  for (int k = 0; k < NV; k++) {
    rows[k] = 2 + 5 * k;
    (void)TestRowCols(&o, rows[k], c12);
    cols[k] = c12[0];
  }
  PetscCall(SetSpecial(Aaij, NV, rows, cols, vals));
  PetscCall(SetSpecial(Amp, NV, rows, cols, vals));
  /* x of moderate size: no product overflows in fp64 (DBL_MAX * |x| < DBL_MAX needs |x| < 1: TestVecFill gives (-1, 1)) */
  PetscCall(CompareModes(Amp, Aaij, NULL, "values beyond the narrow formats' ranges"));
  {
    MatAIJMPInfo info;
    PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_FP16));
    PetscCall(MatAIJMPGetInfo(Amp, &info));
    TEST_CHECK(PETSC_COMM_WORLD, info.rows[PETSCMP_FP64] > 0 && info.rows[PETSCMP_FP32] > 0 && info.rows[PETSCMP_FP16] > 0,
               "fp16 storage with out-of-range values: rows fp64 %" PetscInt64_FMT " fp32 %" PetscInt64_FMT " fp16 %" PetscInt64_FMT " (expected fallbacks)",
               info.rows[PETSCMP_FP64], info.rows[PETSCMP_FP32], info.rows[PETSCMP_FP16]);
    PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_LOSSLESS));
  }
  PetscCall(MatDestroy(&Amp));
  PetscCall(MatDestroy(&Aaij));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestShapes(void)
{
  TestMatOpts o;
  Mat         Amp, Aaij;
  char        label[128];

  PetscFunctionBeginUser;
  /* empty rows (every third), with and without inodes */
  for (int inode = 0; inode < 2; inode++) {
    TestMatOptsDefault(&o, 60);
    o.empty_every = 3;
    o.inode       = inode ? PETSC_TRUE : PETSC_FALSE;
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &Aaij));
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &Amp));
    PetscCall(CompareModes(Amp, Aaij, NULL, inode ? "empty rows (inodes)" : "empty rows"));
    PetscCall(MatDestroy(&Amp));
    PetscCall(MatDestroy(&Aaij));
  }
  /* a matrix without any nonzero */
  {
    Mat A[2];
    for (int k = 0; k < 2; k++) {
      PetscCall(MatCreate(PETSC_COMM_WORLD, &A[k]));
      PetscCall(MatSetSizes(A[k], PETSC_DECIDE, PETSC_DECIDE, 30, 30));
      PetscCall(MatSetType(A[k], k ? MATAIJMP : MATAIJ));
      PetscCall(MatSetUp(A[k]));
      PetscCall(MatAssemblyBegin(A[k], MAT_FINAL_ASSEMBLY));
      PetscCall(MatAssemblyEnd(A[k], MAT_FINAL_ASSEMBLY));
    }
    PetscCall(CompareModes(A[1], A[0], NULL, "no nonzeros"));
    {
      MatAIJMPInfo info;
      PetscInt64   nnz = 0;
      PetscCall(MatAIJMPGetInfo(A[1], &info));
      for (int f = 0; f < PETSCMP_NUM_FORMATS; f++) nnz += info.nnz[f];
      TEST_CHECK(PETSC_COMM_WORLD, nnz == 0 && !info.lossy, "empty matrix: info nnz %" PetscInt64_FMT, nnz);
    }
    PetscCall(MatDestroy(&A[0]));
    PetscCall(MatDestroy(&A[1]));
  }
  /* rectangular, both ways, with and without inodes */
  const PetscInt shapes[2][2] = {{42, 75}, {75, 42}};
  for (int s = 0; s < 2; s++)
    for (int inode = 0; inode < 2; inode++) {
      TestMatOptsDefault(&o, shapes[s][0]);
      o.N     = shapes[s][1];
      o.inode = inode ? PETSC_TRUE : PETSC_FALSE;
      PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &Aaij));
      PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &Amp));
      PetscCall(PetscSNPrintf(label, sizeof label, "rectangular %" PetscInt_FMT "x%" PetscInt_FMT "%s", o.M, o.N, inode ? " (inodes)" : ""));
      PetscCall(CompareModes(Amp, Aaij, NULL, label));
      PetscCall(MatDestroy(&Amp));
      PetscCall(MatDestroy(&Aaij));
    }
  /* a rank that owns no rows (rank 1 when parallel), square and rectangular */
  for (int s = 0; s < 2; s++) {
    TestMatOptsDefault(&o, 48);
    o.N = s ? 33 : 48;
    if (size > 1) { /* rank 1 owns nothing; the others share the rows, the last of them takes the remainder */
      const PetscInt others = size - 1, share = o.M / others, last = size == 2 ? 0 : size - 1;
      o.mlocal = rank == 1 ? 0 : share + (rank == last ? o.M - share * others : 0);
      o.nlocal = s ? PETSC_DECIDE : o.mlocal;
    }
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &Aaij));
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &Amp));
    {
      PetscInt m;
      PetscCall(MatGetLocalSize(Amp, &m, NULL));
      if (size > 1) TEST_CHECK(PETSC_COMM_WORLD, rank != 1 || m == 0, "rank 1 owns %" PetscInt_FMT " rows, expected 0", m);
    }
    PetscCall(CompareModes(Amp, Aaij, NULL, s ? "a rank without rows (rectangular)" : "a rank without rows"));
    PetscCall(MatDestroy(&Amp));
    PetscCall(MatDestroy(&Aaij));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode TestErrors(void)
{
  TestMatOpts     o;
  Mat             A, Aaij;
  Vec             x, y, y2;
  MatAIJMPStorage st;
  MatAIJMPInfo    info;

  PetscFunctionBeginUser;
  TestMatOptsDefault(&o, 30);
  /* products with an unassembled matrix: an error, not a crash; afterwards the matrix works */
  PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
  PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, o.M, o.N));
  PetscCall(MatSetType(A, MATAIJMP));
  PetscCall(MatSeqAIJSetPreallocation(A, 12, NULL));
  PetscCall(MatMPIAIJSetPreallocation(A, 12, NULL, 12, NULL));
  PetscCall(TestMatSetEntries(A, &o, 1.0));
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(VecDuplicate(y, &y2));
  PetscCall(TestVecFill(x, 3));
  EXPECT_ERROR(MatMult(A, x, y), "MatMult on an unassembled aijmp matrix");
  EXPECT_ERROR(MatMultTranspose(A, x, y), "MatMultTranspose on an unassembled aijmp matrix");
  EXPECT_ERROR(MatMultAdd(A, x, y, y), "MatMultAdd on an unassembled aijmp matrix");
  EXPECT_ERROR(MatAIJMPGetInfo(A, &info), "MatAIJMPGetInfo on an unassembled aijmp matrix");
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &Aaij));
  PetscCall(MatMult(A, x, y));
  PetscCall(MatMult(Aaij, x, y2));
  PetscCall(TestCheckBitwise(y, y2, "MatMult after the failed unassembled products"));

  /* invalid settings through the API: errors, the setting is unchanged */
  PetscCall(MatAIJMPSetStorage(A, MAT_AIJMP_FP16));
  EXPECT_ERROR(MatAIJMPSetTolerance(A, -1.0), "MatAIJMPSetTolerance(-1)");
  EXPECT_ERROR(MatAIJMPSetTolerance(A, NAN), "MatAIJMPSetTolerance(NaN)");
  EXPECT_ERROR(MatAIJMPSetStorage(A, (MatAIJMPStorage)42), "MatAIJMPSetStorage(42)");
  EXPECT_ERROR(MatAIJMPSetStorage(A, (MatAIJMPStorage)-1), "MatAIJMPSetStorage(-1)");
  EXPECT_ERROR(MatAIJMPSetRowSplit(A, 0.0, 0.5), "MatAIJMPSetRowSplit(0, 0.5)");
  EXPECT_ERROR(MatAIJMPSetRowSplit(A, 0.1, 1.5), "MatAIJMPSetRowSplit(0.1, 1.5)");
  EXPECT_ERROR(MatAIJMPSetEntrySplitRange(A, -2.0), "MatAIJMPSetEntrySplitRange(-2)");
  EXPECT_ERROR(MatAIJMPSetNumThreads(A, -1), "MatAIJMPSetNumThreads(-1)");
  PetscCall(MatAIJMPGetStorage(A, &st));
  TEST_CHECK(PETSC_COMM_WORLD, st == MAT_AIJMP_FP16, "storage after failed calls: %s", MatAIJMPStorages[st]);
  PetscCall(MatAIJMPGetInfo(A, &info));
  TEST_CHECK(PETSC_COMM_WORLD, info.nnz[PETSCMP_FP16] > 0 && info.lossy, "fp16 storage after failed calls not in effect");
  /* on a matrix of another type the setters do nothing, MatAIJMPGetInfo errors */
  PetscCall(MatAIJMPSetStorage(Aaij, MAT_AIJMP_FP16));
  PetscCall(MatAIJMPGetStorage(Aaij, &st));
  TEST_CHECK(PETSC_COMM_WORLD, st == MAT_AIJMP_LOSSLESS, "storage of an AIJ matrix: %s", MatAIJMPStorages[st]);
  EXPECT_ERROR(MatAIJMPGetInfo(Aaij, &info), "MatAIJMPGetInfo on MATAIJ");
  PetscCall(MatDestroy(&A));

  /* invalid options: through MatSetFromOptions and through the lazy read at the first product */
  for (int lazy = 0; lazy < 2; lazy++) {
    PetscErrorCode ierr;
    PetscCall(PetscOptionsSetValue(NULL, "-mat_aijmp_storage", "nonsense"));
    PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
    PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, o.M, o.N));
    PetscCall(MatSetType(A, MATAIJMP));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = lazy ? 0 : MatSetFromOptions(A);
    PetscCall(PetscPopErrorHandler());
    if (!lazy) TEST_CHECK(PETSC_COMM_WORLD, ierr != 0, "-mat_aijmp_storage nonsense accepted by MatSetFromOptions");
    PetscCall(MatSeqAIJSetPreallocation(A, 12, NULL));
    PetscCall(MatMPIAIJSetPreallocation(A, 12, NULL, 12, NULL));
    PetscCall(TestMatSetEntries(A, &o, 1.0));
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    if (lazy) EXPECT_ERROR(MatMult(A, x, y), "-mat_aijmp_storage nonsense at the first MatMult (no MatSetFromOptions)");
    PetscCall(PetscOptionsClearValue(NULL, "-mat_aijmp_storage"));
    PetscCall(MatDestroy(&A));
  }
  /* a negative tolerance through the options database */
  {
    PetscErrorCode ierr;
    PetscCall(PetscOptionsSetValue(NULL, "-mat_aijmp_storage", "tolerance"));
    PetscCall(PetscOptionsSetValue(NULL, "-mat_aijmp_tolerance", "-1"));
    PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
    PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, o.M, o.N));
    PetscCall(MatSetType(A, MATAIJMP));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatSetFromOptions(A);
    if (!ierr) {
      ierr = MatSetUp(A);
      if (!ierr) ierr = MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY);
      if (!ierr) ierr = MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY);
      if (!ierr) ierr = MatMult(A, x, y);
    }
    PetscCall(PetscPopErrorHandler());
    TEST_CHECK(PETSC_COMM_WORLD, ierr != 0, "-mat_aijmp_tolerance -1 accepted (MatSetFromOptions and MatMult succeed)");
    PetscCall(PetscOptionsClearValue(NULL, "-mat_aijmp_storage"));
    PetscCall(PetscOptionsClearValue(NULL, "-mat_aijmp_tolerance"));
    PetscCall(MatDestroy(&A));
  }
  PetscCall(MatDestroy(&Aaij));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&y2));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(TestNaNInf());
  PetscCall(TestRange());
  PetscCall(TestShapes());
  {
    /* PETSc 3.18 itself leaks a few PetscMalloc blocks when PetscOptionsGetEList/PetscOptionsEnum fail
       (-mat_aijmp_storage nonsense): the -malloc_dump test skips the error cases */
    PetscBool skip = PETSC_FALSE;
    PetscCall(PetscOptionsGetBool(NULL, NULL, "-skip_errors", &skip, NULL));
    if (!skip) PetscCall(TestErrors());
  }
  int rc = TestFinish();
  PetscCall(PetscFinalize());
  return rc;
}
