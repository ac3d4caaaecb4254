static char help[] = "petscmp: every implementation PETSc looks up by type name for AIJ is found for aijmp,\n"
                     "and gives bitwise AIJ's result: conversions to dense/BAIJ/SBAIJ/SELL/IS/hypre/AIJPERM/AIJSELL/AIJCRL,\n"
                     "products AB/AtB/ABt/PtAP/RARt/ABC with aijmp in any operand, with dense and MAIJ partners.\n"
                     "  -M <rows> (default 60)\n\n";

#include "petscmp_test.h"
#include <petsc/private/petscimpl.h> /* the object's composed-function list (qlist), for the audit */

static PetscMPIInt size;
static PetscBool   g_verbose = PETSC_FALSE; /* -verbose: name each check before it runs */

/* ---------- 1. The audit: names composed by AIJ and its product partners ---------- */

/* name with every `base` token ('_'-separated, not the first or last) replaced by `ours`; 0 if none */
static int AIJMPVariant(const char *name, const char *base, const char *ours, char *out, size_t len)
{
  char   copy[256], *tok, *save = NULL;
  int    found = 0, first = 1;
  size_t ntok  = 0;

  PetscStrncpy(copy, name, sizeof copy);
  for (tok = strtok_r(copy, "_", &save); tok; tok = strtok_r(NULL, "_", &save)) ntok++;
  PetscStrncpy(copy, name, sizeof copy);
  out[0] = 0;
  size_t i = 0;
  for (tok = strtok_r(copy, "_", &save); tok; tok = strtok_r(NULL, "_", &save), i++) {
    const int replace = i > 0 && i + 1 < ntok && !strcmp(tok, base);
    found |= replace;
    if (!first) PetscStrlcat(out, "_", len);
    PetscStrlcat(out, replace ? ours : tok, len);
    first = 0;
  }
  return found;
}

/* Every name composed on `probe` that names `base` (seqaij or mpiaij) and that PETSc looks up by
   type (MatConvert_*, MatProductSetFromOptions_*) must be answered by the aijmp matrix `mp`. */
static PetscErrorCode AuditNames(Mat probe, Mat mp, const char *base, const char *ours, const char *what, PetscInt *checked)
{
  const char **names;
  int          n;

  PetscFunctionBeginUser;
  PetscCall(PetscFunctionListGet(((PetscObject)probe)->qlist, &names, &n));
  for (int k = 0; k < n && names[k]; k++) {
    char              variant[256];
    PetscVoidFunction fn = NULL;
    if (strncmp(names[k], "MatConvert_", 11) && strncmp(names[k], "MatProductSetFromOptions_", 25)) continue;
    if (!AIJMPVariant(names[k], base, ours, variant, sizeof variant)) continue;
    PetscCall(PetscObjectQueryFunction((PetscObject)mp, variant, &fn));
    TEST_CHECK(PETSC_COMM_SELF, fn != NULL, "%s composes %s, but aijmp does not answer %s (add it to aijmp_typekeyed.cxx)", what, names[k], variant);
    (*checked)++;
  }
  PetscCall(PetscFree(names));
  PetscFunctionReturn(0);
}

static PetscErrorCode EmptyMat(MatType type, Mat *A)
{
  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_SELF, A));
  PetscCall(MatSetSizes(*A, 0, 0, 0, 0));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSetUp(*A));
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode Audit(void)
{
  const char *bases[2] = {MATSEQAIJ, MATMPIAIJ}, *ours[2] = {MATSEQAIJMP, MATMPIAIJMP};
  const char *partners[2][5] = {{MATSEQDENSE, MATHYPRE, MATSEQBAIJ, MATSEQSBAIJ, MATSEQSELL},
                                {MATMPIDENSE, MATHYPRE, MATMPIBAIJ, MATMPISBAIJ, MATMPISELL}};
  PetscInt    checked = 0;

  PetscFunctionBeginUser;
  for (int t = 0; t < 2; t++) {
    Mat aij, mp, partner, maij;
    PetscCall(EmptyMat(bases[t], &aij));
    PetscCall(EmptyMat(ours[t], &mp));
    PetscCall(AuditNames(aij, mp, bases[t], ours[t], bases[t], &checked));
    for (int p = 0; p < 5; p++) {
      PetscErrorCode (*create)(Mat) = NULL;
      PetscCall(PetscFunctionListFind(MatList, partners[t][p], &create));
      if (!create) continue; /* a PETSc without hypre */
      PetscCall(EmptyMat(partners[t][p], &partner));
      PetscCall(AuditNames(partner, mp, bases[t], ours[t], partners[t][p], &checked));
      PetscCall(MatDestroy(&partner));
    }
    PetscCall(MatCreateMAIJ(aij, 2, &maij));
    PetscCall(AuditNames(maij, mp, bases[t], ours[t], "maij", &checked));
    PetscCall(MatDestroy(&maij));
    PetscCall(MatDestroy(&aij));
    PetscCall(MatDestroy(&mp));
  }
  /* 3.18 composes 14 conversions and 4 products on seqaij alone: an audit that checks nothing is broken */
  TEST_CHECK(PETSC_COMM_SELF, checked >= 30, "the audit checked only %" PetscInt_FMT " names", checked);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "audit: %" PetscInt_FMT " type-keyed names of AIJ and its partners answered by aijmp\n", checked));
  PetscFunctionReturn(0);
}

