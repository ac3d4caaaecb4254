/* Shared helpers of the petscmp PETSc integration tests (header-only; each test is one C file).

   - deterministic test matrices whose values depend only on the global (row, column), so the
     same matrix is built on 1, 2 or 3 ranks and as MATAIJ and MATAIJMP;
   - collective checks: every failed check prints a line starting with "FAIL" on rank 0 and
     counts; TestFinish() returns the process exit code (nonzero when any check failed).
*/
#ifndef PETSCMP_TEST_H
#define PETSCMP_TEST_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <petscmp.h>

static int    g_test_failures = 0;
static double g_bound_scale   = 1.0; /* < 1: the negative control of the bound checks (-test_bound_scale) */

/* Collective: cond may differ between ranks; the check fails when it fails anywhere. */
#define TEST_CHECK(comm, cond, ...) \
  do { \
    PetscBool ok_ = (cond) ? PETSC_TRUE : PETSC_FALSE; \
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &ok_, 1, MPIU_BOOL, MPI_LAND, (comm))); \
    if (!ok_) { \
      PetscCall(PetscPrintf((comm), "FAIL (%s:%d): ", __FILE__, __LINE__)); \
      PetscCall(PetscPrintf((comm), __VA_ARGS__)); \
      PetscCall(PetscPrintf((comm), "\n")); \
      g_test_failures++; \
    } \
  } while (0)

/* call must fail (a PETSc error, not an abort); the check fails where it does not. */
#define EXPECT_ERROR(call, what) \
  do { \
    PetscErrorCode ierr_; \
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL)); \
    ierr_ = (call); \
    PetscCall(PetscPopErrorHandler()); \
    TEST_CHECK(PETSC_COMM_WORLD, ierr_ != 0, "%s: no error", what); \
  } while (0)

static inline int TestFinish(void)
{
  int fails = g_test_failures;
  MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_MAX, PETSC_COMM_WORLD);
  PetscPrintf(PETSC_COMM_WORLD, fails ? "%d check(s) FAILED\n" : "all checks passed\n", fails);
  return fails ? 1 : 0;
}

