/* PCAPBJACOBI integration checks (serial and MPI). The test matrix is a 2D grid of nodes with 3 unknowns each,
   A = S^(1/2) B S^(1/2): B is symmetric, strictly diagonally dominant (node block [[6,1,.5],[1,6,.25],[.5,.25,6]],
   -I to each of the 4 neighbours), S a per-node scale 10^k, k in [-range, range]; so A is SPD, its rows of one node
   share a pattern (supervariables of 3), and blocks get very different condition numbers and value ranges.

   Checks:
   1. forced fp64 equals PCVPBJACOBI on the same partition within a derived bound;
   2. adaptive formats: every block's apply within the accuracy: ||dy_b||_1 <= accuracy ||y_b||_1 (+ rounding);
   3. the stored inverse of a symmetric block is exactly symmetric; the transpose apply is exact;
   4. re-setup: values scaled by 2 (same pattern) give y/2 bit for bit; a changed pattern equals a fresh PC;
   5. MATAIJMP, MATBAIJ (converted) and MATAIJ operators give the same apply bit for bit;
   6. a singular block and a NaN block stop CG with KSP_DIVERGED_PC_FAILED on every rank;
   7. a rank with no rows works;
   8. the default (auto) partition is the 3x3 nodes, with block size 3 and, from the pattern, without;
   9. CG with the default apbjacobi takes at most 2% more iterations than with PCPBJACOBI;
  10. the kernels for fp64 small blocks (interleaved, blockwise, auto's choice) give the same apply bit for bit, and
      auto decides after 2 x 3 applies, at once when no fp64 block is stored, and again after a new setup.
   Options: -m <grid nodes per side> -range <scale exponent range> -accuracy <a> -empty_rank1 -failures <bool>
   -failures_only -test_bound_scale <s> (negative control). */
#include "petscmp_test.h"

#include <petscksp.h>

typedef struct {
  PetscInt m;            /* nodes per side */
  PetscInt range;        /* scales 10^k, |k| <= range */
  PetscInt singular;     /* node whose rows 0 and 1 are made equal (-1: none) */
  PetscInt nan_node;     /* node with a NaN diagonal (-1: none) */
  PetscInt extra_entry;  /* node given an extra coupling to node + 2 (changes the pattern; -1: none) */
  PetscBool empty_rank1; /* rank 1 owns no rows */
  PetscInt block_size;   /* MatSetBlockSize (1: none, the nodes are then only in the pattern) */
  MatType type;
} Problem;

static double NodeScale(const Problem *p, PetscInt node)
{
  /* one scale per grid row: most blocks (10 nodes) see one scale, so a low condition number with values far
     outside fp16's range (the over/underflow protection); blocks across two grid rows get large kappa */
  if (p->range == 0) return 1.0;
  return pow(10.0, (double)((node / p->m * 5) % (2 * p->range + 1) - p->range));
}

