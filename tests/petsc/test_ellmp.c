/* MATELLMP against MATAIJ: the stored values (bitwise in lossless mode, within the mode's unit roundoff
   otherwise), and every operation reading them agrees with AIJ holding the stored values (products, rows,
   values, diagonal, conversion, binary files); the operations that change values agree with AIJ's bit for bit
   in lossless mode; memory per nonzero; non-finite and extreme values; a KSP solve.
   Options: -test_bound_scale s (< 1: the negative control: the lossy bounds must then fail). */
#include "petscmp_test.h"

#include <petscdmda.h>
#include <petscksp.h>
#include <stdio.h>
#include <unistd.h>

static PetscMPIInt size_of_world(void)
{
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  return size;
}

/* Every entry of E (pattern and value) against A's: bitwise when u == 0, else |e - a| <= u |a|. */
static PetscErrorCode CompareEntries(Mat E, Mat A, double u, const char *what)
{
  PetscInt rstart, rend, bad_pattern = 0, bad_value = 0;

  PetscFunctionBeginUser;
  u *= g_bound_scale;
  PetscCall(MatGetOwnershipRange(E, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; i++) {
    PetscInt           ne, na;
    const PetscInt    *ce, *ca;
    const PetscScalar *ve, *va;
    PetscScalar       *ve_copy;
    PetscInt          *ce_copy;
    PetscCall(MatGetRow(E, i, &ne, &ce, &ve));
    PetscCall(PetscMalloc2(ne, &ce_copy, ne, &ve_copy)); /* one MatGetRow at a time per matrix */
    PetscCall(PetscArraycpy(ce_copy, ce, ne));
    PetscCall(PetscArraycpy(ve_copy, ve, ne));
    PetscCall(MatRestoreRow(E, i, NULL, &ce, &ve));
    PetscCall(MatGetRow(A, i, &na, &ca, &va));
    if (ne != na) bad_pattern++;
    else
      for (PetscInt k = 0; k < na; k++) {
        if (ce_copy[k] != ca[k]) bad_pattern++;
        const double e = ve_copy[k], a = va[k];
        if (u == 0.0) {
          if (memcmp(&e, &a, sizeof e)) bad_value++;
        } else if (isnan(a)) {
          if (!isnan(e)) bad_value++;
        } else if (!(fabs(e - a) <= u * fabs(a))) bad_value++;
      }
    PetscCall(MatRestoreRow(A, i, &na, &ca, &va));
    PetscCall(PetscFree2(ce_copy, ve_copy));
  }
  TEST_CHECK(PETSC_COMM_WORLD, bad_pattern == 0, "%s: %" PetscInt_FMT " entries differ in position", what, bad_pattern);
  TEST_CHECK(PETSC_COMM_WORLD, bad_value == 0, "%s: %" PetscInt_FMT " values beyond %g relative", what, bad_value, u);
  PetscFunctionReturn(0);
}

/* y1 (E's product) against y2 (B's): bitwise, or, when E sums in another order (entrysplit adds its two
   parts' products one after the other), within the bound of a reordered fp64 sum. */
static PetscErrorCode CompareProduct(Mat B, PetscBool reordered, PetscBool transpose, Vec x, Vec z, Vec y1, Vec y2, const char *label)
{
  PetscInt ndiffer;

  PetscFunctionBeginUser;
  if (reordered) PetscCall(TestCheckBound(B, transpose, x, z, y1, y2, 0.0, label, &ndiffer));
  else PetscCall(TestCheckBitwise(y1, y2, label));
  PetscFunctionReturn(0);
}

/* The four products, the diagonal and MatGetValues of E bitwise those of the AIJ matrix B. */
static PetscErrorCode CompareOperationsOrdered(Mat E, Mat B, PetscBool reordered, const char *what)
{
  Vec      x, xt, y1, y2, z, t1, t2;
  char     label[256];
  PetscInt M, N;

  PetscFunctionBeginUser;
  PetscCall(MatGetSize(E, &M, &N));
  PetscCall(MatCreateVecs(B, &x, &y1));
  PetscCall(MatCreateVecs(B, &t1, &xt));
  PetscCall(VecDuplicate(y1, &y2));
  PetscCall(VecDuplicate(y1, &z));
  PetscCall(VecDuplicate(t1, &t2));
  PetscCall(TestVecFill(x, 3));
  PetscCall(TestVecFill(xt, 4));
  PetscCall(TestVecFill(z, 5));
  PetscCall(MatMult(E, x, y1));
  PetscCall(MatMult(B, x, y2));
  PetscCall(PetscSNPrintf(label, sizeof label, "%s: MatMult", what));
  PetscCall(CompareProduct(B, reordered, PETSC_FALSE, x, NULL, y1, y2, label));
  PetscCall(MatMultAdd(E, x, z, y1));
  PetscCall(MatMultAdd(B, x, z, y2));
  PetscCall(PetscSNPrintf(label, sizeof label, "%s: MatMultAdd", what));
  PetscCall(CompareProduct(B, reordered, PETSC_FALSE, x, z, y1, y2, label));
  PetscCall(VecCopy(z, y1)); /* y = A x + y, in place */
  PetscCall(VecCopy(z, y2));
  PetscCall(MatMultAdd(E, x, y1, y1));
  PetscCall(MatMultAdd(B, x, y2, y2));
  PetscCall(PetscSNPrintf(label, sizeof label, "%s: MatMultAdd in place", what));
  PetscCall(CompareProduct(B, reordered, PETSC_FALSE, x, z, y1, y2, label));
  PetscCall(MatMultTranspose(E, xt, t1));
  PetscCall(MatMultTranspose(B, xt, t2));
  PetscCall(PetscSNPrintf(label, sizeof label, "%s: MatMultTranspose", what));
  PetscCall(CompareProduct(B, reordered, PETSC_TRUE, xt, NULL, t1, t2, label));
  PetscCall(VecSet(t2, 0.5));
  PetscCall(VecCopy(t2, t1));
  PetscCall(MatMultTransposeAdd(E, xt, t1, t1));
  PetscCall(MatMultTransposeAdd(B, xt, t2, t2));
  PetscCall(PetscSNPrintf(label, sizeof label, "%s: MatMultTransposeAdd", what));
  {
    Vec half;
    PetscCall(VecDuplicate(t1, &half));
    PetscCall(VecSet(half, 0.5));
    PetscCall(CompareProduct(B, reordered, PETSC_TRUE, xt, half, t1, t2, label));
    PetscCall(VecDestroy(&half));
  }
  if (M == N) {
    PetscCall(MatGetDiagonal(E, y1));
    PetscCall(MatGetDiagonal(B, y2));
    PetscCall(PetscSNPrintf(label, sizeof label, "%s: MatGetDiagonal", what));
    PetscCall(TestCheckBitwise(y1, y2, label));
  }
  { /* a few local rows and columns, present and absent entries, negative indices skipped */
    PetscInt rstart, rend;
    PetscCall(MatGetOwnershipRange(B, &rstart, &rend));
    if (rend == rstart) rstart = rend = -1; /* no local rows: all skipped */
    PetscInt    rows[4] = {rstart, (rstart + rend) / 2, -1, rend < 0 ? -1 : rend - 1}, cols[5] = {0, 1, N / 2, -1, N - 1};
    PetscScalar ve[20], va[20];
    for (int k = 0; k < 20; k++) ve[k] = va[k] = -7.0;
    PetscCall(MatGetValues(E, 4, rows, 5, cols, ve));
    PetscCall(MatGetValues(B, 4, rows, 5, cols, va));
    TEST_CHECK(PETSC_COMM_WORLD, memcmp(ve, va, sizeof ve) == 0, "%s: MatGetValues differs from AIJ's", what);
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&xt));
  PetscCall(VecDestroy(&y1));
  PetscCall(VecDestroy(&y2));
  PetscCall(VecDestroy(&z));
  PetscCall(VecDestroy(&t1));
  PetscCall(VecDestroy(&t2));
  PetscFunctionReturn(0);
}

