static char help[] =
    "petscmp: split storage (split2, split4) of MATAIJMP. At every read level the four products equal,\n"
    "bit for bit, those of a MATAIJ holding each value truncated to the segments read (the full level:\n"
    "the assembled values); the level changes without a rebuild; MatAIJMPGetInfo reports segments,\n"
    "level and the bytes read; a read level per row gives each row a result at its level or above, bit for bit;\n"
    "bad levels give errors.\n"
    "  -M <rows> (default 240)\n\n";

#include "petscmp_test.h"

/* v with its bits past the first 64 read / n cleared: a value read at `read` of n segments. */
static double FirstBits(double v, int n, int read)
{
  const int kept = 64 * read / n;
  uint64_t b;
  if (kept >= 64) return v;
  memcpy(&b, &v, sizeof b);
  b &= ~((UINT64_C(1) << (64 - kept)) - 1);
  memcpy(&v, &b, sizeof v);
  return v;
}

/* A copy of the MATAIJ matrix A with every value truncated to `read` of n segments. */
static PetscErrorCode TruncatedAIJ(Mat A, int n, int read, Mat *T)
{
  Mat blocks[2];

  PetscFunctionBeginUser;
  PetscCall(MatDuplicate(A, MAT_COPY_VALUES, T));
  PetscCall(TestLocalBlocks(*T, &blocks[0], &blocks[1]));
  for (int k = 0; k < 2; k++) {
    PetscScalar *a;
    MatInfo info;
    if (!blocks[k]) continue;
    PetscCall(MatGetInfo(blocks[k], MAT_LOCAL, &info));
    PetscCall(MatSeqAIJGetArray(blocks[k], &a));
    for (PetscInt i = 0; i < (PetscInt)info.nz_used; i++)
      a[i] = FirstBits(a[i], n, read);
    PetscCall(MatSeqAIJRestoreArray(blocks[k], &a));
  }
  PetscFunctionReturn(0);
}

/* The four products (and MultAdd in place) of Amp and Aref, bitwise. */
static PetscErrorCode CheckProductsBitwise(Mat Amp, Mat Aref, const char *label)
{
  Vec x, z, y1, y2, xt, zt, yt1, yt2;
  char what[256];

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(Aref, &xt, &x));
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
  PetscCall(MatMult(Amp, xt, y1));
  PetscCall(MatMult(Aref, xt, y2));
  PetscCall(PetscSNPrintf(what, sizeof what, "%s MatMult", label));
  PetscCall(TestCheckBitwise(y1, y2, what));
  PetscCall(MatMultAdd(Amp, xt, z, y1));
  PetscCall(MatMultAdd(Aref, xt, z, y2));
  PetscCall(PetscSNPrintf(what, sizeof what, "%s MatMultAdd", label));
  PetscCall(TestCheckBitwise(y1, y2, what));
  PetscCall(VecCopy(z, y1));
  PetscCall(MatMultAdd(Amp, xt, y1, y1));
  PetscCall(PetscSNPrintf(what, sizeof what, "%s MatMultAdd in place", label));
  PetscCall(TestCheckBitwise(y1, y2, what));
  PetscCall(MatMultTranspose(Amp, x, yt1));
  PetscCall(MatMultTranspose(Aref, x, yt2));
  PetscCall(PetscSNPrintf(what, sizeof what, "%s MatMultTranspose", label));
  PetscCall(TestCheckBitwise(yt1, yt2, what));
  PetscCall(MatMultTransposeAdd(Amp, x, zt, yt1));
  PetscCall(MatMultTransposeAdd(Aref, x, zt, yt2));
  PetscCall(PetscSNPrintf(what, sizeof what, "%s MatMultTransposeAdd", label));
  PetscCall(TestCheckBitwise(yt1, yt2, what));
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

/* Sets read level `level` (0: all) of the split matrix A (n segments), checks the level it reports, and checks its
   four products bit for bit against a MATAIJ holding the values truncated to that level. */