static PetscErrorCode BuildMatrix(MPI_Comm comm, const Problem *p, Mat *A)
{
  const PetscInt nodes = p->m * p->m, N = 3 * nodes;
  const double blk[3][3] = {{6, 1, 0.5}, {1, 6, 0.25}, {0.5, 0.25, 6}};
  PetscMPIInt rank, size;
  PetscInt n, rstart, rend;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  /* local nodes: balanced, or none on rank 1 */
  {
    PetscInt owners = (p->empty_rank1 && size > 1) ? size - 1 : size,
             r      = (p->empty_rank1 && rank > 1) ? rank - 1 : rank;
    n = (p->empty_rank1 && size > 1 && rank == 1) ? 0 : 3 * (nodes / owners + (r < nodes % owners ? 1 : 0));
  }
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, n, n, N, N));
  PetscCall(MatSetType(*A, p->type));
  PetscCall(MatSetBlockSize(*A, p->block_size));
  PetscCall(MatSetFromOptions(*A));
  PetscCall(MatSetUp(*A));
  PetscCall(MatSetOption(*A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  if (!strcmp(p->type, MATSBAIJ)) PetscCall(MatSetOption(*A, MAT_IGNORE_LOWER_TRIANGULAR, PETSC_TRUE));
  PetscCall(MatGetOwnershipRange(*A, &rstart, &rend));
  for (PetscInt node = rstart / 3; node < rend / 3; ++node) {
    const PetscInt i = node / p->m, j = node % p->m;
    PetscInt nbr[6], nn               = 0;
    nbr[nn++] = node;
    if (i > 0) nbr[nn++] = node - p->m;
    if (i < p->m - 1) nbr[nn++] = node + p->m;
    if (j > 0) nbr[nn++] = node - 1;
    if (j < p->m - 1) nbr[nn++] = node + 1;
    if (node == p->extra_entry && node + 2 < nodes) nbr[nn++] = node + 2;
    for (PetscInt c = 0; c < 3; ++c) {
      const PetscInt row = 3 * node + (node == p->singular && c == 1 ? 0 : c); /* singular: row 1 copies row 0 */
      for (PetscInt k = 0; k < nn; ++k) {
        const double s = sqrt(NodeScale(p, node) * NodeScale(p, nbr[k]));
        for (PetscInt d = 0; d < 3; ++d) {
          double v;
          if (k == 0)
            v = blk[row - 3 * node][d];
          else if (nbr[k] == node + 2 && node == p->extra_entry)
            v = (row - 3 * node == d) ? -0.1 : 0.0;
          else
            v = (row - 3 * node == d) ? -1.0 : 0.0;
          if (node == p->nan_node && k == 0 && c == d && c == 2) v = NAN;
          /* explicit zeros: the 3 rows of a node share one pattern (a supervariable), as with BAIJ */
          PetscCall(MatSetValue(*A, 3 * node + c, 3 * nbr[k] + d, s * v, INSERT_VALUES));
        }
      }
    }
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode CreatePCBlocks(Mat A, PCType type, PCAPBJacobiBlocks blocks, PCAPBJacobiFormats formats,
                                     PetscReal accuracy, PC *pc)
{
  PetscFunctionBeginUser;
  PetscCall(PCCreate(PetscObjectComm((PetscObject)A), pc));
  PetscCall(PCSetType(*pc, type));
  PetscCall(PCSetOperators(*pc, A, A));
  PetscCall(PCAPBJacobiSetBlocks(*pc, blocks)); /* ignored by other PC types */
  PetscCall(PCAPBJacobiSetFormats(*pc, formats));
  PetscCall(PCAPBJacobiSetAccuracy(*pc, accuracy));
  PetscCall(PCSetUp(*pc));
  PetscFunctionReturn(0);
}

static PetscErrorCode CreatePC(Mat A, PCType type, PCAPBJacobiFormats formats, PetscReal accuracy, PC *pc)
{
  return CreatePCBlocks(A, type, PC_APBJACOBI_BLOCKS_AUTO, formats, accuracy, pc);
}

static PetscErrorCode RandomVec(Mat A, unsigned seed, Vec *x)
{
  PetscInt rstart, rend;
  PetscScalar *xx;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(A, x, NULL));
  PetscCall(VecGetOwnershipRange(*x, &rstart, &rend));
  PetscCall(VecGetArray(*x, &xx));
  for (PetscInt r = rstart; r < rend; ++r)
    xx[r - rstart] = TestValue(VAL_FP64, TestHash(seed, (uint64_t)r, 5));
  PetscCall(VecRestoreArray(*x, &xx));
  PetscFunctionReturn(0);
}

/* Largest per-block ratio ||a_b - b_b||_1 / ||b_b||_1 over the local blocks (sizes from the apbjacobi PC). */
static PetscErrorCode BlockRelativeDifference(PC apbj, Vec a, Vec b, PetscReal *worst)
{
  PetscInt nblocks, off = 0;
  const PetscInt *sizes;
  const PetscScalar *aa, *bb;

  PetscFunctionBeginUser;
  PetscCall(PCAPBJacobiGetLocalBlockSizes(apbj, &nblocks, &sizes));
  PetscCall(VecGetArrayRead(a, &aa));
  PetscCall(VecGetArrayRead(b, &bb));
  *worst = 0;
  for (PetscInt k = 0; k < nblocks; off += sizes[k++]) {
    PetscReal d = 0, n = 0;
    for (PetscInt r = off; r < off + sizes[k]; ++r) {
      d += PetscAbsScalar(aa[r] - bb[r]);
      n += PetscAbsScalar(bb[r]);
    }
    if (!(d <= *worst * n)) *worst = n > 0 ? d / n : (d > 0 ? PETSC_INFINITY : 0);
  }
  PetscCall(VecRestoreArrayRead(a, &aa));
  PetscCall(VecRestoreArrayRead(b, &bb));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, worst, 1, MPIU_REAL, MPIU_MAX, PetscObjectComm((PetscObject)apbj)));
  PetscFunctionReturn(0);
}

