/* The matrices the petscmp benchmarks assemble (of any Mat type), and the processor they run on. */
#ifndef PETSCMP_BENCH_MATRICES_H
#define PETSCMP_BENCH_MATRICES_H

#include <petscmat.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "petscmp.h"

/* The processor and the instruction sets, as the CPU reports them and as this build uses them. */
static inline PetscErrorCode PrintCpu(MPI_Comm comm)
{
  char line[4096], model[256] = "unknown", flags[4096] = "";
  FILE *f = fopen("/proc/cpuinfo", "r");

  PetscFunctionBeginUser;
  while (f && fgets(line, sizeof line, f)) {
    if (!strncmp(line, "model name", 10) && !strcmp(model, "unknown")) sscanf(line, "model name : %255[^\n]", model);
    if (!strncmp(line, "flags", 5) && !flags[0]) PetscCall(PetscStrncpy(flags, line, sizeof flags));
  }
  if (f) fclose(f);
  const char *isa[] = {"avx2",     "fma",         "f16c",        "avx512f", "avx512bw",
                       "avx512vl", "avx512_bf16", "avx512_fp16", "amx_tile"};
  PetscCall(PetscPrintf(comm, "CPU: %s; reports:", model));
  for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++) {
    char pat[32];
    PetscCall(PetscSNPrintf(pat, sizeof pat, " %s ", isa[i]));
    PetscCall(PetscPrintf(comm, " %s%s", strstr(flags, pat) ? "+" : "-", isa[i]));
  }
  PetscCall(PetscPrintf(comm, "\nlibpetscmp kernels compiled with: %s\n", PetscMPCompiledISA()));
  PetscFunctionReturn(0);
}

/* The numbering of the grid points of the stencil matrices. Lexicographic (i fastest) makes the rows of a slice
   neighbouring points on one grid line: their columns are each other's shifted by one. Morton order (the bits of
   i, j and k interleaved, like the space-filling-curve numberings of unstructured-mesh codes) makes them a small
   cube of points: their columns are scattered over a window that is usually, not always, narrow. */
typedef struct {
  PetscInt *code;         /* Morton code of each row (sorted) */
  PetscInt *point_of_row; /* grid point (lexicographic index) of each row; NULL: lexicographic order */
  PetscInt *row_of_point; /* its inverse */
} StencilOrdering;

static inline PetscErrorCode StencilOrderingCreate(PetscInt n, PetscBool morton, StencilOrdering *o)
{
  const PetscInt N = n * n * n;

  PetscFunctionBeginUser;
  o->code = o->point_of_row = o->row_of_point = NULL;
  if (!morton) PetscFunctionReturn(0);
  PetscCheck(n <= 1024, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "Morton order of an n^3 grid needs n <= 1024 (30-bit codes), not %" PetscInt_FMT, n);
  PetscCall(PetscMalloc3(N, &o->code, N, &o->point_of_row, N, &o->row_of_point));
  for (PetscInt p = 0; p < N; p++) {
    const PetscInt ijk[3] = {p % n, (p / n) % n, p / (n * n)};
    PetscInt c            = 0;
    for (int bit = 0; bit < 10; bit++)
      for (int d = 0; d < 3; d++)
        c |= ((ijk[d] >> bit) & 1) << (3 * bit + d);
    o->code[p]         = c;
    o->point_of_row[p] = p;
  }
  PetscCall(PetscSortIntWithArray(N, o->code, o->point_of_row));
  for (PetscInt r = 0; r < N; r++)
    o->row_of_point[o->point_of_row[r]] = r;
  PetscFunctionReturn(0);
}

static inline PetscErrorCode StencilOrderingDestroy(StencilOrdering *o)
{
  PetscFunctionBeginUser;
  PetscCall(PetscFree3(o->code, o->point_of_row, o->row_of_point));
  PetscFunctionReturn(0);
}

/* The stencils: 7 points (faces), 27 points (the whole 3x3x3 cube), or STENCIL_IRREGULAR: the faces and about
   half of the 12 edge neighbours, chosen per pair of points by a hash (a symmetric pattern), so that rows hold 7 to
   19 entries (about 13) as on an unstructured tetrahedral mesh; or STENCIL_MIXED: the faces, and at one grid point
   in 8 (chosen by a hash of the point) the whole 3x3x3 cube, as at constrained or coupled nodes of a mesh: rows of
   7 and 27 entries mixed, so that most slices of 8 rows hold a long row among short ones. */