/* ---------- 2. Bitwise results ---------- */

/* A dense matrix as it is (a new reference), any other converted to AIJ and then to dense: both
   copy values (MatComputeOperator crashes on MPISELL in 3.18) */
static PetscErrorCode AsDense(Mat X, Mat *D)
{
  PetscBool dense;

  PetscFunctionBeginUser;
  PetscCall(PetscObjectTypeCompareAny((PetscObject)X, &dense, MATSEQDENSE, MATMPIDENSE, ""));
  if (dense) {
    PetscCall(PetscObjectReference((PetscObject)X));
    *D = X;
  } else {
    PetscCall(MatConvert(X, MATAIJ, MAT_INITIAL_MATRIX, D));
    PetscCall(MatConvert(*D, MATDENSE, MAT_INPLACE_MATRIX, D));
  }
  PetscFunctionReturn(0);
}

/* Bitwise equality of the entries of two matrices of any type: both as dense (MatMult with unit
   vectors: every entry times 1 plus zeros, exact), arrays compared. */
static PetscErrorCode CheckCloseMatrix(Mat X, Mat Ref, Mat Bound, double tol, const char *what)
{
  Mat                Xd, Rd, Bd = NULL;
  const PetscScalar *x, *r, *b = NULL;
  PetscInt           ldb = 0;
  PetscInt           m, n, mr, nr, lda1, lda2, ndiff = 0;

  PetscFunctionBeginUser;
  if (g_verbose) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "checking %s\n", what));
  PetscCall(AsDense(X, &Xd));
  PetscCall(AsDense(Ref, &Rd));
  if (Bound) PetscCall(AsDense(Bound, &Bd));
  PetscCall(MatGetLocalSize(Xd, &m, NULL));
  PetscCall(MatGetSize(Xd, NULL, &n));
  PetscCall(MatGetLocalSize(Rd, &mr, NULL));
  PetscCall(MatGetSize(Rd, NULL, &nr));
  TEST_CHECK(PETSC_COMM_WORLD, m == mr && n == nr, "%s: sizes differ", what);
  if (m == mr && n == nr) {
    PetscCall(MatDenseGetLDA(Xd, &lda1));
    PetscCall(MatDenseGetLDA(Rd, &lda2));
    PetscCall(MatDenseGetArrayRead(Xd, &x));
    PetscCall(MatDenseGetArrayRead(Rd, &r));
    if (Bd) PetscCall(MatDenseGetLDA(Bd, &ldb));
    if (Bd) PetscCall(MatDenseGetArrayRead(Bd, &b));
    for (PetscInt j = 0; j < n; j++)
      for (PetscInt i = 0; i < m; i++)
        if (b ? !(PetscAbsScalar(x[i + j * lda1] - r[i + j * lda2]) <= tol * PetscRealPart(b[i + j * ldb]))
              : memcmp(&x[i + j * lda1], &r[i + j * lda2], sizeof(PetscScalar))) {
          if (g_verbose && ndiff < 3) PetscCall(PetscPrintf(PETSC_COMM_SELF, "  (%" PetscInt_FMT ",%" PetscInt_FMT "): %.17g vs AIJ %.17g\n", i, j, (double)x[i + j * lda1], (double)r[i + j * lda2]));
          ndiff++;
        }
    PetscCall(MatDenseRestoreArrayRead(Xd, &x));
    PetscCall(MatDenseRestoreArrayRead(Rd, &r));
    if (Bd) PetscCall(MatDenseRestoreArrayRead(Bd, &b));
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &ndiff, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
    TEST_CHECK(PETSC_COMM_WORLD, ndiff == 0, "%s: %" PetscInt_FMT " entries differ %s from AIJ's", what, ndiff, b ? "beyond the rounding bound" : "bitwise");
  }
  PetscCall(MatDestroy(&Xd));
  PetscCall(MatDestroy(&Rd));
  PetscCall(MatDestroy(&Bd));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckSameMatrix(Mat X, Mat Ref, const char *what)
{
  PetscFunctionBeginUser;
  PetscCall(CheckCloseMatrix(X, Ref, NULL, 0.0, what));
  PetscFunctionReturn(0);
}

