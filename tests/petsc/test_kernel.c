static char help[] = "aijmp kernel selection (-mat_aijmp_kernel auto|aij|compact): every product bitwise AIJ's in\n"
                     "lossless mode whatever the kernel, auto decides after its timed products, the choice restarts\n"
                     "with a new nonzero pattern, and values freed for AIJ's kernel are never read stale. The read\n"
                     "of x in gathered slices (-mat_aijmp_gathered_x auto|loads|gathers): bitwise the same products,\n"
                     "auto timed after the kernel choice.\n"
                     "  -M <n>: global rows (default 600)\n\n";

#include "petscmp_test.h"

typedef struct {
  Vec x, z, y, yref;  /* row space: x for A x */
  Vec xt, zt, yt, ytref;
} ProductVecs;

/* All four products of B, each bitwise against A's (MATAIJ). */
static PetscErrorCode CheckProducts(Mat B, Mat A, ProductVecs *v, const char *what)
{
  char msg[256];

  PetscFunctionBeginUser;
  PetscCall(MatMult(A, v->x, v->yref));
  PetscCall(MatMult(B, v->x, v->y));
  PetscCall(PetscSNPrintf(msg, sizeof msg, "%s: MatMult", what));
  PetscCall(TestCheckBitwise(v->y, v->yref, msg));
  PetscCall(MatMultAdd(A, v->x, v->z, v->yref));
  PetscCall(MatMultAdd(B, v->x, v->z, v->y));
  PetscCall(PetscSNPrintf(msg, sizeof msg, "%s: MatMultAdd", what));
  PetscCall(TestCheckBitwise(v->y, v->yref, msg));
  PetscCall(MatMultTranspose(A, v->xt, v->ytref));
  PetscCall(MatMultTranspose(B, v->xt, v->yt));
  PetscCall(PetscSNPrintf(msg, sizeof msg, "%s: MatMultTranspose", what));
  PetscCall(TestCheckBitwise(v->yt, v->ytref, msg));
  PetscCall(MatMultTransposeAdd(A, v->xt, v->zt, v->ytref));
  PetscCall(MatMultTransposeAdd(B, v->xt, v->zt, v->yt));
  PetscCall(PetscSNPrintf(msg, sizeof msg, "%s: MatMultTransposeAdd", what));
  PetscCall(TestCheckBitwise(v->yt, v->ytref, msg));
  PetscFunctionReturn(0);
}

/* n MatMults of B, each bitwise A's. */
static PetscErrorCode CheckMults(Mat B, Mat A, ProductVecs *v, int n, const char *what)
{
  PetscFunctionBeginUser;
  PetscCall(MatMult(A, v->x, v->yref));
  for (int k = 0; k < n; k++) {
    PetscCall(MatMult(B, v->x, v->y));
    PetscCall(TestCheckBitwise(v->y, v->yref, what));
  }
  PetscFunctionReturn(0);
}

/* The three block counts `got` (named `names`) are (e0, e1, e2). */
static PetscErrorCode ExpectCounts(const PetscInt64 got[3], PetscInt64 e0, PetscInt64 e1, PetscInt64 e2, const char *names, const char *what)
{
  PetscFunctionBeginUser;
  TEST_CHECK(PETSC_COMM_WORLD, got[0] == e0 && got[1] == e1 && got[2] == e2,
             "%s: %s = (%" PetscInt64_FMT ", %" PetscInt64_FMT ", %" PetscInt64_FMT "), expected (%" PetscInt64_FMT
             ", %" PetscInt64_FMT ", %" PetscInt64_FMT ")",
             what, names, got[0], got[1], got[2], e0, e1, e2);
  PetscFunctionReturn(0);
}

static PetscErrorCode ExpectKernelParts(Mat B, PetscInt64 undecided, PetscInt64 aij, PetscInt64 compact, const char *what)
{
  MatAIJMPInfo info;

  PetscFunctionBeginUser;
  PetscCall(MatAIJMPGetInfo(B, &info));
  PetscCall(ExpectCounts(info.kernel_parts, undecided, aij, compact, "kernel parts (undecided, aij, compact)", what));
  PetscFunctionReturn(0);
}

