static char help[] =
    "Block-Jacobi benchmark: setup and apply of PCAPBJACOBI (adaptive, forced fp64/fp32/fp16) against PETSc's\n"
    "PCVPBJACOBI and PCPBJACOBI on the same partition, timed alternately in one run, against the STREAM triad.\n"
    "The matrix is block diagonal (all a block-Jacobi apply reads are its diagonal blocks): dense b x b\n"
    "Kac-Murdock-Szego blocks D_ij = s rho^|i-j| (SPD, kappa_1 ~ ((1+rho)/(1-rho))^2), rho = 0.3 (kappa ~3.4: fp16 at\n"
    "accuracy 1e-2), a fraction -fp32_fraction with rho = 0.9 (kappa ~360: fp32), s = 10^k with k in [-2, 2].\n"
    "  -b <int>              large block size, blocks found by supervariable detection, VPBJACOBI (default 30)\n"
    "  -rows <int>           rows of the large-block matrix (default: fp64 inverses of >= 1.6 GB)\n"
    "  -small_b <int>        small block size, blocks = MatGetBlockSize, PBJACOBI (default 3; 0 skips)\n"
    "  -small_rows <int>     rows of the small-block matrix (default: fp64 inverses of >= 1.6 GB)\n"
    "  -fp32_fraction <real> fraction of blocks with kappa ~360 (default 0)\n"
    "  -reps <int>           timed applies per preconditioner (default 15)\n"
    "  -setup_reps <int>     warm setups per preconditioner after the applies: new values (MatScale by 2 and 1/2),\n"
    "                        then PCSetUp timed, in rotating order, as in a Newton loop; the median is reported "
    "(default 3)\n"
    "  -stream_mib <int>     MiB per STREAM array (default 512)\n\n";

#include <petscksp.h>

#include "bench_common.h"
#include "petscmp.h"

#define MAXPC 8

typedef struct {
  const char *name;
  PCType type;
  PCAPBJacobiFormats formats;
  PC pc;
  double setup_s;
  double setup_warm[16];
  double bytes; /* inverse bytes + x + y */
  double t[256];
  double relerr;
  PCAPBJacobiInfo info;
  PCAPBJacobiFp64Kernel fp64_kernel; /* apbjacobi: the kernel of its fp64 blocks after the timed applies (rank 0) */
} Variant;

static PetscErrorCode BuildBlockDiagonal(MPI_Comm comm, PetscInt rows, PetscInt b, PetscReal fp32_fraction, Mat *A)
{
  PetscInt rstart, rend;
  PetscScalar *vals;
  PetscInt *idx;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, PETSC_DECIDE, PETSC_DECIDE, rows, rows));
  PetscCall(MatSetType(*A, MATAIJ));
  PetscCall(MatSetBlockSize(*A, b));
  PetscCall(MatSeqAIJSetPreallocation(*A, b, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, b, NULL, 0, NULL));
  PetscCall(MatGetOwnershipRange(*A, &rstart, &rend));
  PetscCall(PetscMalloc2(b * b, &vals, b, &idx));
  for (PetscInt blk = rstart / b; blk < rend / b; ++blk) {
    const uint64_t h   = (uint64_t)blk * 0x9E3779B97F4A7C15ull;
    const double rho   = ((double)((h >> 11) % 1000000) / 1e6 < fp32_fraction) ? 0.9 : 0.3;
    const double scale = pow(10.0, (double)((h >> 40) % 5) - 2.0);
    for (PetscInt i = 0; i < b; ++i) {
      idx[i] = blk * b + i;
      for (PetscInt j = 0; j < b; ++j)
        vals[i * b + j] = scale * pow(rho, (double)PetscAbsInt(i - j));
    }
    PetscCall(MatSetValues(*A, b, idx, b, idx, vals, INSERT_VALUES));
  }
  PetscCall(PetscFree2(vals, idx));
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode SetUpVariant(Mat A, PCAPBJacobiBlocks blocks, Variant *v)
{
  double t;

  PetscFunctionBeginUser;
  PetscCall(PCCreate(PetscObjectComm((PetscObject)A), &v->pc));
  PetscCall(PCSetType(v->pc, v->type));
  PetscCall(PCSetOperators(v->pc, A, A));
  PetscCall(PCAPBJacobiSetFormats(v->pc, v->formats)); /* no-ops for PETSc's types */
  PetscCall(PCAPBJacobiSetBlocks(v->pc, blocks));
  PetscCall(PCSetFromOptions(v->pc));
  PetscCallMPI(MPI_Barrier(PetscObjectComm((PetscObject)A)));
  t = MPI_Wtime();
  PetscCall(PCSetUp(v->pc));
  PetscCallMPI(MPI_Barrier(PetscObjectComm((PetscObject)A)));
  v->setup_s = MPI_Wtime() - t;
  PetscFunctionReturn(0);
}