#define STENCIL_IRREGULAR 19
#define STENCIL_MIXED 20
/* STENCIL_BORDERED: the 7-point pattern with random values, bordered by a last row and a last column that couple
   every unknown, as a constraint does (a mean-zero pressure's Lagrange multiplier, an arc-length continuation): a
   last row of n^3 entries among rows of at most 8. */
#define STENCIL_BORDERED 21

/* Whether the mixed stencil's row of grid point p holds the whole cube. */
static inline PetscBool StencilWholeCube(PetscInt p)
{
  return ((((PetscInt64)p * 2654435761LL) >> 11) & 7) == 0 ? PETSC_TRUE : PETSC_FALSE;
}

/* Whether the irregular stencil couples grid points p and q (edge neighbours): symmetric in p and q. */
static inline PetscBool StencilEdgeKept(PetscInt p, PetscInt q)
{
  const PetscInt64 a = PetscMin(p, q), b = PetscMax(p, q);
  return (((a * 2654435761LL + b * 40503LL) >> 7) & 1) ? PETSC_TRUE : PETSC_FALSE;
}

/* The columns of one stencil row (points: 7, 27, STENCIL_IRREGULAR, STENCIL_MIXED or STENCIL_BORDERED, whose last row
   BuildStencil fills), ascending, and the position of its diagonal entry. */
static inline PetscErrorCode StencilRow(PetscInt n, PetscInt points, const StencilOrdering *o, PetscInt row,
                                        PetscInt cols[27], PetscInt *nc, PetscInt *diag)
{
  const PetscInt p = o->point_of_row ? o->point_of_row[row] : row;
  const PetscInt i = p % n, j = (p / n) % n, k = p / (n * n);
  const PetscBool cube = points == 27 || (points == STENCIL_MIXED && StencilWholeCube(p));

  PetscFunctionBeginUser;
  *nc = 0;
  for (PetscInt dk = -1; dk <= 1; dk++)
    for (PetscInt dj = -1; dj <= 1; dj++)
      for (PetscInt di = -1; di <= 1; di++) {
        const PetscInt away = PetscAbsInt(di) + PetscAbsInt(dj) + PetscAbsInt(dk);
        if (!cube && away > (points == STENCIL_IRREGULAR ? 2 : 1)) continue;
        if (i + di < 0 || i + di >= n || j + dj < 0 || j + dj >= n || k + dk < 0 || k + dk >= n) continue;
        const PetscInt q = p + dk * n * n + dj * n + di;
        if (away == 2 && points == STENCIL_IRREGULAR && !StencilEdgeKept(p, q)) continue;
        cols[(*nc)++] = o->row_of_point ? o->row_of_point[q] : q;
      }
  if (o->row_of_point) PetscCall(PetscSortInt(*nc, cols));
  if (points == STENCIL_BORDERED && cols[*nc - 1] != n * n * n - 1) cols[(*nc)++] = n * n * n - 1;
  for (*diag = 0; cols[*diag] != row; (*diag)++) {
  }
  PetscFunctionReturn(0);
}

/* Row `row` of A with an entry in each of its N columns, in one MatSetValues call (MAT_SORTED_FULL: a call gives a
   whole row): values uniform in [-1, 1] from a hash of the column (the same for any number of ranks), diag + such a
   value on the diagonal. */
static inline PetscErrorCode SetDenseRow(Mat A, PetscInt row, PetscInt N, PetscReal diag)
{
  PetscInt *cols;
  PetscScalar *v;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc2(N, &cols, N, &v));
  for (PetscInt c = 0; c < N; c++) {
    const uint64_t h = ((uint64_t)c + 1) * 0x9E3779B97F4A7C15ull;
    cols[c]          = c;
    v[c]             = (PetscScalar)((double)(h >> 11) * 0x1p-52 - 1.0) + (c == row ? diag : 0.0);
  }
  PetscCall(MatSetValues(A, 1, &row, N, cols, v, INSERT_VALUES));
  PetscCall(PetscFree2(cols, v));
  PetscFunctionReturn(0);
}

