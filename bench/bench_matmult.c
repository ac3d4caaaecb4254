static char help[] =
    "Memory-bound MatMult benchmark: PETSc AIJ, PETSc SELL and every aijmp storage mode, timed alternately\n"
    "in one run, against the STREAM triad bandwidth measured by the same processes.\n"
    "  -n7 <int>          7-point Laplacian on an n^3 grid (default 260: 17.6M rows, >= 1.5 GB of AIJ; 0 skips)\n"
    "  -n27 <int>         27-point random operator on an n^3 grid (default 167: >= 1.5 GB of AIJ; 0 skips)\n"
    "  -fem <int>         3 dofs per node, 27-node coupling, fp64 values, n^3 nodes (default 77: 1.07 GB of AIJ\n"
    "                     with inodes; 0 skips)\n"
    "  -irregular <int>   an unstructured-like operator on an n^3 grid in Morton order: the 6 face neighbours and\n"
    "                     about half of the 12 edge ones (a symmetric choice), 7-19 entries a row, values as -n27's\n"
    "                     (default 0: skipped; 150 gives 0.55 GB of AIJ)\n"
    "  -mixed <int>       a 7-point operator in Morton order where one grid point in 8 (by a hash) couples to its\n"
    "                     whole 3x3x3 cube: rows of 7 and 27 entries mixed, as at constrained nodes; values as\n"
    "                     -n27's (default 0: skipped; 205 gives 1.01 GB of AIJ)\n"
    "  -bordered <int>    the 7-point pattern in Morton order, values as -n27's, bordered by a last row and column\n"
    "                     coupling every unknown, as a constraint does: one row of n^3 entries among rows of 8\n"
    "                     (default 0: skipped; 220 gives 1.19 GB of AIJ)\n"
    "  -f <file>          also a matrix from a PETSc binary file (MatLoad)\n"
    "  -reps <int>        timed products per variant and mode (default 7)\n"
    "  -sell <bool>       include PETSc SELL (default true)\n"
    "  -tolerance <real>  bound of the tolerance mode (default 1e-3)\n"
    "  -modes <m1,m2,..>  the aijmp modes to time, in order, repeats allowed (default: all nine)\n"
    "  -seed <int>        PetscRandom seed of the 27-point values (default 4242)\n"
    "  -morton <bool>     number the 7- and 27-point grids in Morton (Z-curve) order, as unstructured-mesh codes do:\n"
    "                     slices gather scattered columns instead of shifting one row's (default false)\n"
    "  -rowsplit_factors <f1,f2,..> extra rowsplit runs with these range factors (default 0.63,4; 0: none)\n"
    "  -rowsplit_fraction <p>       their row fraction (default 0.9). Each is compared with uniform fp32 at the same\n"
    "                     fp32 fraction phi: phi*t(fp32) + (1-phi)*t(an all-fp64 mode of the same run)\n"
    "  -stream_mib <int>  MiB per STREAM array, all ranks together (default 512)\n"
    "  -stream_reps <int> STREAM triad repetitions, best taken (default 5)\n"
    "  -kernel <compact|auto|aij> aijmp product kernel (MatAIJMPSetKernel; default compact: the table times\n"
    "                     the compact kernels; auto: what users get by default, lossless picks AIJ's or the compact "
    "one)\n"
    "  -ellmp <bool>      also the ellmp table: AIJ, aijmp and ellmp in each of -ellmp_modes, alternated, with\n"
    "                     ellmp's memory (MatGetInfo and the process's resident memory) and build (default false)\n"
    "  -ellmp_modes <m1,..> the storage modes of the ellmp table (default lossless,fp32,fp16,bf16)\n"
    "  -table <bool>      the aijmp table (default true; false with -ellmp: only the ellmp table)\n"
    "  -split <bool>      also the split-storage table: AIJ and every read level of split2 and split4, alternated\n"
    "                     (default false)\n\n";

#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <petscmat.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "petscmp.h"
#include "bench_common.h"
#include "bench_matrices.h"

#define MAXMODES 32
/* the aijmp modes timed, in order (-modes overrides) */
static PetscInt nmodes                 = 9;
static MatAIJMPStorage modes[MAXMODES] = {MAT_AIJMP_LOSSLESS,  MAT_AIJMP_FP32,     MAT_AIJMP_FP16,
                                          MAT_AIJMP_BF16,      MAT_AIJMP_FP11_20,  MAT_AIJMP_FP11_4,
                                          MAT_AIJMP_TOLERANCE, MAT_AIJMP_ROWSPLIT, MAT_AIJMP_ENTRYSPLIT};

/* extra rowsplit runs: range factors and the row fraction they use */
#define MAXSPLITS 8
static PetscInt nsplits                   = 2;
static PetscReal split_factors[MAXSPLITS] = {0.63, 4.0};
static PetscReal split_fraction           = 0.9;

typedef struct {
  char name[32];
  double ms;               /* median of the timed products */
  double min_ms;           /* fastest of them (a noise indicator) */
  double aij_ms;           /* median of the AIJ products alternated with them (same block) */
  double bytes;            /* matrix bytes a product reads (values + indices), without x and y */
  double relerr;           /* ||y - y_aij||_2 / ||y_aij||_2 */
  double build_s;          /* aijmp: time to build the compact copy; < 0: not applicable */
  double rebuild_s;        /* aijmp: rebuild after MatScale (same pattern); < 0: no copy */
  double full_rebuild_s;   /* aijmp: full build in the old copy's memory, layout chosen as set; < 0: not measured */
  double forced_rebuild_s; /* the same with the layout it chose forced (no layout decision); < 0: not measured */
  double touch_s;          /* the time to touch as many bytes of fresh memory as the copy holds; < 0: not measured */
  PetscBool rebuild_value_only; /* whether it kept the layout (every row kept its format) */
  PetscBool has_info;
  MatAIJMPInfo info;
} Row;

/* ---------------------------------------------------------------------------------------------------------- */
/* Matrices                                                                                                    */

static MatAIJMPKernel kernel = MAT_AIJMP_KERNEL_COMPACT;