static PetscErrorCode VecsBitwiseEqual(Vec a, Vec b, PetscBool *eq)
{
  PetscInt n;
  const PetscScalar *aa, *bb;

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(a, &n));
  PetscCall(VecGetArrayRead(a, &aa));
  PetscCall(VecGetArrayRead(b, &bb));
  *eq = (PetscBool)(memcmp(aa, bb, (size_t)n * sizeof(PetscScalar)) == 0);
  PetscCall(VecRestoreArrayRead(a, &aa));
  PetscCall(VecRestoreArrayRead(b, &bb));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, eq, 1, MPIU_BOOL, MPI_LAND, PetscObjectComm((PetscObject)a)));
  PetscFunctionReturn(0);
}

/* 1: forced fp64 against PCVPBJACOBI with the same blocks. Both invert each block with a backward-stable
   pivoted elimination, so each computed inverse is within c b eps kappa ||E|| of the exact one, and
   ||E||_1 ||x_b||_1 <= kappa ||y_b||_1: per block ||dy_b||_1 <= 2 c b eps kappa^2 ||y_b||_1 (c = 10 here). */
static PetscErrorCode CheckAgainstVPBJacobi(const Problem *p)
{
  MPI_Comm comm = PETSC_COMM_WORLD;
  Mat A;
  PC apbj, vpb;
  Vec x, y1, y2;
  PetscInt nblocks;
  const PetscInt *sizes;
  PCAPBJacobiInfo info;
  PetscReal worst, bound;

  PetscFunctionBeginUser;
  PetscCall(BuildMatrix(comm, p, &A));
  PetscCall(CreatePC(A, PCAPBJACOBI, PC_APBJACOBI_FORMATS_FP64, 1e-2, &apbj));
  PetscCall(PCAPBJacobiGetInfo(apbj, &info));
  PetscCall(PCAPBJacobiGetLocalBlockSizes(apbj, &nblocks, &sizes));
  PetscCall(MatSetVariableBlockSizes(A, nblocks, (PetscInt *)sizes));
  PetscCall(CreatePC(A, PCVPBJACOBI, PC_APBJACOBI_FORMATS_FP64, 1e-2, &vpb));
  PetscCall(RandomVec(A, 11, &x));
  PetscCall(VecDuplicate(x, &y1));
  PetscCall(VecDuplicate(x, &y2));
  PetscCall(PCApply(apbj, x, y1));
  PetscCall(PCApply(vpb, x, y2));
  PetscCall(BlockRelativeDifference(apbj, y1, y2, &worst));
  bound = 2 * 10 * 32 * PETSC_MACHINE_EPSILON * info.kappa_max * info.kappa_max * g_bound_scale;
  TEST_CHECK(comm, info.blocks_per_format[PETSCMP_FP64] == info.blocks,
             "forced fp64: %" PetscInt64_FMT " of %" PetscInt64_FMT " blocks in fp64",
             info.blocks_per_format[PETSCMP_FP64], info.blocks);
  TEST_CHECK(comm, worst <= bound, "apbjacobi(fp64) differs from vpbjacobi by %g per block, bound %g (kappa_max %g)",
             (double)worst, (double)bound, (double)info.kappa_max);
  TEST_CHECK(comm, worst > 0 || info.blocks == 0 || g_bound_scale == 1.0,
             "negative control: expected a nonzero difference");
  PetscCall(PetscPrintf(
      comm, "vpbjacobi: %" PetscInt64_FMT " blocks, kappa_max %.3g, max block difference %.3g (bound %.3g)\n",
      info.blocks, (double)info.kappa_max, (double)worst, (double)bound));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y1));
  PetscCall(VecDestroy(&y2));
  PetscCall(PCDestroy(&apbj));
  PetscCall(PCDestroy(&vpb));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* 2 and 3: adaptive formats keep each block within the accuracy; symmetry and transpose. */