static inline uint64_t TestHash(uint64_t a, uint64_t b, uint64_t c)
{
  uint64_t z = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull ^ (c + 0x94D049BB133111EBull);
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

/* Value classes of a row: the narrowest format that holds the row exactly. */
/* VAL_MIXED: each row's class at random (the compact copy then groups rows by format);
   VAL_RUNS: classes in runs of 48 rows (the compact copy keeps runs of rows in row order) */
enum { VAL_FP16 = 0, VAL_BF16 = 1, VAL_FP32 = 2, VAL_FP64 = 3, VAL_MIXED = -1, VAL_RUNS = -2 };

static inline double TestValue(int cls, uint64_t h)
{
  const double sign = (h & 1) ? -1.0 : 1.0;
  switch (cls) {
  case VAL_FP16: /* small integers: exact in fp16 */
    return sign * (double)(1 + (h >> 1) % 8);
  case VAL_BF16: /* 7-bit integers times 2^20..2^29: exact in bf16, beyond fp16's range */
    return sign * (double)(1 + (h >> 1) % 127) * ldexp(1.0, 20 + (int)((h >> 9) % 10));
  case VAL_FP32: /* multiples of 2^-30 with up to 24 significant bits: exact in fp32 only */
    return sign * (double)((1u << 23) + ((h >> 1) % (1u << 23))) * ldexp(1.0, -30);
  default: /* random doubles in (-1, 1) with 53 significant bits */
    return sign * (double)((h >> 11) | 1) * ldexp(1.0, -53);
  }
}

static inline int TestRowClass(int valuekind, PetscInt row, unsigned seed)
{
  if (valuekind == VAL_RUNS) return (int)((row / 48) % 4);
  return valuekind >= 0 ? valuekind : (int)(TestHash(seed, (uint64_t)row, 77) % 4);
}

typedef struct {
  PetscInt  M, N;          /* global sizes */
  PetscInt  mlocal, nlocal; /* local sizes or PETSC_DECIDE */
  PetscBool inode;         /* rows in blocks of 3 with identical column patterns */
  int       valuekind;     /* VAL_MIXED: the class of each row drawn at random */
  PetscInt  empty_every;   /* > 0: every row i with i % empty_every == 1 is empty */
  unsigned  seed;
} TestMatOpts;

static inline void TestMatOptsDefault(TestMatOpts *o, PetscInt M)
{
  o->M = M;
  o->N = M;
  o->mlocal = o->nlocal = PETSC_DECIDE;
  o->inode       = PETSC_FALSE;
  o->valuekind   = VAL_MIXED;
  o->empty_every = 0;
  o->seed        = 1;
}

/* Columns of global row i (sorted, unique); returns their count (at most 12). */
static inline PetscInt TestRowCols(const TestMatOpts *o, PetscInt i, PetscInt cols[12])
{
  PetscInt n = 0, cand[12], nc = 0;
  if (o->empty_every > 0 && i % o->empty_every == 1) return 0;
  if (o->inode) {
    const PetscInt node = i / 3, ncnodes = (o->N + 2) / 3;
    const PetscInt cn[4] = {node - 1, node, node + 1, (PetscInt)(TestHash(o->seed, (uint64_t)node, 5) % (uint64_t)ncnodes)};
    for (int k = 0; k < 4; k++)
      for (int b = 0; b < 3; b++) {
        const PetscInt c = 3 * cn[k] + b;
        if (cn[k] >= 0 && c < o->N) cand[nc++] = c;
      }
  } else {
    cand[nc++] = i % o->N;
    cand[nc++] = (i + 1) % o->N;
    for (int k = 0; k < 3; k++) cand[nc++] = (PetscInt)(TestHash(o->seed, (uint64_t)i, 11 + k) % (uint64_t)o->N);
  }
  /* sort + unique */
  for (PetscInt a = 1; a < nc; a++)
    for (PetscInt b = a; b > 0 && cand[b - 1] > cand[b]; b--) {
      PetscInt t = cand[b]; cand[b] = cand[b - 1]; cand[b - 1] = t;
    }
  for (PetscInt a = 0; a < nc; a++)
    if (!n || cols[n - 1] != cand[a]) cols[n++] = cand[a];
  return n;
}

static inline double TestEntry(const TestMatOpts *o, PetscInt i, PetscInt j)
{
  return TestValue(TestRowClass(o->valuekind, i, o->seed), TestHash(o->seed, (uint64_t)i, (uint64_t)j + 1000));
}

/* Sets (INSERT_VALUES) all entries of the locally owned rows, times factor; no assembly. */
static inline PetscErrorCode TestMatSetEntries(Mat A, const TestMatOpts *o, double factor)
{
  PetscInt rstart, rend, cols[12];
  double   vals[12];

  PetscFunctionBeginUser;
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; i++) {
    const PetscInt n = TestRowCols(o, i, cols);
    for (PetscInt k = 0; k < n; k++) vals[k] = factor * TestEntry(o, i, cols[k]);
    if (n) PetscCall(MatSetValues(A, 1, &i, n, cols, vals, INSERT_VALUES));
  }
  PetscFunctionReturn(0);
}

/* Creates and assembles the test matrix as type (MATAIJ, MATAIJMP, ...) on comm. */
static inline PetscErrorCode TestMatCreate(MPI_Comm comm, MatType type, const TestMatOpts *o, Mat *A)
{
  PetscFunctionBeginUser;
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, o->mlocal, o->nlocal, o->M, o->N));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, 12, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, 12, NULL, 12, NULL));
  PetscCall(TestMatSetEntries(*A, o, 1.0));
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* Fills v (any layout) with deterministic values depending on the global index. */
static inline PetscErrorCode TestVecFill(Vec v, unsigned seed)
{
  PetscInt     rstart, rend;
  PetscScalar *a;

  PetscFunctionBeginUser;
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(VecGetArray(v, &a));
  for (PetscInt i = rstart; i < rend; i++) a[i - rstart] = TestValue(VAL_FP64, TestHash(seed, (uint64_t)i, 999));
  PetscCall(VecRestoreArray(v, &a));
  PetscFunctionReturn(0);
}

/* A's -mat_view ::ascii_info output (collective on A): viewed into a file named after `name` and A's first rank, read
   back into text (size bytes, NUL-terminated) by every rank of A, then removed. */
static inline PetscErrorCode TestViewInfoText(Mat A, const char *name, char *text, size_t size)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)A);
  PetscViewer viewer;
  char        path[PETSC_MAX_PATH_LEN];
  PetscMPIInt rank, crank;
  FILE       *f;
  size_t      len;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_rank(comm, &crank));
  /* (the file of A's first rank; its process id keeps tests that ctest runs at once in one directory apart) */
  PetscCall(PetscSNPrintf(path, sizeof path, "petscmp_view_%s_%d_%d.txt", name, (int)rank, (int)getpid()));
  PetscCallMPI(MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, comm));
  PetscCall(PetscViewerASCIIOpen(comm, path, &viewer));
  PetscCall(PetscViewerPushFormat(viewer, PETSC_VIEWER_ASCII_INFO));
  PetscCall(MatView(A, viewer));
  PetscCall(PetscViewerPopFormat(viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCallMPI(MPI_Barrier(comm));
  f = fopen(path, "r");
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "cannot read back %s", path);
  len       = fread(text, 1, size - 1, f);
  text[len] = 0;
  fclose(f);
  PetscCallMPI(MPI_Barrier(comm));
  if (crank == 0) (void)remove(path);
  PetscFunctionReturn(0);
}