/* One matrix: set up every variant (the PETSc reference first, with apbjacobi's partition), then rounds of
   applies in rotating order, each timed alone between barriers. */
/* Setups in reused memory: each round gives the matrix new values and times every preconditioner's setup again,
   in rotating order (a Newton step's setup).
   The first setups (setup_s) are the ones a program pays, fresh memory included; on the VMs measured that depends
   on which variant first touches memory the machine never mapped, so the warm medians are the fairer comparison. */
static PetscErrorCode WarmSetups(Mat A, Variant *v, PetscInt nv, PetscInt setup_reps)
{
  PetscFunctionBeginUser;
  for (PetscInt r = 0; r < setup_reps; ++r)
    for (PetscInt j = 0; j < nv; ++j) {
      const PetscInt k = (j + r) % nv;
      MPI_Comm comm    = PetscObjectComm((PetscObject)v[k].pc);
      double t;
      /* new values, as in a Newton step: scaling by 2 and by 1/2 gives back the same values in a new state (and
         drops the inverted diagonal PCPBJACOBI/PCVPBJACOBI keep in the matrix), so PCSetUp inverts again; each
         preconditioner keeps whatever memory it keeps between setups */
      PetscCall(MatScale(A, 2.0));
      PetscCall(MatScale(A, 0.5));
      PetscCallMPI(MPI_Barrier(comm));
      t = MPI_Wtime();
      PetscCall(PCSetUp(v[k].pc));
      PetscCallMPI(MPI_Barrier(comm));
      v[k].setup_warm[r] = MPI_Wtime() - t;
    }
  PetscFunctionReturn(0);
}