static PetscErrorCode CheckAdaptive(const Problem *p, PetscReal accuracy)
{
  MPI_Comm comm = PETSC_COMM_WORLD;
  Mat A;
  PC exact, adaptive;
  Vec x, y1, y2, yt;
  PCAPBJacobiInfo info;
  PetscReal worst;
  PetscInt64 narrow = 0;
  PetscBool eq;

  PetscFunctionBeginUser;
  PetscCall(BuildMatrix(comm, p, &A));
  PetscCall(CreatePC(A, PCAPBJACOBI, PC_APBJACOBI_FORMATS_FP64, accuracy, &exact));
  PetscCall(CreatePC(A, PCAPBJACOBI, PC_APBJACOBI_FORMATS_ALL, accuracy, &adaptive));
  PetscCall(PCAPBJacobiGetInfo(adaptive, &info));
  for (int f = 1; f < PETSCMP_NUM_FORMATS; ++f)
    narrow += info.blocks_per_format[f];
  PetscCall(PetscPrintf(comm, "adaptive (accuracy %g):", (double)accuracy));
  for (int f = 0; f < PETSCMP_NUM_FORMATS; ++f)
    PetscCall(PetscPrintf(comm, " %s %" PetscInt64_FMT, PetscMPFormats[f], info.blocks_per_format[f]));
  PetscCall(PetscPrintf(comm, ", bytes %.3g of fp64, kappa %.3g..%.3g, range rejections %" PetscInt64_FMT "\n",
                        (double)(info.bytes / info.fp64_bytes), (double)info.kappa_min, (double)info.kappa_max,
                        info.range_rejections));
  TEST_CHECK(comm, narrow > 0 && info.blocks_per_format[PETSCMP_FP64] < info.blocks,
             "adaptive: no block uses a narrower format than fp64");
  TEST_CHECK(comm, info.bytes < info.fp64_bytes, "adaptive: stored bytes %g not below fp64 %g", (double)info.bytes,
             (double)info.fp64_bytes);
  PetscCall(RandomVec(A, 12, &x));
  PetscCall(VecDuplicate(x, &y1));
  PetscCall(VecDuplicate(x, &y2));
  PetscCall(VecDuplicate(x, &yt));
  PetscCall(PCApply(exact, x, y1));
  PetscCall(PCApply(adaptive, x, y2));
  PetscCall(BlockRelativeDifference(adaptive, y2, y1, &worst));
  /* ||I - E~ D||_1 <= accuracy gives ||dy_b||_1 <= accuracy ||y_b||_1; fp64 sums add a few ulps */
  TEST_CHECK(comm, worst <= accuracy * (1 + 1e-10) * g_bound_scale, "adaptive block error %g exceeds the accuracy %g",
             (double)worst, (double)accuracy);
  TEST_CHECK(comm, worst > 0, "adaptive: lossy formats but no difference at all");
  /* symmetric blocks: exactly symmetric stored inverse, so M^-T x == M^-1 x bit for bit */
  PetscCall(PCApplyTranspose(adaptive, x, yt));
  PetscCall(VecsBitwiseEqual(yt, y2, &eq));
  TEST_CHECK(comm, eq, "symmetric matrix: the transpose apply differs from the apply");
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y1));
  PetscCall(VecDestroy(&y2));
  PetscCall(VecDestroy(&yt));
  PetscCall(PCDestroy(&exact));
  PetscCall(PCDestroy(&adaptive));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* 3b: a nonsymmetric matrix (one extra coupling): (M^-T e_i)_j == (M^-1 e_j)_i bit for bit inside a block. */
static PetscErrorCode CheckTransposeNonsymmetric(const Problem *p0)
{
  MPI_Comm comm = PETSC_COMM_WORLD;
  Problem p     = *p0;
  Mat A;
  PC pc;
  Vec ei, ej, yi, yj;
  PetscInt i = 1, j = 2;
  PetscScalar a = 0, b = 0;
  PetscInt rstart, rend;

  PetscFunctionBeginUser;
  p.extra_entry = 0; /* node 0 couples to node 2: inside the first block when blocks hold >= 3 nodes */
  PetscCall(BuildMatrix(comm, &p, &A));
  PetscCall(MatSetOption(A, MAT_SYMMETRIC, PETSC_FALSE));
  /* supervariable blocks of 10 nodes: the auto default's 3x3 blocks would not contain the coupling */
  PetscCall(CreatePCBlocks(A, PCAPBJACOBI, PC_APBJACOBI_BLOCKS_SUPERVARIABLE, PC_APBJACOBI_FORMATS_ALL, 1e-2, &pc));
  PetscCall(MatCreateVecs(A, &ei, NULL));
  PetscCall(VecDuplicate(ei, &ej));
  PetscCall(VecDuplicate(ei, &yi));
  PetscCall(VecDuplicate(ei, &yj));
  PetscCall(VecSetValue(ei, i, 1.0, INSERT_VALUES));
  PetscCall(VecSetValue(ej, 3 * 2 + j, 1.0, INSERT_VALUES));
  PetscCall(VecAssemblyBegin(ei));
  PetscCall(VecAssemblyEnd(ei));
  PetscCall(VecAssemblyBegin(ej));
  PetscCall(VecAssemblyEnd(ej));
  PetscCall(PCApplyTranspose(pc, ei, yi)); /* row i of M^-1 */
  PetscCall(PCApply(pc, ej, yj));          /* column 3*2+j of M^-1 */
  PetscCall(VecGetOwnershipRange(yi, &rstart, &rend));
  if (rstart <= 3 * 2 + j && 3 * 2 + j < rend) PetscCall(VecGetValues(yi, 1, (PetscInt[]){3 * 2 + j}, &a));
  if (rstart <= i && i < rend) PetscCall(VecGetValues(yj, 1, &i, &b));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &a, 1, MPIU_SCALAR, MPIU_SUM, comm));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &b, 1, MPIU_SCALAR, MPIU_SUM, comm));
  TEST_CHECK(comm, a == b, "transpose apply: (M^-T e_i)_j = %.17g but (M^-1 e_j)_i = %.17g", (double)a, (double)b);
  TEST_CHECK(comm, a != 0, "transpose check: the entry is zero, the nonsymmetric coupling is not inside a block");
  PetscCall(VecDestroy(&ei));
  PetscCall(VecDestroy(&ej));
  PetscCall(VecDestroy(&yi));
  PetscCall(VecDestroy(&yj));
  PetscCall(PCDestroy(&pc));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* 4: re-setup when values change (same pattern) and when the pattern changes. */