/* x_g: a deterministic function of the global index g, in [0.5, 1.5), the same for any number of ranks */
static PetscErrorCode FillX(Vec x)
{
  PetscInt lo, hi;
  PetscScalar *xa;

  PetscFunctionBeginUser;
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetArrayWrite(x, &xa));
  for (PetscInt g = lo; g < hi; g++) {
    uint64_t z = (uint64_t)g + 0x9e3779b97f4a7c15ULL; /* splitmix64 */
    z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z          = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z          = z ^ (z >> 31);
    xa[g - lo] = 0.5 + (double)(z >> 11) * (1.0 / 9007199254740992.0);
  }
  PetscCall(VecRestoreArrayWrite(x, &xa));
  PetscFunctionReturn(0);
}

/* MatAIJMPGetInfo(P, info), which builds or refills the compact copy when it is stale, and the seconds that build
   took: the time of the AIJMPBuild event (slowest rank). The call's own wall time would count more than the build:
   MatAIJMPGetInfo also measures the values' largest changes, on demand, in one pass. */
/* How the mode's compact kernel read x in gathered slices during the timed products (-mat_aijmp_gathered_x). */
static PetscErrorCode PrintGatheredX(MPI_Comm comm, const MatAIJMPInfo *info)
{
  const PetscInt64 *p = info->gathered_x_parts;

  PetscFunctionBeginUser;
  if (info->sliced_rows == 0) PetscFunctionReturn(0);
  if (p[0] + p[1] + p[2] == 1 && p[0] == 0)
    PetscCall(PetscPrintf(comm, "  %-16s x of gathered slices by %s (timed: scalar loads %.2f ms, gathers %.2f ms)\n",
                          "", p[1] ? "scalar loads" : "gathers", (double)info->gathered_x_ms[0],
                          (double)info->gathered_x_ms[1]));
  else
    PetscCall(PetscPrintf(comm,
                          "  %-16s x of gathered slices: local blocks by the processor's rule %" PetscInt64_FMT
                          ", by scalar loads %" PetscInt64_FMT ", by gathers %" PetscInt64_FMT "\n",
                          "", p[0], p[1], p[2]));
  PetscFunctionReturn(0);
}

static PetscErrorCode GetInfoTimingBuild(Mat P, MPI_Comm comm, MatAIJMPInfo *info, double *seconds)
{
  PetscEventPerfInfo before, after;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, MATAIJMP_Build, &before));
  PetscCall(MatAIJMPGetInfo(P, info));
  PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, MATAIJMP_Build, &after));
  *seconds = after.time - before.time;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  PetscFunctionReturn(0);
}

/* A full build of the compact copy as the first build made it, in the memory of the old copy: the work of a first
   build without its page faults. Forcing the layout the first build chose (not AUTO) makes the copy stale without a
   value change, and setting the layout back makes it stale again: four builds, alternately. `seconds` is the fastest
   build with the layout set back (AUTO decides the layout again: what a user's first build does), `forced` the
   fastest with the layout forced (the decision skipped); one build is a few tenths of a second, which a busy virtual
   machine may double. Not measured (< 0) when the blocks' layouts differ (no one layout to force) or a build chose
   another layout. */
static PetscErrorCode TimeFullRebuild(Mat P, MPI_Comm comm, double *seconds, double *forced_seconds)
{
  MatAIJMPInfo first, after;
  MatAIJMPLayout layout, forced;
  double t;

  PetscFunctionBeginUser;
  *seconds = *forced_seconds = -1;
  PetscCall(MatAIJMPGetInfo(P, &first));
  if (first.node_rows > 0 && first.sliced_rows == 0)
    forced = MAT_AIJMP_LAYOUT_NODE;
  else if (first.sliced_rows > 0 && first.node_rows == 0)
    forced = MAT_AIJMP_LAYOUT_SLICED;
  else if (first.node_rows == 0 && first.sliced_rows == 0)
    forced = MAT_AIJMP_LAYOUT_CSR;
  else
    PetscFunctionReturn(0);
  PetscCall(MatAIJMPGetLayout(P, &layout));
  if (layout == forced) PetscFunctionReturn(0);
  for (int k = 0; k < 4; k++) {
    const PetscBool set_back = (PetscBool)(k % 2 == 1);
    double *best             = set_back ? seconds : forced_seconds;
    const PetscInt builds    = first.builds;
    PetscCall(MatAIJMPSetLayout(P, set_back ? layout : forced));
    PetscCall(GetInfoTimingBuild(P, comm, &after, &t));
    if (after.builds > builds && after.node_rows == first.node_rows && after.sliced_rows == first.sliced_rows &&
        after.bytes == first.bytes && (*best < 0 || t < *best))
      *best = t;
    first.builds = after.builds;
  }
  PetscCall(MatAIJMPSetLayout(P, layout));
  PetscFunctionReturn(0);
}

/* The machine's price of fresh memory: touching `bytes` of a new allocation (2 MiB aligned and advised for huge pages,
   as the builder's buffers are), one write per 4 KiB page, then freeing it. On the virtual machines measured here this
   is 0.5-3 s per GiB (the host maps the guest's pages); on bare metal about 0.1. */
static PetscErrorCode TimeFreshMemory(size_t bytes, MPI_Comm comm, double *seconds)
{
  PetscFunctionBeginUser;
  *seconds = -1;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  {
    const size_t huge = (size_t)1 << 21, n = (bytes + huge - 1) / huge * huge;
    void *p = NULL;
    double t;
    if (!n || posix_memalign(&p, huge, n)) PetscFunctionReturn(0);
    (void)madvise(p, n, MADV_HUGEPAGE);
    PetscCallMPI(MPI_Barrier(comm));
    t = MPI_Wtime();
    for (size_t off = 0; off < n; off += 4096)
      ((volatile char *)p)[off] = 1;
    PetscCallMPI(MPI_Barrier(comm));
    *seconds = MPI_Wtime() - t;
    free(p);
  }
#else
  (void)bytes;
  (void)comm;
#endif
  PetscFunctionReturn(0);
}

static PetscErrorCode TimeMult(Mat A, Vec x, Vec y, double *t)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)A);

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Barrier(comm));
  *t = MPI_Wtime();
  PetscCall(MatMult(A, x, y));
  PetscCallMPI(MPI_Barrier(comm));
  *t = MPI_Wtime() - *t;
  PetscFunctionReturn(0);
}