/* |X| entrywise, as AIJ */
static PetscErrorCode AbsAIJ(Mat X, Mat *Y)
{
  Mat          blocks[2] = {NULL, NULL};
  PetscScalar *v;
  PetscInt     nz;
  PetscBool    seq;

  PetscFunctionBeginUser;
  PetscCall(MatConvert(X, MATAIJ, MAT_INITIAL_MATRIX, Y));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)*Y, MATSEQAIJ, &seq));
  if (seq) blocks[0] = *Y;
  else PetscCall(MatMPIAIJGetSeqAIJ(*Y, &blocks[0], &blocks[1], NULL));
  for (int k = 0; k < 2; k++) {
    MatInfo info;
    if (!blocks[k]) continue;
    PetscCall(MatGetInfo(blocks[k], MAT_LOCAL, &info));
    nz = (PetscInt)info.nz_used;
    PetscCall(MatSeqAIJGetArray(blocks[k], &v));
    for (PetscInt i = 0; i < nz; i++) v[i] = PetscAbsScalar(v[i]);
    PetscCall(MatSeqAIJRestoreArray(blocks[k], &v));
  }
  PetscFunctionReturn(0);
}

/* PETSc's parallel PtAP (and RARt, computed through it) adds the contributions of other ranks in the
   order messages arrive: two runs with plain AIJ differ in the last bits. With more than one rank
   these products are checked against AIJ within the bound of two fp64 summations in any order,
   |C - C_aij| <= 2 gamma_k (|P|^T |A| |P|), k the number of terms of an entry (at most the order
   of A times the column count of P, both taken as the global sizes: a safe over-count). */
static PetscErrorCode PtAPBound(Mat A, Mat P, PetscBool rart, Mat *Bound, double *tol)
{
  Mat      Aabs, Pabs;
  PetscInt M, N;

  PetscFunctionBeginUser;
  PetscCall(AbsAIJ(A, &Aabs));
  PetscCall(AbsAIJ(P, &Pabs));
  if (rart) PetscCall(MatRARt(Aabs, Pabs, MAT_INITIAL_MATRIX, PETSC_DEFAULT, Bound));
  else PetscCall(MatPtAP(Aabs, Pabs, MAT_INITIAL_MATRIX, PETSC_DEFAULT, Bound));
  PetscCall(MatGetSize(A, &M, NULL));
  PetscCall(MatGetSize(P, rart ? &N : NULL, rart ? NULL : &N));
  *tol = 2.0 * TestGamma(M * N) * (1.0 + 1e-12); /* the bound itself is computed in fp64 */
  PetscCall(MatDestroy(&Aabs));
  PetscCall(MatDestroy(&Pabs));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckSameTypes(Mat X, Mat Ref, const char *what)
{
  MatType tx, tr;

  PetscFunctionBeginUser;
  PetscCall(MatGetType(X, &tx));
  PetscCall(MatGetType(Ref, &tr));
  PetscCall(TestCheckType(X, tr, what));
  (void)tx;
  PetscFunctionReturn(0);
}

static PetscErrorCode Conversions(Mat Aaij, Mat Amp, Mat Saij, Mat Smp)
{
  const char *targets[] = {MATDENSE, MATBAIJ, MATSBAIJ, MATSELL, MATIS, MATHYPRE, MATAIJPERM, MATAIJSELL, MATAIJCRL};
  /* AIJ's own converters to AIJPERM/AIJSELL/AIJCRL/SELL leak their previous data on MAT_REUSE_MATRIX (PETSc 3.18) */
  const PetscBool reuse_ok[] = {PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_FALSE, PETSC_FALSE};

  PetscFunctionBeginUser;
  for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
    const PetscBool sym = !strcmp(targets[t], MATSBAIJ);
    Mat             from_aij, from_mp, in_place;
    char            what[128];
    PetscErrorCode (*create)(Mat) = NULL;

    PetscCall(PetscFunctionListFind(MatList, targets[t], &create));
    if (!create && !strcmp(targets[t], MATHYPRE)) continue; /* a PETSc without hypre */
    PetscCall(MatConvert(sym ? Saij : Aaij, targets[t], MAT_INITIAL_MATRIX, &from_aij));
    PetscCall(MatConvert(sym ? Smp : Amp, targets[t], MAT_INITIAL_MATRIX, &from_mp));
    PetscCall(PetscSNPrintf(what, sizeof what, "MatConvert(aijmp, %s)", targets[t]));
    PetscCall(CheckSameTypes(from_mp, from_aij, what));
    PetscCall(CheckSameMatrix(from_mp, from_aij, what));
    /* reuse: convert into the matrix made before */
    if (reuse_ok[t]) {
      PetscCall(MatConvert(sym ? Smp : Amp, targets[t], MAT_REUSE_MATRIX, &from_mp));
      PetscCall(PetscSNPrintf(what, sizeof what, "MatConvert(aijmp, %s, MAT_REUSE_MATRIX)", targets[t]));
      PetscCall(CheckSameMatrix(from_mp, from_aij, what));
    }
    /* in place, on a copy */
    PetscCall(MatDuplicate(sym ? Smp : Amp, MAT_COPY_VALUES, &in_place));
    if (sym) PetscCall(MatSetOption(in_place, MAT_SYMMETRIC, PETSC_TRUE)); /* MatDuplicate does not keep it */
    PetscCall(MatConvert(in_place, targets[t], MAT_INPLACE_MATRIX, &in_place));
    PetscCall(PetscSNPrintf(what, sizeof what, "MatConvert(aijmp, %s, MAT_INPLACE_MATRIX)", targets[t]));
    PetscCall(CheckSameTypes(in_place, from_aij, what));
    PetscCall(CheckSameMatrix(in_place, from_aij, what));
    PetscCall(MatDestroy(&in_place));
    PetscCall(MatDestroy(&from_aij));
    PetscCall(MatDestroy(&from_mp));
  }
  PetscFunctionReturn(0);
}