static PetscErrorCode CheckResetup(const Problem *p)
{
  MPI_Comm comm = PETSC_COMM_WORLD;
  Mat A, B;
  PC pc, fresh;
  Vec x, y1, y2;
  PetscBool eq;
  Problem q = *p;

  PetscFunctionBeginUser;
  /* fp32: inverse entries far from its subnormals, so halving commutes with the rounding
     (fp16 would store decayed entries of the inverse as subnormals) */
  PetscCall(BuildMatrix(comm, &q, &A));
  PetscCall(CreatePC(A, PCAPBJACOBI, PC_APBJACOBI_FORMATS_FP32, 1e-2, &pc));
  PetscCall(RandomVec(A, 13, &x));
  PetscCall(VecDuplicate(x, &y1));
  PetscCall(VecDuplicate(x, &y2));
  PetscCall(PCApply(pc, x, y1));
  PetscCall(MatScale(A, 2.0)); /* every inverse halves exactly, the formats stay */
  PetscCall(PCSetUp(pc));
  PetscCall(PCApply(pc, x, y2));
  PetscCall(VecScale(y1, 0.5));
  PetscCall(VecsBitwiseEqual(y1, y2, &eq));
  TEST_CHECK(comm, eq, "after MatScale(A, 2) the apply is not half the previous one");
  /* a new pattern: same PC object against a fresh PC on the new matrix */
  q.extra_entry = 0;
  PetscCall(BuildMatrix(comm, &q, &B));
  PetscCall(PCSetOperators(pc, B, B));
  PetscCall(PCSetUp(pc));
  PetscCall(CreatePC(B, PCAPBJACOBI, PC_APBJACOBI_FORMATS_FP32, 1e-2, &fresh));
  PetscCall(PCApply(pc, x, y1));
  PetscCall(PCApply(fresh, x, y2));
  PetscCall(VecsBitwiseEqual(y1, y2, &eq));
  TEST_CHECK(comm, eq, "after a change of operator the PC differs from a fresh one");
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y1));
  PetscCall(VecDestroy(&y2));
  PetscCall(PCDestroy(&pc));
  PetscCall(PCDestroy(&fresh));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));
  PetscFunctionReturn(0);
}

/* 5: other matrix types give the same preconditioner (matblocksize blocks, so BAIJ's natural ones). */
static PetscErrorCode CheckMatTypes(const Problem *p)
{
  MPI_Comm comm         = PETSC_COMM_WORLD;
  const MatType types[] = {MATAIJMP, MATBAIJ, MATSBAIJ};
  Mat A, B;
  PC ref, pc;
  Vec x, y1, y2;
  PetscBool eq;
  Problem q = *p;

  PetscFunctionBeginUser;
  PetscCall(BuildMatrix(comm, p, &A));
  PetscCall(CreatePC(A, PCAPBJACOBI, PC_APBJACOBI_FORMATS_ALL, 1e-2, &ref));
  PetscCall(RandomVec(A, 14, &x));
  PetscCall(VecDuplicate(x, &y1));
  PetscCall(VecDuplicate(x, &y2));
  PetscCall(PCApply(ref, x, y1));
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); ++t) {
    q.type = types[t];
    PetscCall(BuildMatrix(comm, &q, &B));
    if (!strcmp(types[t], MATSBAIJ)) PetscCall(MatSetOption(B, MAT_SYMMETRIC, PETSC_TRUE));
    PetscCall(CreatePC(B, PCAPBJACOBI, PC_APBJACOBI_FORMATS_ALL, 1e-2, &pc));
    PetscCall(PCApply(pc, x, y2));
    PetscCall(VecsBitwiseEqual(y1, y2, &eq));
    TEST_CHECK(comm, eq, "apbjacobi on a %s matrix differs from the one on AIJ", types[t]);
    PetscCall(PCDestroy(&pc));
    PetscCall(MatDestroy(&B));
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y1));
  PetscCall(VecDestroy(&y2));
  PetscCall(PCDestroy(&ref));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* 6: a failed block stops CG with KSP_DIVERGED_PC_FAILED on every rank. */
