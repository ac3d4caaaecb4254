static char help[] = "petscmp: MatMult, MatMultAdd, MatMultTranspose, MatMultTransposeAdd of MATAIJMP against MATAIJ.\n"
                     "Lossless: bitwise equal (with and without inodes). Lossy modes: within the derived error bound,\n"
                     "MatAIJMPGetInfo consistent. -mat_aijmp_threads 2: bitwise equal to 1 thread.\n"
                     "  -M <rows> (default 192)\n"
                     "  -test_bound_scale <s>: multiply the error bounds by s (s < 1: the checks must fail)\n\n";

#include "petscmp_test.h"

/* unit roundoff (rounding) or bound on the relative truncation error, per PetscMPFormat */
static const double format_u[PETSCMP_NUM_FORMATS] = {0.0, 0x1p-24, 0x1p-11, 0x1p-8, 0x1p-20, 0x1p-4};

typedef struct {
  MatAIJMPStorage storage;
  double          param, param2; /* tolerance; rowsplit range factor, row fraction (0: defaults) */
  double          u;             /* widest u of the mode */
  int             main_format;   /* a format that must hold nonzeros, -1: none required */
  PetscBool       must_differ;   /* the mixed matrix has values this mode cannot store exactly */
  const char     *name;
} LossyCase;

/* Runs the four products (plus MultAdd in place) on Amp and Aaij; in lossless mode compares bitwise,
   else against the bound with unit roundoff u. */
static PetscErrorCode CheckProducts(Mat Amp, Mat Aaij, PetscBool lossless, double u, const char *label, PetscInt *ndiffer)
{
  Vec      x, z, y1, y2, xt, zt, yt1, yt2;
  char     what[256];
  PetscInt nd, total = 0;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(Aaij, &xt, &x)); /* x: row layout (input of A^T), xt: column layout (input of A) */
  PetscCall(VecDuplicate(x, &z));
  PetscCall(VecDuplicate(x, &y1));
  PetscCall(VecDuplicate(x, &y2));
  PetscCall(VecDuplicate(xt, &zt));
  PetscCall(VecDuplicate(xt, &yt1));
  PetscCall(VecDuplicate(xt, &yt2));
  PetscCall(TestVecFill(xt, 3));
  PetscCall(TestVecFill(x, 4));
  PetscCall(TestVecFill(z, 5));
  PetscCall(TestVecFill(zt, 6));

#define COMPARE(op, xin, zin, ya, yb, transpose) \
  do { \
    PetscCall(PetscSNPrintf(what, sizeof what, "%s %s", label, op)); \
    if (lossless) PetscCall(TestCheckBitwise(ya, yb, what)); \
    else { \
      PetscCall(TestCheckBound(Aaij, transpose, xin, zin, ya, yb, u, what, &nd)); \
      total += nd; \
    } \
  } while (0)

  PetscCall(MatMult(Amp, xt, y1));
  PetscCall(MatMult(Aaij, xt, y2));
  COMPARE("MatMult", xt, NULL, y1, y2, PETSC_FALSE);

  PetscCall(MatMultAdd(Amp, xt, z, y1));
  PetscCall(MatMultAdd(Aaij, xt, z, y2));
  COMPARE("MatMultAdd (z != y)", xt, z, y1, y2, PETSC_FALSE);

  PetscCall(VecCopy(z, y1));
  PetscCall(VecCopy(z, y2));
  PetscCall(MatMultAdd(Amp, xt, y1, y1));
  PetscCall(MatMultAdd(Aaij, xt, y2, y2));
  COMPARE("MatMultAdd (z == y)", xt, z, y1, y2, PETSC_FALSE);

  PetscCall(MatMultTranspose(Amp, x, yt1));
  PetscCall(MatMultTranspose(Aaij, x, yt2));
  COMPARE("MatMultTranspose", x, NULL, yt1, yt2, PETSC_TRUE);

  PetscCall(MatMultTransposeAdd(Amp, x, zt, yt1));
  PetscCall(MatMultTransposeAdd(Aaij, x, zt, yt2));
  COMPARE("MatMultTransposeAdd (z != y)", x, zt, yt1, yt2, PETSC_TRUE);

  PetscCall(VecCopy(zt, yt1));
  PetscCall(VecCopy(zt, yt2));
  PetscCall(MatMultTransposeAdd(Amp, x, yt1, yt1));
  PetscCall(MatMultTransposeAdd(Aaij, x, yt2, yt2));
  COMPARE("MatMultTransposeAdd (z == y)", x, zt, yt1, yt2, PETSC_TRUE);