/* C = product(ops) with each operand either AIJ or aijmp (mask bit k: operand k is aijmp),
   bitwise equal to the all-AIJ product; C is aijmp exactly when AIJ's kernel gives C the type of
   an aijmp A, and then it has A's storage setting. */
static PetscErrorCode CheckProduct(MatProductType type, Mat aij[3], Mat mp[3], int nops, const char *name)
{
  Mat ref, C;

  PetscFunctionBeginUser;
  PetscCall(MatProductCreate(aij[0], aij[1], nops == 3 ? aij[2] : NULL, &ref));
  PetscCall(MatProductSetType(ref, type));
  PetscCall(MatProductSetFromOptions(ref));
  PetscCall(MatProductSymbolic(ref));
  PetscCall(MatProductNumeric(ref));
  Mat    bound = NULL;
  double tol   = 0.0;
  if (size > 1 && (type == MATPRODUCT_PtAP || type == MATPRODUCT_RARt)) PetscCall(PtAPBound(aij[0], aij[1], (PetscBool)(type == MATPRODUCT_RARt), &bound, &tol));
  for (int mask = 1; mask < (1 << nops); mask++) {
    Mat  ops[3] = {NULL, NULL, NULL};
    char what[128];
    for (int k = 0; k < nops; k++) ops[k] = (mask >> k & 1) ? mp[k] : aij[k];
    PetscCall(MatProductCreate(ops[0], ops[1], ops[2], &C));
    PetscCall(MatProductSetType(C, type));
    PetscCall(MatProductSetFromOptions(C));
    PetscCall(MatProductSymbolic(C));
    PetscCall(MatProductNumeric(C));
    PetscCall(PetscSNPrintf(what, sizeof what, "%s with operands %s%s%s", name, mask & 1 ? "mp" : "aij", mask & 2 ? ",mp" : ",aij",
                            nops == 3 ? (mask & 4 ? ",mp" : ",aij") : ""));
    PetscCall(CheckCloseMatrix(C, ref, bound, tol, what));
    /* AIJ's AB, PtAP and ABC give C the type of A: aijmp A, aijmp C (multigrid coarse levels);
       AtB, ABt and RARt follow other operands in parallel (PETSc's choice, not checked) */
    if ((mask & 1) && (type == MATPRODUCT_AB || type == MATPRODUCT_PtAP || type == MATPRODUCT_ABC)) PetscCall(TestCheckType(C, size == 1 ? MATSEQAIJMP : MATMPIAIJMP, what));
    /* the numeric phase again (MAT_REUSE_MATRIX path of MatMatMult and friends) */
    PetscCall(MatProductNumeric(C));
    PetscCall(CheckCloseMatrix(C, ref, bound, tol, what));
    PetscCall(MatDestroy(&C));
  }
  PetscCall(MatDestroy(&ref));
  PetscCall(MatDestroy(&bound));
  PetscFunctionReturn(0);
}

