static char help[] = "petscmp: no stale compact copy. After a first MatMult, every value-changing operation is applied to a\n"
                     "MATAIJMP matrix and to a MATAIJ matrix with the same values; MatMult and MatMultAdd must stay bitwise\n"
                     "equal (lossless storage).\n"
                     "  -M <rows> (default 60)\n\n";

#include "petscmp_test.h"

typedef struct {
  TestMatOpts o;
  Mat         C;    /* MATAIJ, same pattern, other values */
  Mat         Cmp;  /* MATAIJMP copy of C */
  Mat         D;    /* MATAIJ diagonal: a subset of the pattern */
  Mat         E;    /* MATAIJ diagonal plus entries outside the pattern */
  Vec         l, r, d;
} Ctx;

static const char *const opnames[] = {"MatScale",
                                      "MatShift",
                                      "MatDiagonalScale",
                                      "MatDiagonalSet(INSERT_VALUES)",
                                      "MatDiagonalSet(ADD_VALUES)",
                                      "MatZeroEntries + set values + assembly",
                                      "MatSetValues (existing entries) + assembly",
                                      "MatAXPY(SAME_NONZERO_PATTERN)",
                                      "MatAXPY(SUBSET_NONZERO_PATTERN)",
                                      "MatZeroRows (MAT_KEEP_NONZERO_PATTERN)",
                                      "MatSeqAIJGetArray/RestoreArray (diagonal block)",
                                      "MatSeqAIJGetArray/RestoreArray (off-diagonal block)",
                                      "MatStoreValues + MatScale",
                                      "MatRetrieveValues",
                                      "MatStoreValues + MatSetValues + assembly",
                                      "MatRetrieveValues (2)",
                                      "MatCopy(SAME_NONZERO_PATTERN) from MATAIJ",
                                      "MatCopy(SAME_NONZERO_PATTERN) from MATAIJMP",
                                      "new nonzero locations (MatSetValues + assembly)",
                                      "MatCopy(DIFFERENT_NONZERO_PATTERN) from MATAIJ",
                                      "MatAXPY(DIFFERENT_NONZERO_PATTERN)",
                                      "MatZeroRows (pattern not kept)",
                                      "MatScale after everything"};
#define NOPS ((int)(sizeof opnames / sizeof opnames[0]))

static PetscErrorCode EditArray(Mat S)
{
  PetscScalar *a;
  PetscInt     m;
  MatInfo      info;

  PetscFunctionBeginUser;
  if (!S) PetscFunctionReturn(0);
  PetscCall(MatGetLocalSize(S, &m, NULL));
  PetscCall(MatGetInfo(S, MAT_LOCAL, &info));
  PetscCall(MatSeqAIJGetArray(S, &a));
  const PetscInt nz = (PetscInt)info.nz_used;
  if (nz > 0) {
    a[0] = a[0] * 3.0 + 0.1; /* 0.1: a value that needs fp64 */
    a[nz - 1] = -7.0;
    a[nz / 2] += 1.0 / 3.0;
  }
  PetscCall(MatSeqAIJRestoreArray(S, &a));
  PetscFunctionReturn(0);
}