static PetscErrorCode CompareOperations(Mat E, Mat B, const char *what)
{
  return CompareOperationsOrdered(E, B, PETSC_FALSE, what);
}

/* MatSOR of E (ellmp: the stored rows swept, AIJ's inode SOR included; an AIJ copy for its inode Eisenstat)
   bitwise that of B (AIJ with E's values): every sweep kind, omega and shift, its and lits. Square matrices with
   every diagonal entry (AIJ's SOR reads past a row without one). */
static PetscErrorCode CompareSOR(Mat E, Mat B, const char *what)
{
  Vec         b, x1, x2;
  char        label[256];
  PetscMPIInt size;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)E), &size));
  PetscCall(MatCreateVecs(B, &x1, &b));
  PetscCall(VecDuplicate(x1, &x2));
  PetscCall(TestVecFill(b, 6));
  const MatSORType serial[]   = {SOR_FORWARD_SWEEP, SOR_BACKWARD_SWEEP, SOR_SYMMETRIC_SWEEP, SOR_FORWARD_SWEEP | SOR_ZERO_INITIAL_GUESS,
                                 SOR_BACKWARD_SWEEP | SOR_ZERO_INITIAL_GUESS, SOR_SYMMETRIC_SWEEP | SOR_ZERO_INITIAL_GUESS,
                                 SOR_EISENSTAT, SOR_APPLY_UPPER, SOR_LOCAL_SYMMETRIC_SWEEP};
  const MatSORType parallel[] = {SOR_LOCAL_FORWARD_SWEEP, SOR_LOCAL_BACKWARD_SWEEP, SOR_LOCAL_SYMMETRIC_SWEEP,
                                 SOR_LOCAL_SYMMETRIC_SWEEP | SOR_ZERO_INITIAL_GUESS, SOR_LOCAL_FORWARD_SWEEP | SOR_ZERO_INITIAL_GUESS,
                                 SOR_APPLY_UPPER}; /* (MPIAIJ's Eisenstat needs inodes) */
  const MatSORType *flags = size > 1 ? parallel : serial;
  const int         nflags = size > 1 ? 6 : 9;
  const PetscReal   omegas[] = {1.0, 0.8, 1.3}, shifts[] = {0.0, 0.5};
  for (int f = 0; f < nflags; f++)
    for (int w = 0; w < 3; w++)
      for (int h = 0; h < 2; h++)
        for (PetscInt its = 1; its <= 2; its++) {
          const PetscInt lits = 3 - its;
          PetscCall(TestVecFill(x1, 7));
          PetscCall(VecCopy(x1, x2));
          PetscCall(MatSOR(E, b, omegas[w], flags[f], shifts[h], its, lits, x1));
          PetscCall(MatSOR(B, b, omegas[w], flags[f], shifts[h], its, lits, x2));
          PetscCall(PetscSNPrintf(label, sizeof label, "%s: MatSOR flag %d omega %g shift %g its %" PetscInt_FMT " lits %" PetscInt_FMT, what, (int)flags[f],
                                  (double)omegas[w], (double)shifts[h], its, lits));
          PetscCall(TestCheckBitwise(x1, x2, label));
        }
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&x1));
  PetscCall(VecDestroy(&x2));
  PetscFunctionReturn(0);
}

/* Assembles A (AIJ) and E (ellmp) after the same MatSetValues, then compares them bit for bit. */
static PetscErrorCode AssembleAndCompare(Mat A, Mat E, const char *what)
{
  PetscFunctionBeginUser;
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyBegin(E, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(E, MAT_FINAL_ASSEMBLY));
  PetscCall(CompareEntries(E, A, 0.0, what));
  PetscCall(CompareOperations(E, A, what));
  PetscFunctionReturn(0);
}

static PetscErrorCode SetStorage(const char *mode)
{
  PetscFunctionBeginUser;
  PetscCall(PetscOptionsSetValue(NULL, "-mat_ellmp_storage", mode));
  PetscCall(PetscOptionsSetValue(NULL, "-mat_ellmp_tolerance", "1e-3"));
  PetscFunctionReturn(0);
}

/* E in `mode` holds A's values within u; every read and product agrees with the AIJ made from E. */
static PetscErrorCode TestStorage(const char *mode, double u, const TestMatOpts *o, const char *kind)
{
  Mat  A, E, B;
  char what[128];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(what, sizeof what, "%s %s", mode, kind));
  PetscCall(SetStorage(mode));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, o, &A));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATELLMP, o, &E));
  PetscCall(TestCheckType(E, size_of_world() > 1 ? MATMPIELLMP : MATSEQELLMP, what));
  PetscCall(CompareEntries(E, A, u, what));
  PetscCall(MatConvert(E, MATAIJ, MAT_INITIAL_MATRIX, &B));
  PetscCall(TestCheckType(B, size_of_world() > 1 ? MATMPIAIJ : MATSEQAIJ, what));
  PetscCall(CompareEntries(B, E, 0.0, what)); /* the conversion gives the stored values */
  PetscCall(CompareOperationsOrdered(E, B, strcmp(mode, "entrysplit") ? PETSC_FALSE : PETSC_TRUE, what));
  if (u == 0.0) PetscCall(CompareOperations(E, A, what)); /* lossless: AIJ's own results */
  if (o->M == o->N && o->empty_every == 0) PetscCall(CompareSOR(E, B, what));
  { /* AIJ -> ellmp conversion stores the same values */
    Mat C;
    PetscCall(MatConvert(A, MATELLMP, MAT_INITIAL_MATRIX, &C));
    PetscCall(TestCheckType(C, size_of_world() > 1 ? MATMPIELLMP : MATSEQELLMP, what));
    PetscCall(CompareEntries(C, E, 0.0, what));
    PetscCall(MatDestroy(&C));
  }
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&E));
  PetscCall(MatDestroy(&B));
  PetscFunctionReturn(0);
}

/* A pattern assembled with zeros first, as DMs preallocate, then the values (the stored zeros' indices are given back
   as the rows are reopened, the values stored by a new build): lossless, AIJ's matrix bit for bit; lossy, the matrix a
   first assembly of the values stores; then a Newton-like reassembly of the new storage. */
static PetscErrorCode TestPatternThenValues(const char *mode, const TestMatOpts *o)
{
  Mat  A, E, F;
  char what[96];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(what, sizeof what, "%s: zeros, then the values", mode));
  PetscCall(SetStorage(mode));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, o, &A));
  PetscCall(MatCreate(PETSC_COMM_WORLD, &E));
  PetscCall(MatSetSizes(E, o->mlocal, o->nlocal, o->M, o->N));
  PetscCall(MatSetType(E, MATELLMP));
  PetscCall(MatSeqAIJSetPreallocation(E, 12, NULL));
  PetscCall(MatMPIAIJSetPreallocation(E, 12, NULL, 12, NULL));
  PetscCall(TestMatSetEntries(E, o, 0.0));
  PetscCall(MatAssemblyBegin(E, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(E, MAT_FINAL_ASSEMBLY));
  PetscCall(TestMatSetEntries(E, o, 1.0));
  PetscCall(MatAssemblyBegin(E, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(E, MAT_FINAL_ASSEMBLY));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATELLMP, o, &F)); /* the values' first assembly */
  PetscCall(CompareEntries(E, F, 0.0, what));
  PetscCall(CompareOperations(E, F, what));
  if (!strcmp(mode, "lossless")) {
    PetscCall(CompareEntries(E, A, 0.0, what));
    PetscCall(CompareOperations(E, A, what));
  }
  PetscCall(PetscSNPrintf(what, sizeof what, "%s: zeros, the values, then new values", mode));
  PetscCall(TestMatSetEntries(A, o, -2.0));
  PetscCall(TestMatSetEntries(E, o, -2.0));
  PetscCall(TestMatSetEntries(F, o, -2.0));
  PetscCall(AssembleAndCompare(F, E, what));
  if (!strcmp(mode, "lossless")) PetscCall(AssembleAndCompare(A, E, what));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&E));
  PetscCall(MatDestroy(&F));
  PetscFunctionReturn(0);
}