/* Number of local entries whose bits differ; collective: returns the global count. */
static inline PetscErrorCode TestVecBitDiff(Vec a, Vec b, PetscInt *ndiff)
{
  const PetscScalar *x, *y;
  PetscInt           n, nb;

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(a, &n));
  PetscCall(VecGetLocalSize(b, &nb));
  PetscCheck(n == nb, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "local sizes differ");
  PetscCall(VecGetArrayRead(a, &x));
  PetscCall(VecGetArrayRead(b, &y));
  *ndiff = 0;
  for (PetscInt i = 0; i < n; i++)
    if (memcmp(&x[i], &y[i], sizeof(PetscScalar))) (*ndiff)++;
  PetscCall(VecRestoreArrayRead(a, &x));
  PetscCall(VecRestoreArrayRead(b, &y));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, ndiff, 1, MPIU_INT, MPI_SUM, PetscObjectComm((PetscObject)a)));
  PetscFunctionReturn(0);
}

/* Checks a and b are bitwise equal (NaN payloads included). */
static inline PetscErrorCode TestCheckBitwise(Vec a, Vec b, const char *what)
{
  PetscInt ndiff;

  PetscFunctionBeginUser;
  PetscCall(TestVecBitDiff(a, b, &ndiff));
  TEST_CHECK(PetscObjectComm((PetscObject)a), ndiff == 0, "%s: %" PetscInt_FMT " entries differ bitwise", what, ndiff);
  PetscFunctionReturn(0);
}

static inline PetscErrorCode TestCheckType(Mat A, const char *expected, const char *what)
{
  MatType   type;
  PetscBool same;

  PetscFunctionBeginUser;
  PetscCall(MatGetType(A, &type));
  PetscCall(PetscStrcmp(type, expected, &same));
  TEST_CHECK(PetscObjectComm((PetscObject)A), same, "%s: type is %s, expected %s", what, type ? type : "(null)", expected);
  PetscFunctionReturn(0);
}

/* The unit roundoff of fp64 and gamma_n = n eps / (1 - n eps) (Higham, Accuracy and Stability, 3.1). */
#define TEST_EPS64 (DBL_EPSILON / 2)
static inline double TestGamma(PetscInt n) { return (double)n * TEST_EPS64 / (1.0 - (double)n * TEST_EPS64); }

/* Error bound of a lossy product against AIJ's (y = A x (+ z), or y = A^T x (+ z)).

   Let the compact copy store hat a_ij = a_ij (1 + d_ij) with |d_ij| <= u, u the unit roundoff of
   the widest lossy format used (rounding formats: fp32 2^-24, fp16 2^-11, bf16 2^-8; truncating
   formats keep k fraction bits, |d| < 2^-k: fp11_20 2^-20, fp11_4 2^-4; tolerance mode: tol;
   fallback rows are stored in a wider format, which only lowers |d|). Both products are computed
   in fp64 as a sum of the n terms of the row (n = nonzeros, plus one for the added z_i), in some
   order (sequential, pairwise for inodes, split over diagonal/off-diagonal blocks and ranks):
   by the standard summation bound, for any evaluation order,
       |fl(sum_k p_k) - sum_k p_k| <= gamma_n sum_k |p_k|,  gamma_n = n eps / (1 - n eps), eps = 2^-53,
   where the p_k = a_ij x_j (or hat a_ij x_j) are the exact products. With S = sum_j |a_ij x_j| (+|z_i|):
       |y_mp - sum hat a x|   <= gamma_n (1 + u) S
       |sum hat a x - sum a x| <= u S
       |y_aij - sum a x|      <= gamma_n S
   so |y_mp - y_aij| <= (u + gamma_n (2 + u)) S. S is computed in fp64, with relative error at most
   gamma_n, hence the factor (1 + gamma_{n+1}) below; n * 2^-1074 covers subnormal products
   (none expected here). u = 0 gives the bound for reorderings in fp64 (threads). */
static inline double TestBound(double u, PetscInt n, double S)
{
  const double g = TestGamma(n + 1);
  return (u + g * (2.0 + u)) * S * (1.0 + g) + (double)(n + 1) * 4.9406564584124654e-324;
}