static PetscErrorCode RelErr(Vec y, Vec yref, PetscReal refnorm, Vec work, double *err)
{
  PetscReal nrm;

  PetscFunctionBeginUser;
  PetscCall(VecWAXPY(work, -1.0, yref, y));
  PetscCall(VecNorm(work, NORM_2, &nrm));
  *err = refnorm > 0 ? (double)(nrm / refnorm) : (double)nrm;
  PetscFunctionReturn(0);
}

static void FormatMix(const MatAIJMPInfo *info, char *buf, size_t len)
{
  PetscInt64 rows = 0;
  size_t used     = 0;
  for (int f = 0; f < PETSCMP_NUM_FORMATS; f++)
    rows += info->rows[f];
  buf[0] = 0;
  for (int f = 0; f < PETSCMP_NUM_FORMATS && used < len; f++) {
    if (!info->rows[f] && !info->nnz[f]) continue;
    int w = snprintf(buf + used, len - used, "%s%s %" PetscInt64_FMT " rows (%.1f%%), max rel. change %.2e",
                     used ? "; " : "", PetscMPFormats[f], info->rows[f],
                     rows ? 100.0 * (double)info->rows[f] / (double)rows : 0.0, (double)info->max_rel_error[f]);
    if (w < 0) break;
    used += (size_t)w;
  }
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Fraction of the nonempty rows a run stored in format f */
static double RowFraction(const MatAIJMPInfo *info, int f)
{
  PetscInt64 total = 0;
  for (int g = 0; g < PETSCMP_NUM_FORMATS; g++)
    total += info->rows[g];
  return total ? (double)info->rows[f] / (double)total : 0.0;
}

/* Every rowsplit run against uniform fp32 at the same fp32 fraction phi: phi*t(fp32) + (1-phi)*t(fp64), the
   times as multiples of the AIJ median of their own block (so that drift between blocks cancels) */
static PetscErrorCode CompareRowSplit(MPI_Comm comm, const Row *rows, PetscInt nruns)
{
  const Row *fp32 = NULL, *fp64 = NULL;

  PetscFunctionBegin;
  for (PetscInt k = 2; k < 2 + nruns; k++) {
    if (!strcmp(rows[k].name, "aijmp fp32") && RowFraction(&rows[k].info, PETSCMP_FP32) == 1.0) fp32 = &rows[k];
    if (!fp64 && RowFraction(&rows[k].info, PETSCMP_FP64) == 1.0 && rows[k].info.sliced_rows > 0) fp64 = &rows[k];
  }
  if (!fp32 || !fp64) {
    PetscCall(PetscPrintf(
        comm, "rowsplit against uniform fp32: needs an all-fp32 and an all-fp64 run of this matrix; skipped\n"));
    PetscFunctionReturn(0);
  }
  const double r32 = fp32->ms / fp32->aij_ms, r64 = fp64->ms / fp64->aij_ms;
  PetscCall(PetscPrintf(comm,
                        "rowsplit against uniform fp32 at the same fp32 fraction phi (reference phi*t(fp32) + "
                        "(1-phi)*t(%s), times relative to AIJ):\n",
                        fp64->name + 6));
  for (PetscInt k = 2; k < 2 + nruns; k++) {
    if (strncmp(rows[k].name, "aijmp rowsplit", 14)) continue;
    const double phi = RowFraction(&rows[k].info, PETSCMP_FP32), ref = phi * r32 + (1 - phi) * r64,
                 t = rows[k].ms / rows[k].aij_ms;
    PetscCall(PetscPrintf(comm, "  %-20s phi %5.1f%%  t/t_AIJ %.3f  reference %.3f  ratio %.3f (%s)\n",
                          rows[k].name + 6, 100 * phi, t, ref, t / ref,
                          t / ref <= 1.10 ? "within 10%" : "more than 10% slower"));
  }
  PetscFunctionReturn(0);
}

/* One matrix: AIJ, SELL and every aijmp mode, alternated                                                      */

static PetscErrorCode BenchMatrix(const char *title, Mat A, PetscInt reps, PetscBool use_sell, PetscReal tol,
                                  double triad_gbs)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)A);
  PetscInt M, N;
  PetscInt64 nnz;
  MatInfo minfo;
  Vec x, y, yref, work;
  PetscReal refnorm;
  Mat S = NULL, P = NULL;
  Row rows[2 + MAXMODES + MAXSPLITS];
  double *aij_all, *sell_all, *aij_blk, *sell_blk, *mode_blk, t, vec_bytes, convert_s[2] = {0, 0};
  PetscInt nall = 0;
  MatAIJMPInfo lossless_info;
  PetscBool have_lossless = PETSC_FALSE;

  PetscFunctionBeginUser;
  PetscCall(PetscMemzero(rows, sizeof(rows)));
  PetscCall(MatGetSize(A, &M, &N));
  PetscCall(MatGetInfo(A, MAT_GLOBAL_SUM, &minfo));
  nnz       = (PetscInt64)minfo.nz_used;
  vec_bytes = 8.0 * ((double)M + (double)N);
  PetscCall(PetscPrintf(comm,
                        "\n=== %s: %" PetscInt_FMT " x %" PetscInt_FMT ", %" PetscInt64_FMT
                        " nonzeros (%.2f per row), AIJ matrix data %.3f GB ===\n",
                        title, M, N, nnz, (double)nnz / (double)M,
                        ((double)nnz * (8 + sizeof(PetscInt)) + ((double)M + 1) * sizeof(PetscInt)) / 1e9));

  PetscCall(MatCreateVecs(A, &x, &yref));
  PetscCall(VecDuplicate(yref, &y));
  PetscCall(VecDuplicate(yref, &work));
  PetscCall(FillX(x));
  PetscCall(MatMult(A, x, yref)); /* the reference product, also the warm-up of AIJ */
  PetscCall(VecNorm(yref, NORM_2, &refnorm));

  PetscCall(PetscStrcpy(rows[0].name, "PETSc AIJ"));
  rows[0].bytes   = (double)nnz * (8 + sizeof(PetscInt)) + ((double)M + 1) * sizeof(PetscInt);
  rows[0].build_s = -1;
  if (use_sell) {
    MatInfo sinfo;
    PetscMPIInt size;
    PetscInt m;
    PetscCallMPI(MPI_Comm_size(comm, &size));
    PetscCallMPI(MPI_Barrier(comm));
    t = MPI_Wtime();
    PetscCall(MatConvert(A, MATSELL, MAT_INITIAL_MATRIX, &S));
    PetscCallMPI(MPI_Barrier(comm));
    convert_s[0] = MPI_Wtime() - t;
    PetscCall(MatGetInfo(S, MAT_GLOBAL_SUM, &sinfo));
    PetscCall(MatGetLocalSize(S, &m, NULL));
    /* slice pointers: one per slice of 8 rows (+1), per block (2 blocks per rank for MPI) */
    double slices = (double)((m + 7) / 8 + 1) * (size > 1 ? 2 : 1);
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &slices, 1, MPI_DOUBLE, MPI_SUM, comm));
    PetscCall(PetscStrcpy(rows[1].name, "PETSc SELL"));
    rows[1].bytes   = sinfo.nz_used * (8 + sizeof(PetscInt)) + slices * sizeof(PetscInt);
    rows[1].build_s = convert_s[0];
    PetscCall(MatMult(S, x, y)); /* warm-up */
    PetscCall(RelErr(y, yref, refnorm, work, &rows[1].relerr));
  }
  PetscCallMPI(MPI_Barrier(comm));
  t = MPI_Wtime();
  PetscCall(MatConvert(A, MATAIJMP, MAT_INITIAL_MATRIX, &P));
  PetscCallMPI(MPI_Barrier(comm));
  convert_s[1] = MPI_Wtime() - t;
  PetscCall(MatAIJMPSetKernel(P, kernel));

  const PetscInt nruns = nmodes + nsplits;
  PetscCall(
      PetscMalloc5(nruns * reps, &aij_all, nruns * reps, &sell_all, reps, &aij_blk, reps, &sell_blk, reps, &mode_blk));
  for (PetscInt mi = 0; mi < nruns; mi++) {
    Row *row                   = &rows[2 + mi];
    const MatAIJMPStorage mode = mi < nmodes ? modes[mi] : MAT_AIJMP_ROWSPLIT;
    if (mi < nmodes)
      PetscCall(PetscSNPrintf(row->name, sizeof(row->name), "aijmp %s", MatAIJMPStorages[mode]));
    else
      PetscCall(
          PetscSNPrintf(row->name, sizeof(row->name), "aijmp rowsplit f=%.2f", (double)split_factors[mi - nmodes]));
    PetscCall(MatAIJMPSetStorage(P, mode));
    if (mode == MAT_AIJMP_TOLERANCE) PetscCall(MatAIJMPSetTolerance(P, tol));
    if (mode == MAT_AIJMP_ROWSPLIT) {
      if (mi < nmodes)
        PetscCall(MatAIJMPSetRowSplit(P, 0.1, 0.99)); /* the defaults */
      else
        PetscCall(MatAIJMPSetRowSplit(P, split_factors[mi - nmodes], split_fraction));
    }
    /* MatAIJMPGetInfo builds the compact copy for the new mode: that is the build time */
    PetscCall(GetInfoTimingBuild(P, comm, &row->info, &row->build_s));
    row->has_info = PETSC_TRUE;
    row->bytes    = row->info.bytes;
    if (mode == MAT_AIJMP_LOSSLESS) {
      lossless_info = row->info;
      have_lossless = PETSC_TRUE;
    }
    /* warm-up, untimed: also the 6 timed products of -mat_aijmp_gathered_x auto, where they run */
    for (int w = 0; w < 7; w++)
      PetscCall(MatMult(P, x, y));
    PetscCall(MatAIJMPGetInfo(P, &row->info));
    for (PetscInt r = 0; r < reps; r++) {
      /* alternate AIJ, SELL and the mode, rotating which goes first */
      for (int s = 0; s < 3; s++) {
        const int v = (int)((s + r) % 3);
        if (v == 0) {
          PetscCall(TimeMult(A, x, work, &t));
          aij_blk[r] = aij_all[nall + r] = t;
        } else if (v == 1) {
          if (!S) continue;
          PetscCall(TimeMult(S, x, work, &t));
          sell_blk[r] = sell_all[nall + r] = t;
        } else {
          PetscCall(TimeMult(P, x, y, &t));
          mode_blk[r] = t;
        }
      }
    }
    nall += reps;
    row->ms     = 1e3 * median(mode_blk, reps);
    row->min_ms = 1e3 * minimum(mode_blk, reps);
    row->aij_ms = 1e3 * median(aij_blk, reps);
    PetscCall(RelErr(y, yref, refnorm, work, &row->relerr));
    /* a Newton step's change of values: MatScale by 2 and back (powers of two keep every row's format), each
       followed by the rebuild MatAIJMPGetInfo triggers (its AIJMPBuild time); the faster of the two is reported */
    row->rebuild_s      = -1;
    MatAIJMPInfo before = row->info;
    for (int k = 0; k < 2; k++) {
      MatAIJMPInfo after;
      PetscCall(MatScale(P, k == 0 ? 2.0 : 0.5));
      PetscCall(GetInfoTimingBuild(P, comm, &after, &t));
      const PetscBool built =
          after.builds + after.value_builds > before.builds + before.value_builds ? PETSC_TRUE : PETSC_FALSE;
      if (built && (row->rebuild_s < 0 || t < row->rebuild_s)) {
        row->rebuild_s          = t;
        row->rebuild_value_only = after.value_builds > before.value_builds ? PETSC_TRUE : PETSC_FALSE;
      }
      before = after;
    }
    PetscCall(TimeFullRebuild(P, comm, &row->full_rebuild_s, &row->forced_rebuild_s));
    PetscCall(TimeFreshMemory((size_t)row->info.bytes, comm, &row->touch_s));
  }
  /* AIJ's real bytes: with inodes its kernel reads one column index per inode (MatAIJMPInfo.aij_bytes knows) */
  if (nruns > 0) rows[0].bytes = rows[2].info.aij_bytes;
  rows[0].ms = rows[0].aij_ms = 1e3 * median(aij_all, nall);
  rows[0].min_ms              = 1e3 * minimum(aij_all, nall);
  if (S) {
    rows[1].ms     = 1e3 * median(sell_all, nall);
    rows[1].min_ms = 1e3 * minimum(sell_all, nall);
    rows[1].aij_ms = rows[0].ms;
  }

  PetscCall(PetscPrintf(comm,
                        "conversion: MatConvert to SELL %.2f s, to aijmp %.2f s (a copy of the AIJ data; compact "
                        "copies are built per mode, column 'build s')\n",
                        convert_s[0], convert_s[1]));
  PetscCall(PetscPrintf(comm, "%-18s %9s %8s %8s %9s %10s %11s %8s %9s %9s\n", "variant", "ms(med)", "GB/s", "%triad",
                        "speedup", "bytes/nnz", "rel.err", "build s", "AIJ ms", "ms(min)"));
  for (PetscInt k = 0; k < 2 + nruns; k++) {
    const Row *row = &rows[k];
    char build[16];
    if (k == 1 && !S) continue;
    const double gbs = (row->bytes + vec_bytes) / (row->ms * 1e-3) / 1e9;
    if (row->build_s >= 0)
      PetscCall(PetscSNPrintf(build, sizeof(build), "%.2f", row->build_s));
    else
      PetscCall(PetscStrcpy(build, "-"));
    PetscCall(PetscPrintf(comm, "%-18s %9.2f %8.2f %7.1f%% %8.2fx %10.2f %11.3e %8s %9.2f %9.2f\n", row->name, row->ms,
                          gbs, 100.0 * gbs / triad_gbs, row->aij_ms / row->ms, row->bytes / (double)nnz, row->relerr,
                          build, row->aij_ms, row->min_ms));
  }
  PetscCall(PetscPrintf(
      comm, "build cost in AIJ MatMults (median %.2f ms): first build of the compact copy; rebuild after MatScale\n",
      rows[0].ms));
  for (PetscInt mi = 0; mi < nruns; mi++) {
    const Row *row = &rows[2 + mi];
    char rebuild[64];
    if (row->rebuild_s >= 0)
      PetscCall(PetscSNPrintf(rebuild, sizeof(rebuild), "%s %.3f s = %.1f MatMults",
                              row->rebuild_value_only ? "value-only" : "full (row formats changed)", row->rebuild_s,
                              1e3 * row->rebuild_s / rows[0].ms));
    else
      PetscCall(PetscStrcpy(rebuild, "- (no copy: AIJ's kernel)"));
    PetscCall(PetscPrintf(comm, "  %-16s build %.3f s = %.1f MatMults; rebuild after MatScale: %s\n", row->name + 6,
                          row->build_s, 1e3 * row->build_s / rows[0].ms, rebuild));
    PetscCall(PrintGatheredX(comm, &row->info));
    if (row->full_rebuild_s >= 0 && row->touch_s >= 0) {
      char forced[64] = "another layout (sorting by length is automatic only)";
      if (row->forced_rebuild_s >= 0)
        PetscCall(PetscSNPrintf(forced, sizeof(forced), "%.3f s = %.1f", row->forced_rebuild_s,
                                1e3 * row->forced_rebuild_s / rows[0].ms));
      PetscCall(PetscPrintf(comm,
                            "  %-16s full build in the old copy's memory %.3f s = %.1f MatMults (layout forced: %s); "
                            "fresh memory: touching the copy's %.0f MB takes %.3f s = %.1f MatMults\n",
                            "", row->full_rebuild_s, 1e3 * row->full_rebuild_s / rows[0].ms, forced,
                            row->info.bytes / 1e6, row->touch_s, 1e3 * row->touch_s / rows[0].ms));
    }
  }
  PetscCall(
      PetscPrintf(comm, "format mix per mode (rows per storage format, largest relative change of a stored value):\n"));
  for (PetscInt mi = 0; mi < nruns; mi++) {
    char mix[512];
    FormatMix(&rows[2 + mi].info, mix, sizeof(mix));
    PetscCall(PetscPrintf(comm, "  %-16s %s\n", rows[2 + mi].name + 6, mix));
  }
  PetscCall(CompareRowSplit(comm, rows, nruns));
  if (have_lossless) {
    PetscInt64 total = 0;
    PetscCall(PetscPrintf(comm, "%s: lossless format histogram (rows):", title));
    for (int f = 0; f < PETSCMP_NUM_FORMATS; f++)
      total += lossless_info.rows[f];
    for (int f = 0; f < PETSCMP_NUM_FORMATS; f++)
      PetscCall(PetscPrintf(comm, " %s %" PetscInt64_FMT " (%.1f%%)", PetscMPFormats[f], lossless_info.rows[f],
                            total ? 100.0 * (double)lossless_info.rows[f] / (double)total : 0.0));
    PetscCall(PetscPrintf(comm, "\n"));
  }

  PetscCall(PetscFree5(aij_all, sell_all, aij_blk, sell_blk, mode_blk));
  PetscCall(MatDestroy(&P));
  PetscCall(MatDestroy(&S));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&yref));
  PetscCall(VecDestroy(&work));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* ellmp: the compact values are the only copy                                                                  */