/* The operations that change values, on AIJ and on lossless ellmp: the same matrix bit for bit. */
static PetscErrorCode TestChanges(const TestMatOpts *o)
{
  Mat      A, E, X, XE;
  Vec      l, r, d;
  PetscInt rows[3] = {1, 5, 17};

  PetscFunctionBeginUser;
  PetscCall(SetStorage("lossless"));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, o, &A));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATELLMP, o, &E));
  PetscCall(MatCreateVecs(A, &r, &l));
  PetscCall(VecDuplicate(l, &d));
  PetscCall(TestVecFill(l, 8));
  PetscCall(TestVecFill(r, 9));
  PetscCall(TestVecFill(d, 10));
  /* zeroed rows keep their entries (AIJ would otherwise drop them, and the AXPYs below assume the pattern) */
  PetscCall(MatSetOption(A, MAT_KEEP_NONZERO_PATTERN, PETSC_TRUE));
  PetscCall(MatSetOption(E, MAT_KEEP_NONZERO_PATTERN, PETSC_TRUE));
#define BOTH(call_a, call_e, what) \
  do { \
    PetscCall(call_a); \
    PetscCall(call_e); \
    PetscCall(CompareEntries(E, A, 0.0, what)); \
    PetscCall(CompareOperations(E, A, what)); \
  } while (0)
  BOTH(MatScale(A, 2.5), MatScale(E, 2.5), "MatScale");
  BOTH(MatShift(A, 1.25), MatShift(E, 1.25), "MatShift");
  BOTH(MatDiagonalScale(A, l, r), MatDiagonalScale(E, l, r), "MatDiagonalScale");
  BOTH(MatDiagonalSet(A, d, ADD_VALUES), MatDiagonalSet(E, d, ADD_VALUES), "MatDiagonalSet ADD");
  BOTH(MatDiagonalSet(A, d, INSERT_VALUES), MatDiagonalSet(E, d, INSERT_VALUES), "MatDiagonalSet INSERT");
  BOTH(MatZeroRows(A, 3, rows, 2.0, NULL, NULL), MatZeroRows(E, 3, rows, 2.0, NULL, NULL), "MatZeroRows");
  BOTH(MatZeroRowsColumns(A, 3, rows, 3.0, NULL, NULL), MatZeroRowsColumns(E, 3, rows, 3.0, NULL, NULL), "MatZeroRowsColumns");
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, o, &X));
  PetscCall(MatConvert(X, MATELLMP, MAT_INITIAL_MATRIX, &XE));
  BOTH(MatAXPY(A, 0.75, X, SAME_NONZERO_PATTERN), MatAXPY(E, 0.75, X, SAME_NONZERO_PATTERN), "MatAXPY (X aij)");
  BOTH(MatAXPY(A, -1.5, X, DIFFERENT_NONZERO_PATTERN), MatAXPY(E, -1.5, XE, DIFFERENT_NONZERO_PATTERN), "MatAXPY (X ellmp)");
  { /* reassembly: values added to an assembled matrix (the same pattern), then a new entry */
    PetscInt    i = 4, cols[2];
    PetscScalar v[2] = {0.5, -0.25};
    PetscInt    all[12];
    PetscCall(TestRowCols(o, i, all) >= 2 ? 0 : PETSC_ERR_PLIB); /* the row's first two columns exist */
    cols[0] = all[0];
    cols[1] = all[1];
    PetscCall(MatSetValues(A, 1, &i, 2, cols, v, ADD_VALUES));
    PetscCall(MatSetValues(E, 1, &i, 2, cols, v, ADD_VALUES));
    PetscCall(AssembleAndCompare(A, E, "reassembly, same pattern"));
  }
  { /* reassembly with values for other ranks' rows (kept until the collective assembly, then stashed): several
       contributions to one entry, added in the order set, row- and column-oriented, then inserted. Only the next
       rank's rows: a row getting values from two ranks sums them in the order their messages arrive, AIJ too. */
    PetscInt           cols[12], cols2[12], first, count;
    PetscScalar        v[12];
    PetscMPIInt        rank, size;
    const PetscInt    *ranges;
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    PetscCall(MatGetOwnershipRanges(E, &ranges));
    first = ranges[(rank + 1) % size];
    count = ranges[(rank + 1) % size + 1] - first;
    for (PetscInt pass = 0; pass < 3 && count > 0; pass++)
      for (PetscInt k = 0; k < 40; k++) {
        const PetscInt i = first + (7 * k) % count, n = TestRowCols(o, i, cols);
        for (PetscInt c = 0; c < n; c++) v[c] = ldexp(1.0, -(int)(c + pass)) / 3.0 + (double)k;
        if (n) PetscCall(MatSetValues(A, 1, &i, n, cols, v, ADD_VALUES));
        if (n) PetscCall(MatSetValues(E, 1, &i, n, cols, v, ADD_VALUES));
      }
    { /* a 2x2 block, column-oriented: two neighbouring rows of the next rank and two columns both hold */
      PetscInt two[2] = {-1, -1}, shared[2];
      for (PetscInt i = first; i + 1 < first + count && two[0] < 0; i++) {
        const PetscInt n = TestRowCols(o, i, cols), n2 = TestRowCols(o, i + 1, cols2);
        PetscInt       found = 0;
        for (PetscInt c = 0; c < n && found < 2; c++)
          for (PetscInt c2 = 0; c2 < n2; c2++)
            if (cols2[c2] == cols[c]) {
              shared[found++] = cols[c];
              break;
            }
        if (found == 2) {
          two[0] = i;
          two[1] = i + 1;
        }
      }
      PetscCheck(count < 2 || two[0] >= 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "no 2x2 block found in the next rank's rows");
      if (two[0] >= 0) {
        const PetscScalar block[4] = {0.125, -3.0 / 7.0, 1.0 / 3.0, 0.2}; /* (two[0], shared[0]), (two[1], shared[0]), ... */
        PetscCall(MatSetOption(A, MAT_ROW_ORIENTED, PETSC_FALSE));
        PetscCall(MatSetOption(E, MAT_ROW_ORIENTED, PETSC_FALSE));
        PetscCall(MatSetValues(A, 2, two, 2, shared, block, ADD_VALUES));
        PetscCall(MatSetValues(E, 2, two, 2, shared, block, ADD_VALUES));
        PetscCall(MatSetOption(A, MAT_ROW_ORIENTED, PETSC_TRUE));
        PetscCall(MatSetOption(E, MAT_ROW_ORIENTED, PETSC_TRUE));
      }
    }
    PetscCall(AssembleAndCompare(A, E, "reassembly, values for other ranks' rows (added)"));
    for (PetscInt k = 0; k < 10 && count > 0; k++) {
      const PetscInt i = first + (5 * k) % count, n = TestRowCols(o, i, cols);
      for (PetscInt c = 0; c < n; c++) v[c] = 1.0 / (double)(c + k + 3);
      if (n) PetscCall(MatSetValues(A, 1, &i, n, cols, v, INSERT_VALUES));
      if (n) PetscCall(MatSetValues(E, 1, &i, n, cols, v, INSERT_VALUES));
    }
    PetscCall(AssembleAndCompare(A, E, "reassembly, values for other ranks' rows (inserted)"));
  }
  { /* reassembly where late rows need fp64 (their other values are exact in narrower formats): with small assembly
       steps the rows before them were stored and given back first, then restored and stored anew */
    PetscInt rstart, rend, all[12];
    PetscCall(MatGetOwnershipRange(E, &rstart, &rend));
    for (PetscInt i = rend - 2; i >= rstart && i >= rend - 11; i -= 3) {
      PetscScalar v = 1.0 + ldexp(1.0, -40);
      if (TestRowCols(o, i, all) == 0) continue;
      PetscCall(MatSetValues(A, 1, &i, 1, all, &v, INSERT_VALUES));
      PetscCall(MatSetValues(E, 1, &i, 1, all, &v, INSERT_VALUES));
    }
    PetscCall(AssembleAndCompare(A, E, "reassembly, late rows need fp64"));
  }
  {
    PetscInt    i = 7, j = o->N - 3;
    PetscScalar v = 9.0;
    PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatSetOption(E, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatSetValues(A, 1, &i, 1, &j, &v, INSERT_VALUES));
    PetscCall(MatSetValues(E, 1, &i, 1, &j, &v, INSERT_VALUES));
    PetscCall(AssembleAndCompare(A, E, "reassembly, a new entry"));
  }
  { /* duplicates and copies */
    Mat D, Z, C, CA;
    PetscCall(MatDuplicate(E, MAT_COPY_VALUES, &D));
    PetscCall(TestCheckType(D, size_of_world() > 1 ? MATMPIELLMP : MATSEQELLMP, "MatDuplicate"));
    PetscCall(CompareEntries(D, A, 0.0, "MatDuplicate"));
    PetscCall(MatDuplicate(E, MAT_DO_NOT_COPY_VALUES, &Z));
    PetscCall(MatCopy(E, Z, SAME_NONZERO_PATTERN));
    PetscCall(CompareEntries(Z, A, 0.0, "MatDuplicate (no values) + MatCopy"));
    PetscCall(MatDuplicate(A, MAT_DO_NOT_COPY_VALUES, &CA));
    PetscCall(MatCopy(E, CA, SAME_NONZERO_PATTERN));
    PetscCall(CompareEntries(CA, A, 0.0, "MatCopy to AIJ"));
    PetscCall(MatConvert(A, MATELLMP, MAT_INITIAL_MATRIX, &C));
    PetscCall(MatZeroEntries(C));
    PetscCall(MatAXPY(C, 1.0, A, SAME_NONZERO_PATTERN));
    PetscCall(CompareEntries(C, A, 0.0, "MatZeroEntries + MatAXPY"));
    PetscCall(MatDestroy(&D));
    PetscCall(MatDestroy(&Z));
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&CA));
  }
  BOTH(MatZeroEntries(A), MatZeroEntries(E), "MatZeroEntries");
  PetscCall(TestMatSetEntries(A, o, -2.0));
  PetscCall(TestMatSetEntries(E, o, -2.0));
  PetscCall(AssembleAndCompare(A, E, "Newton-like reassembly"));