static PetscErrorCode BenchBlocks(const char *title, Mat A, PCType reference, PCAPBJacobiBlocks blocks, PetscInt reps,
                                  PetscInt setup_reps, double triad_gbs)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)A);
  Variant v[MAXPC];
  PetscInt nv = 0, rows, b;
  Vec x, y, yref;
  PetscReal refnorm;

  PetscFunctionBeginUser;
  PetscCall(MatGetSize(A, &rows, NULL));
  PetscCall(MatGetBlockSize(A, &b));
  v[nv++] = (Variant){.name = "apbj adaptive", .type = PCAPBJACOBI, .formats = PC_APBJACOBI_FORMATS_ALL};
  v[nv++] = (Variant){.name = "apbj fp64", .type = PCAPBJACOBI, .formats = PC_APBJACOBI_FORMATS_FP64};
  v[nv++] = (Variant){.name = "apbj fp32", .type = PCAPBJACOBI, .formats = PC_APBJACOBI_FORMATS_FP32};
  v[nv++] = (Variant){.name = "apbj fp16", .type = PCAPBJACOBI, .formats = PC_APBJACOBI_FORMATS_FP16};
  v[nv++] = (Variant){.name = reference, .type = reference, .formats = PC_APBJACOBI_FORMATS_FP64};
  for (PetscInt k = 0; k < nv; ++k) {
    if (!strcmp(v[k].type, PCVPBJACOBI)) { /* the same partition as apbjacobi's */
      PetscInt nblocks;
      const PetscInt *sizes;
      PetscCall(PCAPBJacobiGetLocalBlockSizes(v[0].pc, &nblocks, &sizes));
      PetscCall(MatSetVariableBlockSizes(A, nblocks, (PetscInt *)sizes));
    }
    PetscCall(SetUpVariant(A, blocks, &v[k]));
    if (!strcmp(v[k].type, PCAPBJACOBI)) {
      PetscCall(PCAPBJacobiGetInfo(v[k].pc, &v[k].info));
      v[k].bytes = v[k].info.bytes + 16.0 * rows;
    } else
      v[k].bytes = v[0].info.fp64_bytes + 16.0 * rows;
  }
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(VecDuplicate(y, &yref));
  PetscCall(VecSetRandom(x, NULL));
  PetscCall(PCApply(v[nv - 1].pc, x, yref));
  PetscCall(VecNorm(yref, NORM_2, &refnorm));
  for (PetscInt k = 0; k < nv; ++k) { /* untimed first apply, and the error against the PETSc reference */
    PetscReal d;
    PetscCall(PCApply(v[k].pc, x, y));
    PetscCall(VecAXPY(y, -1.0, yref));
    PetscCall(VecNorm(y, NORM_2, &d));
    v[k].relerr = d / refnorm;
  }
  for (PetscInt r = 0; r < reps; ++r)
    for (PetscInt j = 0; j < nv; ++j) {
      const PetscInt k = (j + r) % nv;
      double t;
      PetscCallMPI(MPI_Barrier(comm));
      t = MPI_Wtime();
      PetscCall(PCApply(v[k].pc, x, y));
      PetscCallMPI(MPI_Barrier(comm));
      v[k].t[r] = MPI_Wtime() - t;
    }
  for (PetscInt k = 0; k < nv; ++k) /* auto's choice (it times again after each new setup) */
    if (!strcmp(v[k].type, PCAPBJACOBI)) PetscCall(PCAPBJacobiGetFp64Kernel(v[k].pc, &v[k].fp64_kernel));
  PetscCall(WarmSetups(A, v, nv, setup_reps));
  {
    const double ref_ms = 1e3 * median(v[nv - 1].t, reps), ref_setup = v[nv - 1].setup_s;
    const double ref_warm = median(v[nv - 1].setup_warm, setup_reps);
    PetscCall(PetscPrintf(
        comm, "\n### %s: %" PetscInt_FMT " rows, fp64 inverses %.2f GB, %" PetscInt64_FMT " blocks (sizes:", title,
        rows, v[0].info.fp64_bytes / 1e9, v[0].info.blocks));
    for (int s = 1; s <= 32; ++s)
      if (v[0].info.blocks_of_size[s])
        PetscCall(PetscPrintf(comm, " %d x %" PetscInt64_FMT, s, v[0].info.blocks_of_size[s]));
    PetscCall(PetscPrintf(comm, "), kappa_1 %.3g .. %.3g\n", (double)v[0].info.kappa_min, (double)v[0].info.kappa_max));
    PetscCall(PetscPrintf(comm, "%-14s %9s %9s %8s %7s %9s %10s %9s %9s %9s %8s  %s\n", "variant", "apply ms", "min ms",
                          "GB/s", "%triad", "speedup", "rel.err", "setup s", "setup x", "warm s", "warm x",
                          "formats (blocks)"));
    for (PetscInt k = 0; k < nv; ++k) {
      const double ms = 1e3 * median(v[k].t, reps), gbs = v[k].bytes / (ms * 1e-3) / 1e9;
      char mix[160] = "";
      if (!strcmp(v[k].type, PCAPBJACOBI)) {
        size_t len = 0;
        for (int f = 0; f < PETSCMP_NUM_FORMATS; ++f)
          if (v[k].info.blocks_per_format[f])
            len += (size_t)snprintf(mix + len, sizeof(mix) - len, "%s %" PetscInt64_FMT " ", PetscMPFormats[f],
                                    v[k].info.blocks_per_format[f]);
        if (v[k].info.blocks_per_format[0])
          snprintf(mix + len, sizeof(mix) - len, "(fp64 kernel %s)", PCAPBJacobiFp64KernelTypes[v[k].fp64_kernel]);
      }
      const double warm = median(v[k].setup_warm, setup_reps);
      PetscCall(PetscPrintf(comm, "%-14s %9.2f %9.2f %8.2f %6.1f%% %8.2fx %10.2e %9.3f %8.2fx %9.3f %7.2fx  %s\n",
                            v[k].name, ms, 1e3 * minimum(v[k].t, reps), gbs, 100.0 * gbs / triad_gbs, ref_ms / ms,
                            (double)v[k].relerr, v[k].setup_s, v[k].setup_s / ref_setup, warm, warm / ref_warm, mix));
    }
    PetscCall(PetscPrintf(
        comm, "apbjacobi setup split (adaptive): detection %.3f s, inversion %.3f s, selection+packing %.3f s\n",
        (double)v[0].info.seconds_detection, (double)v[0].info.seconds_inversion, (double)v[0].info.seconds_selection));
  }
  for (PetscInt k = 0; k < nv; ++k)
    PetscCall(PCDestroy(&v[k].pc));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&yref));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt b = 30, small_b = 3, rows = 0, small_rows = 0, reps = 15, setup_reps = 3, stream_mib = 512;
  PetscReal fp32_fraction = 0;
  PetscMPIInt size;
  double triad_gbs       = 0;
  PetscInt64 triad_elems = 0;
  Mat A;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscMPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-b", &b, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-small_b", &small_b, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-rows", &rows, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-small_rows", &small_rows, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-reps", &reps, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-setup_reps", &setup_reps, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-stream_mib", &stream_mib, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-fp32_fraction", &fp32_fraction, NULL));
  PetscCheck(reps >= 1 && reps <= 256, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-reps must be in [1, 256]");
  PetscCheck(setup_reps >= 1 && setup_reps <= 16, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE,
             "-setup_reps must be in [1, 16]");
  PetscCheck(b >= 1 && b <= 32 && small_b >= 0 && small_b <= 32, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE,
             "block sizes must be in [1, 32]");
  /* >= 1.6 GB of fp64 inverses, a whole number of blocks per rank */
  if (!rows) rows = ((PetscInt)(1.6e9 / (8.0 * b)) / (b * size) + 1) * b * size;
  if (!small_rows && small_b)
    small_rows = ((PetscInt)(1.6e9 / (8.0 * small_b)) / (small_b * size) + 1) * small_b * size;

  PetscCall(StreamTriad(PETSC_COMM_WORLD, stream_mib, 5, &triad_gbs, &triad_elems));
  PetscCall(PetscPrintf(
      PETSC_COMM_WORLD,
      "petscmp block-Jacobi benchmark: %d MPI rank(s), one thread each. STREAM triad %.2f GB/s (24 bytes per "
      "element).\n"
      "Apply y = M^-1 x, fp64 arithmetic everywhere. %" PetscInt_FMT
      " rounds of all preconditioners in rotating order, each apply\n"
      "timed alone between barriers; 'apply ms' is the median, 'speedup' = median(PETSc reference) / median(variant),\n"
      "'setup x' = setup time / the reference's setup time (the first setup, fresh memory included; 'warm': the "
      "median\n"
      "of %" PetscInt_FMT
      " later setups on new values, in rotating order, as in a Newton loop). Bytes moved per apply: the\n"
      "stored inverses + 8 bytes of x\n"
      "and 8 of y per row (VPBJACOBI/PBJACOBI: the fp64 inverses). rel.err = ||y - y_ref||_2 / ||y_ref||_2.\n",
      size, triad_gbs, reps, setup_reps));
  PetscCall(BuildBlockDiagonal(PETSC_COMM_WORLD, rows, b, fp32_fraction, &A));
  PetscCall(BenchBlocks("large blocks (supervariable detection; PETSc PCVPBJACOBI on the same blocks)", A, PCVPBJACOBI,
                        PC_APBJACOBI_BLOCKS_SUPERVARIABLE, reps, setup_reps, triad_gbs));
  PetscCall(MatDestroy(&A));
  if (small_b) {
    PetscCall(BuildBlockDiagonal(PETSC_COMM_WORLD, small_rows, small_b, fp32_fraction, &A));
    PetscCall(BenchBlocks("small blocks (MatGetBlockSize; PETSc PCPBJACOBI)", A, PCPBJACOBI,
                          PC_APBJACOBI_BLOCKS_MATBLOCKSIZE, reps, setup_reps, triad_gbs));
    PetscCall(MatDestroy(&A));
  }
  PetscCall(PetscFinalize());
  return 0;
}