static PetscErrorCode Products(Mat Aaij, Mat Amp, Mat Paij, Mat Pmp, Mat Raij, Mat Rmp)
{
  Mat aij[3] = {Aaij, Aaij, Aaij}, mp[3] = {Amp, Amp, Amp};

  PetscFunctionBeginUser;
  PetscCall(CheckProduct(MATPRODUCT_AB, aij, mp, 2, "AB"));
  PetscCall(CheckProduct(MATPRODUCT_AtB, aij, mp, 2, "AtB"));
  PetscCall(CheckProduct(MATPRODUCT_ABt, aij, mp, 2, "ABt"));
  PetscCall(CheckProduct(MATPRODUCT_ABC, aij, mp, 3, "ABC"));
  aij[1] = Paij, mp[1] = Pmp;
  PetscCall(CheckProduct(MATPRODUCT_PtAP, aij, mp, 2, "PtAP"));
  aij[1] = Raij, mp[1] = Rmp;
  PetscCall(CheckProduct(MATPRODUCT_RARt, aij, mp, 2, "RARt"));
  PetscFunctionReturn(0);
}

/* aijmp times dense (the path of PCEXOTIC's MatMatMult, issue 9 failure 3) and dense times aijmp */
static PetscErrorCode DenseProducts(Mat Aaij, Mat Amp)
{
  Mat      D, C1, C2;
  PetscInt m, M;

  PetscFunctionBeginUser;
  PetscCall(MatGetLocalSize(Aaij, &m, NULL));
  PetscCall(MatGetSize(Aaij, &M, NULL));
  PetscCall(MatCreateDense(PETSC_COMM_WORLD, m, PETSC_DECIDE, M, 5, NULL, &D));
  PetscCall(MatSetRandom(D, NULL));
  PetscCall(MatMatMult(Aaij, D, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &C1));
  PetscCall(MatMatMult(Amp, D, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &C2));
  PetscCall(CheckSameTypes(C2, C1, "MatMatMult(aijmp, dense)"));
  PetscCall(CheckSameMatrix(C2, C1, "MatMatMult(aijmp, dense)"));
  PetscCall(MatMatMult(Amp, D, MAT_REUSE_MATRIX, PETSC_DEFAULT, &C2));
  PetscCall(CheckSameMatrix(C2, C1, "MatMatMult(aijmp, dense, MAT_REUSE_MATRIX)"));
  PetscCall(MatDestroy(&C1));
  PetscCall(MatDestroy(&C2));
  PetscCall(MatTransposeMatMult(Aaij, D, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &C1));
  PetscCall(MatTransposeMatMult(Amp, D, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &C2));
  PetscCall(CheckSameMatrix(C2, C1, "MatTransposeMatMult(aijmp, dense)"));
  PetscCall(MatDestroy(&C1));
  PetscCall(MatDestroy(&C2));
  PetscCall(MatDestroy(&D));
  PetscFunctionReturn(0);
}