#undef BOTH
  PetscCall(VecDestroy(&l));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&d));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&E));
  PetscCall(MatDestroy(&X));
  PetscCall(MatDestroy(&XE));
  PetscFunctionReturn(0);
}

/* A file name no other test process uses (ctest runs the 1, 2 and 3 rank variants at once in one directory). */
static PetscErrorCode UniqueFileName(char *name, size_t len)
{
  long pid = (long)getpid();

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Bcast(&pid, 1, MPI_LONG, 0, PETSC_COMM_WORLD));
  PetscCall(PetscSNPrintf(name, len, "test_ellmp_%ld.bin", pid));
  PetscFunctionReturn(0);
}

/* Removes the binary file and the .info file PETSc writes beside it. */
static PetscErrorCode RemoveFile(const char *name)
{
  char        info[PETSC_MAX_PATH_LEN];
  PetscMPIInt rank;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  if (rank == 0) {
    PetscCall(PetscSNPrintf(info, sizeof(info), "%s.info", name));
    PetscCheck(remove(name) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "cannot remove %s", name);
    (void)remove(info);
  }
  PetscFunctionReturn(0);
}

/* A lossy matrix is what it stores: written to a binary file and loaded (as ellmp and as AIJ) it is unchanged. */
static PetscErrorCode TestBinaryFile(const TestMatOpts *o)
{
  Mat         E, L, LA;
  PetscViewer v;
  char        file[PETSC_MAX_PATH_LEN];

  PetscFunctionBeginUser;
  PetscCall(UniqueFileName(file, sizeof(file)));
  PetscCall(SetStorage("fp16"));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATELLMP, o, &E));
  PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_WRITE, &v));
  PetscCall(MatView(E, v));
  PetscCall(PetscViewerDestroy(&v));
  PetscCall(SetStorage("lossless"));
  PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_READ, &v));
  PetscCall(MatCreate(PETSC_COMM_WORLD, &L));
  PetscCall(MatSetType(L, MATELLMP));
  PetscCall(MatLoad(L, v));
  PetscCall(PetscViewerDestroy(&v));
  PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_READ, &v));
  PetscCall(MatCreate(PETSC_COMM_WORLD, &LA));
  PetscCall(MatSetType(LA, MATAIJ));
  PetscCall(MatLoad(LA, v));
  PetscCall(PetscViewerDestroy(&v));
  PetscCall(CompareEntries(L, E, 0.0, "binary file loaded as ellmp"));
  PetscCall(CompareEntries(LA, E, 0.0, "binary file loaded as aij"));
  PetscCall(CompareOperations(L, LA, "loaded matrices"));
  PetscCall(MatDestroy(&E));
  PetscCall(MatDestroy(&L));
  PetscCall(MatDestroy(&LA));
  PetscCall(RemoveFile(file));
  PetscFunctionReturn(0);
}