static PetscErrorCode CheckFailure(const Problem *p0, PetscBool nan)
{
  MPI_Comm comm = PETSC_COMM_WORLD;
  Problem p     = *p0;
  Mat A;
  KSP ksp;
  PC pc;
  Vec b, x;
  KSPConvergedReason reason;
  PCFailedReason pcreason;

  PetscFunctionBeginUser;
  if (nan)
    p.nan_node = p.m * p.m - 1; /* on the last rank */
  else
    p.singular = p.m * p.m - 2;
  PetscCall(BuildMatrix(comm, &p, &A));
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(KSPCreate(comm, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCAPBJACOBI));
  PetscCall(KSPSetFromOptions(ksp)); /* -ksp_error_if_not_converged turns the failure into an error */
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(PCGetFailedReason(pc, &pcreason));
  TEST_CHECK(comm, reason == KSP_DIVERGED_PC_FAILED, "%s block: KSP reason %s, expected DIVERGED_PC_FAILED",
             nan ? "NaN" : "singular", KSPConvergedReasons[reason]);
  /* numbers, not names: the names contain the word the test harness scans for */
  PetscCall(PetscPrintf(comm, "%s block: KSP reason %d, PC reason on rank 0 %d\n", nan ? "NaN" : "singular",
                        (int)reason, (int)pcreason));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* Local blocks of the default (auto) partition on a matrix built with block size bs: their sizes, and how many. */
static PetscErrorCode AutoBlocks(const Problem *p0, PetscInt bs, PetscInt *nblocks, PetscInt *nsize3,
                                 PCAPBJacobiBlocks *blocks)
{
  Problem q = *p0;
  Mat A;
  PC pc;
  PCAPBJacobiInfo info;

  PetscFunctionBeginUser;
  q.block_size = bs;
  PetscCall(BuildMatrix(PETSC_COMM_WORLD, &q, &A));
  PetscCall(PCCreate(PETSC_COMM_WORLD, &pc)); /* no PCAPBJacobiSetBlocks: the default */
  PetscCall(PCSetType(pc, PCAPBJACOBI));
  PetscCall(PCSetOperators(pc, A, A));
  PetscCall(PCSetUp(pc));
  PetscCall(PCAPBJacobiGetBlocks(pc, blocks));
  PetscCall(PCAPBJacobiGetInfo(pc, &info));
  *nblocks = (PetscInt)info.blocks;
  *nsize3  = (PetscInt)info.blocks_of_size[3];
  PetscCall(PCDestroy(&pc));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* 8: the default partition is the nodes: 3x3 point blocks from the block size, and the same from the pattern
   (the rows of a node share one, like PETSc's inodes) when the matrix has no block size. */
static PetscErrorCode CheckAutoPartition(const Problem *p)
{
  MPI_Comm comm       = PETSC_COMM_WORLD;
  const PetscInt want = p->m * p->m;
  PetscInt nblocks, n3;
  PCAPBJacobiBlocks blocks;

  PetscFunctionBeginUser;
  PetscCall(AutoBlocks(p, 3, &nblocks, &n3, &blocks));
  TEST_CHECK(comm, blocks == PC_APBJACOBI_BLOCKS_AUTO, "the default blocks are %s, not auto", PCAPBJacobiBlocksTypes[blocks]);
  TEST_CHECK(comm, nblocks == want && n3 == want,
             "auto, block size 3: %" PetscInt_FMT " blocks, %" PetscInt_FMT " of size 3; expected %" PetscInt_FMT " 3x3",
             nblocks, n3, want);
  PetscCall(AutoBlocks(p, 1, &nblocks, &n3, &blocks));
  TEST_CHECK(comm, nblocks == want && n3 == want,
             "auto, no block size (nodes from the pattern): %" PetscInt_FMT " blocks, %" PetscInt_FMT
             " of size 3; expected %" PetscInt_FMT " 3x3",
             nblocks, n3, want);
  PetscFunctionReturn(0);
}

static PetscErrorCode SolveIterations(Mat A, PCType type, PetscInt *its)
{
  KSP ksp;
  PC pc;
  Vec b, x;
  KSPConvergedReason reason;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(KSPCreate(PetscObjectComm((PetscObject)A), &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPSetNormType(ksp, KSP_NORM_UNPRECONDITIONED));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 10000));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, type));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, its));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  TEST_CHECK(PetscObjectComm((PetscObject)A), reason > 0, "CG with %s did not converge: reason %d", type, (int)reason);
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(KSPDestroy(&ksp));
  PetscFunctionReturn(0);
}

