static char help[] =
    "petscmp: KSPMPJACOBI. On an AIJ operator it is KSPRICHARDSON (the same iterates bit for bit, every norm\n"
    "type); on split storage every strategy reaches the tolerance on the exact residual, with the\n"
    "level schedule asked for; convergence is never declared on a reduced-level residual; a stagnating\n"
    "residual steps the level up; the component strategy steps rows up one by one and reads less; the\n"
    "operator's read level is restored; bad options are errors.\n"
    "  -k <grid points per direction> (default 40)\n\n";

#include "petscmp_test.h"

/* A 2D 5-point operator on a k x k grid, rows split among ranks: diagonal 1 + d (d in [0, 0.01)), off-diagonal
   -0.2 (1 + e) (e in [0, 0.01)), fp64 values with all 53 bits. Strictly diagonally dominant: Jacobi converges at a
   rate below 0.81. */
static PetscErrorCode GridMatrix(PetscInt k, MatType type, Mat *A)
{
  const PetscInt N = k * k;
  PetscInt rstart, rend;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_WORLD, A));
  PetscCall(MatSetSizes(*A, PETSC_DECIDE, PETSC_DECIDE, N, N));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, 5, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, 5, NULL, 4, NULL));
  PetscCall(MatGetOwnershipRange(*A, &rstart, &rend));
  for (PetscInt row = rstart; row < rend; row++) {
    const PetscInt i = row % k, j = row / k;
    PetscInt cols[5], n           = 0;
    PetscScalar v[5];
    const PetscInt nb[4][2] = {{i, j - 1}, {i - 1, j}, {i + 1, j}, {i, j + 1}};
    for (int s = 0; s < 4; s++) {
      if (nb[s][0] < 0 || nb[s][1] < 0 || nb[s][0] >= k || nb[s][1] >= k) continue;
      const PetscInt col = nb[s][1] * k + nb[s][0];
      cols[n]            = col;
      v[n++]             = -0.2 * (1.0 + 0.01 * (double)(TestHash(3, (uint64_t)row, (uint64_t)col) >> 11) * 0x1p-53);
    }
    cols[n] = row;
    v[n++]  = 1.0 + 0.01 * (double)(TestHash(4, (uint64_t)row, 0) >> 11) * 0x1p-53;
    PetscCall(MatSetValues(*A, 1, &row, n, cols, v, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* Solves A x = b from x = 0 with the given options prefix set up by the caller; returns its, reason, the true
   residual |b - A x| read at the full level, and the residual history. */
typedef struct {
  PetscInt its;
  KSPConvergedReason reason;
  PetscReal true_residual;
  PetscInt nhist;
  PetscReal hist[4096];
  PetscInt segments, level_its[4];
  PetscReal share;                  /* of the value bytes read */
  PetscInt rows_at_end[5], stepped; /* component strategy */
} SolveResult;

static PetscErrorCode Solve(Mat A, const char *prefix, Vec b, Vec x, SolveResult *res)
{
  KSP ksp;
  Vec r;
  const PetscReal *hist;
  PetscBool mp;

  PetscFunctionBeginUser;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetOptionsPrefix(ksp, prefix));
  PetscCall(KSPSetResidualHistory(ksp, res->hist, 4096, PETSC_TRUE));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(VecSet(x, 0.0));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, &res->its));
  PetscCall(KSPGetConvergedReason(ksp, &res->reason));
  PetscCall(KSPGetResidualHistory(ksp, &hist, &res->nhist));
  PetscCall(PetscObjectTypeCompare((PetscObject)ksp, KSPMPJACOBI, &mp));
  res->segments = 0;
  if (mp) {
    PetscCall(KSPMPJacobiGetLevelIterations(ksp, &res->segments, res->level_its));
    PetscCall(KSPMPJacobiGetReadShare(ksp, &res->share));
    PetscCall(KSPMPJacobiGetRowLevelCounts(ksp, res->rows_at_end, &res->stepped));
  }
  PetscCall(VecDuplicate(b, &r));
  {
    PetscInt level = 0;
    PetscCall(MatAIJMPGetReadLevel(A, &level));
    PetscCall(MatAIJMPSetReadLevel(A, 0)); /* every segment: the exact residual */
    PetscCall(MatMult(A, x, r));
    PetscCall(MatAIJMPSetReadLevel(A, level));
  }
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &res->true_residual));
  PetscCall(VecDestroy(&r));
  PetscCall(KSPDestroy(&ksp));
  PetscFunctionReturn(0);
}

static PetscErrorCode SetOptions(const char *prefix, const char *options)
{
  PetscFunctionBeginUser;
  PetscCall(PetscOptionsInsertString(NULL, options)); /* options of the form -<prefix>name value */
  (void)prefix;
  PetscFunctionReturn(0);
}

