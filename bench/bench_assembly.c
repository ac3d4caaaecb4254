static char help[] =
    "Peak memory of a matrix assembly (MatSetValues, MatAssemblyEnd) and the memory the matrix holds after it,\n"
    "per nonzero, from the process's resident set (VmHWM and VmRSS of /proc/self/status; the peak is reset\n"
    "before the assembly). One matrix per process: run it once per type and compare (bench/assembly_memory.sh).\n"
    "  -problem <lap7|fem>  7-point Laplacian of an n^3 grid, or the 3-dof FEM-like operator (bs 3, 81 per row)\n"
    "  -n <int>             grid size (default 100)\n"
    "  -type <MatType>      the matrix type (default aij; ellmp, aijmp: petscmp is linked)\n"
    "  -reassemble <bool>   then add 1 to every diagonal entry and assemble again (a Newton step's reassembly):\n"
    "                       its peak and the memory held after it are printed too (default true)\n"
    "  plus the type's options (-mat_ellmp_storage fp16, -mat_ellmp_assembly_step ...)\n";

#include <petscmat.h>
#include <stdio.h>
#include <string.h>

#include "petscmp.h"
#include "bench_common.h"
#include "bench_matrices.h"

/* A field of /proc/self/status in bytes ("VmRSS:", "VmHWM:"). */
static PetscErrorCode StatusBytes(const char *field, double *bytes)
{
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");

  PetscFunctionBeginUser;
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "cannot read /proc/self/status (Linux only)");
  *bytes = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, strlen(field))) {
      long kb = 0;
      if (sscanf(line + strlen(field), "%ld", &kb) == 1) *bytes = 1024.0 * (double)kb;
    }
  fclose(f);
  PetscCheck(*bytes >= 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "no %s line in /proc/self/status", field);
  PetscFunctionReturn(0);
}

/* Bytes of the process's memory in transparent huge pages (/proc/self/smaps_rollup; -1 where unknown). */
static double HugePageBytes(void)
{
  char line[256];
  double bytes = -1;
  FILE *f      = fopen("/proc/self/smaps_rollup", "r");

  while (f && fgets(line, sizeof line, f)) {
    long kb = 0;
    if (!strncmp(line, "AnonHugePages:", 14) && sscanf(line + 14, "%ld", &kb) == 1) bytes = 1024.0 * (double)kb;
  }
  if (f) fclose(f);
  return bytes;
}

/* Resets the peak resident set (VmHWM) to the current one. */
static PetscErrorCode ResetPeak(void)
{
  FILE *f = fopen("/proc/self/clear_refs", "w");

  PetscFunctionBeginUser;
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "cannot write /proc/self/clear_refs (Linux 4.0 or later)");
  fputs("5", f);
  fclose(f);
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char problem[16] = "lap7", type[64] = MATAIJ;
  PetscInt n = 100;
  Mat A;
  MatInfo info;
  double before, peak, after;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-problem", problem, sizeof problem, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-type", type, sizeof type, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscBool fem, lap7;
  PetscCall(PetscStrcmp(problem, "fem", &fem));
  PetscCall(PetscStrcmp(problem, "lap7", &lap7));
  PetscCheck(fem || lap7, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-problem is lap7 or fem, not %s", problem);
  PetscCall(PetscMPInitializePackage());
  PetscCall(PrintCpu(PETSC_COMM_WORLD));

  PetscCall(StatusBytes("VmRSS:", &before));
  PetscCall(ResetPeak());
  if (fem)
    PetscCall(BuildFEM(PETSC_COMM_WORLD, type, n, 4242, &A));
  else
    PetscCall(BuildStencil(PETSC_COMM_WORLD, type, n, 7, PETSC_FALSE, 27.0, 4242, &A));
  PetscCall(StatusBytes("VmHWM:", &peak));
  PetscCall(StatusBytes("VmRSS:", &after));
  PetscCall(MatGetInfo(A, MAT_LOCAL, &info));
  const double nnz = info.nz_used;
  MatType actual;
  PetscCall(MatGetType(A, &actual));
  PetscCall(PetscPrintf(PETSC_COMM_SELF,
                        "assembly type %s problem %s n %" PetscInt_FMT " nnz %.0f before_MB %.1f peak_MB %.1f "
                        "held_MB %.1f peak_bytes_per_nnz %.2f held_bytes_per_nnz %.2f huge_pages_MB %.1f\n",
                        actual, problem, n, nnz, before / 1048576.0, (peak - before) / 1048576.0,
                        (after - before) / 1048576.0, (peak - before) / nnz, (after - before) / nnz,
                        HugePageBytes() / 1048576.0));
  PetscBool reassemble = PETSC_TRUE;
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-reassemble", &reassemble, NULL));
  if (reassemble) { /* values set on the assembled matrix, same pattern */
    PetscInt rstart, rend;
    double peak2, after2;
    PetscCall(ResetPeak());
    PetscCall(MPI_Barrier(PETSC_COMM_WORLD));
    const double t0 = MPI_Wtime();
    PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
    for (PetscInt i = rstart; i < rend; i++)
      PetscCall(MatSetValue(A, i, i, 1.0, ADD_VALUES));
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    const double reassembly_s = MPI_Wtime() - t0;
    PetscCall(StatusBytes("VmHWM:", &peak2));
    PetscCall(StatusBytes("VmRSS:", &after2));
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "reassembly peak_MB %.1f held_MB %.1f peak_bytes_per_nnz %.2f\n",
                          (peak2 - before) / 1048576.0, (after2 - before) / 1048576.0, (peak2 - before) / nnz));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "reassembly_s %.3f (MatSetValue on the diagonal + MatAssemblyEnd)\n",
                          reassembly_s));
  }
  { /* the products of the matrix as assembled: median of 15 */
    Vec x, y;
    double t[15];
    PetscCall(MatCreateVecs(A, &x, &y));
    PetscCall(VecSet(x, 1.0));
    PetscCall(MatMult(A, x, y));
    for (int k = 0; k < 15; k++) {
      double t0 = MPI_Wtime();
      PetscCall(MatMult(A, x, y));
      t[k] = MPI_Wtime() - t0;
    }
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "matmult_ms %.3f\n", 1e3 * median(t, 15)));
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&y));
  }
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  return 0;
}