static PetscErrorCode CheckOneLevel(Mat A, Mat Aaij, int n, PetscInt level, const char *name, char *label, size_t len)
{
  PetscInt got;
  Mat T;

  PetscFunctionBeginUser;
  PetscCall(MatAIJMPSetReadLevel(A, level));
  PetscCall(MatAIJMPGetReadLevel(A, &got));
  TEST_CHECK(PETSC_COMM_WORLD, got == (level ? level : n),
             "%s: read level %" PetscInt_FMT " reported as %" PetscInt_FMT, name, level, got);
  PetscCall(TruncatedAIJ(Aaij, n, (int)(level ? level : n), &T));
  PetscCall(PetscSNPrintf(label, len, "%s read %" PetscInt_FMT " of %d", name, level, n));
  PetscCall(CheckProductsBitwise(A, T, label));
  PetscCall(MatDestroy(&T));
  PetscFunctionReturn(0);
}

/* Every read level of one split mode on one matrix, the levels visited down and up again. */
static PetscErrorCode CheckLevels(const TestMatOpts *o, MatAIJMPStorage storage, MatAIJMPLayout layout,
                                  const char *name)
{
  const int n             = storage == MAT_AIJMP_SPLIT2 ? 2 : 4;
  const PetscInt levels[] = {0, 1, 2, 3, 4, 3, 2, 1, 4, 0};
  Mat Aaij, Amp;
  MatAIJMPInfo info;
  PetscInt64 builds = -1;
  double full_bytes = 0;
  char label[128];

  PetscFunctionBeginUser;
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, o, &Aaij));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, o, &Amp));
  PetscCall(MatAIJMPSetStorage(Amp, storage));
  PetscCall(MatAIJMPSetLayout(Amp, layout));
  for (size_t k = 0; k < sizeof levels / sizeof levels[0]; k++) {
    const PetscInt level = levels[k];
    if (level > n) continue;
    PetscCall(CheckOneLevel(Amp, Aaij, n, level, name, label, sizeof label));
    PetscCall(MatAIJMPGetInfo(Amp, &info));
    if (builds < 0) builds = info.builds;
    TEST_CHECK(PETSC_COMM_WORLD, info.builds == builds && info.value_builds == 0,
               "%s: a change of read level rebuilt the copy (%" PetscInt64_FMT " builds, %" PetscInt64_FMT
               " value-only)",
               label, info.builds, info.value_builds);
    TEST_CHECK(PETSC_COMM_WORLD, info.segments == n && info.read_level == (level ? level : n),
               "%s: MatAIJMPGetInfo says %" PetscInt_FMT " segments, read level %" PetscInt_FMT, label, info.segments,
               info.read_level);
    TEST_CHECK(PETSC_COMM_WORLD, info.lossy == ((level && level < n) ? PETSC_TRUE : PETSC_FALSE), "%s: lossy flag %d",
               label, (int)info.lossy);
    TEST_CHECK(PETSC_COMM_WORLD, info.rows[PETSCMP_FP64] > 0 && info.max_rel_error[PETSCMP_FP64] == 0.0,
               "%s: the stored values are not the exact fp64 ones", label);
    if (level == 0 || level == n)
      full_bytes = info.bytes;
    else if (full_bytes > 0) /* the value bytes read shrink to level / n; the index bytes stay */
      TEST_CHECK(PETSC_COMM_WORLD, info.bytes < full_bytes && info.bytes > (double)level / n * full_bytes,
                 "%s: %g bytes read, at full level %g", label, info.bytes, full_bytes);
  }
  PetscCall(MatDestroy(&Aaij));
  PetscCall(MatDestroy(&Amp));
  PetscFunctionReturn(0);
}

/* ellmp in split storage (the only copy, fp64's memory): every level bitwise a MATAIJ of the truncated values; with
   -mat_ellmp_assembly_step the copy is built a range of rows at a time and cut into segments at the end. */