static PetscInt nellmp_modes                 = 4;
static MatAIJMPStorage ellmp_modes[MAXMODES] = {MAT_AIJMP_LOSSLESS, MAT_AIJMP_FP32, MAT_AIJMP_FP16, MAT_AIJMP_BF16};

/* The process's resident memory, summed over ranks. */
static PetscErrorCode ResidentBytes(MPI_Comm comm, double *bytes)
{
  PetscLogDouble mem;

  PetscFunctionBeginUser;
  PetscCall(PetscMemoryGetCurrentUsage(&mem));
  *bytes = (double)mem;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, bytes, 1, MPI_DOUBLE, MPI_SUM, comm));
  PetscFunctionReturn(0);
}

/* Split storage (issue 11): for split2 and split4, AIJ and every read level of one aijmp copy, alternated in rotating
   order (the level changes between products without a rebuild); medians. */
static PetscErrorCode BenchSplit(const char *title, Mat A, PetscInt reps, double triad_gbs)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)A);
  MatInfo ainfo;
  PetscInt M, N;
  Vec x, y, yref, w;
  Mat P;
  double *t, tm;
  PetscReal refnorm;

  PetscFunctionBeginUser;
  PetscCall(MatGetSize(A, &M, &N));
  PetscCall(MatGetInfo(A, MAT_GLOBAL_SUM, &ainfo));
  const double nnz = ainfo.nz_used, vec_bytes = 8.0 * (double)(M + N);
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(VecDuplicate(y, &w));
  PetscCall(VecDuplicate(y, &yref));
  PetscCall(FillX(x));
  PetscCall(MatMult(A, x, yref));
  PetscCall(VecNorm(yref, NORM_2, &refnorm));
  PetscCall(PetscMalloc1(5 * reps, &t));
  PetscCall(PetscPrintf(comm,
                        "\n=== split storage, %s: AIJ and each read level of one aijmp copy (MatAIJMPSetReadLevel, no "
                        "rebuild), %" PetscInt_FMT " rounds in rotating order; medians ===\n",
                        title, reps));
  PetscCall(PetscPrintf(comm, "%-16s %9s %8s %8s %9s %10s %11s %12s\n", "variant", "ms(med)", "GB/s", "%triad",
                        "vs AIJ", "bytes/nnz", "rel.err", "vs full read"));
  for (int n = 2; n <= 4; n += 2) {
    MatAIJMPInfo info[5];
    double ms[5], aij_bytes = 0;
    PetscCall(MatConvert(A, MATAIJMP, MAT_INITIAL_MATRIX, &P));
    PetscCall(MatAIJMPSetStorage(P, n == 2 ? MAT_AIJMP_SPLIT2 : MAT_AIJMP_SPLIT4));
    for (int level = 1; level <= n; level++) {
      PetscCall(MatAIJMPSetReadLevel(P, level));
      PetscCall(MatAIJMPGetInfo(P, &info[level]));
      aij_bytes = info[level].aij_bytes;
      /* warm-up; at the first level also the 6 timed products of the gathered-x trial (-mat_aijmp_gathered_x) */
      for (int w = 0; w < (level == 1 ? 7 : 1); w++)
        PetscCall(MatMult(P, x, y));
    }
    for (PetscInt r = 0; r < reps; r++)
      for (int s = 0; s <= n; s++) { /* variant 0: AIJ, k: read level k */
        const int v = (int)((s + r) % (n + 1));
        if (v == 0)
          PetscCall(TimeMult(A, x, w, &tm));
        else {
          PetscCall(MatAIJMPSetReadLevel(P, v));
          PetscCall(TimeMult(P, x, y, &tm));
        }
        t[v * reps + r] = tm;
      }
    for (int v = 0; v <= n; v++)
      ms[v] = 1e3 * median(t + v * reps, reps);
    for (int v = 0; v <= n; v++) {
      char name[32];
      double relerr = 0, bytes = v ? info[v].bytes : aij_bytes;
      if (v) {
        PetscCall(MatAIJMPSetReadLevel(P, v));
        PetscCall(MatMult(P, x, y));
        PetscCall(RelErr(y, yref, refnorm, w, &relerr));
        PetscCall(PetscSNPrintf(name, sizeof name, "split%d read %d/%d", n, v, n));
      } else
        PetscCall(PetscStrcpy(name, "PETSc AIJ"));
      const double gbs = (bytes + vec_bytes) / (ms[v] * 1e-3) / 1e9;
      PetscCall(PetscPrintf(comm, "%-16s %9.2f %8.2f %7.1f%% %8.2fx %10.2f %11.3e %11.2fx\n", name, ms[v], gbs,
                            100.0 * gbs / triad_gbs, ms[0] / ms[v], bytes / nnz, relerr, v ? ms[n] / ms[v] : 0.0));
    }
    PetscCall(MatDestroy(&P));
  }
  PetscCall(PetscFree(t));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&w));
  PetscCall(VecDestroy(&yref));
  PetscFunctionReturn(0);
}