/* Of the three block counts `got` (0: undecided, 1 and 2: the two choices), none undecided and `parts` in all. */
static PetscErrorCode ExpectAllDecided(const PetscInt64 got[3], PetscInt64 parts, const char *names, const char *what)
{
  PetscFunctionBeginUser;
  TEST_CHECK(PETSC_COMM_WORLD, got[0] == 0 && got[1] + got[2] == parts,
             "%s: %s = (%" PetscInt64_FMT ", %" PetscInt64_FMT ", %" PetscInt64_FMT "): %" PetscInt64_FMT
             " of %" PetscInt64_FMT " blocks undecided",
             what, names, got[0], got[1], got[2], got[0], parts);
  PetscFunctionReturn(0);
}

/* Every local block has chosen its kernel (none undecided). */
static PetscErrorCode ExpectDecided(Mat B, PetscInt64 parts, const char *what)
{
  MatAIJMPInfo info;

  PetscFunctionBeginUser;
  PetscCall(MatAIJMPGetInfo(B, &info));
  PetscCall(ExpectAllDecided(info.kernel_parts, parts, "kernel parts (undecided, aij, compact)", what));
  PetscFunctionReturn(0);
}

static PetscErrorCode CreatePair(const TestMatOpts *o, MatAIJMPKernel kernel, MatAIJMPStorage storage, Mat *A, Mat *B)
{
  PetscFunctionBeginUser;
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, o, A));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, o, B));
  PetscCall(MatAIJMPSetKernel(*B, kernel));
  PetscCall(MatAIJMPSetStorage(*B, storage));
  PetscFunctionReturn(0);
}

/* Each forced kernel, lossless: bitwise AIJ's; info reports it. */
static PetscErrorCode TestForced(const TestMatOpts *o, ProductVecs *v, PetscInt64 parts)
{
  const MatAIJMPKernel kernels[2] = {MAT_AIJMP_KERNEL_AIJ, MAT_AIJMP_KERNEL_COMPACT};
  Mat                  A, B;
  MatAIJMPKernel       got;

  PetscFunctionBeginUser;
  for (int k = 0; k < 2; k++) {
    PetscCall(CreatePair(o, kernels[k], MAT_AIJMP_LOSSLESS, &A, &B));
    PetscCall(MatAIJMPGetKernel(B, &got));
    TEST_CHECK(PETSC_COMM_WORLD, got == kernels[k], "MatAIJMPGetKernel returned %s, set %s", MatAIJMPKernels[got], MatAIJMPKernels[kernels[k]]);
    PetscCall(CheckProducts(B, A, v, MatAIJMPKernels[kernels[k]]));
    PetscCall(ExpectKernelParts(B, 0, k == 0 ? parts : 0, k == 1 ? parts : 0, MatAIJMPKernels[kernels[k]]));
    if (k == 0) { /* the info built a copy for its statistics and freed its values: a later compact product rebuilds */
      PetscCall(MatAIJMPSetKernel(B, MAT_AIJMP_KERNEL_COMPACT));
      PetscCall(CheckProducts(B, A, v, "compact after aij (values freed, same state)"));
      PetscCall(MatAIJMPSetKernel(B, MAT_AIJMP_KERNEL_AIJ));
      PetscCall(MatScale(A, -2.0));
      PetscCall(MatScale(B, -2.0));
      PetscCall(CheckProducts(B, A, v, "aij after MatScale"));
      PetscCall(MatAIJMPSetKernel(B, MAT_AIJMP_KERNEL_COMPACT));
      PetscCall(CheckProducts(B, A, v, "compact after aij and MatScale"));
    }
    PetscCall(MatDestroy(&A));
    PetscCall(MatDestroy(&B));
  }
  PetscFunctionReturn(0);
}

