/* Helpers the petscmp benchmarks share: medians and the STREAM triad bandwidth they report against. */
#ifndef PETSCMP_BENCH_COMMON_H
#define PETSCMP_BENCH_COMMON_H

#include <petscsys.h>
#include <stdlib.h>
#include <string.h>

static inline int cmp_double(const void *a, const void *b)
{
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static inline double minimum(const double *v, PetscInt n)
{
  double m = n > 0 ? v[0] : 0.0;
  for (PetscInt i = 1; i < n; i++)
    m = PetscMin(m, v[i]);
  return m;
}

static inline double median(const double *v, PetscInt n)
{
  double *w, m;
  if (n <= 0) return 0.0;
  w = (double *)malloc((size_t)n * sizeof(double));
  if (!w) return 0.0;
  memcpy(w, v, (size_t)n * sizeof(double));
  qsort(w, (size_t)n, sizeof(double), cmp_double);
  m = (n % 2) ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
  free(w);
  return m;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* STREAM triad, all ranks at once                                                                             */

static inline void triad(PetscInt n, double *restrict a, const double *restrict b, const double *restrict c, double s)
{
  for (PetscInt i = 0; i < n; i++)
    a[i] = b[i] + s * c[i];
}

static inline PetscErrorCode StreamTriad(MPI_Comm comm, PetscInt mib, PetscInt reps, double *gbs, PetscInt64 *elements)
{
  PetscMPIInt size, rank;
  PetscInt64 total = (PetscInt64)mib * 1024 * 1024 / 8;
  PetscInt n;
  double *a, *b, *c, best = PETSC_MAX_REAL, s = 3.0;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  n = (PetscInt)(total / size + (rank < total % size ? 1 : 0));
  PetscCall(PetscMalloc1(n, &a));
  PetscCall(PetscMalloc1(n, &b));
  PetscCall(PetscMalloc1(n, &c));
  for (PetscInt i = 0; i < n; i++) { /* first touch by the rank that uses them */
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }
  for (PetscInt r = 0; r < reps; r++) {
    double t;
    PetscCallMPI(MPI_Barrier(comm));
    t = MPI_Wtime();
    triad(n, a, b, c, s);
    PetscCallMPI(MPI_Barrier(comm));
    t = MPI_Wtime() - t;
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm));
    best = PetscMin(best, t);
  }
  PetscCheck(n == 0 || (a[0] == 7.0 && a[n - 1] == 7.0), PETSC_COMM_SELF, PETSC_ERR_PLIB,
             "STREAM triad produced a wrong result");
  PetscCall(PetscFree(a));
  PetscCall(PetscFree(b));
  PetscCall(PetscFree(c));
  *elements = total;
  *gbs      = 24.0 * (double)total / best / 1e9;
  PetscFunctionReturn(0);
}

#endif