static PetscErrorCode Apply(Mat X, int op, Ctx *c)
{
  PetscInt rstart, rend, M, N;
  Mat      Xd, Xo;

  PetscFunctionBeginUser;
  PetscCall(MatGetOwnershipRange(X, &rstart, &rend));
  PetscCall(MatGetSize(X, &M, &N));
  switch (op) {
  case 0: PetscCall(MatScale(X, 2.5)); break;
  case 1: PetscCall(MatShift(X, 1.25)); break;
  case 2: PetscCall(MatDiagonalScale(X, c->l, c->r)); break;
  case 3: PetscCall(MatDiagonalSet(X, c->d, INSERT_VALUES)); break;
  case 4: PetscCall(MatDiagonalSet(X, c->d, ADD_VALUES)); break;
  case 5:
    PetscCall(MatZeroEntries(X));
    PetscCall(TestMatSetEntries(X, &c->o, 3.0));
    PetscCall(MatAssemblyBegin(X, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(X, MAT_FINAL_ASSEMBLY));
    break;
  case 6:
  case 14: {
    PetscInt cols[12];
    if (op == 14) PetscCall(MatStoreValues(X)); /* MAT_NEW_NONZERO_LOCATIONS is still PETSC_FALSE (op 12) */
    for (PetscInt i = rstart; i < rend; i += 3) {
      const PetscInt n = TestRowCols(&c->o, i, cols);
      if (n) {
        const PetscScalar v = 0.7 + (double)i + (op == 14 ? 0.5 : 0.0);
        PetscCall(MatSetValues(X, 1, &i, 1, &cols[n - 1], &v, INSERT_VALUES));
      }
    }
    PetscCall(MatAssemblyBegin(X, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(X, MAT_FINAL_ASSEMBLY));
  } break;
  case 7: PetscCall(MatAXPY(X, 0.5, c->C, SAME_NONZERO_PATTERN)); break;
  case 8: PetscCall(MatAXPY(X, -0.75, c->D, SUBSET_NONZERO_PATTERN)); break;
  case 9:
  case 21: {
    const PetscInt rows[3] = {0, M / 2, M - 1};
    PetscMPIInt    rank;
    PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)X), &rank));
    PetscCall(MatSetOption(X, MAT_KEEP_NONZERO_PATTERN, op == 9 ? PETSC_TRUE : PETSC_FALSE));
    PetscCall(MatZeroRows(X, rank == 0 ? 3 : 0, rows, op == 9 ? 2.0 : -4.0, NULL, NULL));
  } break;
  case 10:
  case 11:
    PetscCall(TestLocalBlocks(X, &Xd, &Xo));
    PetscCall(EditArray(op == 10 ? Xd : Xo));
    break;
  case 12:
    PetscCall(MatSetOption(X, MAT_NEW_NONZERO_LOCATIONS, PETSC_FALSE));
    PetscCall(MatStoreValues(X));
    PetscCall(MatScale(X, -3.0));
    break;
  case 13:
  case 15: PetscCall(MatRetrieveValues(X)); break;
  case 16: PetscCall(MatCopy(c->C, X, SAME_NONZERO_PATTERN)); break;
  case 17: PetscCall(MatCopy(c->Cmp, X, SAME_NONZERO_PATTERN)); break;
  case 18: {
    PetscCall(MatSetOption(X, MAT_NEW_NONZERO_LOCATIONS, PETSC_TRUE));
    PetscCall(MatSetOption(X, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    for (PetscInt i = rstart; i < rend; i += 2) {
      const PetscInt    j = (i + M / 2 + 1) % N; /* off-process columns in parallel */
      const PetscScalar v = 0.125 + (double)i;
      PetscCall(MatSetValues(X, 1, &i, 1, &j, &v, ADD_VALUES));
    }
    PetscCall(MatAssemblyBegin(X, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(X, MAT_FINAL_ASSEMBLY));
  } break;
  case 19: PetscCall(MatCopy(c->C, X, DIFFERENT_NONZERO_PATTERN)); break;
  case 20: PetscCall(MatAXPY(X, 2.0, c->E, DIFFERENT_NONZERO_PATTERN)); break;
  case 22: PetscCall(MatScale(X, 0.5)); break;
  default: break;
  }
  PetscFunctionReturn(0);
}

/* Value-only rebuilds (a Newton-like loop): every value is set again with the same pattern, or scaled. While every row
   keeps its format the copy keeps its layout and indices and only its values are rewritten (MatAIJMPInfo.value_builds
   counts these, builds the full ones); the products must equal those of a copy built from scratch (MatDuplicate) and,
   lossless, AIJ's. A factor that changes the rows' formats must give a full build. */
static PetscErrorCode CheckBuilds(Mat A, PetscInt64 builds, PetscInt64 value_builds, const char *what)
{
  MatAIJMPInfo info;

  PetscFunctionBeginUser;
  PetscCall(MatAIJMPGetInfo(A, &info));
  TEST_CHECK(PetscObjectComm((PetscObject)A), info.builds == builds && info.value_builds == value_builds,
             "%s: %" PetscInt64_FMT " full builds and %" PetscInt64_FMT " value-only rebuilds, expected %" PetscInt64_FMT
             " and %" PetscInt64_FMT, what, info.builds, info.value_builds, builds, value_builds);
  PetscFunctionReturn(0);
}

static PetscErrorCode NewtonLoop(const TestMatOpts *o, MatAIJMPStorage storage, double format_changing_factor, Vec x)
{
  Mat  A, B, F;
  Vec  y1, y2;
  char what[256];
  /* the factors keep each row's format (powers of two keep exactness and stay in range); the last changes formats */
  const double factors[]   = {2.0, -0.5, 0.25, 4.0, format_changing_factor};
  const int    nfactors    = (int)(sizeof factors / sizeof factors[0]);
  PetscInt64   value_steps = 0;

  PetscFunctionBeginUser;
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, o, &A));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, o, &B));
  PetscCall(MatAIJMPSetStorage(A, storage));
  PetscCall(MatAIJMPSetKernel(A, MAT_AIJMP_KERNEL_COMPACT)); /* lossless auto may keep AIJ's kernel and no copy */
  PetscCall(MatCreateVecs(A, NULL, &y1));
  PetscCall(VecDuplicate(y1, &y2));
  PetscCall(MatMult(A, x, y1));
  PetscCall(CheckBuilds(A, 1, 0, "first product"));
  for (int k = 0; k < nfactors; k++) {
    const PetscBool last = k == nfactors - 1 ? PETSC_TRUE : PETSC_FALSE;
    if (k % 2 == 0) { /* set every entry again, as an assembly loop does */
      PetscCall(TestMatSetEntries(A, o, factors[k]));
      PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
      PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
      PetscCall(TestMatSetEntries(B, o, factors[k]));
      PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
      PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
    } else {
      PetscCall(MatScale(A, factors[k]));
      PetscCall(MatScale(B, factors[k]));
    }
    PetscCall(MatMult(A, x, y1));
    if (!last) value_steps++;
    PetscCall(PetscSNPrintf(what, sizeof what, "%s, step %d (factor %g)", MatAIJMPStorages[storage], k, factors[k]));
    PetscCall(CheckBuilds(A, last ? 2 : 1, value_steps, what));
    PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &F)); /* its copy is built from scratch */
    PetscCall(MatMult(F, x, y2));
    PetscCall(TestCheckBitwise(y1, y2, what));
    PetscCall(CheckBuilds(F, 1, 0, "duplicate"));
    PetscCall(MatDestroy(&F));
    if (storage == MAT_AIJMP_LOSSLESS) {
      PetscCall(MatMult(B, x, y2));
      PetscCall(TestCheckBitwise(y1, y2, what));
    }
  }
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));
  PetscCall(VecDestroy(&y1));
  PetscCall(VecDestroy(&y2));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscMPIInt size;
  PetscInt    M = 60, rstart, rend;
  Ctx         c;
  Mat         A, B;
  Vec         x, y1, y2, z;
  char        what[256];

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-M", &M, NULL));
  TestMatOptsDefault(&c.o, M);

  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &c.o, &A));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &c.o, &B));
  {
    TestMatOpts oc = c.o;
    oc.seed        = 1; /* same pattern (the pattern depends on the seed) ... */
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &oc, &c.C));
    PetscCall(MatScale(c.C, -1.0 / 3.0)); /* ... other values */
    PetscCall(MatConvert(c.C, MATAIJMP, MAT_INITIAL_MATRIX, &c.Cmp));
  }
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, M, M, 2, NULL, 2, NULL, &c.D));
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, M, M, 2, NULL, 2, NULL, &c.E));
  PetscCall(MatGetOwnershipRange(c.D, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; i++) {
    const PetscInt    j = (i + 7) % M;
    const PetscScalar v = 1.0 + 1.0 / (double)(i + 3), w = 0.3;
    PetscCall(MatSetValues(c.D, 1, &i, 1, &i, &v, INSERT_VALUES));
    PetscCall(MatSetValues(c.E, 1, &i, 1, &i, &v, INSERT_VALUES));
    PetscCall(MatSetValues(c.E, 1, &i, 1, &j, &w, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(c.D, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(c.D, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyBegin(c.E, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(c.E, MAT_FINAL_ASSEMBLY));

  PetscCall(MatCreateVecs(B, &x, &y1));
  PetscCall(VecDuplicate(y1, &y2));
  PetscCall(VecDuplicate(y1, &z));
  PetscCall(VecDuplicate(y1, &c.l));
  PetscCall(VecDuplicate(x, &c.r));
  PetscCall(VecDuplicate(y1, &c.d));
  PetscCall(TestVecFill(x, 3));
  PetscCall(TestVecFill(z, 4));
  PetscCall(TestVecFill(c.l, 5));
  PetscCall(TestVecFill(c.r, 6));
  PetscCall(TestVecFill(c.d, 7));

  PetscCall(MatMult(A, x, y1));
  PetscCall(MatMult(B, x, y2));
  PetscCall(TestCheckBitwise(y1, y2, "first MatMult"));

  /* the DIFFERENT_NONZERO_PATTERN operations replace the matrix's insides (MatHeaderMerge): last */
  const int order[NOPS] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 21, 22, 19, 20};
  for (int k = 0; k < NOPS; k++) {
    const int op = order[k];
    PetscCall(Apply(A, op, &c));
    PetscCall(Apply(B, op, &c));
    PetscCall(MatMult(A, x, y1));
    PetscCall(MatMult(B, x, y2));
    PetscCall(PetscSNPrintf(what, sizeof what, "MatMult after %s", opnames[op]));
    PetscCall(TestCheckBitwise(y1, y2, what));
    PetscCall(MatMultAdd(A, x, z, y1));
    PetscCall(MatMultAdd(B, x, z, y2));
    PetscCall(PetscSNPrintf(what, sizeof what, "MatMultAdd after %s", opnames[op]));
    PetscCall(TestCheckBitwise(y1, y2, what));
    PetscCall(PetscSNPrintf(what, sizeof what, "type after %s", opnames[op]));
    PetscCall(TestCheckType(A, size == 1 ? MATSEQAIJMP : MATMPIAIJMP, what));
    if (size > 1) {
      Mat Ad, Ao;
      PetscCall(TestLocalBlocks(A, &Ad, &Ao));
      PetscCall(PetscSNPrintf(what, sizeof what, "diagonal block type after %s", opnames[op]));
      PetscCall(TestCheckType(Ad, MATSEQAIJMP, what));
      PetscCall(PetscSNPrintf(what, sizeof what, "off-diagonal block type after %s", opnames[op]));
      PetscCall(TestCheckType(Ao, MATSEQAIJMP, what));
    }
  }
  /* the operations changed the values: the final result is not the first one */
  {
    PetscInt nd;
    PetscCall(MatMult(A, x, y1));
    PetscCall(MatMult(c.Cmp, x, y2));
    PetscCall(TestVecBitDiff(y1, y2, &nd));
    TEST_CHECK(PETSC_COMM_WORLD, nd > 0, "the operations left the matrix unchanged");
  }

  {
    TestMatOpts on = c.o;
    on.inode       = PETSC_TRUE; /* node layout */
    PetscCall(NewtonLoop(&c.o, MAT_AIJMP_LOSSLESS, 1.0 / 3.0, x)); /* 1/3: fp16/bf16/fp32-exact rows need fp64 */
    PetscCall(NewtonLoop(&on, MAT_AIJMP_LOSSLESS, 1.0 / 3.0, x));
    PetscCall(NewtonLoop(&on, MAT_AIJMP_FP32, 1e-300, x)); /* 1e-300: below fp32's range, rows go to fp64 */
    PetscCall(NewtonLoop(&c.o, MAT_AIJMP_FP16, 1e-300, x));
  }

  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));
  PetscCall(MatDestroy(&c.C));
  PetscCall(MatDestroy(&c.Cmp));
  PetscCall(MatDestroy(&c.D));
  PetscCall(MatDestroy(&c.E));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y1));
  PetscCall(VecDestroy(&y2));
  PetscCall(VecDestroy(&z));
  PetscCall(VecDestroy(&c.l));
  PetscCall(VecDestroy(&c.r));
  PetscCall(VecDestroy(&c.d));
  int rc = TestFinish();
  PetscCall(PetscFinalize());
  return rc;
}