/* 7-point Laplacian on an n^3 grid, values in fp32 beyond fp16 (so each mode rounds). */
static PetscErrorCode Laplacian(PetscInt n, MatType type, Mat *A)
{
  const PetscInt N = n * n * n;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_WORLD, A));
  PetscCall(MatSetSizes(*A, PETSC_DECIDE, PETSC_DECIDE, N, N));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, 7, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, 7, NULL, 6, NULL));
  PetscInt rstart, rend;
  PetscCall(MatGetOwnershipRange(*A, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; i++) {
    const PetscInt x = i % n, y = (i / n) % n, z = i / (n * n);
    PetscInt       cols[7], k = 0;
    PetscScalar    v[7];
    if (z > 0) cols[k++] = i - n * n;
    if (y > 0) cols[k++] = i - n;
    if (x > 0) cols[k++] = i - 1;
    cols[k++] = i;
    if (x < n - 1) cols[k++] = i + 1;
    if (y < n - 1) cols[k++] = i + n;
    if (z < n - 1) cols[k++] = i + n * n;
    for (PetscInt e = 0; e < k; e++) v[e] = cols[e] == i ? 6.0 + 1.0 / 3.0 : -1.0 - 1.0 / 7.0;
    PetscCall(MatSetValues(*A, 1, &i, k, cols, v, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* Memory per nonzero after assembly (MatGetInfo: the compact storage is all the matrix holds):
   issue targets on the 7-point Laplacian, fp32 <= 6.5 and fp16 <= 4.5 bytes per nonzero (AIJ 12.6).
   On a small grid most slices of 8 rows hold a row of a face of the cube, whose columns are those of
   its neighbours shifted by one but for a few entries: patched slices store those few columns apart
   (24^3: 5.8 and 3.8 bytes; 6.5 and 4.5 when such slices kept 16-bit offsets per value, 7.8 and 5.8
   with 32-bit columns). At 100^3 about one slice in eight holds a face row. */
static PetscErrorCode TestMemory(void)
{
  const char    *modes[2] = {"fp32", "fp16"};
  const double   limit[2] = {6.5, 4.5};
  const PetscInt grids[2] = {100, 24};

  PetscFunctionBeginUser;
  for (int g = 0; g < 2; g++)
    for (int m = 0; m < 2; m++) {
      Mat     E;
      MatInfo info;
      PetscCall(SetStorage(modes[m]));
      PetscCall(Laplacian(grids[g], MATELLMP, &E));
      PetscCall(MatGetInfo(E, MAT_GLOBAL_SUM, &info));
      const double per_nnz = info.memory / info.nz_used;
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "7-point Laplacian %" PetscInt_FMT "^3, %s: %.3g bytes per nonzero (limit %.3g)\n", grids[g], modes[m], per_nnz, limit[m]));
      TEST_CHECK(PETSC_COMM_WORLD, per_nnz > 0 && per_nnz <= limit[m], "%" PetscInt_FMT "^3 %s: %.3g bytes per nonzero, over %.3g", grids[g], modes[m], per_nnz, limit[m]);
      PetscCall(MatDestroy(&E));
    }
  PetscFunctionReturn(0);
}

/* Inf, NaN, huge and subnormal values: a lossy mode keeps them (the row falls back to a format that holds them).
   The values are set on the first process only (with MPI, other processes' rows go through the assembly). */
static PetscErrorCode TestSpecialValues(void)
{
  const char *modes[3] = {"fp16", "bf16", "fp32"};

  PetscFunctionBeginUser;
  for (int m = 0; m < 3; m++) {
    Mat         A, E;
    PetscInt    cols[4] = {0, 1, 2, 3};
    PetscScalar v[4][4] = {
      {PETSC_INFINITY, 1.0, -PETSC_INFINITY, 2.0},
      {1e300, -3.0, 1.0, 0.5},
      {4.9406564584124654e-324, 1.0, 2.2250738585072014e-308, 3.0},
      {0.0, 1.0, 2.0, 3.0}
    };
    v[3][0] = NAN;
    PetscCall(SetStorage(modes[m]));
    for (int t = 0; t < 2; t++) {
      Mat *M = t ? &E : &A;
      PetscCall(MatCreate(PETSC_COMM_WORLD, M));
      PetscCall(MatSetSizes(*M, PETSC_DECIDE, PETSC_DECIDE, 4, 4));
      PetscCall(MatSetType(*M, t ? MATELLMP : MATAIJ));
      PetscCall(MatSeqAIJSetPreallocation(*M, 4, NULL));
      PetscCall(MatMPIAIJSetPreallocation(*M, 4, NULL, 4, NULL));
      PetscMPIInt rank;
      PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
      if (rank == 0) PetscCall(MatSetValues(*M, 4, cols, 4, cols, &v[0][0], INSERT_VALUES));
      PetscCall(MatAssemblyBegin(*M, MAT_FINAL_ASSEMBLY));
      PetscCall(MatAssemblyEnd(*M, MAT_FINAL_ASSEMBLY));
    }
    PetscInt rstart, rend;
    PetscCall(MatGetOwnershipRange(E, &rstart, &rend));
    for (PetscInt i = rstart; i < PetscMin(rend, 3); i++) { /* rows 0-2 exactly (Inf exact everywhere; huge and subnormal fall back) */
      PetscScalar ve[4], va[4];
      PetscCall(MatGetValues(E, 1, &i, 4, cols, ve));
      PetscCall(MatGetValues(A, 1, &i, 4, cols, va));
      TEST_CHECK(PETSC_COMM_SELF, memcmp(ve, va, sizeof ve) == 0, "%s: row %" PetscInt_FMT " of special values changed", modes[m], i);
    }
    if (rstart <= 3 && 3 < rend) {
      PetscInt    i = 3;
      PetscScalar ve[4];
      PetscCall(MatGetValues(E, 1, &i, 4, cols, ve));
      TEST_CHECK(PETSC_COMM_SELF, isnan(ve[0]) && ve[1] == 1.0 && ve[2] == 2.0 && ve[3] == 3.0, "%s: the NaN row changed", modes[m]);
    }
    PetscCall(MatDestroy(&A));
    PetscCall(MatDestroy(&E));
  }
  PetscFunctionReturn(0);
}

/* MatELLMPSetStorage on an assembled matrix stores it anew: fp16 rounds the values (within fp16's unit roundoff);
   back to lossless, the rounded values stay (the matrix is what it stores) */
static PetscErrorCode TestSetStorage(const TestMatOpts *o)
{
  Mat A, E, R;

  PetscFunctionBeginUser;
  PetscCall(SetStorage("lossless"));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, o, &A));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATELLMP, o, &E));
  PetscCall(CompareEntries(E, A, 0.0, "MatELLMPSetStorage: lossless"));
  PetscCall(MatELLMPSetStorage(E, MAT_AIJMP_FP16));
  PetscCall(CompareEntries(E, A, 0x1p-11, "MatELLMPSetStorage: fp16"));
  PetscCall(MatConvert(E, MATAIJ, MAT_INITIAL_MATRIX, &R)); /* the rounded values */
  {                                                          /* the mixed rows hold fp64 values: fp16 changed some */
    Mat       D;
    PetscReal change;
    PetscCall(MatDuplicate(R, MAT_COPY_VALUES, &D));
    PetscCall(MatAXPY(D, -1.0, A, SAME_NONZERO_PATTERN));
    PetscCall(MatNorm(D, NORM_FROBENIUS, &change));
    TEST_CHECK(PETSC_COMM_WORLD, change > 0, "MatELLMPSetStorage(fp16) on an assembled matrix rounded nothing");
    PetscCall(MatDestroy(&D));
  }
  PetscCall(MatELLMPSetStorage(E, MAT_AIJMP_LOSSLESS));
  PetscCall(CompareEntries(E, R, 0.0, "MatELLMPSetStorage: back to lossless keeps the rounded values"));
  PetscCall(CompareOperations(E, R, "MatELLMPSetStorage"));
  PetscCall(MatAIJMPSetStorage(A, MAT_AIJMP_FP16)); /* another type: ignored */
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&E));
  PetscCall(MatDestroy(&R));
  PetscFunctionReturn(0);
}

/* The read of x in gathered slices (-mat_ellmp_gathered_x; random columns): auto, forced loads and forced gathers give
   bitwise the same products; auto decides after 6 products where the build has the AVX-512 kernels; the view says
   so, and says a forced read. */