/* On AIJ, mpjacobi and richardson give the same iterates: the same history and solution bit for bit. */
static PetscErrorCode CheckEqualsRichardson(Mat A, Vec b, const char *norm)
{
  SolveResult *ra, *rb;
  Vec xa, xb;
  char opts[512];

  PetscFunctionBeginUser;
  PetscCall(PetscNew(&ra));
  PetscCall(PetscNew(&rb));
  PetscCall(VecDuplicate(b, &xa));
  PetscCall(VecDuplicate(b, &xb));
  PetscCall(PetscSNPrintf(opts, sizeof opts,
                          "-r_ksp_type richardson -r_ksp_richardson_scale 0.9 -r_pc_type jacobi -r_ksp_norm_type %s "
                          "-r_ksp_rtol 1e-9 -r_ksp_max_it 300 "
                          "-m_ksp_type mpjacobi -m_ksp_mpjacobi_omega 0.9 -m_pc_type jacobi -m_ksp_norm_type %s "
                          "-m_ksp_rtol 1e-9 -m_ksp_max_it 300",
                          norm, norm));
  PetscCall(SetOptions("", opts));
  PetscCall(Solve(A, "r_", b, xa, ra));
  PetscCall(Solve(A, "m_", b, xb, rb));
  TEST_CHECK(PETSC_COMM_WORLD, ra->its == rb->its && ra->reason == rb->reason && ra->nhist == rb->nhist,
             "norm %s: richardson %" PetscInt_FMT " its (reason %d), mpjacobi %" PetscInt_FMT " its (reason %d)", norm,
             ra->its, (int)ra->reason, rb->its, (int)rb->reason);
  PetscInt differ = 0;
  for (PetscInt k = 0; k < PetscMin(ra->nhist, rb->nhist); k++)
    differ += memcmp(&ra->hist[k], &rb->hist[k], sizeof(PetscReal)) != 0;
  TEST_CHECK(PETSC_COMM_WORLD, differ == 0, "norm %s: %" PetscInt_FMT " residual norms differ from richardson's", norm,
             differ);
  PetscCall(TestCheckBitwise(xa, xb, "mpjacobi solution against richardson's"));
  TEST_CHECK(PETSC_COMM_WORLD, rb->segments == 0 && rb->level_its[0] == rb->its,
             "norm %s: an AIJ operator counted as split storage", norm);
  PetscCall(VecDestroy(&xa));
  PetscCall(VecDestroy(&xb));
  PetscCall(PetscFree(ra));
  PetscCall(PetscFree(rb));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt k = 40;
  Mat Aaij, Amp;
  Vec b, x;
  SolveResult *ref, *res;
  PetscReal bnorm;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-k", &k, NULL));
  PetscCall(PetscNew(&ref));
  PetscCall(PetscNew(&res));
  PetscCall(GridMatrix(k, MATAIJ, &Aaij));
  PetscCall(MatCreateVecs(Aaij, &x, &b));
  PetscCall(TestVecFill(b, 7));
  PetscCall(VecNorm(b, NORM_2, &bnorm));

  /* 1. AIJ: richardson, operation for operation */
  PetscCall(CheckEqualsRichardson(Aaij, b, "unpreconditioned"));
  PetscCall(CheckEqualsRichardson(Aaij, b, "preconditioned"));
  PetscCall(CheckEqualsRichardson(Aaij, b, "none"));

  /* 2. split storage: the reference is fp64 Jacobi on AIJ */
  PetscCall(SetOptions("", "-ref_ksp_type richardson -ref_pc_type jacobi -ref_ksp_norm_type unpreconditioned "
                           "-ref_ksp_rtol 1e-8 -ref_ksp_max_it 2000"));
  PetscCall(Solve(Aaij, "ref_", b, x, ref));
  TEST_CHECK(PETSC_COMM_WORLD, ref->reason > 0 && ref->its > 40,
             "the reference Jacobi solve: %" PetscInt_FMT " its, reason %d", ref->its, (int)ref->reason);
  const char *storages[] = {"split2", "split4"};
  for (int s = 0; s < 2; s++) {
    const PetscInt n = s ? 4 : 2;
    char opts[512];
    PetscCall(GridMatrix(k, MATAIJMP, &Amp));
    PetscCall(MatAIJMPSetStorage(Amp, s ? MAT_AIJMP_SPLIT4 : MAT_AIJMP_SPLIT2));
    PetscCall(MatAIJMPSetReadLevel(Amp, 1)); /* the user's level: restored after each solve */
    const char *strategies[] = {"residual", "steps -mp_ksp_mpjacobi_steps_its 20,40,60", "full", "component"};
    for (int st = 0; st < 4; st++) {
      PetscCall(PetscSNPrintf(opts, sizeof opts,
                              "-mp_ksp_type mpjacobi -mp_pc_type jacobi -mp_ksp_rtol 1e-8 -mp_ksp_max_it 2000 "
                              "-mp_ksp_mpjacobi_strategy %s",
                              strategies[st]));
      PetscCall(SetOptions("", opts));
      PetscCall(Solve(Amp, "mp_", b, x, res));
      PetscInt level;
      PetscCall(MatAIJMPGetReadLevel(Amp, &level));
      TEST_CHECK(PETSC_COMM_WORLD, level == 1, "%s %s: the read level was not restored (%" PetscInt_FMT ")",
                 storages[s], strategies[st], level);
      TEST_CHECK(PETSC_COMM_WORLD, res->reason > 0 && res->true_residual <= 1e-8 * bnorm,
                 "%s %s: reason %d, true residual %g against the tolerance %g", storages[s], strategies[st],
                 (int)res->reason, (double)res->true_residual, (double)(1e-8 * bnorm));
      /* component: each of the n - 1 steps of a row is seen at the next stagnation test, up to phi = 10 iterations
         late */
      TEST_CHECK(PETSC_COMM_WORLD, res->its <= ref->its + ref->its / 10 + 2 + (st == 3 ? (n - 1) * 10 : 0),
                 "%s %s: %" PetscInt_FMT " iterations, fp64 Jacobi %" PetscInt_FMT, storages[s], strategies[st],
                 res->its, ref->its);
      TEST_CHECK(PETSC_COMM_WORLD, res->segments == n, "%s: %" PetscInt_FMT " segments reported", storages[s],
                 res->segments);
      if (st == 0) /* fp64 values: the heads alone cannot reach 1e-8, the full values are not needed from the start */
        TEST_CHECK(PETSC_COMM_WORLD, res->level_its[0] > 0 && res->level_its[0] < res->its,
                   "%s residual: %" PetscInt_FMT " of %" PetscInt_FMT " iterations at level 1", storages[s],
                   res->level_its[0], res->its);
      if (st == 1) /* the schedule: 20 iterations at level 1, 20 at 2 (split4: then 20 at 3) */
        TEST_CHECK(PETSC_COMM_WORLD,
                   res->level_its[0] == 20 && (n == 2 || (res->level_its[1] == 20 && res->level_its[2] == 20)),
                   "%s steps: iterations per level %" PetscInt_FMT " %" PetscInt_FMT " %" PetscInt_FMT, storages[s],
                   res->level_its[0], res->level_its[1], res->level_its[2]);
      if (st == 3) { /* the heads hold each value to 2^-20 (split2) or 2^-4: rows step up, the others read less */
        PetscInt rows = 0, below = 0;
        for (PetscInt l = 1; l <= n; l++)
          rows += res->rows_at_end[l];
        for (PetscInt l = 1; l < n; l++)
          below += res->rows_at_end[l];
        TEST_CHECK(PETSC_COMM_WORLD, rows == k * k && res->stepped > 0 && res->rows_at_end[1] < rows,
                   "%s component: %" PetscInt_FMT " rows counted of %" PetscInt_FMT ", %" PetscInt_FMT
                   " steps up, %" PetscInt_FMT " rows left at level 1",
                   storages[s], rows, k * k, res->stepped, res->rows_at_end[1]);
        TEST_CHECK(PETSC_COMM_WORLD, res->share < 0.95 && res->share > 1.0 / n,
                   "%s component: %.3f of the value bytes read (%" PetscInt_FMT
                   " rows below the full level at the end)",
                   storages[s], (double)res->share, below);
        PetscInt counts[5];
        PetscCall(MatAIJMPGetRowReadLevelCounts(Amp, counts));
        TEST_CHECK(PETSC_COMM_WORLD, counts[1] > 0 && counts[2] == 0,
                   "%s component: the levels per row were not dropped after the solve", storages[s]);
      }
      if (st == 2)
        TEST_CHECK(PETSC_COMM_WORLD, res->level_its[n - 1] == res->its && res->its == ref->its,
                   "%s full: %" PetscInt_FMT " iterations at the full level of %" PetscInt_FMT
                   " (fp64 Jacobi %" PetscInt_FMT ")",
                   storages[s], res->level_its[n - 1], res->its, ref->its);
    }
    /* 3. no convergence on a reduced level: no checks, no attainable test; level 1's residual meets the tolerance
       first, the exact one decides and the solve goes on */
    PetscCall(SetOptions("", "-nc_ksp_type mpjacobi -nc_pc_type jacobi -nc_ksp_rtol 1e-8 -nc_ksp_max_it 2000 "
                             "-nc_ksp_mpjacobi_check_every 100000 -nc_ksp_mpjacobi_attainable_factor 0"));
    PetscCall(Solve(Amp, "nc_", b, x, res));
    TEST_CHECK(PETSC_COMM_WORLD,
               res->reason > 0 && res->true_residual <= 1e-8 * bnorm && res->level_its[0] > 0 &&
                   res->level_its[0] < res->its,
               "%s: a reduced level's convergence was taken (reason %d, true residual %g, %" PetscInt_FMT
               " of %" PetscInt_FMT " its at level 1)",
               storages[s], (int)res->reason, (double)res->true_residual, res->level_its[0], res->its);
    /* 3b. component, the stagnation test never flags a row: level 1's residual meets the tolerance, the exact one
       does not, and the rows step up from there */
    PetscCall(SetOptions("", "-cn_ksp_type mpjacobi -cn_pc_type jacobi -cn_ksp_rtol 1e-8 -cn_ksp_max_it 2000 "
                             "-cn_ksp_mpjacobi_strategy component -cn_ksp_mpjacobi_row_floor 1e30"));
    PetscCall(Solve(Amp, "cn_", b, x, res));
    TEST_CHECK(PETSC_COMM_WORLD, res->reason > 0 && res->true_residual <= 1e-8 * bnorm && res->stepped == 0,
               "%s component, no row flagged: reason %d, true residual %g, %" PetscInt_FMT " steps by the test",
               storages[s], (int)res->reason, (double)res->true_residual, res->stepped);
    /* 4. stagnation: an unreachable tolerance; each level's residual falls to its rounding floor and stops
       decreasing, which steps the level up (no attainable test) until every segment is read */
    PetscCall(SetOptions("", "-st_ksp_type mpjacobi -st_pc_type jacobi -st_ksp_rtol 1e-40 -st_ksp_atol 0 "
                             "-st_ksp_max_it 1500 -st_ksp_mpjacobi_attainable_factor 0"));
    PetscCall(Solve(Amp, "st_", b, x, res));
    PetscInt at_every_level = 1;
    for (PetscInt l = 0; l < n; l++)
      at_every_level &= res->level_its[l] > 0;
    TEST_CHECK(PETSC_COMM_WORLD, at_every_level && res->reason == KSP_DIVERGED_ITS,
               "%s stagnation: iterations per level %" PetscInt_FMT " %" PetscInt_FMT " %" PetscInt_FMT
               " %" PetscInt_FMT ", reason %d",
               storages[s], res->level_its[0], res->level_its[1], res->level_its[2], res->level_its[3],
               (int)res->reason);
    /* 5. a first level past the operator's segments */
    if (n == 2) {
      KSP ksp;
      PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
      PetscCall(KSPSetOperators(ksp, Amp, Amp));
      PetscCall(SetOptions("", "-bad_ksp_type mpjacobi -bad_ksp_mpjacobi_first_level 3"));
      PetscCall(KSPSetOptionsPrefix(ksp, "bad_"));
      PetscCall(KSPSetFromOptions(ksp));
      EXPECT_ERROR(KSPSolve(ksp, b, x), "first level 3 of 2 segments");
      PetscCall(KSPDestroy(&ksp));
    }
    PetscCall(MatDestroy(&Amp));
  }

  /* 6. bad options */
  const char *bad[] = {"-e_ksp_mpjacobi_omega -1",
                       "-e_ksp_mpjacobi_first_level 5",
                       "-e_ksp_mpjacobi_check_every 0",
                       "-e_ksp_mpjacobi_steps_rtol 2",
                       "-e_ksp_mpjacobi_strategy sometimes",
                       "-e_ksp_mpjacobi_attainable_factor -3",
                       "-e_ksp_mpjacobi_steps_its 30,10",
                       "-e_ksp_mpjacobi_phi 0",
                       "-e_ksp_mpjacobi_delta 0",
                       "-e_ksp_mpjacobi_row_floor -1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    KSP ksp;
    char opts[256];
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
    PetscCall(KSPSetType(ksp, KSPMPJACOBI));
    PetscCall(KSPSetOptionsPrefix(ksp, "e_"));
    PetscCall(PetscSNPrintf(opts, sizeof opts, "%s", bad[i]));
    PetscCall(PetscOptionsInsertString(NULL, opts));
    EXPECT_ERROR(KSPSetFromOptions(ksp), bad[i]);
    PetscCall(PetscOptionsClear(NULL));
    PetscCall(KSPDestroy(&ksp));
  }

  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&Aaij));
  PetscCall(PetscFree(ref));
  PetscCall(PetscFree(res));
  int rc = TestFinish();
  PetscCall(PetscFinalize());
  return rc;
}