#undef COMPARE

  /* a repeated product (the compact copy is reused) gives the same bits */
  PetscCall(MatMult(Amp, xt, y1));
  PetscCall(MatMult(Amp, xt, y2));
  PetscCall(PetscSNPrintf(what, sizeof what, "%s repeated MatMult", label));
  PetscCall(TestCheckBitwise(y1, y2, what));

  if (ndiffer) *ndiffer = total;
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&z));
  PetscCall(VecDestroy(&y1));
  PetscCall(VecDestroy(&y2));
  PetscCall(VecDestroy(&xt));
  PetscCall(VecDestroy(&zt));
  PetscCall(VecDestroy(&yt1));
  PetscCall(VecDestroy(&yt2));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckInfo(Mat Amp, Mat Aaij, const LossyCase *lc, const char *label)
{
  MPI_Comm     comm = PetscObjectComm((PetscObject)Amp);
  MatAIJMPInfo info;
  MatInfo      minfo;
  PetscInt     M, N;
  PetscInt64   rows = 0, nnz = 0;

  PetscFunctionBeginUser;
  PetscCall(MatAIJMPGetInfo(Amp, &info));
  PetscCall(MatGetInfo(Aaij, MAT_GLOBAL_SUM, &minfo));
  PetscCall(MatGetSize(Amp, &M, &N));
  for (int f = 0; f < PETSCMP_NUM_FORMATS; f++) {
    rows += info.rows[f];
    nnz += info.nnz[f];
    const double bound = lc ? (lc->storage == MAT_AIJMP_TOLERANCE ? PetscMin(format_u[f], lc->param) : format_u[f]) : 0.0;
    TEST_CHECK(comm, info.max_rel_error[f] <= bound, "%s: max_rel_error[%s] = %g exceeds %g", label, PetscMPFormats[f], (double)info.max_rel_error[f], bound);
    TEST_CHECK(comm, info.max_rel_error[f] >= 0 && info.rows[f] >= 0 && info.nnz[f] >= 0, "%s: negative info for %s", label, PetscMPFormats[f]);
  }
  if (lc && lc->storage == MAT_AIJMP_FP32 && info.rows[PETSCMP_FP32] == M) {
    /* every row in fp32: the reported change is the largest |float(a) - a|/|a| over the values (measured on demand) */
    PetscInt           lo, hi, n;
    const PetscScalar *v;
    double             want = 0.0;
    PetscCall(MatGetOwnershipRange(Aaij, &lo, &hi));
    for (PetscInt i = lo; i < hi; i++) {
      PetscCall(MatGetRow(Aaij, i, &n, NULL, &v));
      for (PetscInt k = 0; k < n; k++)
        if (v[k] != 0.0) want = PetscMax(want, PetscAbsReal((double)(float)v[k] - v[k]) / PetscAbsReal(v[k]));
      PetscCall(MatRestoreRow(Aaij, i, &n, NULL, &v));
    }
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &want, 1, MPI_DOUBLE, MPI_MAX, comm));
    TEST_CHECK(comm, want > 0 && info.max_rel_error[PETSCMP_FP32] == want, "%s: max_rel_error[fp32] = %g, the values' largest change is %g", label,
               (double)info.max_rel_error[PETSCMP_FP32], want);
  }
  TEST_CHECK(comm, nnz == (PetscInt64)minfo.nz_used, "%s: info nonzeros sum to %" PetscInt64_FMT ", the matrix has %.0f", label, nnz, minfo.nz_used);
  if (!lc || lc->storage != MAT_AIJMP_ENTRYSPLIT) TEST_CHECK(comm, rows == (PetscInt64)M, "%s: info rows sum to %" PetscInt64_FMT ", the matrix has %" PetscInt_FMT, label, rows, M);
  TEST_CHECK(comm, info.lossy == (lc ? PETSC_TRUE : PETSC_FALSE), "%s: info.lossy = %d", label, (int)info.lossy);
  TEST_CHECK(comm, info.bytes > 0 && info.aij_bytes > 0, "%s: bytes %g aij_bytes %g", label, (double)info.bytes, (double)info.aij_bytes);
  if (!lc) {
    /* the mixed matrix has rows needing each of fp16, bf16, fp32, fp64 */
    const int need[4] = {PETSCMP_FP16, PETSCMP_BF16, PETSCMP_FP32, PETSCMP_FP64};
    for (int k = 0; k < 4; k++) TEST_CHECK(comm, info.rows[need[k]] > 0 && info.nnz[need[k]] > 0, "%s: lossless stored no row in %s", label, PetscMPFormats[need[k]]);
    TEST_CHECK(comm, info.rows[PETSCMP_FP11_20] == 0 && info.rows[PETSCMP_FP11_4] == 0, "%s: lossless used a truncated format", label);
    if (PetscGlobalSize == 1) TEST_CHECK(comm, info.bytes < info.aij_bytes, "%s: lossless reads %g bytes, AIJ %g", label, (double)info.bytes, (double)info.aij_bytes);
  } else if (lc->main_format >= 0) {
    TEST_CHECK(comm, info.nnz[lc->main_format] > 0, "%s: no nonzero stored in %s", label, PetscMPFormats[lc->main_format]);
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckInodes(Mat A, PetscBool expect, const char *label)
{
  Mat       Ad, Ao;
  PetscInt  nodes = 0, *sizes = NULL, limit = 0, m, sum = 0, maxsize = 0;

  PetscFunctionBeginUser;
  PetscCall(TestLocalBlocks(A, &Ad, &Ao));
  PetscCall(MatGetLocalSize(Ad, &m, NULL));
  PetscCall(MatInodeGetInodeSizes(Ad, &nodes, &sizes, &limit));
  if (sizes)
    for (PetscInt k = 0; k < nodes; k++) {
      sum += sizes[k];
      maxsize = PetscMax(maxsize, sizes[k]);
    }
  if (expect) TEST_CHECK(PetscObjectComm((PetscObject)A), sizes && nodes > 0 && sum == m && maxsize >= 3, "%s: expected inodes, got %" PetscInt_FMT " nodes (max size %" PetscInt_FMT ")", label, nodes, maxsize);
  else TEST_CHECK(PetscObjectComm((PetscObject)A), !sizes || nodes == 0, "%s: expected no inodes, got %" PetscInt_FMT " nodes", label, nodes);
  PetscFunctionReturn(0);
}

/* Products of Amp in the csr, sliced and node layouts, lossless and fp16: bitwise equal to each other, and to AIJ's
   when lossless. MatAIJMPGetInfo: csr and node store exactly the nonzeros, sliced at least as many; the node layout
   holds every row, in nodes of 3 rows on inode matrices (some cut by the ranks' row ranges). */
#define NUM_LAYOUTS 3
static PetscErrorCode CheckLayouts(Mat Amp, Mat Aaij, PetscBool inode, const char *label)
{
  const MatAIJMPLayout  layouts[NUM_LAYOUTS] = {MAT_AIJMP_LAYOUT_CSR, MAT_AIJMP_LAYOUT_SLICED, MAT_AIJMP_LAYOUT_NODE};
  const MatAIJMPStorage storages[2] = {MAT_AIJMP_LOSSLESS, MAT_AIJMP_FP16};
  MPI_Comm              comm        = PetscObjectComm((PetscObject)Amp);
  Vec                   x, z, y[NUM_LAYOUTS], ya[NUM_LAYOUTS], yt[NUM_LAYOUTS];
  char                  what[160];

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(Aaij, &x, &z));
  PetscCall(TestVecFill(x, 11));
  PetscCall(TestVecFill(z, 12));
  for (int l = 0; l < NUM_LAYOUTS; l++) {
    PetscCall(VecDuplicate(z, &y[l]));
    PetscCall(VecDuplicate(z, &ya[l]));
    PetscCall(VecDuplicate(x, &yt[l]));
  }
  for (int s = 0; s < 2; s++) {
    PetscCall(MatAIJMPSetStorage(Amp, storages[s]));
    for (int l = 0; l < NUM_LAYOUTS; l++) {
      MatAIJMPLayout got;
      MatAIJMPInfo   info;
      PetscInt64     nnz = 0;
      PetscCall(MatAIJMPSetLayout(Amp, layouts[l]));
      PetscCall(MatAIJMPGetLayout(Amp, &got));
      TEST_CHECK(comm, got == layouts[l], "%s: MatAIJMPGetLayout returned %s after setting %s", label, MatAIJMPLayouts[got], MatAIJMPLayouts[layouts[l]]);
      PetscCall(MatAIJMPGetInfo(Amp, &info));
      for (int f = 0; f < PETSCMP_NUM_FORMATS; f++) nnz += info.nnz[f];
      if (layouts[l] != MAT_AIJMP_LAYOUT_SLICED) TEST_CHECK(comm, info.stored == nnz, "%s: %s layout stores %" PetscInt64_FMT " values for %" PetscInt64_FMT " nonzeros", label, MatAIJMPLayouts[layouts[l]], info.stored, nnz);
      else TEST_CHECK(comm, info.stored >= nnz, "%s: sliced layout stores %" PetscInt64_FMT " values for %" PetscInt64_FMT " nonzeros", label, info.stored, nnz);
      if (layouts[l] == MAT_AIJMP_LAYOUT_NODE) {
        PetscInt64 rows = 0, big = 0;
        PetscInt   m;
        PetscCall(MatGetLocalSize(Amp, &m, NULL));
        PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPIU_INT, MPI_SUM, comm));
        for (int n = 1; n <= 8; n++) rows += n * info.nodes_of_size[n];
        for (int n = 3; n <= 8; n++) big += info.nodes_of_size[n];
        TEST_CHECK(comm, rows == info.node_rows, "%s: nodes of each size hold %" PetscInt64_FMT " rows, node_rows says %" PetscInt64_FMT, label, rows, info.node_rows);
        /* storages that split a node's rows into different formats (fp16 on mixed values) may leave nodes of 1 or 2 */
        if (storages[s] == MAT_AIJMP_LOSSLESS || !inode) TEST_CHECK(comm, info.node_rows == m, "%s: the node layout holds %" PetscInt64_FMT " of %" PetscInt_FMT " rows", label, info.node_rows, m);
        if (inode) TEST_CHECK(comm, big > 0, "%s: an inode matrix in the node layout has no node of 3 rows or more", label);
      } else TEST_CHECK(comm, info.nodes == 0, "%s: layout %s reports %" PetscInt64_FMT " nodes", label, MatAIJMPLayouts[layouts[l]], info.nodes);
      PetscCall(MatMult(Amp, x, y[l]));
      PetscCall(MatMultAdd(Amp, x, z, ya[l]));
      PetscCall(MatMultTranspose(Amp, z, yt[l]));
      if (storages[s] == MAT_AIJMP_LOSSLESS) {
        PetscCall(PetscSNPrintf(what, sizeof what, "%s lossless, layout %s", label, MatAIJMPLayouts[layouts[l]]));
        PetscCall(CheckProducts(Amp, Aaij, PETSC_TRUE, 0, what, NULL));
      }
    }
    for (int l = 1; l < NUM_LAYOUTS; l++) {
      const char *st = MatAIJMPStorages[storages[s]], *lay = MatAIJMPLayouts[layouts[l]];
      PetscCall(PetscSNPrintf(what, sizeof what, "%s %s: MatMult csr against %s", label, st, lay));
      PetscCall(TestCheckBitwise(y[0], y[l], what));
      PetscCall(PetscSNPrintf(what, sizeof what, "%s %s: MatMultAdd csr against %s", label, st, lay));
      PetscCall(TestCheckBitwise(ya[0], ya[l], what));
      PetscCall(PetscSNPrintf(what, sizeof what, "%s %s: MatMultTranspose csr against %s", label, st, lay));
      PetscCall(TestCheckBitwise(yt[0], yt[l], what));
    }
  }
  PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_LOSSLESS));
  PetscCall(MatAIJMPSetLayout(Amp, MAT_AIJMP_LAYOUT_AUTO));
  for (int l = 0; l < NUM_LAYOUTS; l++) {
    PetscCall(VecDestroy(&y[l]));
    PetscCall(VecDestroy(&ya[l]));
    PetscCall(VecDestroy(&yt[l]));
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&z));
  PetscFunctionReturn(0);
}