static PetscErrorCode TestGatheredX(const TestMatOpts *o_in)
{
  const MatAIJMPGatheredX reads[3] = {MAT_AIJMP_GATHERED_X_AUTO, MAT_AIJMP_GATHERED_X_LOADS, MAT_AIJMP_GATHERED_X_GATHERS};
  const char             *isa      = PetscMPCompiledISA();
  const PetscBool         avx512   = strstr(isa, "AVX-512(F,BW,VL)") && strstr(isa, "F16C") ? PETSC_TRUE : PETSC_FALSE;
  TestMatOpts             o        = *o_in;
  Mat                     E[3];
  Vec                     x, y, yref;
  MatAIJMPGatheredX       got;
  char                    text[8192];

  PetscFunctionBeginUser;
  o.inode = PETSC_FALSE; /* rows of their own: gathered slices */
  PetscCall(SetStorage("fp32"));
  for (int k = 0; k < 3; k++) {
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATELLMP, &o, &E[k]));
    PetscCall(MatAIJMPSetGatheredX(E[k], reads[k]));
    PetscCall(MatAIJMPGetGatheredX(E[k], &got));
    TEST_CHECK(PETSC_COMM_WORLD, got == reads[k], "ellmp: MatAIJMPGetGatheredX returned %s, set %s", MatAIJMPGatheredXs[got],
               MatAIJMPGatheredXs[reads[k]]);
  }
  PetscCall(MatCreateVecs(E[0], &x, &y));
  PetscCall(VecDuplicate(y, &yref));
  PetscCall(TestVecFill(x, 31));
  PetscCall(MatMult(E[1], x, yref));
  for (int p = 0; p < 8; p++) {
    PetscCall(MatMult(E[0], x, y));
    PetscCall(TestCheckBitwise(y, yref, "ellmp fp32, gathered x auto against loads"));
    PetscCall(MatMult(E[2], x, y));
    PetscCall(TestCheckBitwise(y, yref, "ellmp fp32, gathered x by gathers against loads"));
  }
  {
    const char *want = !avx512 ? "x of gathered slices, auto: " /* the rule's read, not timed */
                       : size_of_world() == 1 ? "timed products: scalar loads " /* the one block's medians */
                                              : " local blocks, "; /* counts of the MPI blocks: all timed */
    PetscCall(TestViewInfoText(E[0], "ellmp_gathered_x_auto", text, sizeof text));
    TEST_CHECK(PETSC_COMM_WORLD, strstr(text, want) != NULL, "the ellmp view of gathered x auto lacks \"%s\":\n%s", want, text);
    TEST_CHECK(PETSC_COMM_WORLD, !avx512 || size_of_world() == 1 || strstr(text, " gathers, 0 read by the rule") != NULL,
               "the ellmp view: some MPI block did not time its read of x:\n%s", text);
    PetscCall(TestViewInfoText(E[2], "ellmp_gathered_x_set", text, sizeof text));
    TEST_CHECK(PETSC_COMM_WORLD, strstr(text, "x of gathered slices: gathers (set)") != NULL,
               "the ellmp view of gathered x set to gathers lacks its line:\n%s", text);
  }
  for (int k = 0; k < 3; k++) PetscCall(MatDestroy(&E[k]));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&yref));
  PetscCall(SetStorage("lossless"));
  PetscFunctionReturn(0);
}

/* GMRES + Jacobi on a shifted test matrix: lossless ellmp gives AIJ's iterates bit for bit. */
static PetscErrorCode TestSolve(const TestMatOpts *o)
{
  Mat      A[2];
  Vec      b, x[2];
  PetscInt its[2];

  PetscFunctionBeginUser;
  PetscCall(SetStorage("lossless"));
  for (int t = 0; t < 2; t++) {
    KSP ksp;
    PC  pc;
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, t ? MATELLMP : MATAIJ, o, &A[t]));
    PetscCall(MatShift(A[t], 40.0));
    PetscCall(MatCreateVecs(A[t], &x[t], t ? NULL : &b));
    if (!t) PetscCall(TestVecFill(b, 21));
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
    PetscCall(KSPSetOperators(ksp, A[t], A[t]));
    PetscCall(KSPSetType(ksp, KSPGMRES));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCJACOBI));
    PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 200));
    PetscCall(KSPSolve(ksp, b, x[t]));
    PetscCall(KSPGetIterationNumber(ksp, &its[t]));
    PetscCall(KSPDestroy(&ksp));
  }
  TEST_CHECK(PETSC_COMM_WORLD, its[0] == its[1] && its[0] > 3, "GMRES iterations: aij %" PetscInt_FMT ", ellmp %" PetscInt_FMT, its[0], its[1]);
  PetscCall(TestCheckBitwise(x[1], x[0], "GMRES solution"));
  for (int t = 0; t < 2; t++) {
    PetscCall(MatDestroy(&A[t]));
    PetscCall(VecDestroy(&x[t]));
  }
  PetscCall(VecDestroy(&b));
  PetscFunctionReturn(0);
}

/* AIJ's inode SOR with inodes of 1-5 rows side by side (node k's rows coupled by dense blocks to nodes k-1, k and
   k+1, so AIJ finds exactly these nodes; on several ranks the ranks cut nodes): ellmp's MatSOR bitwise AIJ's in every
   mode, on the stored rows (the nodes' blocks inverted by PETSc's kernels) but Eisenstat (the AIJ twin). Checks that
   AIJ found nodes of every size, so the test covers them. */