/* auto, lossless: every product during and after the timing is AIJ's bit for bit; decided after 6 products;
   a new nonzero pattern restarts the choice; a value change after AIJ's kernel won (compact values freed)
   gives current products with either kernel. */
static PetscErrorCode TestAuto(const TestMatOpts *o, ProductVecs *v, PetscInt64 parts)
{
  Mat          A, B;
  MatAIJMPInfo info;
  PetscInt     rstart;

  PetscFunctionBeginUser;
  PetscCall(CreatePair(o, MAT_AIJMP_KERNEL_AUTO, MAT_AIJMP_LOSSLESS, &A, &B));
  PetscCall(ExpectKernelParts(B, parts, 0, 0, "auto before any product"));
  PetscCall(CheckMults(B, A, v, 5, "auto, during the timed products"));
  PetscCall(ExpectKernelParts(B, parts, 0, 0, "auto after 5 products"));
  PetscCall(CheckMults(B, A, v, 1, "auto, the sixth product"));
  PetscCall(MatAIJMPGetInfo(B, &info));
  TEST_CHECK(PETSC_COMM_WORLD, info.kernel_parts[0] == 0 && info.kernel_parts[1] + info.kernel_parts[2] == parts,
             "auto did not decide after 6 products: %" PetscInt64_FMT " undecided", info.kernel_parts[0]);
  PetscCall(CheckProducts(B, A, v, "auto, decided"));

  /* values change (same pattern): the choice stays, the products follow the values (x2 keeps every row's
     format, so the bytes test below still leaves the new pattern to timing) */
  PetscCall(MatScale(A, 2.0));
  PetscCall(MatScale(B, 2.0));
  PetscCall(CheckProducts(B, A, v, "auto, decided, after MatScale"));
  PetscCall(ExpectKernelParts(B, 0, info.kernel_parts[1], info.kernel_parts[2], "auto after MatScale"));
  /* the freed values are rebuilt when the compact kernel is forced afterwards */
  PetscCall(MatAIJMPSetKernel(B, MAT_AIJMP_KERNEL_COMPACT));
  PetscCall(CheckProducts(B, A, v, "compact forced after auto"));
  PetscCall(MatAIJMPSetKernel(B, MAT_AIJMP_KERNEL_AUTO));

  /* a new nonzero pattern: undecided again */
  PetscCall(MatGetOwnershipRange(A, &rstart, NULL));
  Mat both[2] = {A, B};
  for (int m = 0; m < 2; m++) { /* a new entry in each rank's diagonal block */
    const PetscInt    col = (rstart + 7) % o->N;
    const PetscScalar one = 1.0;
    PetscCall(MatSetOption(both[m], MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatSetValues(both[m], 1, &rstart, 1, &col, &one, ADD_VALUES));
    PetscCall(MatAssemblyBegin(both[m], MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(both[m], MAT_FINAL_ASSEMBLY));
  }
  PetscCall(MatAIJMPGetInfo(B, &info));
  /* every diagonal block changed its pattern (serial: the one block) */
  TEST_CHECK(PETSC_COMM_WORLD, info.kernel_parts[0] >= (parts == 1 ? 1 : parts / 2),
             "auto after a new nonzero pattern: %" PetscInt64_FMT " of %" PetscInt64_FMT " blocks undecided", info.kernel_parts[0], parts);
  PetscCall(CheckMults(B, A, v, 6, "auto, timed products of the new pattern"));
  PetscCall(CheckProducts(B, A, v, "auto, new pattern decided"));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));
  PetscFunctionReturn(0);
}