/* The test matrix on comm with block size 3 (its nodes: 3 rows of one pattern), of type `type`, stored as `storage`;
   prefix: an options prefix (to set options for this matrix only), or NULL. */
static PetscErrorCode CreateBlockMatrix(MPI_Comm comm, MatType type, MatAIJMPStorage storage, const TestMatOpts *o,
                                        const char *prefix, Mat *A)
{
  PetscFunctionBeginUser;
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, PETSC_DECIDE, PETSC_DECIDE, o->M, o->N));
  PetscCall(MatSetBlockSize(*A, 3));
  if (prefix) PetscCall(MatSetOptionsPrefix(*A, prefix));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSetFromOptions(*A));
  PetscCall(MatSeqAIJSetPreallocation(*A, 12, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, 12, NULL, 12, NULL));
  if (!strcmp(type, MATAIJMP)) PetscCall(MatAIJMPSetStorage(*A, storage));
  if (!strcmp(type, MATELLMP)) PetscCall(MatELLMPSetStorage(*A, storage));
  PetscCall(TestMatSetEntries(*A, o, 1.0));
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* The nonzeros per storage format that -mat_view ::ascii_info reports for A (summed over its ranks; formats it does
   not list hold none). Works for aijmp and ellmp (ellmp has no MatAIJMPGetInfo). */
