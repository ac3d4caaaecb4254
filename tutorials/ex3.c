static char help[] =
    "2D multi-component diffusion-reaction on a DMDA (dof c, 5-point stencil), SPD.\n"
    "A plain PETSc program (it neither includes nor links petscmp) with natural c x c point blocks whose\n"
    "condition numbers differ from node to node, for tests and benchmarks of block-Jacobi preconditioners.\n\n"
    "Operator on an n x n grid over the unit square, row (node p, component k):\n"
    "  kappa_k (4 u_{p,k} - sum_{q neighbour of p} u_{q,k}) + alpha sum_l K_{kl}(x_p) u_{p,l} = 1\n"
    "with homogeneous Dirichlet values just outside the grid (neighbours outside are dropped), so every grid\n"
    "node is an unknown. kappa_k = 10^(k-2): the components diffuse at very different rates. The reaction\n"
    "(coupling) matrix at node p is K = (1 - theta) I + (theta / c) 1 1^T with theta = theta_max x_p: SPD with\n"
    "eigenvalues 1 - theta and 1, so K goes from the identity at x = 0 to nearly rank one at x = 1. The point\n"
    "block at p, diag(4 kappa) + alpha K(x_p), thus ranges from nearly diagonal to strongly coupled; for c = 4 and\n"
    "the defaults its condition number goes from 5 to about 200 (from 1 to about 30 after diagonal scaling).\n"
    "Couplings between nodes are component-diagonal (DMDASetBlockFills), couplings within a node are dense.\n"
    "Default solver: CG with PCJACOBI, rtol 1e-8 on the unpreconditioned residual norm (the same stopping test\n"
    "for every preconditioner); every -ksp_/-pc_ option applies (-ksp_norm_type preconditioned for CG's default).\n\n"
    "Options:\n"
    "  -n <int>                   : nodes per direction (default 20)\n"
    "  -c <int>                   : components per node (default 4)\n"
    "  -theta <real>              : theta_max in [0, 1) (default 0.999)\n"
    "  -alpha <real>              : reaction scale (default 10; alpha = h^2 gives the PDE -kappa Lap u + K u)\n"
    "  -repeat <int>              : solve this many times from a zero initial guess; the median times are reported\n"
    "  -set_variable_blocks <int> : MatSetVariableBlockSizes() with consecutive local blocks of this size (the last\n"
    "                               one on each rank smaller if needed); PCVPBJACOBI in PETSc 3.18 requires it\n"
    "  -check_symmetry            : MatIsSymmetric(A, 1e-10) after assembly; prints one line 'symmetric 0|1'\n"
    "  -dm_mat_type <type>        : matrix type (aij, baij, or e.g. aijmp with -dll_append libpetscmp.so)\n"
    "  -ksp_type, -pc_type, ...   : the usual KSP/PC options\n\n"
    "Output: one line\n"
    "  problem diffusion2d n N dofs D mat_type T pc_type P iterations I true_residual R setup_seconds S\n"
    "  solve_seconds Q pcapply_seconds A reason K\n"
    "true_residual is ||b - A x|| / ||b|| computed after the (last) solve; setup_seconds is the KSPSetUp() wall\n"
    "time (PCSetUp included); solve_seconds the median KSPSolve() wall time; pcapply_seconds the median, per solve,\n"
    "of the time logged in the PCApply event. Times are the maximum over ranks.\n\n";

#include <petscdmda.h>
#include <petscksp.h>

#include "blocksolve.h"