/* Lossy storage: auto is the compact kernel (bitwise the forced compact products); aij turns compression off. */
static PetscErrorCode TestLossy(const TestMatOpts *o, ProductVecs *v, PetscInt64 parts)
{
  Mat A, Bauto, Bcompact;

  PetscFunctionBeginUser;
  PetscCall(CreatePair(o, MAT_AIJMP_KERNEL_AUTO, MAT_AIJMP_FP16, &A, &Bauto));
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, o, &Bcompact));
  PetscCall(MatAIJMPSetStorage(Bcompact, MAT_AIJMP_FP16));
  PetscCall(MatAIJMPSetKernel(Bcompact, MAT_AIJMP_KERNEL_COMPACT));
  PetscCall(CheckMults(Bauto, Bcompact, v, 7, "fp16 auto against fp16 compact"));
  PetscCall(ExpectKernelParts(Bauto, 0, 0, parts, "fp16 auto"));
  PetscCall(MatMult(A, v->x, v->yref));
  PetscCall(MatMult(Bauto, v->x, v->y));
  PetscInt ndiff;
  PetscCall(TestVecBitDiff(v->y, v->yref, &ndiff));
  TEST_CHECK(PETSC_COMM_WORLD, ndiff > 0, "fp16 storage of mixed values must change some products (control)");
  PetscCall(MatAIJMPSetKernel(Bauto, MAT_AIJMP_KERNEL_AIJ));
  PetscCall(CheckProducts(Bauto, A, v, "fp16 storage with the aij kernel"));
  PetscCall(ExpectKernelParts(Bauto, 0, parts, 0, "fp16 with the aij kernel"));
  EXPECT_ERROR(MatAIJMPSetKernel(Bauto, (MatAIJMPKernel)7), "MatAIJMPSetKernel(7)");
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Bauto));
  PetscCall(MatDestroy(&Bcompact));
  PetscFunctionReturn(0);
}

/* auto, lossless, values that need fp64 on an inode matrix (the copy saves under 10% of AIJ's inode bytes): AIJ's
   kernel computes the first -mat_aijmp_kernel_trial_after products, then both are timed; a negative value keeps
   AIJ's without a trial; without inodes both kernels are timed at once. Every product bitwise AIJ's. */