static PetscErrorCode ViewedFormatNonzeros(Mat A, const char *name, PetscInt64 nnz[PETSCMP_NUM_FORMATS])
{
  char  text[16384], *line, *save = NULL;

  PetscFunctionBeginUser;
  PetscCall(TestViewInfoText(A, name, text, sizeof text));
  for (int f = 0; f < PETSCMP_NUM_FORMATS; f++) nnz[f] = 0;
  for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char      format[32];
    long long rows, nonzeros;
    if (sscanf(line, " %31s %lld %lld", format, &rows, &nonzeros) != 3) continue;
    for (int f = 0; f < PETSCMP_NUM_FORMATS; f++)
      if (!strcmp(format, PetscMPFormats[f])) nnz[f] = nonzeros;
  }
  PetscFunctionReturn(0);
}

/* Block formats (-mat_aijmp_block_formats, -mat_ellmp_block_formats, on by default): the rows of a block of 3 with
   one pattern share a format, so a row's format depends on its block alone: every rank count stores the formats of one
   process (the nonzeros per format, summed over ranks, and for aijmp the rows per format of MatAIJMPGetInfo, equal the
   serial matrix's), which differ from the formats of each row alone; lossless products stay AIJ's bit for bit. */
static PetscErrorCode CheckBlockFormats(PetscInt M)
{
  const MatType         types[]    = {MATAIJMP, MATELLMP};
  const MatAIJMPStorage storages[] = {MAT_AIJMP_LOSSLESS, MAT_AIJMP_FP16};
  TestMatOpts           o;
  char                  label[128];

  PetscFunctionBeginUser;
  TestMatOptsDefault(&o, 3 * (M / 3));
  o.inode     = PETSC_TRUE;
  o.valuekind = VAL_MIXED;
  PetscCall(PetscOptionsSetValue(NULL, "-rowwise_mat_aijmp_block_formats", "0"));
  PetscCall(PetscOptionsSetValue(NULL, "-rowwise_mat_ellmp_block_formats", "0"));
  for (int t = 0; t < 2; t++)
    for (int s = 0; s < 2; s++) {
      Mat        A, serial, rowwise, aij;
      PetscInt64 na[PETSCMP_NUM_FORMATS], ns[PETSCMP_NUM_FORMATS], nr[PETSCMP_NUM_FORMATS];
      PetscBool  differ = PETSC_FALSE;

      PetscCall(PetscSNPrintf(label, sizeof label, "block formats, %s %s", types[t], MatAIJMPStorages[storages[s]]));
      PetscCall(CreateBlockMatrix(PETSC_COMM_WORLD, types[t], storages[s], &o, NULL, &A));
      PetscCall(CreateBlockMatrix(PETSC_COMM_SELF, types[t], storages[s], &o, NULL, &serial));
      PetscCall(CreateBlockMatrix(PETSC_COMM_SELF, types[t], storages[s], &o, "rowwise_", &rowwise));
      PetscCall(ViewedFormatNonzeros(A, "all", na));
      PetscCall(ViewedFormatNonzeros(serial, "serial", ns));
      PetscCall(ViewedFormatNonzeros(rowwise, "rowwise", nr));
      for (int f = 0; f < PETSCMP_NUM_FORMATS; f++) {
        differ = (PetscBool)(differ || nr[f] != ns[f]);
        TEST_CHECK(PETSC_COMM_WORLD, na[f] == ns[f], "%s: %" PetscInt64_FMT " nonzeros in %s on %d ranks, %" PetscInt64_FMT " on one", label,
                   na[f], PetscMPFormats[f], (int)PetscGlobalSize, ns[f]);
      }
      TEST_CHECK(PETSC_COMM_WORLD, differ, "%s: the formats of the rows alone are those of the blocks", label);
      if (t == 0) {
        MatAIJMPInfo ia, is;
        PetscCall(MatAIJMPGetInfo(A, &ia));
        PetscCall(MatAIJMPGetInfo(serial, &is));
        for (int f = 0; f < PETSCMP_NUM_FORMATS; f++)
          TEST_CHECK(PETSC_COMM_WORLD, ia.rows[f] == is.rows[f] && ia.nnz[f] == na[f], "%s: %" PetscInt64_FMT " rows in %s on %d ranks, %" PetscInt64_FMT " on one", label,
                     ia.rows[f], PetscMPFormats[f], (int)PetscGlobalSize, is.rows[f]);
      }
      if (storages[s] == MAT_AIJMP_LOSSLESS) {
        PetscCall(CreateBlockMatrix(PETSC_COMM_WORLD, MATAIJ, storages[s], &o, NULL, &aij));
        PetscCall(CheckProducts(A, aij, PETSC_TRUE, 0, label, NULL));
        PetscCall(MatDestroy(&aij));
      }
      PetscCall(MatDestroy(&A));
      PetscCall(MatDestroy(&serial));
      PetscCall(MatDestroy(&rowwise));
    }
  PetscCall(PetscOptionsClearValue(NULL, "-rowwise_mat_aijmp_block_formats"));
  PetscCall(PetscOptionsClearValue(NULL, "-rowwise_mat_ellmp_block_formats"));
  PetscFunctionReturn(0);
}