/* Checks |ymp - yaij| <= TestBound(u, n_i, S_i) entrywise. A is the MATAIJ matrix, x the input, z the
   added vector or NULL. Returns (collective) the number of entries that differ at all in *ndiffer. */
static inline PetscErrorCode TestCheckBound(Mat A, PetscBool transpose, Vec x, Vec z, Vec ymp, Vec yaij, double u, const char *what, PetscInt *ndiffer)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)A);
  PetscInt           M, N, rstart, rend, ystart, yend, nbad = 0, ndiff = 0, worst_i = -1;
  double            *S, *cnt, worst_ratio = 0;
  const PetscScalar *xa, *ya, *yb, *za = NULL;
  Vec                xall;
  VecScatter         sc;

  PetscFunctionBeginUser;
  u *= g_bound_scale;
  PetscCall(MatGetSize(A, &M, &N));
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  PetscCall(VecGetOwnershipRange(ymp, &ystart, &yend));
  const PetscInt Ny = transpose ? N : M;
  PetscCall(PetscCalloc2(Ny, &S, Ny, &cnt));
  PetscCall(VecScatterCreateToAll(x, &sc, &xall));
  PetscCall(VecScatterBegin(sc, x, xall, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, x, xall, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetArrayRead(xall, &xa));
  for (PetscInt i = rstart; i < rend; i++) {
    PetscInt           nc;
    const PetscInt    *cols;
    const PetscScalar *vals;
    PetscCall(MatGetRow(A, i, &nc, &cols, &vals));
    for (PetscInt k = 0; k < nc; k++) {
      if (!transpose) {
        S[i] += fabs(vals[k] * xa[cols[k]]);
        cnt[i] += 1;
      } else {
        S[cols[k]] += fabs(vals[k] * xa[i]);
        cnt[cols[k]] += 1;
      }
    }
    PetscCall(MatRestoreRow(A, i, &nc, &cols, &vals));
  }
  PetscCall(VecRestoreArrayRead(xall, &xa));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, S, (PetscMPIInt)Ny, MPI_DOUBLE, MPI_SUM, comm));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, cnt, (PetscMPIInt)Ny, MPI_DOUBLE, MPI_SUM, comm));
  PetscCall(VecGetArrayRead(ymp, &ya));
  PetscCall(VecGetArrayRead(yaij, &yb));
  if (z) PetscCall(VecGetArrayRead(z, &za));
  for (PetscInt i = ystart; i < yend; i++) {
    const double s = S[i] + (za ? fabs(za[i - ystart]) : 0.0);
    const PetscInt n = (PetscInt)cnt[i] + (za ? 1 : 0) + 2; /* + the reductions over ranks */
    const double a = ya[i - ystart], b = yb[i - ystart];
    const double d = fabs(a - b), bound = TestBound(u, n, s);
    if (memcmp(&a, &b, sizeof(double))) ndiff++;
    if (!isfinite(a) || !isfinite(b)) { /* NaN where AIJ has NaN, the same infinity where AIJ has one */
      if (!((isnan(a) && isnan(b)) || (isinf(a) && a == b))) nbad++;
      continue;
    }
    if (!(d <= bound)) nbad++;
    if (bound > 0 && d / bound > worst_ratio) {
      worst_ratio = d / bound;
      worst_i     = i;
    }
  }
  PetscCall(VecRestoreArrayRead(ymp, &ya));
  PetscCall(VecRestoreArrayRead(yaij, &yb));
  if (z) PetscCall(VecRestoreArrayRead(z, &za));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &nbad, 1, MPIU_INT, MPI_SUM, comm));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &ndiff, 1, MPIU_INT, MPI_SUM, comm));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &worst_ratio, 1, MPI_DOUBLE, MPI_MAX, comm));
  (void)worst_i;
  TEST_CHECK(comm, nbad == 0, "%s: %" PetscInt_FMT " entries exceed the error bound (u = %g, worst |diff|/bound = %g)", what, nbad, u, worst_ratio);
  if (ndiffer) *ndiffer = ndiff;
  PetscCall(PetscFree2(S, cnt));
  PetscCall(VecDestroy(&xall));
  PetscCall(VecScatterDestroy(&sc));
  PetscFunctionReturn(0);
}

/* Returns the sequential block that does the local products: A (serial) or its diagonal block (MPI). */
static inline PetscErrorCode TestLocalBlocks(Mat A, Mat *Ad, Mat *Ao)
{
  PetscMPIInt size;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)A), &size));
  *Ao = NULL;
  if (size == 1) *Ad = A;
  else {
    const PetscInt *garray;
    PetscCall(MatMPIAIJGetSeqAIJ(A, Ad, Ao, &garray));
  }
  PetscFunctionReturn(0);
}

#endif