static PetscErrorCode CreateFp64Pair(const TestMatOpts *o_in, PetscBool inode, const char *trial_after, ProductVecs *v, Mat *A,
                                     Mat *B)
{
  TestMatOpts o = *o_in;

  PetscFunctionBeginUser;
  o.valuekind = VAL_FP64;
  o.inode     = inode;
  if (trial_after) PetscCall(PetscOptionsSetValue(NULL, "-mat_aijmp_kernel_trial_after", trial_after));
  PetscCall(CreatePair(&o, MAT_AIJMP_KERNEL_AUTO, MAT_AIJMP_LOSSLESS, A, B));
  PetscCall(CheckMults(*B, *A, v, 1, "fp64 values, first product"));
  PetscCall(PetscOptionsClearValue(NULL, "-mat_aijmp_kernel_trial_after"));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestDeferredTrial(const TestMatOpts *o, ProductVecs *v, PetscInt64 parts)
{
  Mat              A, B;
  MatAIJMPInfo     info;
  const PetscInt64 diag = parts == 1 ? 1 : parts / 2; /* PETSc finds no inodes in MPIAIJ's off-diagonal blocks */

  PetscFunctionBeginUser;
  /* the default: after one product every diagonal block waits for 99 more */
  PetscCall(CreateFp64Pair(o, PETSC_TRUE, NULL, v, &A, &B));
  PetscCall(MatAIJMPGetInfo(B, &info));
  TEST_CHECK(PETSC_COMM_WORLD, info.kernel_deferred == diag && info.kernel_trial_in == 99 && info.kernel_by_bytes == 0,
             "default trial: %" PetscInt64_FMT " of %" PetscInt64_FMT " diagonal blocks deferred, trial in %" PetscInt64_FMT
             " products (expected 99)", info.kernel_deferred, diag, info.kernel_trial_in);
  PetscCall(CheckProducts(B, A, v, "fp64 inode, AIJ before the trial"));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));

  /* trial after 4 products: 3 more deferred, then the 6 timed products decide */
  PetscCall(CreateFp64Pair(o, PETSC_TRUE, "4", v, &A, &B));
  PetscCall(CheckMults(B, A, v, 2, "fp64 inode, products 2-3"));
  PetscCall(MatAIJMPGetInfo(B, &info));
  TEST_CHECK(PETSC_COMM_WORLD, info.kernel_deferred == diag && info.kernel_trial_in == 1,
             "trial after 4, 3 products done: %" PetscInt64_FMT " deferred, trial in %" PetscInt64_FMT " (expected 1)",
             info.kernel_deferred, info.kernel_trial_in);
  PetscCall(CheckMults(B, A, v, 1, "fp64 inode, the fourth product"));
  PetscCall(MatAIJMPGetInfo(B, &info));
  TEST_CHECK(PETSC_COMM_WORLD, info.kernel_deferred == 0 && info.kernel_parts[0] >= diag,
             "after the fourth product the trial must be under way: %" PetscInt64_FMT " deferred, %" PetscInt64_FMT
             " undecided", info.kernel_deferred, info.kernel_parts[0]);
  PetscCall(CheckMults(B, A, v, 6, "fp64 inode, the timed trial"));
  PetscCall(ExpectDecided(B, parts, "the trial after 6 timed products"));
  PetscCall(CheckProducts(B, A, v, "fp64 inode, trial decided"));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));

  /* a negative trial point: AIJ's kernel for good, untimed */
  PetscCall(CreateFp64Pair(o, PETSC_TRUE, "-1", v, &A, &B));
  PetscCall(MatAIJMPGetInfo(B, &info));
  TEST_CHECK(PETSC_COMM_WORLD, info.kernel_by_bytes == diag && info.kernel_deferred == 0 && info.kernel_parts[1] >= diag,
             "trial after -1: %" PetscInt64_FMT " of %" PetscInt64_FMT " blocks chose AIJ by bytes", info.kernel_by_bytes, parts);
  PetscCall(CheckProducts(B, A, v, "fp64 inode, AIJ by bytes"));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));

  /* no inodes: no deferral, both timed from the first product */
  PetscCall(CreateFp64Pair(o, PETSC_FALSE, NULL, v, &A, &B));
  PetscCall(MatAIJMPGetInfo(B, &info));
  TEST_CHECK(PETSC_COMM_WORLD, info.kernel_by_bytes == 0 && info.kernel_deferred == 0 && info.kernel_parts[0] == parts,
             "no inodes: both kernels must be timed (%" PetscInt64_FMT " by bytes, %" PetscInt64_FMT " deferred, %" PetscInt64_FMT
             " undecided)", info.kernel_by_bytes, info.kernel_deferred, info.kernel_parts[0]);
  PetscCall(CheckMults(B, A, v, 5, "fp64 without inodes, timed"));
  PetscCall(ExpectDecided(B, parts, "no inodes, after 6 timed products"));
  PetscCall(CheckProducts(B, A, v, "fp64 without inodes, decided"));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));
  PetscFunctionReturn(0);
}

static PetscErrorCode ExpectGatheredXParts(Mat B, PetscInt64 rule, PetscInt64 loads, PetscInt64 gathers, const char *what)
{
  MatAIJMPInfo info;

  PetscFunctionBeginUser;
  PetscCall(MatAIJMPGetInfo(B, &info));
  PetscCall(ExpectCounts(info.gathered_x_parts, rule, loads, gathers, "gathered-x parts (rule, loads, gathers)", what));
  PetscFunctionReturn(0);
}

/* Every one of the `parts` local blocks chose its read of x by timing. */
static PetscErrorCode ExpectGatheredXDecided(Mat B, PetscInt64 parts, const char *what)
{
  MatAIJMPInfo info;

  PetscFunctionBeginUser;
  PetscCall(MatAIJMPGetInfo(B, &info));
  PetscCall(ExpectAllDecided(info.gathered_x_parts, parts, "gathered-x parts (rule, loads, gathers)", what));
  PetscFunctionReturn(0);
}