/* Row r of the bordered matrix: its columns and values. */
static void BorderedRow(PetscInt N, PetscInt r, PetscInt *nc, PetscInt *cols, PetscScalar *v)
{
  *nc = 0;
  if (r == N - 1)
    for (PetscInt c = 0; c < N; c++) cols[(*nc)++] = c;
  else {
    for (PetscInt c = PetscMax(r - 1, 0); c <= r + 1; c++) cols[(*nc)++] = c;
    if (r + 1 < N - 1) cols[(*nc)++] = N - 1;
  }
  for (PetscInt k = 0; k < *nc; k++) /* fp64 values (no shorter format holds them) */
    v[k] = (cols[k] == r ? 8.0 : 0.0) + 1.0 / (1.0 + (PetscReal)((r * 7 + cols[k] * 13) % 101)) + 1e-9 * (PetscReal)r;
}

/* A bordered matrix of N rows: a 1D Laplacian's pattern plus a last column and a last row with an entry in every
   column (a constraint coupling all unknowns), fp64 values. aijmp's automatic layout sets the dense row apart (alone
   in a slice it would pad 7-fold) and slices the others: products still bitwise AIJ's in lossless mode, within
   fp32's bound in fp32, and MatAIJMPGetInfo counts the row set apart (with MPI, the piece in the diagonal block of
   the last rank: the other blocks are short). */