static PetscErrorCode CheckEllmpLevels(const TestMatOpts *o, MatAIJMPStorage storage, const char *name)
{
  const int n = storage == MAT_AIJMP_SPLIT2 ? 2 : 4;
  Mat Aaij, Ael;
  char label[128];

  PetscFunctionBeginUser;
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, o, &Aaij));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, "ellmp", o, &Ael));
  PetscCall(MatELLMPSetStorage(Ael, storage)); /* the assembled values stored anew */
  for (PetscInt level = 0; level <= n; level++)
    PetscCall(CheckOneLevel(Ael, Aaij, n, level, name, label, sizeof label));
  PetscCall(MatDestroy(&Aaij));
  PetscCall(MatDestroy(&Ael));
  PetscFunctionReturn(0);
}

/* Every local row reads at least its level (rows stored together read the highest level among them, and an MPI
   matrix's diagonal and off-diagonal parts are stored apart): |y_i - full_i| <= (2^-(64 l / n - 12) + 128 2^-53)
   (|A| |x|)_i for l = level[i] (truncation toward zero of each value, then the two sums' roundings in the same order,
   rows of at most 64 nonzeros); a row at the full level equals full_i bit for bit. Returns how many rows read the
   heads alone (y_i == heads_i, != full_i). */
static PetscErrorCode CheckRowsTakeTheirLevel(Vec y, Vec heads, Vec full, Vec absax, int n, const PetscInt level[],
                                              const char *label, PetscInt *on_heads)
{
  const PetscScalar *a, *h, *f, *m;
  PetscInt nloc, bad = -1;

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(y, &nloc));
  PetscCall(VecGetArrayRead(y, &a));
  PetscCall(VecGetArrayRead(heads, &h));
  PetscCall(VecGetArrayRead(full, &f));
  PetscCall(VecGetArrayRead(absax, &m));
  *on_heads = 0;
  for (PetscInt i = 0; i < nloc; i++) {
    const double u = level[i] >= n ? 0.0 : ldexp(1.0, -(int)(64 * level[i] / n - 12));
    const int ok = level[i] >= n ? !memcmp(&a[i], &f[i], sizeof a[i]) : fabs(a[i] - f[i]) <= (u + 128 * 0x1p-53) * m[i];
    if (!ok && bad < 0) bad = i;
    if (!memcmp(&a[i], &h[i], sizeof a[i]) && memcmp(&a[i], &f[i], sizeof a[i])) (*on_heads)++;
  }
  PetscCall(VecRestoreArrayRead(absax, &m));
  PetscCall(VecRestoreArrayRead(full, &f));
  PetscCall(VecRestoreArrayRead(heads, &h));
  PetscCall(VecRestoreArrayRead(y, &a));
  TEST_CHECK(PETSC_COMM_SELF, bad < 0,
             "%s: local row %" PetscInt_FMT " is not read at its level %" PetscInt_FMT " or above", label, bad,
             bad < 0 ? 0 : level[bad]);
  PetscFunctionReturn(0);
}

/* |A| |x| with A's MATAIJ twin (values made absolute) and |x|. */
static PetscErrorCode AbsProduct(Mat Aaij, Vec x, Vec absax)
{
  Mat B, blocks[2];
  Vec ax;

  PetscFunctionBeginUser;
  PetscCall(MatDuplicate(Aaij, MAT_COPY_VALUES, &B));
  PetscCall(TestLocalBlocks(B, &blocks[0], &blocks[1]));
  for (int k = 0; k < 2; k++) {
    PetscScalar *v;
    MatInfo info;
    if (!blocks[k]) continue;
    PetscCall(MatGetInfo(blocks[k], MAT_LOCAL, &info));
    PetscCall(MatSeqAIJGetArray(blocks[k], &v));
    for (PetscInt i = 0; i < (PetscInt)info.nz_used; i++)
      v[i] = fabs(v[i]);
    PetscCall(MatSeqAIJRestoreArray(blocks[k], &v));
  }
  PetscCall(VecDuplicate(x, &ax));
  PetscCall(VecCopy(x, ax));
  PetscCall(VecAbs(ax));
  PetscCall(MatMult(B, ax, absax));
  PetscCall(VecDestroy(&ax));
  PetscCall(MatDestroy(&B));
  PetscFunctionReturn(0);
}