/* The read of x in gathered slices (random columns, sliced layout): forced loads, forced gathers and auto give
   bitwise the same products; auto, in fp32 (no kernel trial), decides after 6 products where the build has the
   AVX-512 kernels; in lossless mode its trial follows the kernel's. Bad values are refused. */
static PetscErrorCode TestGatheredX(const TestMatOpts *o_in, ProductVecs *v, PetscInt64 parts)
{
  const MatAIJMPGatheredX reads[3] = {MAT_AIJMP_GATHERED_X_AUTO, MAT_AIJMP_GATHERED_X_LOADS, MAT_AIJMP_GATHERED_X_GATHERS};
  const char             *isa      = PetscMPCompiledISA();
  const PetscBool         avx512   = strstr(isa, "AVX-512(F,BW,VL)") && strstr(isa, "F16C") ? PETSC_TRUE : PETSC_FALSE;
  TestMatOpts             o        = *o_in;
  Mat                     A, B[3];
  MatAIJMPGatheredX       got;

  PetscFunctionBeginUser;
  o.inode = PETSC_FALSE; /* rows of their own: gathered slices */
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &A));
  for (int k = 0; k < 3; k++) {
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &B[k]));
    PetscCall(MatAIJMPSetStorage(B[k], MAT_AIJMP_FP32));
    PetscCall(MatAIJMPSetLayout(B[k], MAT_AIJMP_LAYOUT_SLICED));
    PetscCall(MatAIJMPSetGatheredX(B[k], reads[k]));
    PetscCall(MatAIJMPGetGatheredX(B[k], &got));
    TEST_CHECK(PETSC_COMM_WORLD, got == reads[k], "MatAIJMPGetGatheredX returned %s, set %s", MatAIJMPGatheredXs[got],
               MatAIJMPGatheredXs[reads[k]]);
  }
  PetscCall(ExpectGatheredXParts(B[0], parts, 0, 0, "gathered x auto before any product"));
  PetscCall(MatMult(B[1], v->x, v->yref));
  for (int p = 0; p < 8; p++) {
    PetscCall(MatMult(B[0], v->x, v->y));
    PetscCall(TestCheckBitwise(v->y, v->yref, "fp32, gathered x auto against loads"));
    PetscCall(MatMult(B[2], v->x, v->y));
    PetscCall(TestCheckBitwise(v->y, v->yref, "fp32, gathered x by gathers against loads"));
    if (p == 4) PetscCall(ExpectGatheredXParts(B[0], parts, 0, 0, "gathered x auto after 5 products"));
  }
  /* every block has gathered slices (random columns; the diagonal blocks' rows also hold i and i + 1): all decide */
  if (avx512) PetscCall(ExpectGatheredXDecided(B[0], parts, "gathered x auto after 8 products"));
  else PetscCall(ExpectGatheredXParts(B[0], parts, 0, 0, "gathered x auto after 8 products, no AVX-512 kernels"));
  {
    char        text[8192];
    const char *want = !avx512 ? "x of gathered slices, auto: " /* then the rule's read, not timed */
                       : parts == 1 ? "timed products: scalar loads " /* the medians of the one block */
                                    : "local blocks, "; /* the counts of the MPI blocks */
    PetscCall(TestViewInfoText(B[0], "gathered_x_auto", text, sizeof text));
    TEST_CHECK(PETSC_COMM_WORLD, strstr(text, want) != NULL, "the view of gathered x auto lacks \"%s\":\n%s", want, text);
    PetscCall(TestViewInfoText(B[2], "gathered_x_set", text, sizeof text));
    TEST_CHECK(PETSC_COMM_WORLD, strstr(text, "x of gathered slices: gathers (set)") != NULL,
               "the view of gathered x set to gathers lacks its line:\n%s", text);
  }
  PetscCall(ExpectGatheredXParts(B[1], 0, parts, 0, "gathered x set to loads"));
  PetscCall(ExpectGatheredXParts(B[2], 0, 0, parts, "gathered x set to gathers"));
  EXPECT_ERROR(MatAIJMPSetGatheredX(B[0], (MatAIJMPGatheredX)5), "MatAIJMPSetGatheredX(5)");
  for (int k = 0; k < 3; k++) PetscCall(MatDestroy(&B[k]));

  /* split storage read at alternating levels: the samples are products at the first product's level only */
  if (avx512) {
    PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &B[0]));
    PetscCall(MatAIJMPSetStorage(B[0], MAT_AIJMP_SPLIT2));
    PetscCall(MatAIJMPSetLayout(B[0], MAT_AIJMP_LAYOUT_SLICED));
    for (int p = 0; p < 12; p++) {
      PetscCall(MatAIJMPSetReadLevel(B[0], 1 + p % 2));
      PetscCall(MatMult(B[0], v->x, v->y));
      if (p == 9) PetscCall(ExpectGatheredXParts(B[0], parts, 0, 0, "split2 at levels 1, 2, 1, ...: 10 products, 5 at level 1"));
    }
    PetscCall(ExpectGatheredXDecided(B[0], parts, "split2 at levels 1, 2, 1, ...: 12 products, 6 at level 1"));
    PetscCall(MatDestroy(&B[0]));
  }

  /* lossless: the kernel trial first (6 products), then the read's (6 more, where the compact kernel won) */
  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJMP, &o, &B[0]));
  PetscCall(MatAIJMPSetLayout(B[0], MAT_AIJMP_LAYOUT_SLICED));
  PetscCall(CheckMults(B[0], A, v, 6, "lossless, gathered x auto, kernel trial"));
  PetscCall(ExpectGatheredXParts(B[0], parts, 0, 0, "gathered x auto during the kernel trial"));
  PetscCall(CheckMults(B[0], A, v, 6, "lossless, gathered x auto, its own trial"));
  PetscCall(CheckProducts(B[0], A, v, "lossless, gathered x decided"));
  PetscCall(MatDestroy(&B[0]));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  TestMatOpts o;
  Mat         A;
  ProductVecs        v;
  PetscMPIInt size;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  TestMatOptsDefault(&o, 600);
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-M", &o.M, NULL));
  o.N     = o.M;
  o.inode = PETSC_TRUE; /* inodes: AIJ sums pairs, the compact copy must follow */
  const PetscInt64 parts = size == 1 ? 1 : 2 * (PetscInt64)size;

  PetscCall(TestMatCreate(PETSC_COMM_WORLD, MATAIJ, &o, &A));
  PetscCall(MatCreateVecs(A, &v.x, &v.y));
  PetscCall(VecDuplicate(v.y, &v.z));
  PetscCall(VecDuplicate(v.y, &v.yref));
  PetscCall(MatCreateVecs(A, &v.yt, &v.xt));
  PetscCall(VecDuplicate(v.yt, &v.zt));
  PetscCall(VecDuplicate(v.yt, &v.ytref));
  PetscCall(TestVecFill(v.x, 1));
  PetscCall(TestVecFill(v.z, 2));
  PetscCall(TestVecFill(v.xt, 3));
  PetscCall(TestVecFill(v.zt, 4));
  PetscCall(MatDestroy(&A));

  PetscCall(TestForced(&o, &v, parts));
  PetscCall(TestAuto(&o, &v, parts));
  PetscCall(TestLossy(&o, &v, parts));
  PetscCall(TestDeferredTrial(&o, &v, parts));
  PetscCall(TestGatheredX(&o, &v, parts));

  Vec *all[] = {&v.x, &v.y, &v.z, &v.yref, &v.xt, &v.yt, &v.zt, &v.ytref};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) PetscCall(VecDestroy(all[k]));
  int code = TestFinish();
  PetscCall(PetscFinalize());
  return code;
}