static PetscErrorCode CheckBorderedMatrix(PetscInt N)
{
  Mat          Aaij, Amp;
  PetscInt     m = PETSC_DECIDE, rstart, nc, *d_nnz, *o_nnz, *cols;
  PetscScalar *v;
  MatAIJMPInfo info;

  PetscFunctionBeginUser;
  PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &m, &N));
  PetscCallMPI(MPI_Scan(&m, &rstart, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
  rstart -= m;
  PetscCall(PetscMalloc4(m, &d_nnz, m, &o_nnz, N, &cols, N, &v));
  for (PetscInt r = rstart; r < rstart + m; r++) {
    BorderedRow(N, r, &nc, cols, v);
    d_nnz[r - rstart] = o_nnz[r - rstart] = 0;
    for (PetscInt k = 0; k < nc; k++) {
      if (cols[k] >= rstart && cols[k] < rstart + m) d_nnz[r - rstart]++;
      else o_nnz[r - rstart]++;
    }
  }
  PetscCall(MatCreate(PETSC_COMM_WORLD, &Aaij));
  PetscCall(MatSetSizes(Aaij, m, m, N, N));
  PetscCall(MatSetType(Aaij, MATAIJ));
  PetscCall(MatSeqAIJSetPreallocation(Aaij, 0, d_nnz));
  PetscCall(MatMPIAIJSetPreallocation(Aaij, 0, d_nnz, 0, o_nnz));
  for (PetscInt r = rstart; r < rstart + m; r++) {
    BorderedRow(N, r, &nc, cols, v);
    PetscCall(MatSetValues(Aaij, 1, &r, nc, cols, v, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(Aaij, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(Aaij, MAT_FINAL_ASSEMBLY));
  PetscCall(PetscFree4(d_nnz, o_nnz, cols, v));
  PetscCall(MatConvert(Aaij, MATAIJMP, MAT_INITIAL_MATRIX, &Amp));
  PetscCall(MatAIJMPSetKernel(Amp, MAT_AIJMP_KERNEL_COMPACT));

  PetscCall(CheckProducts(Amp, Aaij, PETSC_TRUE, 0, "bordered lossless", NULL));
  PetscCall(MatAIJMPGetInfo(Amp, &info));
  TEST_CHECK(PETSC_COMM_WORLD, info.long_rows == 1, "bordered lossless: %" PetscInt64_FMT " rows set apart, expected the dense one", info.long_rows);
  TEST_CHECK(PETSC_COMM_WORLD, info.sliced_rows >= N - 1, "bordered lossless: %" PetscInt64_FMT " of %" PetscInt_FMT " rows sliced, expected all but the dense one", info.sliced_rows, N);
  PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_FP32));
  PetscCall(CheckProducts(Amp, Aaij, PETSC_FALSE, 0x1p-24, "bordered fp32", NULL));
  PetscCall(MatAIJMPGetInfo(Amp, &info));
  TEST_CHECK(PETSC_COMM_WORLD, info.long_rows == 1, "bordered fp32: %" PetscInt64_FMT " rows set apart, expected the dense one", info.long_rows);
  PetscCall(MatDestroy(&Amp));
  PetscCall(MatDestroy(&Aaij));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscMPIInt size;
  PetscInt    M = 192;
  TestMatOpts o;
  char        label[128];

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-M", &M, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-test_bound_scale", &g_bound_scale, NULL));

  const LossyCase cases[] = {
    {MAT_AIJMP_FP32, 0, 0, 0x1p-24, PETSCMP_FP32, PETSC_TRUE, "fp32"},
    {MAT_AIJMP_FP16, 0, 0, 0x1p-11, PETSCMP_FP16, PETSC_TRUE, "fp16"},
    {MAT_AIJMP_BF16, 0, 0, 0x1p-8, PETSCMP_BF16, PETSC_TRUE, "bf16"},
    {MAT_AIJMP_FP11_20, 0, 0, 0x1p-20, PETSCMP_FP11_20, PETSC_TRUE, "fp11_20"},
    {MAT_AIJMP_FP11_4, 0, 0, 0x1p-4, PETSCMP_FP11_4, PETSC_TRUE, "fp11_4"},
    {MAT_AIJMP_TOLERANCE, 1e-3, 0, 1e-3, -1, PETSC_TRUE, "tolerance 1e-3"},
    {MAT_AIJMP_TOLERANCE, 1e-6, 0, 1e-6, -1, PETSC_TRUE, "tolerance 1e-6"},
    {MAT_AIJMP_ROWSPLIT, 0, 0, 0x1p-24, -1, PETSC_FALSE, "rowsplit (defaults)"},
    {MAT_AIJMP_ROWSPLIT, 1e3, 0.5, 0x1p-24, PETSCMP_FP32, PETSC_TRUE, "rowsplit (1e3, 0.5)"},
    {MAT_AIJMP_ENTRYSPLIT, 0, 0, 0x1p-24, PETSCMP_FP32, PETSC_TRUE, "entrysplit"},
  };

  /* inode and no-inode matrices; row formats changing in runs and at random */
  for (int variant = 0; variant < 4; variant++) {
    Mat       Amp, Aaij;
    const int inode = variant % 2 == 0, runs = variant >= 2;

    TestMatOptsDefault(&o, M);
    o.inode     = inode ? PETSC_TRUE : PETSC_FALSE;
    o.valuekind = runs ? VAL_RUNS : VAL_MIXED;
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &Aaij));
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &Amp));
    PetscCall(TestCheckType(Amp, size == 1 ? MATSEQAIJMP : MATMPIAIJMP, "MatSetType(MATAIJMP)"));
    PetscCall(TestCheckType(Aaij, size == 1 ? MATSEQAIJ : MATMPIAIJ, "MatSetType(MATAIJ)"));
    PetscCall(PetscSNPrintf(label, sizeof label, "%s", inode ? "inode matrix" : "no-inode matrix"));
    PetscCall(CheckInodes(Aaij, o.inode, label));
    PetscCall(CheckInodes(Amp, o.inode, label));

    /* lossless (the default) */
    MatAIJMPStorage st;
    PetscCall(MatAIJMPGetStorage(Amp, &st));
    TEST_CHECK(PETSC_COMM_WORLD, st == MAT_AIJMP_LOSSLESS, "default storage is %s", MatAIJMPStorages[st]);
    PetscCall(PetscSNPrintf(label, sizeof label, "%s lossless", inode ? (runs ? "inode/runs" : "inode/mixed") : (runs ? "no-inode/runs" : "no-inode/mixed")));
    PetscCall(CheckProducts(Amp, Aaij, PETSC_TRUE, 0, label, NULL));
    PetscCall(CheckInfo(Amp, Aaij, NULL, label));

    /* threads: lossless with 2 threads is still AIJ's result bit for bit (each row is summed by one
       thread); the transposed products may sum in another order: fp64 reordering bound (u = 0) */
    PetscCall(MatAIJMPSetNumThreads(Amp, 2));
    PetscCall(PetscSNPrintf(label, sizeof label, "%s lossless, 2 threads", inode ? (runs ? "inode/runs" : "inode/mixed") : (runs ? "no-inode/runs" : "no-inode/mixed")));
    {
      Vec x, y1, y2, z;
      PetscCall(MatCreateVecs(Aaij, &x, &y1));
      PetscCall(VecDuplicate(y1, &y2));
      PetscCall(VecDuplicate(y1, &z));
      PetscCall(TestVecFill(x, 3));
      PetscCall(TestVecFill(z, 5));
      PetscCall(MatMult(Amp, x, y1));
      PetscCall(MatMult(Aaij, x, y2));
      PetscCall(TestCheckBitwise(y1, y2, "MatMult with 2 threads"));
      PetscCall(MatMultAdd(Amp, x, z, y1));
      PetscCall(MatMultAdd(Aaij, x, z, y2));
      PetscCall(TestCheckBitwise(y1, y2, "MatMultAdd with 2 threads"));
      PetscCall(VecDestroy(&x));
      PetscCall(VecDestroy(&y1));
      PetscCall(VecDestroy(&y2));
      PetscCall(VecDestroy(&z));
    }
    PetscCall(CheckProducts(Amp, Aaij, PETSC_FALSE, 0.0, label, NULL));
    PetscCall(MatAIJMPSetNumThreads(Amp, 1));

    /* lossy modes */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      const LossyCase *lc = &cases[c];
      PetscInt         ndiffer;

      PetscCall(MatAIJMPSetStorage(Amp, lc->storage));
      if (lc->storage == MAT_AIJMP_TOLERANCE) PetscCall(MatAIJMPSetTolerance(Amp, lc->param));
      if (lc->storage == MAT_AIJMP_ROWSPLIT) PetscCall(MatAIJMPSetRowSplit(Amp, lc->param > 0 ? lc->param : 0.1, lc->param > 0 ? lc->param2 : 0.99));
      PetscCall(MatAIJMPGetStorage(Amp, &st));
      TEST_CHECK(PETSC_COMM_WORLD, st == lc->storage, "MatAIJMPGetStorage returned %s after setting %s", MatAIJMPStorages[st], lc->name);
      PetscCall(PetscSNPrintf(label, sizeof label, "%s %s", inode ? (runs ? "inode/runs" : "inode/mixed") : (runs ? "no-inode/runs" : "no-inode/mixed"), lc->name));
      PetscCall(CheckProducts(Amp, Aaij, PETSC_FALSE, lc->u, label, &ndiffer));
      PetscCall(CheckInfo(Amp, Aaij, lc, label));
      if (lc->must_differ) TEST_CHECK(PETSC_COMM_WORLD, ndiffer > 0, "%s: every product equals AIJ's bitwise; the storage mode seems not applied", label);
    }

    /* back to lossless: bitwise again (the lossy copy is not kept) */
    PetscCall(MatAIJMPSetStorage(Amp, MAT_AIJMP_LOSSLESS));
    PetscCall(PetscSNPrintf(label, sizeof label, "%s lossless again", inode ? (runs ? "inode/runs" : "inode/mixed") : (runs ? "no-inode/runs" : "no-inode/mixed")));
    PetscCall(CheckProducts(Amp, Aaij, PETSC_TRUE, 0, label, NULL));
    PetscCall(CheckInfo(Amp, Aaij, NULL, label));

    /* layouts: the same values summed in the same order, so products are bitwise equal in csr, sliced and node
       (lossless also equal to AIJ); csr stores no padding, sliced pads rows to their slice's longest */
    PetscCall(PetscSNPrintf(label, sizeof label, "%s", inode ? (runs ? "inode/runs" : "inode/mixed") : (runs ? "no-inode/runs" : "no-inode/mixed")));
    PetscCall(CheckLayouts(Amp, Aaij, inode ? PETSC_TRUE : PETSC_FALSE, label));

    PetscCall(MatDestroy(&Amp));
    PetscCall(MatDestroy(&Aaij));
  }

  PetscCall(CheckBlockFormats(M));
  PetscCall(CheckBorderedMatrix(10 * M + 3));

  int rc = TestFinish();
  PetscCall(PetscFinalize());
  return rc;
}