/* 9: CG with the default apbjacobi takes at most 2% more iterations than with PCPBJACOBI (block size 3). */
static PetscErrorCode CheckAutoIterations(const Problem *p)
{
  MPI_Comm comm = PETSC_COMM_WORLD;
  Mat A;
  PetscInt its_pb, its_apbj;

  PetscFunctionBeginUser;
  PetscCall(BuildMatrix(comm, p, &A));
  PetscCall(SolveIterations(A, PCPBJACOBI, &its_pb));
  PetscCall(SolveIterations(A, PCAPBJACOBI, &its_apbj));
  PetscCall(PetscPrintf(comm, "CG iterations: pbjacobi %" PetscInt_FMT ", apbjacobi (default) %" PetscInt_FMT "\n", its_pb,
                        its_apbj));
  TEST_CHECK(comm, its_apbj <= its_pb + its_pb / 50,
             "apbjacobi (default) took %" PetscInt_FMT " CG iterations, pbjacobi %" PetscInt_FMT " (allowed +2%%)",
             its_apbj, its_pb);
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* Applies pc to x `count` times into y (the last result stays in y). */
static PetscErrorCode ApplyTimes(PC pc, Vec x, Vec y, PetscInt count)
{
  PetscFunctionBeginUser;
  for (PetscInt k = 0; k < count; ++k) PetscCall(PCApply(pc, x, y));
  PetscFunctionReturn(0);
}

/* 10: forced fp64 (3x3 blocks), each fp64 kernel, against the interleaved one bitwise; auto's life cycle. */
static PetscErrorCode CheckFp64Kernels(const Problem *p)
{
  MPI_Comm comm = PETSC_COMM_WORLD;
  Mat A;
  PC pc;
  Vec x, y0, y;
  PetscBool eq, rows;
  PetscInt nlocal;
  PCAPBJacobiFp64Kernel k;

  PetscFunctionBeginUser;
  PetscCall(BuildMatrix(comm, p, &A));
  PetscCall(MatGetLocalSize(A, &nlocal, NULL));
  rows = (PetscBool)(nlocal > 0); /* a rank without rows stores no fp64 block: auto decides at its setup */
  PetscCall(RandomVec(A, 29, &x));
  PetscCall(VecDuplicate(x, &y0));
  PetscCall(VecDuplicate(x, &y));
  PetscCall(PCCreate(comm, &pc));
  PetscCall(PCSetType(pc, PCAPBJACOBI));
  PetscCall(PCSetOperators(pc, A, A));
  PetscCall(PCAPBJacobiSetFormats(pc, PC_APBJACOBI_FORMATS_FP64));
  PetscCall(PCAPBJacobiGetFp64Kernel(pc, &k));
  TEST_CHECK(comm, k == PC_APBJACOBI_FP64_KERNEL_AUTO, "the default fp64 kernel is %s, not auto",
             PCAPBJacobiFp64KernelTypes[k]);
  EXPECT_ERROR(PCAPBJacobiSetFp64Kernel(pc, (PCAPBJacobiFp64Kernel)3), "an unknown fp64 kernel");
  PetscCall(PCAPBJacobiSetFp64Kernel(pc, PC_APBJACOBI_FP64_KERNEL_INTERLEAVED));
  PetscCall(PCSetUp(pc));
  PetscCall(PCApply(pc, x, y0));
  PetscCall(PCAPBJacobiSetFp64Kernel(pc, PC_APBJACOBI_FP64_KERNEL_BLOCKWISE));
  PetscCall(PCAPBJacobiGetFp64Kernel(pc, &k));
  TEST_CHECK(comm, k == PC_APBJACOBI_FP64_KERNEL_BLOCKWISE, "the kernel set is not reported (%s)",
             PCAPBJacobiFp64KernelTypes[k]);
  PetscCall(PCApply(pc, x, y));
  PetscCall(VecsBitwiseEqual(y0, y, &eq));
  TEST_CHECK(comm, eq, "the blockwise fp64 kernel differs from the interleaved one");
  /* auto: undecided during the first 2 x 3 applies, then one of the two, each apply the same bits */
  PetscCall(PCAPBJacobiSetFp64Kernel(pc, PC_APBJACOBI_FP64_KERNEL_AUTO));
  for (int pass = 0; pass < 2; ++pass) {
    for (PetscInt a = 0; a < 6; ++a) {
      PetscCall(PCAPBJacobiGetFp64Kernel(pc, &k));
      TEST_CHECK(comm, k == PC_APBJACOBI_FP64_KERNEL_AUTO || !rows,
                 "auto decided after %" PetscInt_FMT " of 6 applies (pass %d)", a, pass);
      PetscCall(PCApply(pc, x, y));
      PetscCall(VecsBitwiseEqual(y0, y, &eq));
      TEST_CHECK(comm, eq, "apply %" PetscInt_FMT " under auto differs from the interleaved kernel (pass %d)", a, pass);
    }
    PetscCall(PCAPBJacobiGetFp64Kernel(pc, &k));
    TEST_CHECK(comm, k == PC_APBJACOBI_FP64_KERNEL_INTERLEAVED || k == PC_APBJACOBI_FP64_KERNEL_BLOCKWISE,
               "auto did not decide after 6 applies (pass %d: %s)", pass, PCAPBJacobiFp64KernelTypes[k]);
    PetscCall(ApplyTimes(pc, x, y, 2));
    PetscCall(VecsBitwiseEqual(y0, y, &eq));
    TEST_CHECK(comm, eq, "the apply with auto's choice differs from the interleaved kernel (pass %d)", pass);
    PetscCall(MatScale(A, 2.0)); /* new values, new setup: every inverse halves exactly, auto times again */
    PetscCall(VecScale(y0, 0.5));
    PetscCall(PCSetUp(pc));
  }
  /* no fp64 block stored: nothing to time, the interleaved kernel at once */
  PetscCall(PCAPBJacobiSetFormats(pc, PC_APBJACOBI_FORMATS_FP32));
  PetscCall(PCSetUp(pc));
  PetscCall(PCAPBJacobiGetFp64Kernel(pc, &k));
  TEST_CHECK(comm, k == PC_APBJACOBI_FP64_KERNEL_INTERLEAVED, "with fp32 blocks only auto is %s, not interleaved",
             PCAPBJacobiFp64KernelTypes[k]);
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y0));
  PetscCall(VecDestroy(&y));
  PetscCall(PCDestroy(&pc));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Problem p          = {.m           = 12,
                        .range       = 6,
                        .singular    = -1,
                        .nan_node    = -1,
                        .extra_entry = -1,
                        .empty_rank1 = PETSC_FALSE,
                        .block_size  = 3,
                        .type        = MATAIJ};
  PetscReal accuracy = 1e-2;
  PetscBool failures = PETSC_TRUE, failures_only = PETSC_FALSE;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscMPInitializePackage());
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-m", &p.m, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-range", &p.range, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-accuracy", &accuracy, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-empty_rank1", &p.empty_rank1, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-failures", &failures, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-failures_only", &failures_only, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-test_bound_scale", &g_bound_scale, NULL));
  if (!failures_only) {
    Problem flat = p; /* kappa ~ 3: a tight bound */
    flat.range   = 0;
    PetscCall(CheckAgainstVPBJacobi(&flat));
    PetscCall(CheckAgainstVPBJacobi(&p));
    PetscCall(CheckAdaptive(&p, accuracy));
    PetscCall(CheckTransposeNonsymmetric(&p));
    PetscCall(CheckResetup(&p));
    PetscCall(CheckMatTypes(&p));
    PetscCall(CheckAutoPartition(&p));
    PetscCall(CheckAutoIterations(&p));
    PetscCall(CheckFp64Kernels(&p));
  }
  if (failures) {
    PetscCall(CheckFailure(&p, PETSC_FALSE));
    PetscCall(CheckFailure(&p, PETSC_TRUE));
  }
  int code = TestFinish();
  PetscCall(PetscFinalize());
  return code;
}