/* A read level per row (MatAIJMPSetRowReadLevels): MatMult and MatMultAdd (in place) give each row bit for bit what
   the whole product at its level or above (its node's or slice's highest) gives it; transposes read the matrix-wide
   level; the counts are reported; a matrix-wide level drops the levels per row. Levels in equal shares, then mostly the
   heads. */
static PetscErrorCode CheckRowLevels(const TestMatOpts *o, MatType type, MatAIJMPStorage storage, const char *name)
{
  const int n = storage == MAT_AIJMP_SPLIT2 ? 2 : 4;
  Mat A, Aaij;
  Vec x, z, y, yt, ytl, absax, at[4], atz[4];
  PetscInt nloc, rstart, *level, counts[5];
  char label[160];

  PetscFunctionBeginUser;
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, type, o, &A));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, o, &Aaij));
  if (!strcmp(type, "ellmp"))
    PetscCall(MatELLMPSetStorage(A, storage));
  else
    PetscCall(MatAIJMPSetStorage(A, storage));
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(VecDuplicate(y, &z));
  PetscCall(VecDuplicate(x, &yt));
  PetscCall(VecDuplicate(x, &ytl));
  PetscCall(TestVecFill(x, 7));
  PetscCall(TestVecFill(z, 8));
  PetscCall(VecDuplicate(y, &absax));
  PetscCall(AbsProduct(Aaij, x, absax));
  for (int l = 0; l < n; l++) {
    PetscCall(VecDuplicate(y, &at[l]));
    PetscCall(VecDuplicate(y, &atz[l]));
    PetscCall(MatAIJMPSetReadLevel(A, l + 1));
    PetscCall(MatMult(A, x, at[l]));
    PetscCall(MatMultAdd(A, x, z, atz[l]));
  }
  PetscCall(MatAIJMPSetReadLevel(A, 1));
  PetscCall(MatMultTranspose(A, y, ytl)); /* y: any vector of the row space */
  PetscCall(VecGetLocalSize(y, &nloc));
  PetscCall(VecGetOwnershipRange(y, &rstart, NULL));
  PetscCall(PetscMalloc1(nloc + 1, &level));
  for (int mostly_head = 0; mostly_head < 2; mostly_head++) {
    PetscInt want[5] = {0};
    for (PetscInt i = 0; i < nloc; i++) {
      const PetscInt g = rstart + i;
      level[i]         = mostly_head && (g * 5 + 1) % 9 ? 1 : 1 + (g * 7 + 3) % n;
      want[level[i]]++;
    }
    PetscCall(PetscSNPrintf(label, sizeof label, "%s levels per row%s", name, mostly_head ? ", mostly heads" : ""));
    PetscCall(MatAIJMPSetRowReadLevels(A, level));
    PetscCall(MatAIJMPGetRowReadLevelCounts(A, counts));
    for (int l = 0; l < 5; l++)
      TEST_CHECK(PETSC_COMM_SELF, counts[l] == want[l],
                 "%s: %" PetscInt_FMT " rows counted at level %d, %" PetscInt_FMT " set", label, counts[l], l, want[l]);
    PetscInt on_heads, on_heads_z;
    PetscCall(MatMult(A, x, y));
    PetscCall(CheckRowsTakeTheirLevel(y, at[0], at[n - 1], absax, n, level, label, &on_heads));
    PetscCall(VecCopy(z, y));
    PetscCall(MatMultAdd(A, x, y, y));
    PetscCall(CheckRowsTakeTheirLevel(y, atz[0], atz[n - 1], absax, n, level, label, &on_heads_z));
    if (mostly_head) /* (8 in 9 rows on the heads: many nodes and slices read only them) */
      TEST_CHECK(PETSC_COMM_SELF, nloc < 24 || (on_heads > nloc / 10 && on_heads_z > nloc / 10),
                 "%s: only %" PetscInt_FMT " (MatMultAdd %" PetscInt_FMT ") of %" PetscInt_FMT
                 " rows read the heads alone",
                 label, on_heads, on_heads_z, nloc);
    PetscCall(MatMultTranspose(A, at[0], yt));
    PetscCall(MatMultTranspose(A, at[0], ytl)); /* (level 1 still the matrix-wide one) */
    PetscCall(TestCheckBitwise(yt, ytl, label));
  }
  PetscCall(MatAIJMPSetReadLevel(A, 0)); /* drops the levels per row: every row exact */
  PetscCall(MatAIJMPGetRowReadLevelCounts(A, counts));
  TEST_CHECK(PETSC_COMM_SELF, counts[n] == nloc && counts[1] == 0,
             "%s: after MatAIJMPSetReadLevel(0) %" PetscInt_FMT " rows counted at the full level of %" PetscInt_FMT,
             name, counts[n], nloc);
  PetscCall(MatMult(A, x, y));
  PetscCall(PetscSNPrintf(label, sizeof label, "%s after MatAIJMPSetReadLevel(0)", name));
  PetscCall(TestCheckBitwise(y, at[n - 1], label));
  for (int l = 0; l < n; l++) {
    PetscCall(VecDestroy(&at[l]));
    PetscCall(VecDestroy(&atz[l]));
  }
  PetscCall(PetscFree(level));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&z));
  PetscCall(VecDestroy(&yt));
  PetscCall(VecDestroy(&ytl));
  PetscCall(VecDestroy(&absax));
  PetscCall(MatDestroy(&Aaij));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* Misuse gives PETSc errors, not crashes or silently ignored settings. */
