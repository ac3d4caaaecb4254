static char help[] =
    "MatSOR benchmark (serial): SSOR sweeps of PETSc's SeqAIJ against ellmp's on its stored rows (no AIJ copy),\n"
    "alternated in one run; ratio of medians, the results compared bit for bit, the first call's setup, memory.\n"
    "  -n7 <int>      7-point Laplacian on an n^3 grid (default 260: 123M nonzeros, 1.5 GB of AIJ; 0: none)\n"
    "  -n27 <int>     27-point operator with random values on an n^3 grid (default 0: none)\n"
    "  -fem <int>     3-dof FEM-like operator on an n^3 grid of nodes (inodes of 3 rows; default 0: none). With\n"
    "                 omega 1, AIJ takes its inode SOR and ellmp replays it on its stored rows; other omegas\n"
    "                 sweep the stored rows point by point\n"
    "  -zero_guess <bool> sweep from a zero initial guess, as PCSOR applies SOR (default false: from x0)\n"
    "  -eisenstat <bool>  SOR_EISENSTAT instead of the sweeps, as PCEisenstat applies it (default false)\n"
    "  -f <file>      a matrix from a PETSc binary file (for example a Jacobian written by -ksp_view_mat binary:file)\n"
    "  -f_matrix <int> which matrix of the file, counted from 1 (default 1)\n"
    "  -modes <list>  ellmp storage modes (default lossless,fp32,fp16)\n"
    "  -omega <real>  relaxation factor (default 1)\n"
    "  -reps <int>    sweeps timed per matrix (default 5)\n\n";

#include <petscmat.h>

#include "bench_common.h"
#include "bench_matrices.h"
#include "petscmp.h"

static MatSORType g_flag = SOR_SYMMETRIC_SWEEP; /* | SOR_ZERO_INITIAL_GUESS with -zero_guess */

/* Seconds of one symmetric sweep of A from the same x0 (x overwritten). */
static PetscErrorCode TimeSweep(Mat A, Vec b, Vec x0, Vec x, PetscReal omega, double *seconds)
{
  PetscFunctionBeginUser;
  PetscCall(VecCopy(x0, x));
  const double t0 = MPI_Wtime();
  PetscCall(MatSOR(A, b, omega, g_flag, 0.0, 1, 1, x));
  *seconds = MPI_Wtime() - t0;
  PetscFunctionReturn(0);
}

/* Bytes the ellmp matrix holds (MatGetInfo's memory field) per nonzero. */
static PetscErrorCode BytesPerNonzero(Mat A, double *bytes)
{
  MatInfo info;

  PetscFunctionBeginUser;
  PetscCall(MatGetInfo(A, MAT_LOCAL, &info));
  *bytes = info.nz_used > 0 ? info.memory / info.nz_used : 0;
  PetscFunctionReturn(0);
}

static char g_file[PETSC_MAX_PATH_LEN];
static PetscInt g_file_matrix = 1;

/* Matrix g_file_matrix of g_file, as type. */
static PetscErrorCode Load(MatType type, Mat *A)
{
  PetscViewer viewer;

  PetscFunctionBeginUser;
  PetscCall(PetscViewerBinaryOpen(PETSC_COMM_WORLD, g_file, FILE_MODE_READ, &viewer));
  for (PetscInt k = 1; k <= g_file_matrix; k++) {
    if (k > 1) PetscCall(MatDestroy(A));
    PetscCall(MatCreate(PETSC_COMM_WORLD, A));
    PetscCall(MatSetType(*A, type));
    PetscCall(MatLoad(*A, viewer));
  }
  PetscCall(PetscViewerDestroy(&viewer));
  PetscFunctionReturn(0);
}

/* problem: 0 7-point, 1 27-point, 2 FEM, 3 the file's matrix */
static PetscErrorCode Build(int problem, MatType type, PetscInt n, Mat *A)
{
  PetscFunctionBeginUser;
  if (problem == 3)
    PetscCall(Load(type, A));
  else if (problem == 2)
    PetscCall(BuildFEM(PETSC_COMM_WORLD, type, n, 1, A));
  else
    PetscCall(
        BuildStencil(PETSC_COMM_WORLD, type, n, problem == 1 ? 27 : 7, PETSC_FALSE, 27.0, 1, A));
  PetscFunctionReturn(0);
}