/* Galerkin product with a MAIJ interpolation (PCMG on a DMDA with dof > 1) */
static PetscErrorCode MAIJProducts(Mat P0aij, PetscInt M)
{
  TestMatOpts o;
  Mat         A2aij, A2mp, Pmaij, C1, C2;

  PetscFunctionBeginUser;
  TestMatOptsDefault(&o, 2 * M);
  o.seed = 7;
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &A2aij));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &A2mp));
  /* a fresh MAIJ for each product: MPIAIJ x MPIMAIJ converts P to MPIAIJ in place */
  PetscCall(MatCreateMAIJ(P0aij, 2, &Pmaij));
  PetscCall(MatPtAP(A2aij, Pmaij, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &C1));
  PetscCall(MatDestroy(&Pmaij));
  PetscCall(MatCreateMAIJ(P0aij, 2, &Pmaij));
  PetscCall(MatPtAP(A2mp, Pmaij, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &C2));
  if (size > 1) {
    Mat    bound, Pplain;
    double tol;
    PetscCall(MatConvert(Pmaij, MATAIJ, MAT_INITIAL_MATRIX, &Pplain));
    PetscCall(PtAPBound(A2aij, Pplain, PETSC_FALSE, &bound, &tol));
    PetscCall(CheckCloseMatrix(C2, C1, bound, tol, "MatPtAP(aijmp, maij)"));
    PetscCall(MatDestroy(&bound));
    PetscCall(MatDestroy(&Pplain));
  } else PetscCall(CheckSameMatrix(C2, C1, "MatPtAP(aijmp, maij)"));
  PetscCall(MatDestroy(&C1));
  PetscCall(MatDestroy(&C2));
  PetscCall(MatDestroy(&Pmaij));
  PetscCall(MatDestroy(&A2aij));
  PetscCall(MatDestroy(&A2mp));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  TestMatOpts o, op;
  Mat         Aaij, Amp, Paij, Pmp, Raij, Rmp, Saij, Smp;
  PetscInt    M = 60;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-M", &M, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-verbose", &g_verbose, NULL));

  PetscCall(Audit());

  TestMatOptsDefault(&o, M);
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &Aaij));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &Amp));
  PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_LOSSLESS));
  /* P: M x M/3 interpolation-like; R = P^T */
  TestMatOptsDefault(&op, M);
  op.N    = M / 3;
  op.seed = 3;
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &op, &Paij));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &op, &Pmp));
  PetscCall(MatTranspose(Paij, MAT_INITIAL_MATRIX, &Raij));
  PetscCall(MatConvert(Raij, MATAIJMP, MAT_INITIAL_MATRIX, &Rmp));
  /* S = A + A^T for SBAIJ */
  PetscCall(MatTranspose(Aaij, MAT_INITIAL_MATRIX, &Saij));
  PetscCall(MatAXPY(Saij, 1.0, Aaij, DIFFERENT_NONZERO_PATTERN));
  PetscCall(MatSetOption(Saij, MAT_SYMMETRIC, PETSC_TRUE));
  PetscCall(MatConvert(Saij, MATAIJMP, MAT_INITIAL_MATRIX, &Smp));
  PetscCall(MatSetOption(Smp, MAT_SYMMETRIC, PETSC_TRUE));

  {
    /* negative control (-test_control): one entry of the aijmp matrix one ulp off: the comparisons must see it */
    PetscBool control = PETSC_FALSE;
    PetscCall(PetscOptionsGetBool(NULL, NULL, "-test_control", &control, NULL));
    if (control) {
      PetscInt           rstart, ncols;
      const PetscInt    *cols;
      const PetscScalar *vals;
      PetscInt           c;
      PetscScalar        v;
      PetscCall(MatGetOwnershipRange(Amp, &rstart, NULL));
      PetscCall(MatGetRow(Amp, rstart, &ncols, &cols, &vals));
      c = cols[0];
      v = nextafter(vals[0], 2 * vals[0]);
      PetscCall(MatRestoreRow(Amp, rstart, &ncols, &cols, &vals));
      PetscCall(MatSetValue(Amp, rstart, c, v, INSERT_VALUES));
      PetscCall(MatAssemblyBegin(Amp, MAT_FINAL_ASSEMBLY));
      PetscCall(MatAssemblyEnd(Amp, MAT_FINAL_ASSEMBLY));
    }
  }
  PetscCall(Conversions(Aaij, Amp, Saij, Smp));
  PetscCall(Products(Aaij, Amp, Paij, Pmp, Raij, Rmp));
  /* a lossy aijmp A hands its storage to the product */
  PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_FP32));
  {
    Mat C;
    MatAIJMPStorage st;
    PetscCall(MatPtAP(Amp, Paij, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &C));
    PetscCall(MatAIJMPGetStorage(C, &st));
    TEST_CHECK(PETSC_COMM_WORLD, st == MAT_AIJMP_FP32, "PtAP of an fp32 aijmp: result storage %s", MatAIJMPStorages[st]);
    PetscCall(MatDestroy(&C));
  }
  PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_LOSSLESS));
  PetscCall(DenseProducts(Aaij, Amp));
  PetscCall(MAIJProducts(Paij, M));

  PetscCall(MatDestroy(&Aaij));
  PetscCall(MatDestroy(&Amp));
  PetscCall(MatDestroy(&Paij));
  PetscCall(MatDestroy(&Pmp));
  PetscCall(MatDestroy(&Raij));
  PetscCall(MatDestroy(&Rmp));
  PetscCall(MatDestroy(&Saij));
  PetscCall(MatDestroy(&Smp));
  {
    int code = TestFinish();
    PetscCall(PetscFinalize());
    return code;
  }
}