static PetscErrorCode CheckErrors(const TestMatOpts *o)
{
  Mat A, E;
  Vec x, y;

  PetscFunctionBeginUser;
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, o, &A));
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(VecSet(x, 1.0));
  EXPECT_ERROR(MatAIJMPSetReadLevel(A, 5), "read level 5");
  EXPECT_ERROR(MatAIJMPSetReadLevel(A, -1), "read level -1");
  PetscCall(MatAIJMPSetReadLevel(A, 1)); /* lossless storage: the product refuses */
  EXPECT_ERROR(MatMult(A, x, y), "read level 1 of lossless storage");
  PetscCall(MatAIJMPSetStorage(A, MAT_AIJMP_SPLIT2));
  PetscCall(MatAIJMPSetReadLevel(A, 3));
  EXPECT_ERROR(MatMult(A, x, y), "read level 3 of split2");
  PetscCall(MatAIJMPSetReadLevel(A, 1));
  PetscCall(MatAIJMPSetKernel(A, MAT_AIJMP_KERNEL_AIJ));
  EXPECT_ERROR(MatMult(A, x, y), "read level 1 with the AIJ kernel");
  PetscCall(MatAIJMPSetKernel(A, MAT_AIJMP_KERNEL_AUTO));
  PetscCall(MatMult(A, x, y)); /* the same matrix is usable again */
  {
    PetscInt nloc, *level;
    PetscCall(MatAIJMPSetReadLevel(A, 0));
    PetscCall(MatGetLocalSize(A, &nloc, NULL));
    PetscCall(PetscMalloc1(nloc + 1, &level));
    for (PetscInt i = 0; i < nloc; i++)
      level[i] = 1;
    if (nloc) {
      level[nloc - 1] = 3; /* split2 has 2 segments */
      EXPECT_ERROR(MatAIJMPSetRowReadLevels(A, level), "a row's read level 3 of split2");
      level[nloc - 1] = 0;
      EXPECT_ERROR(MatAIJMPSetRowReadLevels(A, level), "a row's read level 0");
      level[nloc - 1] = 1;
    }
    PetscCall(MatAIJMPSetRowReadLevels(A, level));
    PetscCall(MatMult(A, x, y));
    PetscCall(MatAIJMPSetKernel(A, MAT_AIJMP_KERNEL_AIJ));
    EXPECT_ERROR(MatMult(A, x, y), "read levels per row with the AIJ kernel");
    PetscCall(MatAIJMPSetKernel(A, MAT_AIJMP_KERNEL_AUTO));
    PetscCall(MatAIJMPSetStorage(A, MAT_AIJMP_LOSSLESS));
    EXPECT_ERROR(MatMult(A, x, y), "read levels per row of lossless storage");
    EXPECT_ERROR(MatAIJMPSetRowReadLevels(A, level), "setting read levels per row on lossless storage");
    PetscCall(MatAIJMPSetRowReadLevels(A, NULL));
    PetscCall(MatMult(A, x, y));
    PetscCall(PetscFree(level));
  }
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, "ellmp", o, &E));
  PetscCall(MatAIJMPSetReadLevel(E, 1)); /* ellmp in lossless storage: the product refuses */
  EXPECT_ERROR(MatMult(E, x, y), "read level 1 of lossless ellmp");
  PetscCall(MatDestroy(&E));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  TestMatOpts o;
  PetscInt M = 240;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-M", &M, NULL));
  TestMatOptsDefault(&o, M);
  o.valuekind = VAL_FP64; /* values with all 53 bits: every segment matters */
  for (int inode = 0; inode < 2; inode++) {
    o.inode = inode ? PETSC_TRUE : PETSC_FALSE;
    for (int s = 0; s < 2; s++) {
      const MatAIJMPStorage storage = s ? MAT_AIJMP_SPLIT4 : MAT_AIJMP_SPLIT2;
      for (MatAIJMPLayout layout = MAT_AIJMP_LAYOUT_AUTO; layout <= MAT_AIJMP_LAYOUT_NODE; layout++) {
        char name[96];
        PetscCall(PetscSNPrintf(name, sizeof name, "%s %s%s", MatAIJMPStorages[storage], MatAIJMPLayouts[layout],
                                inode ? " inodes" : ""));
        PetscCall(CheckLevels(&o, storage, layout, name));
      }
    }
  }
  for (int inode = 0; inode < 2; inode++) {
    o.inode = inode ? PETSC_TRUE : PETSC_FALSE;
    PetscCall(CheckEllmpLevels(&o, MAT_AIJMP_SPLIT2, inode ? "ellmp split2 inodes" : "ellmp split2"));
    PetscCall(CheckEllmpLevels(&o, MAT_AIJMP_SPLIT4, inode ? "ellmp split4 inodes" : "ellmp split4"));
  }
  for (int inode = 0; inode < 2; inode++) {
    o.inode = inode ? PETSC_TRUE : PETSC_FALSE;
    PetscCall(CheckRowLevels(&o, MATAIJMP, MAT_AIJMP_SPLIT2, inode ? "aijmp split2 inodes" : "aijmp split2"));
    PetscCall(CheckRowLevels(&o, MATAIJMP, MAT_AIJMP_SPLIT4, inode ? "aijmp split4 inodes" : "aijmp split4"));
    PetscCall(CheckRowLevels(&o, "ellmp", MAT_AIJMP_SPLIT4, inode ? "ellmp split4 inodes" : "ellmp split4"));
  }
  o.inode = PETSC_FALSE;
  PetscCall(CheckErrors(&o));
  int rc = TestFinish();
  PetscCall(PetscFinalize());
  return rc;
}