/* The 7-point Laplacian (6 on the diagonal, -1 off it) or, with points 27, STENCIL_IRREGULAR or STENCIL_MIXED (see
   StencilRow), an operator with values uniform in [-1, 1] off the diagonal and diag27 + uniform[-1, 1] on it (27:
   Jacobi converges in a few iterations), on an n^3 grid in lexicographic or Morton order (see StencilOrdering), rows
   split in contiguous blocks. The random values are drawn row after row from one PetscRandom stream, each rank skipping
   the rows before its own: the matrix is the same for any number of ranks. */
static inline PetscErrorCode BuildStencil(MPI_Comm comm, MatType type, PetscInt n, PetscInt points, PetscBool morton,
                                          PetscReal diag27, PetscInt64 seed, Mat *A)
{
  const PetscInt64 N64 = (PetscInt64)n * n * n;
  PetscInt N, m = PETSC_DECIDE, rstart, *d_nnz, *o_nnz, cols[27], nc = 0, diag = 0;
  PetscScalar v[27];
  PetscRandom rnd = NULL;
  PetscMPIInt size;
  StencilOrdering order;
  const PetscBool random = points == 7 ? PETSC_FALSE : PETSC_TRUE;

  PetscFunctionBeginUser;
  PetscCheck(n >= 2, comm, PETSC_ERR_ARG_OUTOFRANGE, "grid size %" PetscInt_FMT " too small", n);
  PetscCheck(points == 7 || points == 27 || points == STENCIL_IRREGULAR || points == STENCIL_MIXED ||
                 points == STENCIL_BORDERED,
             comm, PETSC_ERR_ARG_OUTOFRANGE,
             "stencil of %" PetscInt_FMT " points: 7, 27, %d (irregular), %d (mixed) or %d (bordered)", points,
             STENCIL_IRREGULAR, STENCIL_MIXED, STENCIL_BORDERED);
  PetscCheck(N64 * (points == 7 ? 7 : 27) < PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "grid %" PetscInt_FMT "^3 needs 64-bit PetscInt", n);
  N = (PetscInt)N64;
  PetscCall(StencilOrderingCreate(n, morton, &order));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscSplitOwnership(comm, &m, &N));
  PetscCallMPI(MPI_Scan(&m, &rstart, 1, MPIU_INT, MPI_SUM, comm));
  rstart -= m;
  const PetscInt rend = rstart + m;

  /* exact preallocation */
  PetscCall(PetscMalloc2(m, &d_nnz, m, &o_nnz));
  for (PetscInt row = rstart; row < rend; row++) {
    if (points == STENCIL_BORDERED && row == N - 1) { /* the dense last row */
      d_nnz[row - rstart] = m;
      o_nnz[row - rstart] = N - m;
      continue;
    }
    PetscCall(StencilRow(n, points, &order, row, cols, &nc, &diag));
    d_nnz[row - rstart] = o_nnz[row - rstart] = 0;
    for (PetscInt c = 0; c < nc; c++) {
      if (cols[c] >= rstart && cols[c] < rend)
        d_nnz[row - rstart]++;
      else
        o_nnz[row - rstart]++;
    }
  }
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, m, m, N, N));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, 0, d_nnz));
  PetscCall(MatMPIAIJSetPreallocation(*A, 0, d_nnz, 0, o_nnz));
  PetscCall(MatSetOption(*A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE));
  PetscCall(MatSetOption(*A, MAT_NO_OFF_PROC_ENTRIES, PETSC_TRUE));
  if (size == 1) PetscCall(MatSetOption(*A, MAT_SORTED_FULL, PETSC_TRUE));
  PetscCall(PetscFree2(d_nnz, o_nnz));

  if (random) {
    PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
    PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
    PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
    PetscCall(PetscRandomSetSeed(rnd, (unsigned long)seed));
    PetscCall(PetscRandomSeed(rnd));
  }
  for (PetscInt row = (random ? 0 : rstart); row < rend; row++) {
    if (points == STENCIL_BORDERED && row == N - 1) {
      if (row >= rstart) PetscCall(SetDenseRow(*A, row, N, diag27));
      continue;
    }
    PetscCall(StencilRow(n, points, &order, row, cols, &nc, &diag));
    if (random) {
      PetscCall(PetscRandomGetValuesReal(rnd, nc, v));
      if (row < rstart) continue; /* another rank's row: its values are drawn to keep the stream aligned */
      v[diag] += diag27;
    } else {
      for (PetscInt c = 0; c < nc; c++)
        v[c] = -1.0;
      v[diag] = 6.0;
    }
    PetscCall(MatSetValues(*A, 1, &row, nc, cols, v, INSERT_VALUES));
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(StencilOrderingDestroy(&order));
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* A 3D vector FEM-like operator (3D elasticity's pattern): 3 dofs per node of an n^3 grid, each node coupled to its
   27 neighbours (81 columns per row), block size 3, so PETSc's SeqAIJ finds inodes of 3 rows. Values: fp64 numbers
   (53 significant bits, no shorter format holds them) from a hash of (row, column), so any rank count gives the
   same matrix; rows diagonally dominant. */
static inline PetscErrorCode BuildFEM(MPI_Comm comm, MatType type, PetscInt n, PetscInt64 seed, Mat *A)
{
  const PetscInt64 nodes64 = (PetscInt64)n * n * n;
  PetscInt N, m = PETSC_DECIDE, rstart, *d_nnz, *o_nnz, cols[81];
  PetscScalar v[81];

  PetscFunctionBeginUser;
  PetscCheck(n >= 2, comm, PETSC_ERR_ARG_OUTOFRANGE, "grid size %" PetscInt_FMT " too small", n);
  PetscCheck(3 * nodes64 * 81 < PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "grid %" PetscInt_FMT "^3 needs 64-bit PetscInt", n);
  PetscInt nodes = (PetscInt)nodes64, mnodes = PETSC_DECIDE;
  PetscCall(PetscSplitOwnership(comm, &mnodes, &nodes));
  m = 3 * mnodes;
  N = 3 * nodes;
  PetscCallMPI(MPI_Scan(&m, &rstart, 1, MPIU_INT, MPI_SUM, comm));
  rstart -= m;
  const PetscInt rend = rstart + m;
  PetscCall(PetscMalloc2(m, &d_nnz, m, &o_nnz));
  for (PetscInt row = rstart; row < rend; row++) {
    const PetscInt node = row / 3, i = node % n, j = (node / n) % n, k = node / (n * n);
    PetscInt d = 0, o = 0;
    for (PetscInt dk = -1; dk <= 1; dk++)
      for (PetscInt dj = -1; dj <= 1; dj++)
        for (PetscInt di = -1; di <= 1; di++) {
          if (i + di < 0 || i + di >= n || j + dj < 0 || j + dj >= n || k + dk < 0 || k + dk >= n) continue;
          const PetscInt col = 3 * (node + dk * n * n + dj * n + di);
          if (col >= rstart && col < rend)
            d += 3;
          else
            o += 3;
        }
    d_nnz[row - rstart] = d;
    o_nnz[row - rstart] = o;
  }
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, m, m, N, N));
  PetscCall(MatSetBlockSize(*A, 3));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, 0, d_nnz));
  PetscCall(MatMPIAIJSetPreallocation(*A, 0, d_nnz, 0, o_nnz));
  PetscCall(MatSetOption(*A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE));
  PetscCall(MatSetOption(*A, MAT_NO_OFF_PROC_ENTRIES, PETSC_TRUE));
  PetscCall(PetscFree2(d_nnz, o_nnz));
  for (PetscInt row = rstart; row < rend; row++) {
    const PetscInt node = row / 3, i = node % n, j = (node / n) % n, k = node / (n * n);
    PetscInt nc = 0, diag = -1;
    for (PetscInt dk = -1; dk <= 1; dk++)
      for (PetscInt dj = -1; dj <= 1; dj++)
        for (PetscInt di = -1; di <= 1; di++) {
          if (i + di < 0 || i + di >= n || j + dj < 0 || j + dj >= n || k + dk < 0 || k + dk >= n) continue;
          for (PetscInt c = 0; c < 3; c++) {
            const PetscInt col = 3 * (node + dk * n * n + dj * n + di) + c;
            uint64_t h         = ((uint64_t)seed * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)row * 0xBF58476D1CE4E5B9ull) ^
                         ((uint64_t)col * 0x94D049BB133111EBull);
            h ^= h >> 31;
            h *= 0xD6E8FEB86659FD39ull;
            h ^= h >> 29;
            if (col == row) diag = nc;
            cols[nc] = col;
            v[nc++]  = 2.0 * ((double)(h >> 11) * 0x1p-53) - 1.0;
          }
        }
    v[diag] += 81.0;
    PetscCall(MatSetValues(*A, 1, &row, nc, cols, v, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

#endif