static PetscErrorCode BenchEllmp(const char *title, Mat A, PetscInt reps, double triad_gbs)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)A);
  MatInfo ainfo;
  PetscInt M, N;
  Vec x, y, w;
  double *ta, *tp, *te, t;

  PetscFunctionBeginUser;
  PetscCall(MatGetSize(A, &M, &N));
  PetscCall(MatGetInfo(A, MAT_GLOBAL_SUM, &ainfo));
  const double nnz = ainfo.nz_used, aij_memory = nnz * (8 + sizeof(PetscInt)) + 3.0 * (double)M * sizeof(PetscInt);
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(VecDuplicate(y, &w));
  PetscCall(FillX(x));
  PetscCall(PetscMalloc3(reps, &ta, reps, &tp, reps, &te));
  PetscCall(PetscPrintf(
      comm, "\n=== ellmp, %s: %.0f nonzeros; AIJ holds %.2f bytes per nonzero (values, columns, 3 row arrays) ===\n",
      title, nnz, aij_memory / nnz));
  PetscCall(PetscPrintf(
      comm,
      "Per mode: MatConvert(AIJ, ellmp) timed ('build', in AIJ MatMults), its memory (MatGetInfo; 'RSS' = growth of "
      "the\n"
      "  processes' resident memory over the conversion), then %" PetscInt_FMT
      " rounds of {AIJ, aijmp (compact kernel), ellmp} in\n"
      "  rotating order; medians. Bytes moved: ellmp's MatGetInfo bytes are close to what a product reads.\n",
      reps));
  PetscCall(PetscPrintf(comm, "%-10s %9s %9s %9s %8s %8s %7s %9s %9s %9s %9s\n", "mode", "AIJ ms", "aijmp ms",
                        "ellmp ms", "vs AIJ", "vs aijmp", "%triad", "B/nnz", "RSS B/nnz", "build", "rel.err"));
  for (PetscInt mi = 0; mi < nellmp_modes; mi++) {
    const char *name = MatAIJMPStorages[ellmp_modes[mi]];
    Mat E, P;
    MatInfo einfo;
    double rss0, rss1, build_s;
    PetscCall(PetscOptionsSetValue(NULL, "-mat_ellmp_storage", name));
    PetscCall(ResidentBytes(comm, &rss0));
    PetscCallMPI(MPI_Barrier(comm));
    t = MPI_Wtime();
    PetscCall(MatConvert(A, MATELLMP, MAT_INITIAL_MATRIX, &E));
    PetscCallMPI(MPI_Barrier(comm));
    build_s = MPI_Wtime() - t;
    PetscCall(ResidentBytes(comm, &rss1));
    PetscCall(MatGetInfo(E, MAT_GLOBAL_SUM, &einfo));
    PetscCall(MatConvert(A, MATAIJMP, MAT_INITIAL_MATRIX, &P));
    PetscCall(MatAIJMPSetKernel(P, MAT_AIJMP_KERNEL_COMPACT));
    PetscCall(MatAIJMPSetStorage(P, ellmp_modes[mi]));
    /* builds aijmp's copy; warm-up, also the 6 timed products of the gathered-x trials (-mat_*_gathered_x auto) */
    for (int w = 0; w < 7; w++) {
      PetscCall(MatMult(P, x, y));
      PetscCall(MatMult(E, x, y));
    }
    for (PetscInt r = 0; r < reps; r++)
      for (int s = 0; s < 3; s++) {
        const int v = (int)((s + r) % 3);
        PetscCall(TimeMult(v == 0 ? A : v == 1 ? P : E, x, v == 2 ? y : w, &t));
        (v == 0 ? ta : v == 1 ? tp : te)[r] = t;
      }
    PetscReal refnorm;
    double err;
    PetscCall(MatMult(A, x, w));
    PetscCall(VecNorm(w, NORM_2, &refnorm));
    PetscCall(MatMult(E, x, y));
    Vec d;
    PetscCall(VecDuplicate(y, &d));
    PetscCall(RelErr(y, w, refnorm, d, &err));
    PetscCall(VecDestroy(&d));
    const double ma = 1e3 * median(ta, reps), mp = 1e3 * median(tp, reps), me = 1e3 * median(te, reps);
    const double gbs = (einfo.memory + 8.0 * ((double)M + (double)N)) / (me * 1e-3) / 1e9;
    PetscCall(PetscPrintf(comm, "%-10s %9.2f %9.2f %9.2f %7.2fx %7.2fx %6.1f%% %9.2f %9.2f %9.1f %9.2e\n", name, ma, mp,
                          me, ma / me, mp / me, 100.0 * gbs / triad_gbs, einfo.memory / nnz, (rss1 - rss0) / nnz,
                          1e3 * build_s / ma, err));
    PetscCall(MatDestroy(&E));
    PetscCall(MatDestroy(&P));
  }
  PetscCall(PetscOptionsClearValue(NULL, "-mat_ellmp_storage"));
  PetscCall(PetscFree3(ta, tp, te));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&w));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt n7 = 260, n27 = 167, nfem = 77, nirregular = 0, nmixed = 0, nbordered = 0, reps = 7, stream_mib = 512,
           stream_reps = 5, seed = 4242;
  PetscReal tol      = 1e-3;
  PetscBool use_sell = PETSC_TRUE, has_file, ellmp = PETSC_FALSE, table = PETSC_TRUE, morton = PETSC_FALSE,
            split = PETSC_FALSE;
  char file[PETSC_MAX_PATH_LEN];
  PetscMPIInt size;
  double triad_gbs       = 0, t;
  PetscInt64 triad_elems = 0;
  Mat A;
  const char *omp;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscLogDefaultBegin()); /* the build times are read from the AIJMPBuild event */
  PetscCall(PetscMPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n7", &n7, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n27", &n27, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-fem", &nfem, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-irregular", &nirregular, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-mixed", &nmixed, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-bordered", &nbordered, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-reps", &reps, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-stream_mib", &stream_mib, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-stream_reps", &stream_reps, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-seed", &seed, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-tolerance", &tol, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-sell", &use_sell, NULL));
  PetscCall(PetscOptionsGetEnum(NULL, NULL, "-kernel", MatAIJMPKernels, (PetscEnum *)&kernel, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-f", file, sizeof(file), &has_file));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-ellmp", &ellmp, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-table", &table, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-morton", &morton, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-split", &split, NULL));
  {
    PetscInt n = MAXMODES;
    PetscBool set;
    PetscCall(PetscOptionsGetEnumArray(NULL, NULL, "-modes", MatAIJMPStorages, (PetscEnum *)modes, &n, &set));
    if (set) nmodes = n;
    n = MAXSPLITS;
    PetscCall(PetscOptionsGetRealArray(NULL, NULL, "-rowsplit_factors", split_factors, &n, &set));
    if (set) { /* a factor <= 0 (-rowsplit_factors 0) asks for no extra run */
      nsplits = 0;
      for (PetscInt k = 0; k < n; k++)
        if (split_factors[k] > 0) split_factors[nsplits++] = split_factors[k];
    }
    PetscCall(PetscOptionsGetReal(NULL, NULL, "-rowsplit_fraction", &split_fraction, NULL));
    n = MAXMODES;
    PetscCall(
        PetscOptionsGetEnumArray(NULL, NULL, "-ellmp_modes", MatAIJMPStorages, (PetscEnum *)ellmp_modes, &n, &set));
    if (set) nellmp_modes = n;
  }
  PetscCheck(reps >= 1 && stream_reps >= 1 && stream_mib >= 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE,
             "-reps, -stream_reps and -stream_mib must be positive");

  omp = getenv("OMP_NUM_THREADS");
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "petscmp MatMult benchmark: %d MPI rank(s), sizeof(PetscInt) = %d, OMP_NUM_THREADS %s (aijmp "
                        "threads per rank: %s)\n",
                        size, (int)sizeof(PetscInt), omp ? omp : "unset", omp ? "OMP_NUM_THREADS" : "1"));

  PetscCall(PrintCpu(PETSC_COMM_WORLD));
  PetscCall(PetscPrintf(
      PETSC_COMM_WORLD, "aijmp kernel: %s%s\n", MatAIJMPKernels[kernel],
      kernel == MAT_AIJMP_KERNEL_COMPACT ? " (rows time the compact kernels; -kernel auto for the default)" : ""));
  PetscCall(StreamTriad(PETSC_COMM_WORLD, stream_mib, stream_reps, &triad_gbs, &triad_elems));
  PetscCall(PetscPrintf(
      PETSC_COMM_WORLD,
      "STREAM triad a[i] = b[i] + s*c[i]: 3 arrays of %" PetscInt_FMT
      " MiB (%.2f GB in all) split among the %d rank(s), all at once, best of %" PetscInt_FMT ":\n"
      "  %.2f GB/s aggregate, counting 24 bytes per element (read b, read c, write a). The write-allocate read of a[]\n"
      "  is not counted, so the memory system really moved up to 4/3 of that (32 bytes per element).\n",
      stream_mib, 3.0 * 8.0 * (double)triad_elems / 1e9, size, stream_reps, triad_gbs));
  PetscCall(PetscPrintf(
      PETSC_COMM_WORLD,
      "MatMult y = A x, fp64 arithmetic in every variant. Each aijmp mode is a block: set the mode, build its compact "
      "copy\n"
      "  (timed: 'build s'), one untimed product, then %" PetscInt_FMT
      " rounds of {AIJ, SELL, the mode} in rotating order, each product\n"
      "  timed alone between MPI_Barriers. 'ms(med)' is the median; 'speedup' = median(AIJ) / median(variant) from "
      "the\n"
      "  same block ('AIJ ms'); the AIJ and SELL rows pool their samples of all blocks. 'ms(min)': the fastest\n"
      "  sample (noise shows as a median far above it). After the rounds, MatScale by 2 and by 1/2 each trigger a\n"
      "  rebuild, timed (the faster is reported): value-only (layout and indices kept) when every row keeps its "
      "format,\n"
      "  else full, in the memory of the old copy. Both builds in AIJ MatMults (median of all AIJ samples).\n"
      "  Then the first build is split in two: a full build in the old copy's memory, the layout chosen again as the\n"
      "  first build chose it (the fastest of 2: the layout forced with MatAIJMPSetLayout and set back, which makes\n"
      "  the copy stale each time; in brackets the fastest of the 2 builds with the layout forced, which skip the\n"
      "  layout decision), and the machine's price of fresh memory for as many bytes (a new 2 MiB-aligned allocation\n"
      "  touched once per 4 KiB page). Every build time is the time of\n"
      "  the AIJMPBuild event (slowest rank), not of the MatAIJMPGetInfo call that triggers it.\n"
      "Bytes a product must move (values + indices of the matrix, plus x and y once, 8*(rows+cols)):\n"
      "  AIJ:   MatAIJMPInfo.aij_bytes + 8*(rows+cols): nnz*(8+sizeof(PetscInt)) + (rows+1)*sizeof(PetscInt), or with\n"
      "         inodes (PETSc's inode kernel) 8*nnz + sizeof(PetscInt)*(columns of each inode + inodes + 1)\n"
      "  SELL:  nz_used*(8+sizeof(PetscInt)) from MatGetInfo (slices of 8 rows, padding included) + slice pointers + "
      "8*(rows+cols)\n"
      "  aijmp: MatAIJMPInfo.bytes (compact values + the indices it reads) + 8*(rows+cols)\n"
      "  GB/s = bytes / median time; %%triad = GB/s / STREAM triad; bytes/nnz = matrix bytes (no x, y) / nnz;\n"
      "  rel.err = ||y - y_aij||_2 / ||y_aij||_2 against the AIJ product. With MPI the x halo exchange and the "
      "off-diagonal\n"
      "  block's row pointers are not counted.\n",
      reps));

  { /* the stencil operators (StencilRow), one after another */
    const struct {
      PetscInt n, points;
      PetscBool morton;
      const char *name, *what;
    } stencils[] = {
        {n7, 7, morton, "7-point Laplacian", "7-point Laplacian"},
        {n27, 27, morton, "27-point random", "27-point random operator"},
        {nirregular, STENCIL_IRREGULAR, PETSC_TRUE, "irregular (7-19 per row) random",
         "irregular (7-19 per row) operator"},
        {nmixed, STENCIL_MIXED, PETSC_TRUE, "mixed (7 or 27 per row) random", "mixed (7 or 27 per row) operator"},
        {nbordered, STENCIL_BORDERED, PETSC_TRUE, "bordered 7-point random", "bordered 7-point operator"},
    };
    for (size_t k = 0; k < sizeof stencils / sizeof stencils[0]; k++) {
      char title[96];
      if (stencils[k].n <= 0) continue;
      PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
      t = MPI_Wtime();
      PetscCall(BuildStencil(PETSC_COMM_WORLD, MATAIJ, stencils[k].n, stencils[k].points, stencils[k].morton, 27.0,
                             seed, &A));
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nassembled the %s in %.1f s\n", stencils[k].what, MPI_Wtime() - t));
      PetscCall(PetscSNPrintf(title, sizeof(title), "%s %" PetscInt_FMT "^3%s", stencils[k].name, stencils[k].n,
                              stencils[k].morton ? " Morton" : ""));
      if (table) PetscCall(BenchMatrix(title, A, reps, use_sell, tol, triad_gbs));
      if (ellmp) PetscCall(BenchEllmp(title, A, reps, triad_gbs));
      if (split) PetscCall(BenchSplit(title, A, reps, triad_gbs));
      PetscCall(MatDestroy(&A));
    }
  }
  if (nfem > 0) {
    char title[96];
    PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
    t = MPI_Wtime();
    PetscCall(BuildFEM(PETSC_COMM_WORLD, MATAIJ, nfem, seed, &A));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nassembled the 3-dof FEM-like operator in %.1f s\n", MPI_Wtime() - t));
    PetscCall(PetscSNPrintf(title, sizeof(title),
                            "FEM-like bs 3, 27 nodes per row, fp64 values, %" PetscInt_FMT "^3 nodes", nfem));
    if (table) PetscCall(BenchMatrix(title, A, reps, use_sell, tol, triad_gbs));
    if (ellmp) PetscCall(BenchEllmp(title, A, reps, triad_gbs));
    if (split) PetscCall(BenchSplit(title, A, reps, triad_gbs));
    PetscCall(MatDestroy(&A));
  }
  if (has_file) {
    PetscViewer viewer;
    char title[PETSC_MAX_PATH_LEN + 8];
    PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_READ, &viewer));
    PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
    PetscCall(MatSetType(A, MATAIJ));
    PetscCall(MatLoad(A, viewer));
    PetscCall(PetscViewerDestroy(&viewer));
    PetscCall(PetscSNPrintf(title, sizeof(title), "file %s", file));
    if (table) PetscCall(BenchMatrix(title, A, reps, use_sell, tol, triad_gbs));
    if (ellmp) PetscCall(BenchEllmp(title, A, reps, triad_gbs));
    if (split) PetscCall(BenchSplit(title, A, reps, triad_gbs));
    PetscCall(MatDestroy(&A));
  }
  PetscCall(PetscFinalize());
  return 0;
}