static PetscErrorCode AssembleDiffusion(DM da, PetscInt c, PetscReal theta_max, PetscReal alpha, Mat A)
{
  DMDALocalInfo info;
  PetscReal h, *kappa;
  PetscScalar *v;
  MatStencil row, *col;

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  h = 1.0 / (info.mx - 1);
  PetscCall(PetscMalloc3(c, &kappa, c + 4, &v, c + 4, &col));
  for (PetscInt k = 0; k < c; k++)
    kappa[k] = PetscPowReal(10.0, (PetscReal)(k - 2));
  for (PetscInt j = info.ys; j < info.ys + info.ym; j++)
    for (PetscInt i = info.xs; i < info.xs + info.xm; i++) {
      const PetscReal theta = theta_max * i * h;
      const PetscInt di[4] = {-1, 1, 0, 0}, dj[4] = {0, 0, -1, 1};

      row.i = i;
      row.j = j;
      for (PetscInt k = 0; k < c; k++) {
        PetscInt nc = 0;

        row.c = k;
        for (int s = 0; s < 4; s++) { /* same component at the neighbours */
          const PetscInt ii = i + di[s], jj = j + dj[s];
          if (ii < 0 || jj < 0 || ii >= info.mx || jj >= info.my) continue;
          col[nc].i = ii;
          col[nc].j = jj;
          col[nc].c = k;
          v[nc++]   = -kappa[k];
        }
        for (PetscInt l = 0; l < c; l++) { /* all components at the node: the point block */
          col[nc].i = i;
          col[nc].j = j;
          col[nc].c = l;
          v[nc++]   = alpha * ((l == k ? 1 - theta : 0) + theta / c) + (l == k ? 4 * kappa[k] : 0);
        }
        PetscCall(MatSetValuesStencil(A, 1, &row, nc, col, v, INSERT_VALUES));
      }
    }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(PetscFree3(kappa, v, col));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  DM da;
  Mat A;
  Vec b;
  PetscInt n = 20, c = 4, bs, *dfill, *ofill;
  PetscReal theta = 0.99, alpha = 1.0;
  BlockSolveOptions solve;
  MPI_Comm comm;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCall(PetscLogDefaultBegin()); /* for the PCApply time */
  PetscOptionsBegin(comm, NULL, "2D multi-component diffusion options", NULL);
  PetscCall(PetscOptionsInt("-n", "nodes per direction", NULL, n, &n, NULL));
  PetscCall(PetscOptionsInt("-c", "components per node", NULL, c, &c, NULL));
  PetscCall(PetscOptionsReal("-theta", "coupling strength at x = 1, in [0, 1)", NULL, theta, &theta, NULL));
  PetscCall(PetscOptionsReal("-alpha", "reaction scale", NULL, alpha, &alpha, NULL));
  PetscOptionsEnd();
  PetscCall(BlockSolveOptionsRegister(comm, &solve));
  PetscCheck(n >= 2, comm, PETSC_ERR_ARG_OUTOFRANGE, "-n must be at least 2");
  PetscCheck(c >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-c must be at least 1");
  PetscCheck(theta >= 0 && theta < 1 && alpha >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "Need 0 <= theta < 1 and alpha >= 0");

  PetscCall(DMDACreate2d(comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, n, n, PETSC_DECIDE, PETSC_DECIDE,
                         c, 1, NULL, NULL, &da));
  /* dense coupling within a node, component-diagonal coupling between nodes */
  PetscCall(PetscCalloc2(c * c, &dfill, c * c, &ofill));
  for (PetscInt k = 0; k < c; k++) {
    for (PetscInt l = 0; l < c; l++)
      dfill[k * c + l] = 1;
    ofill[k * c + k] = 1;
  }
  PetscCall(DMDASetBlockFills(da, dfill, ofill));
  PetscCall(PetscFree2(dfill, ofill));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateMatrix(da, &A));
  PetscCall(MatGetBlockSize(A, &bs));
  PetscCheck(bs == c, comm, PETSC_ERR_PLIB, "Expected block size %" PetscInt_FMT " from the DMDA, got %" PetscInt_FMT,
             c, bs);
  PetscCall(AssembleDiffusion(da, c, theta, alpha, A));
  PetscCall(DMCreateGlobalVector(da, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(BlockSolveRun("diffusion2d", n, A, b, &solve));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