static PetscErrorCode TestInodeSOR(const char *mode, PetscBool singular)
{
  const PetscInt nodes = 150;
  PetscInt       first[151], rstart, rend, found, *sizes, limit, seen[6] = {0};
  Mat            E, B, Bd, Bo;
  char           what[128];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(what, sizeof what, "%s mixed inodes", mode));
  PetscCall(SetStorage(mode));
  first[0] = 0;
  for (PetscInt k = 0; k < nodes; k++) first[k + 1] = first[k] + 1 + (k * 7 + k / 5) % 5;
  PetscCall(MatCreate(PETSC_COMM_WORLD, &E));
  PetscCall(MatSetSizes(E, PETSC_DECIDE, PETSC_DECIDE, first[nodes], first[nodes]));
  PetscCall(MatSetType(E, MATELLMP));
  PetscCall(MatSeqAIJSetPreallocation(E, 15, NULL));
  PetscCall(MatMPIAIJSetPreallocation(E, 15, NULL, 15, NULL));
  PetscCall(MatGetOwnershipRange(E, &rstart, &rend));
  for (PetscInt k = 0; k < nodes; k++)
    for (PetscInt i = first[k]; i < first[k + 1]; i++) {
      if (i < rstart || i >= rend) continue;
      PetscInt    cols[15], n = 0;
      PetscScalar vals[15];
      for (PetscInt nb = PetscMax(k - 1, 0); nb <= PetscMin(k + 1, nodes - 1); nb++)
        for (PetscInt j = first[nb]; j < first[nb + 1]; j++) {
          cols[n] = j;
          vals[n] = TestValue(VAL_FP64, TestHash(21, (uint64_t)i, (uint64_t)j)) + (i == j ? 12.0 : 0.0);
          if (singular && i == 0 && j == 0) vals[n] = 0.0; /* a zero pivot: node 0 holds one row */
          n++;
        }
      PetscCall(MatSetValues(E, 1, &i, n, cols, vals, INSERT_VALUES));
    }
  PetscCall(MatAssemblyBegin(E, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(E, MAT_FINAL_ASSEMBLY));
  PetscCall(MatConvert(E, MATAIJ, MAT_INITIAL_MATRIX, &B)); /* AIJ over the stored values */
  PetscCall(TestLocalBlocks(B, &Bd, &Bo));
  PetscCall(MatInodeGetInodeSizes(Bd, &found, &sizes, &limit));
  for (PetscInt k = 0; sizes && k < found; k++) seen[PetscMin(sizes[k], 5)]++;
  TEST_CHECK(PETSC_COMM_WORLD, sizes && seen[1] && seen[2] && seen[3] && seen[4] && seen[5],
             "%s: AIJ did not find inodes of every size 1-5 (%" PetscInt_FMT " nodes)", what, sizes ? found : 0);
  if (!singular) {
    Vec b, y1, y2;
    PetscCall(CompareSOR(E, B, what)); /* (AIJ's MatMultDiagonalBlock reads the blocks its inode SOR copied) */
    PetscCall(MatCreateVecs(B, &b, &y1));
    PetscCall(VecDuplicate(y1, &y2));
    PetscCall(TestVecFill(b, 9));
    PetscCall(MatMultDiagonalBlock(E, b, y1)); /* PCEisenstat's scaling where AIJ has inodes */
    PetscCall(MatMultDiagonalBlock(B, b, y2));
    PetscCall(TestCheckBitwise(y1, y2, "MatMultDiagonalBlock"));
    { /* a duplicate keeps AIJ's inodes, as AIJ's duplicate does: the same inode SOR and block diagonal */
      Mat D, DB;
      PetscCall(MatDuplicate(E, MAT_COPY_VALUES, &D));
      PetscCall(MatDuplicate(B, MAT_COPY_VALUES, &DB));
      PetscCall(VecSet(y1, 0.0));
      PetscCall(VecSet(y2, 0.0));
      PetscCall(MatSOR(D, b, 1.0, (MatSORType)(SOR_LOCAL_SYMMETRIC_SWEEP | SOR_ZERO_INITIAL_GUESS), 0.0, 1, 1, y1));
      PetscCall(MatSOR(DB, b, 1.0, (MatSORType)(SOR_LOCAL_SYMMETRIC_SWEEP | SOR_ZERO_INITIAL_GUESS), 0.0, 1, 1, y2));
      PetscCall(TestCheckBitwise(y1, y2, "MatDuplicate: inode SOR"));
      PetscCall(MatMultDiagonalBlock(D, b, y1));
      PetscCall(MatMultDiagonalBlock(DB, b, y2));
      PetscCall(TestCheckBitwise(y1, y2, "MatDuplicate: MatMultDiagonalBlock"));
      PetscCall(MatDestroy(&D));
      PetscCall(MatDestroy(&DB));
    }
    PetscCall(VecDestroy(&b));
    PetscCall(VecDestroy(&y1));
    PetscCall(VecDestroy(&y2));
  }
  else { /* AIJ's inode SOR records the zero pivot and goes on (1/0): the same factor error, the same bits */
    Vec           b, x1, x2;
    MatFactorError e1, e2;
    PetscCall(MatCreateVecs(B, &x1, &b));
    PetscCall(VecDuplicate(x1, &x2));
    PetscCall(TestVecFill(b, 6));
    PetscCall(MatSOR(E, b, 1.0, (MatSORType)(SOR_LOCAL_SYMMETRIC_SWEEP | SOR_ZERO_INITIAL_GUESS), 0.0, 1, 1, x1));
    PetscCall(MatSOR(B, b, 1.0, (MatSORType)(SOR_LOCAL_SYMMETRIC_SWEEP | SOR_ZERO_INITIAL_GUESS), 0.0, 1, 1, x2));
    Mat            Ed = E;
    if (size_of_world() > 1) PetscCall(MatGetDiagonalBlock(E, &Ed));
    PetscCall(MatFactorGetError(Ed, &e1));
    PetscCall(MatFactorGetError(Bd, &e2));
    TEST_CHECK(PETSC_COMM_WORLD, rstart > 0 || (e1 == MAT_FACTOR_NUMERIC_ZEROPIVOT && e2 == e1),
               "%s, a zero pivot: factor errors %d (ellmp) and %d (AIJ)", what, (int)e1, (int)e2);
    PetscCall(TestCheckBitwise(x1, x2, what));
    PetscCall(VecDestroy(&b));
    PetscCall(VecDestroy(&x1));
    PetscCall(VecDestroy(&x2));
  }
  PetscCall(MatDestroy(&E));
  PetscCall(MatDestroy(&B));
  PetscFunctionReturn(0);
}

/* A matrix a DM made (a 2-D DMDA, 2 dofs per node, box stencil), converted to MATIS: PETSc 3.18 cuts such a matrix
   into the DM's subdomains. ellmp converts through an AIJ copy, which must carry A's local-to-global map and DM
   (snes ex56/ex17 with GDSW coarse spaces on 4 ranks took other subdomains without them): the same MATIS as
   AIJ's, its map index for index and its local matrix bit for bit. */
static PetscErrorCode TestConvertToIS(void)
{
  const char *types[2] = {MATAIJ, MATELLMP};
  DM          da;
  Mat         A[2], B[2], L[2];
  PetscInt    nmap[2], nrows[2], ncols[2], bad = 0;

  PetscFunctionBeginUser;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, 11, 9, PETSC_DECIDE,
                         PETSC_DECIDE, 2, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  for (int k = 0; k < 2; k++) {
    DMDALocalInfo info;
    PetscCall(DMSetMatType(da, types[k]));
    PetscCall(DMCreateMatrix(da, &A[k]));
    PetscCall(DMDAGetLocalInfo(da, &info));
    for (PetscInt j = info.ys; j < info.ys + info.ym; j++)
      for (PetscInt i = info.xs; i < info.xs + info.xm; i++)
        for (PetscInt c = 0; c < 2; c++) {
          MatStencil  row = {.i = i, .j = j, .c = c}, cols[18];
          PetscScalar v[18];
          PetscInt    nc = 0;
          for (PetscInt dj = -1; dj <= 1; dj++)
            for (PetscInt di = -1; di <= 1; di++)
              for (PetscInt cc = 0; cc < 2; cc++) {
                if (i + di < 0 || i + di >= info.mx || j + dj < 0 || j + dj >= info.my) continue;
                cols[nc] = (MatStencil){.i = i + di, .j = j + dj, .c = cc};
                v[nc++]  = di == 0 && dj == 0 && cc == c ? 20.0 : -1.0 / (3 + i + 2 * j + c + cc + di * dj);
              }
          PetscCall(MatSetValuesStencil(A[k], 1, &row, nc, cols, v, INSERT_VALUES));
        }
    PetscCall(MatAssemblyBegin(A[k], MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A[k], MAT_FINAL_ASSEMBLY));
    PetscCall(MatConvert(A[k], MATIS, MAT_INITIAL_MATRIX, &B[k]));
    PetscCall(MatISGetLocalMat(B[k], &L[k]));
    PetscCall(MatGetSize(L[k], &nrows[k], &ncols[k]));
  }
  {
    ISLocalToGlobalMapping map[2];
    const PetscInt        *idx[2];
    for (int k = 0; k < 2; k++) {
      PetscCall(MatISGetLocalToGlobalMapping(B[k], &map[k], NULL));
      PetscCall(ISLocalToGlobalMappingGetSize(map[k], &nmap[k]));
      PetscCall(ISLocalToGlobalMappingGetIndices(map[k], &idx[k]));
    }
    if (nmap[0] != nmap[1] || nrows[0] != nrows[1] || ncols[0] != ncols[1]) bad++;
    else
      for (PetscInt i = 0; i < nmap[0]; i++) bad += idx[0][i] != idx[1][i];
    for (int k = 0; k < 2; k++) PetscCall(ISLocalToGlobalMappingRestoreIndices(map[k], &idx[k]));
  }
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
  TEST_CHECK(PETSC_COMM_WORLD, bad == 0, "ellmp -> MATIS of a DMDA matrix: %" PetscInt_FMT " differences in the local sizes or local-to-global map from AIJ's", bad);
  if (!bad) { /* the same local numbering: the local matrices compare entry by entry */
    PetscBool same;
    PetscCall(MatEqual(L[1], L[0], &same)); /* (SeqAIJ's MatEqual: the same pattern and memcmp of the values) */
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPIU_BOOL, MPI_LAND, PETSC_COMM_WORLD));
    TEST_CHECK(PETSC_COMM_WORLD, same, "ellmp -> MATIS of a DMDA matrix: local matrices differ from AIJ's");
  }
  for (int k = 0; k < 2; k++) {
    PetscCall(MatDestroy(&B[k]));
    PetscCall(MatDestroy(&A[k]));
  }
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* ellmp's AIJ twin (the copy SOR, coloring and products run on) knows what A's flags say when it is asked for, also
   for a flag set after the twin was made: symmetric and SPD known and true, or, before, not known. */