static PetscErrorCode BenchMatrix(const char *name, PetscInt n, int problem, char modes[][32], PetscInt nmodes,
                                  PetscReal omega, PetscInt reps)
{
  Mat A;
  Vec b, x0, x1, x2;
  double ta[1024], te[1024], nnz, aij_bytes, first_aij;
  MatInfo info;

  PetscFunctionBeginUser;
  PetscCall(Build(problem, MATAIJ, n, &A));
  PetscCall(MatGetInfo(A, MAT_LOCAL, &info));
  nnz = info.nz_used;
  { /* SeqAIJ: values and column indices per nonzero, row offsets per row (MatGetInfo reports no memory for it) */
    PetscInt rows;
    PetscCall(MatGetLocalSize(A, &rows, NULL));
    aij_bytes = 12.0 + 4.0 * (rows + 1) / nnz;
  }
  if (problem == 3)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "\n## %s (matrix %" PetscInt_FMT "): %.0f nonzeros, %.3f GB of AIJ (values and columns)\n",
                          name, g_file_matrix, nnz, 12.0 * nnz / 1e9));
  else
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "\n## %s %" PetscInt_FMT "^3: %.0f nonzeros, %.2f GB of AIJ (values and columns)\n", name, n,
                          nnz, 12.0 * nnz / 1e9));
  PetscCall(MatCreateVecs(A, &x0, &b));
  PetscCall(VecDuplicate(x0, &x1));
  PetscCall(VecDuplicate(x0, &x2));
  PetscCall(VecSet(b, 1.0));
  PetscCall(VecSetRandom(x0, NULL));
  PetscCall(TimeSweep(A, b, x0, x2, omega, &first_aij)); /* the first: AIJ marks and inverts its diagonal */
  for (PetscInt m = 0; m < nmodes; m++) {
    Mat E;
    double setup, bytes = 0;
    PetscBool equal;
    PetscCall(PetscOptionsSetValue(NULL, "-mat_ellmp_storage", modes[m]));
    PetscCall(Build(problem, MATELLMP, n, &E));
    PetscCall(BytesPerNonzero(E, &bytes));
    PetscCall(TimeSweep(E, b, x0, x1, omega, &setup)); /* the first: ellmp finds its runs of rows and diagonal */
    for (PetscInt r = 0; r < reps; r++) {
      if (r % 2) {
        PetscCall(TimeSweep(A, b, x0, x2, omega, &ta[r]));
        PetscCall(TimeSweep(E, b, x0, x1, omega, &te[r]));
      } else {
        PetscCall(TimeSweep(E, b, x0, x1, omega, &te[r]));
        PetscCall(TimeSweep(A, b, x0, x2, omega, &ta[r]));
      }
    }
    PetscCall(VecEqual(x1, x2, &equal));
    const double ma = median(ta, reps), me = median(te, reps);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "ellmp %-9s: SSOR sweep %.4f ms, AIJ %.4f ms: %.3fx AIJ's speed; result %s AIJ's; first sweep "
                          "(with setup): ellmp %.2f, AIJ %.2f AIJ sweeps; ellmp holds %.2f B/nnz (AIJ %.2f)\n",
                          modes[m], 1e3 * me, 1e3 * ma, ma / me, equal ? "bitwise" : "differs from", setup / ma, first_aij / ma,
                          bytes, aij_bytes));
    PetscCall(MatDestroy(&E));
  }
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&x0));
  PetscCall(VecDestroy(&x1));
  PetscCall(VecDestroy(&x2));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt n7 = 260, n27 = 0, fem = 0, reps = 5, nmodes = 8;
  PetscReal omega = 1.0;
  char modes[8][32], *list[8];
  PetscMPIInt size;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCheck(size == 1, PETSC_COMM_WORLD, PETSC_ERR_SUP, "bench_sor is serial (MPI ellmp runs SOR on an AIJ copy)");
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n7", &n7, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n27", &n27, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-fem", &fem, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-reps", &reps, NULL));
  PetscBool has_file = PETSC_FALSE;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-f", g_file, sizeof(g_file), &has_file));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-f_matrix", &g_file_matrix, NULL));
  PetscCheck(g_file_matrix >= 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-f_matrix counts from 1");
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-omega", &omega, NULL));
  {
    PetscBool zero_guess = PETSC_FALSE;
    PetscCall(PetscOptionsGetBool(NULL, NULL, "-zero_guess", &zero_guess, NULL));
    if (zero_guess) g_flag = (MatSORType)(SOR_SYMMETRIC_SWEEP | SOR_ZERO_INITIAL_GUESS);
    PetscBool eisenstat = PETSC_FALSE;
    PetscCall(PetscOptionsGetBool(NULL, NULL, "-eisenstat", &eisenstat, NULL));
    if (eisenstat) g_flag = SOR_EISENSTAT;
  }
  PetscCheck(reps >= 1 && reps <= 1024, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-reps must be 1..1024");
  PetscCall(PetscStrncpy(modes[0], "lossless", 32));
  PetscCall(PetscStrncpy(modes[1], "fp32", 32));
  PetscCall(PetscStrncpy(modes[2], "fp16", 32));
  {
    PetscBool set;
    PetscCall(PetscOptionsGetStringArray(NULL, NULL, "-modes", list, &nmodes, &set));
    if (set) {
      for (PetscInt m = 0; m < nmodes; m++) {
        PetscCall(PetscStrncpy(modes[m], list[m], 32));
        PetscCall(PetscFree(list[m]));
      }
    } else
      nmodes = 3;
  }
  PetscCall(PetscMPInitializePackage());
  PetscCall(PrintCpu(PETSC_COMM_WORLD));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "MatSOR, %s%s, omega %g, %" PetscInt_FMT " sweeps each, alternated\n",
                        g_flag == SOR_EISENSTAT ? "SOR_EISENSTAT" : "SOR_SYMMETRIC_SWEEP",
                        (g_flag & SOR_ZERO_INITIAL_GUESS) ? " | SOR_ZERO_INITIAL_GUESS" : "", (double)omega, reps));
  if (n7 > 0) PetscCall(BenchMatrix("7-point Laplacian", n7, 0, modes, nmodes, omega, reps));
  if (n27 > 0) PetscCall(BenchMatrix("27-point random", n27, 1, modes, nmodes, omega, reps));
  if (fem > 0) PetscCall(BenchMatrix("FEM bs 3, nodes", fem, 2, modes, nmodes, omega, reps));
  if (has_file) PetscCall(BenchMatrix(g_file, 0, 3, modes, nmodes, omega, reps));
  PetscCall(PetscFinalize());
  return 0;
}