static PetscErrorCode CheckTwinSymmetry(Mat A, PetscBool flagged)
{
  PetscErrorCode (*twin)(Mat, Mat *) = NULL;
  Mat       T;
  PetscBool set, flg, spd_set, spd;

  PetscFunctionBeginUser;
  PetscCall(PetscObjectQueryFunction((PetscObject)A, "PetscMPTwin_C", &twin));
  TEST_CHECK(PETSC_COMM_WORLD, twin != NULL, "an ellmp matrix composes no PetscMPTwin_C");
  if (!twin) PetscFunctionReturn(0);
  PetscCall(twin(A, &T));
  PetscCall(MatIsSymmetricKnown(T, &set, &flg));
  PetscCall(MatIsSPDKnown(T, &spd_set, &spd));
  if (flagged) TEST_CHECK(PETSC_COMM_WORLD, set && flg && spd_set && spd, "the twin does not know A is SPD (set after it was made)");
  else TEST_CHECK(PETSC_COMM_WORLD, !set && !spd_set, "the twin claims a symmetry A was not told");
  PetscFunctionReturn(0);
}

/* A symmetric matrix flagged MAT_SPD: ellmp's graph for GAMG (MatCreateGraph through an AIJ copy) equals AIJ's bit for
   bit. The copy must know the symmetry: else MatCreateGraph adds the transpose and the scaled graph rounds otherwise
   (GAMG with HEM coarsening in ksp ex54f took other aggregates: 133 coarse nodes instead of 126). */
static PetscErrorCode TestGraphOfSymmetric(void)
{
  const char *types[2] = {MATAIJ, MATELLMP};
  const PetscInt n = 23, N = n * n; /* 5-point stencil on an n x n grid, symmetric values */
  Mat         A[2], G[2];

  PetscFunctionBeginUser;
  for (int k = 0; k < 2; k++) {
    PetscInt rstart, rend;
    PetscCall(MatCreate(PETSC_COMM_WORLD, &A[k]));
    PetscCall(MatSetSizes(A[k], PETSC_DECIDE, PETSC_DECIDE, N, N));
    PetscCall(MatSetType(A[k], types[k]));
    PetscCall(MatSeqAIJSetPreallocation(A[k], 5, NULL));
    PetscCall(MatMPIAIJSetPreallocation(A[k], 5, NULL, 2, NULL));
    PetscCall(MatGetOwnershipRange(A[k], &rstart, &rend));
    for (PetscInt r = rstart; r < rend; r++) {
      const PetscInt i = r / n, j = r % n, nb[4] = {r - n, r - 1, r + 1, r + n};
      const PetscBool in[4] = {i > 0, j > 0, j < n - 1, i < n - 1};
      PetscCall(MatSetValue(A[k], r, r, 4.0 + (double)r / 7.0, INSERT_VALUES));
      for (int q = 0; q < 4; q++) /* a_rc = a_cr: a function of the unordered pair */
        if (in[q]) PetscCall(MatSetValue(A[k], r, nb[q], -1.0 / (3.0 + PetscMin(r, nb[q]) + 0.5 * PetscMax(r, nb[q])), INSERT_VALUES));
    }
    PetscCall(MatAssemblyBegin(A[k], MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A[k], MAT_FINAL_ASSEMBLY));
    if (k == 1) PetscCall(CheckTwinSymmetry(A[k], PETSC_FALSE)); /* the twin (SOR, coloring, products) made now */
    PetscCall(MatSetOption(A[k], MAT_SPD, PETSC_TRUE));
    if (k == 1) PetscCall(CheckTwinSymmetry(A[k], PETSC_TRUE)); /* the flag set after the twin was made reaches it */
    PetscCall(MatCreateGraph(A[k], PETSC_TRUE, PETSC_TRUE, -1.0, &G[k]));
  }
  PetscCall(CompareEntries(G[1], G[0], 0.0, "MatCreateGraph of an SPD ellmp matrix against AIJ's"));
  for (int k = 0; k < 2; k++) {
    PetscCall(MatDestroy(&G[k]));
    PetscCall(MatDestroy(&A[k]));
  }
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  TestMatOpts o;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscMPInitializePackage());
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-test_bound_scale", &g_bound_scale, NULL));
  const char  *modes[] = {"lossless", "fp32", "fp16", "bf16", "fp11_20", "tolerance", "entrysplit"};
  const double u[]     = {0.0, 0x1p-24, 0x1p-11, 0x1p-8, 0x1p-20, 1e-3, 0x1p-24};
  for (int m = 0; m < 7; m++) {
    TestMatOptsDefault(&o, 500);
    PetscCall(TestStorage(modes[m], u[m], &o, "mixed rows"));
    o.valuekind = VAL_RUNS;
    PetscCall(TestStorage(modes[m], u[m], &o, "rows in runs"));
    TestMatOptsDefault(&o, 600);
    o.inode = PETSC_TRUE;
    PetscCall(TestStorage(modes[m], u[m], &o, "inodes"));
    TestMatOptsDefault(&o, 450);
    o.empty_every = 7;
    PetscCall(TestStorage(modes[m], u[m], &o, "empty rows"));
    TestMatOptsDefault(&o, 300);
    o.N = 700;
    PetscCall(TestStorage(modes[m], u[m], &o, "rectangular"));
  }
  for (int m = 0; m < 4; m++) PetscCall(TestInodeSOR(modes[m], PETSC_FALSE));
  PetscCall(TestInodeSOR("lossless", PETSC_TRUE));
  TestMatOptsDefault(&o, 400);
  o.valuekind = VAL_FP64;
  PetscCall(TestChanges(&o));
  o.inode = PETSC_TRUE;
  PetscCall(TestChanges(&o));
  TestMatOptsDefault(&o, 5000); /* (5000 rows: whole pages of indices given back) */
  for (int m = 0; m < 4; m++) PetscCall(TestPatternThenValues(modes[m], &o));
  TestMatOptsDefault(&o, 350);
  PetscCall(TestBinaryFile(&o));
  PetscCall(TestMemory());
  PetscCall(TestSpecialValues());
  TestMatOptsDefault(&o, 300);
  o.inode = PETSC_TRUE;
  PetscCall(TestSolve(&o));
  TestMatOptsDefault(&o, 320);
  PetscCall(TestSetStorage(&o));
  PetscCall(TestGatheredX(&o));
  PetscCall(TestConvertToIS());
  PetscCall(TestGraphOfSymmetric());
  const int rc = TestFinish();
  PetscCall(PetscFinalize());
  return rc;
}
