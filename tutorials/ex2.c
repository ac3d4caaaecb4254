static char help[] =
    "3D linear elasticity: trilinear (Q1) hexahedral finite elements on a structured DMDA over the unit cube.\n"
    "A plain PETSc program (it neither includes nor links petscmp) with natural 3x3 point blocks, for tests and\n"
    "benchmarks of block-Jacobi preconditioners (PCPBJACOBI, PCVPBJACOBI, ...).\n\n"
    "Problem: -div(sigma(u)) = f on (0,1)^3, sigma = lambda tr(eps) I + 2 mu eps (isotropic, from E and nu),\n"
    "u = 0 on the face x = 0 (a cantilever), traction-free elsewhere, f = (0, 0, -1) (gravity in -z).\n"
    "Nodes: n^3 on a uniform grid (DMDA, dof 3, box stencil, width 1); element stiffness by 2x2x2 Gauss\n"
    "quadrature; the Dirichlet dofs are eliminated symmetrically during assembly (their rows and columns are\n"
    "dropped, their diagonal keeps its element contributions), so the operator stays SPD and well scaled.\n"
    "Default solver: CG with PCJACOBI, rtol 1e-8 on the unpreconditioned residual norm (the same stopping test\n"
    "for every preconditioner); every -ksp_/-pc_ option applies (-ksp_norm_type preconditioned for CG's default).\n\n"
    "Options:\n"
    "  -n <int>                   : nodes per direction (default 20)\n"
    "  -E <real>                  : Young's modulus (default 1)\n"
    "  -nu <real>                 : Poisson ratio (default 0.3)\n"
    "  -repeat <int>              : solve this many times from a zero initial guess; the median times are reported\n"
    "  -set_variable_blocks <int> : MatSetVariableBlockSizes() with consecutive local blocks of this size (the last\n"
    "                               one on each rank smaller if needed); PCVPBJACOBI in PETSc 3.18 requires it\n"
    "  -check_symmetry            : MatIsSymmetric(A, 1e-10) after assembly; prints one line 'symmetric 0|1'\n"
    "  -dm_mat_type <type>        : matrix type (aij, baij, or e.g. aijmp with -dll_append libpetscmp.so)\n"
    "  -ksp_type, -pc_type, ...   : the usual KSP/PC options\n\n"
    "Output: one line\n"
    "  problem elasticity3d n N dofs D mat_type T pc_type P iterations I true_residual R setup_seconds S\n"
    "  solve_seconds Q pcapply_seconds A reason K\n"
    "true_residual is ||b - A x|| / ||b|| computed after the (last) solve; setup_seconds is the KSPSetUp() wall\n"
    "time (PCSetUp included); solve_seconds the median KSPSolve() wall time; pcapply_seconds the median, per solve,\n"
    "of the time logged in the PCApply event. Times are the maximum over ranks.\n\n";

#include <petscdmda.h>
#include <petscksp.h>

#include "blocksolve.h"

/* Isotropic elasticity matrix D in Voigt notation (xx, yy, zz, yz, xz, xy; engineering shear strains). */
static void ElasticityD(PetscReal E, PetscReal nu, PetscReal D[6][6])
{
  const PetscReal lambda = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));

  for (int p = 0; p < 6; p++)
    for (int q = 0; q < 6; q++)
      D[p][q] = 0;
  for (int p = 0; p < 3; p++) {
    for (int q = 0; q < 3; q++)
      D[p][q] = lambda;
    D[p][p]         = lambda + 2 * mu;
    D[p + 3][p + 3] = mu;
  }
}

/* Stiffness of one trilinear hexahedron with node coordinates X, by 2x2x2 Gauss quadrature.
   Local node a sits at reference corner (2 ia - 1, 2 ja - 1, 2 ka - 1) with ia = a & 1, ja = (a >> 1) & 1,
   ka = (a >> 2) & 1; unknown 3 a + d is displacement component d of node a. Ke is 24x24, row-major. */
static PetscErrorCode ElementStiffness(const PetscReal X[8][3], PetscReal E, PetscReal nu, PetscReal Ke[24 * 24])
{
  const PetscReal g = 1 / PetscSqrtReal(3.0); /* Gauss points +-1/sqrt(3), weights 1 */
  PetscReal D[6][6];

  PetscFunctionBeginUser;
  ElasticityD(E, nu, D);
  for (int p = 0; p < 24 * 24; p++)
    Ke[p] = 0;
  for (int q = 0; q < 8; q++) {
    const PetscReal xi[3] = {(q & 1) ? g : -g, ((q >> 1) & 1) ? g : -g, ((q >> 2) & 1) ? g : -g};
    PetscReal dNdxi[8][3], J[3][3] = {{0}}, Jinv[3][3], detJ, dN[8][3], B[6][24] = {{0}}, DB[6][24];

    for (int a = 0; a < 8; a++) {
      const PetscReal s[3] = {(a & 1) ? 1.0 : -1.0, ((a >> 1) & 1) ? 1.0 : -1.0, ((a >> 2) & 1) ? 1.0 : -1.0};
      for (int d = 0; d < 3; d++) {
        PetscReal v = s[d] / 8;
        for (int e = 0; e < 3; e++)
          if (e != d) v *= 1 + s[e] * xi[e];
        dNdxi[a][d] = v;
      }
    }
    /* J[r][c] = dx_r / dxi_c */
    for (int a = 0; a < 8; a++)
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
          J[r][c] += X[a][r] * dNdxi[a][c];
    detJ = J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) - J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
           J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
    PetscCheck(detJ > 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Element with non-positive Jacobian %g",
               (double)detJ);
    Jinv[0][0] = (J[1][1] * J[2][2] - J[1][2] * J[2][1]) / detJ;
    Jinv[0][1] = (J[0][2] * J[2][1] - J[0][1] * J[2][2]) / detJ;
    Jinv[0][2] = (J[0][1] * J[1][2] - J[0][2] * J[1][1]) / detJ;
    Jinv[1][0] = (J[1][2] * J[2][0] - J[1][0] * J[2][2]) / detJ;
    Jinv[1][1] = (J[0][0] * J[2][2] - J[0][2] * J[2][0]) / detJ;
    Jinv[1][2] = (J[0][2] * J[1][0] - J[0][0] * J[1][2]) / detJ;
    Jinv[2][0] = (J[1][0] * J[2][1] - J[1][1] * J[2][0]) / detJ;
    Jinv[2][1] = (J[0][1] * J[2][0] - J[0][0] * J[2][1]) / detJ;
    Jinv[2][2] = (J[0][0] * J[1][1] - J[0][1] * J[1][0]) / detJ;
    /* dN/dx_c = sum_r dN/dxi_r dxi_r/dx_c */
    for (int a = 0; a < 8; a++)
      for (int c = 0; c < 3; c++) {
        dN[a][c] = 0;
        for (int r = 0; r < 3; r++)
          dN[a][c] += dNdxi[a][r] * Jinv[r][c];
      }
    for (int a = 0; a < 8; a++) {
      const PetscReal nx = dN[a][0], ny = dN[a][1], nz = dN[a][2];
      B[0][3 * a + 0] = nx;
      B[1][3 * a + 1] = ny;
      B[2][3 * a + 2] = nz;
      B[3][3 * a + 1] = nz;
      B[3][3 * a + 2] = ny;
      B[4][3 * a + 0] = nz;
      B[4][3 * a + 2] = nx;
      B[5][3 * a + 0] = ny;
      B[5][3 * a + 1] = nx;
    }
    for (int p = 0; p < 6; p++)
      for (int j = 0; j < 24; j++) {
        DB[p][j] = 0;
        for (int r = 0; r < 6; r++)
          DB[p][j] += D[p][r] * B[r][j];
      }
    /* upper triangle of B^T D B detJ (weights are 1), mirrored below so that Ke is exactly symmetric */
    for (int i = 0; i < 24; i++)
      for (int j = i; j < 24; j++) {
        PetscReal v = 0;
        for (int p = 0; p < 6; p++)
          v += B[p][i] * DB[p][j];
        Ke[i * 24 + j] += v * detJ;
      }
  }
  for (int i = 0; i < 24; i++)
    for (int j = 0; j < i; j++)
      Ke[i * 24 + j] = Ke[j * 24 + i];
  PetscFunctionReturn(0);
}

/* Each rank assembles the elements whose lowest corner node it owns. Dirichlet dofs (nodes with i == 0) are
   eliminated symmetrically: their rows and columns are zero except the diagonal, which keeps its element
   contributions, so it is scaled like its neighbours. Everything is ADD_VALUES. */
static PetscErrorCode AssembleElasticity(DM da, PetscReal E, PetscReal nu, Mat A)
{
  DMDALocalInfo info;
  PetscReal h, X[8][3], Ke[24 * 24];
  PetscScalar Kv[24 * 24];
  MatStencil nodes[8];

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  h = 1.0 / (info.mx - 1);
  for (int a = 0; a < 8; a++) {
    X[a][0] = (a & 1) * h;
    X[a][1] = ((a >> 1) & 1) * h;
    X[a][2] = ((a >> 2) & 1) * h;
  }
  PetscCall(ElementStiffness(X, E, nu, Ke)); /* the grid is uniform: one element matrix for all */
  for (PetscInt k = info.zs; k < PetscMin(info.zs + info.zm, info.mz - 1); k++)
    for (PetscInt j = info.ys; j < PetscMin(info.ys + info.ym, info.my - 1); j++)
      for (PetscInt i = info.xs; i < PetscMin(info.xs + info.xm, info.mx - 1); i++) {
        for (int a = 0; a < 8; a++) {
          nodes[a].i = i + (a & 1);
          nodes[a].j = j + ((a >> 1) & 1);
          nodes[a].k = k + ((a >> 2) & 1);
          nodes[a].c = 0;
        }
        for (int p = 0; p < 24 * 24; p++)
          Kv[p] = Ke[p];
        if (i == 0) /* local nodes with ia = 0 lie on the clamped face */
          for (int p = 0; p < 24; p++)
            for (int q = 0; q < 24; q++)
              if (p != q && (!((p / 3) & 1) || !((q / 3) & 1))) Kv[p * 24 + q] = 0;
        PetscCall(MatSetValuesBlockedStencil(A, 8, nodes, 8, nodes, Kv, ADD_VALUES));
      }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* Consistent load vector of f = (0, 0, -1): each element gives h^3/8 f to each of its nodes. Zero on the
   clamped face. */
static PetscErrorCode AssembleBodyForce(DM da, Vec b)
{
  DMDALocalInfo info;
  PetscReal h;
  PetscScalar ****bb;

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  h = 1.0 / (info.mx - 1);
  PetscCall(DMDAVecGetArrayDOF(da, b, &bb));
  for (PetscInt k = info.zs; k < info.zs + info.zm; k++)
    for (PetscInt j = info.ys; j < info.ys + info.ym; j++)
      for (PetscInt i = info.xs; i < info.xs + info.xm; i++) {
        const PetscInt ne =
            ((i > 0) + (i < info.mx - 1)) * ((j > 0) + (j < info.my - 1)) * ((k > 0) + (k < info.mz - 1));
        bb[k][j][i][0] = 0;
        bb[k][j][i][1] = 0;
        bb[k][j][i][2] = i == 0 ? 0.0 : -ne * h * h * h / 8;
      }
  PetscCall(DMDAVecRestoreArrayDOF(da, b, &bb));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  DM da;
  Mat A;
  Vec b;
  PetscInt n  = 20, bs;
  PetscReal E = 1.0, nu = 0.3;
  BlockSolveOptions solve;
  MPI_Comm comm;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCall(PetscLogDefaultBegin()); /* for the PCApply time */
  PetscOptionsBegin(comm, NULL, "3D linear elasticity options", NULL);
  PetscCall(PetscOptionsInt("-n", "nodes per direction", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-E", "Young's modulus", NULL, E, &E, NULL));
  PetscCall(PetscOptionsReal("-nu", "Poisson ratio", NULL, nu, &nu, NULL));
  PetscOptionsEnd();
  PetscCall(BlockSolveOptionsRegister(comm, &solve));
  PetscCheck(n >= 2, comm, PETSC_ERR_ARG_OUTOFRANGE, "-n must be at least 2");
  PetscCheck(E > 0 && nu > -1 && nu < 0.5, comm, PETSC_ERR_ARG_OUTOFRANGE, "Need E > 0 and -1 < nu < 0.5");

  PetscCall(DMDACreate3d(comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, n, n, n,
                         PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, 3, 1, NULL, NULL, NULL, &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateMatrix(da, &A));
  PetscCall(MatGetBlockSize(A, &bs));
  PetscCheck(bs == 3, comm, PETSC_ERR_PLIB, "Expected block size 3 from the DMDA, got %" PetscInt_FMT, bs);
  PetscCall(AssembleElasticity(da, E, nu, A));
  PetscCall(DMCreateGlobalVector(da, &b));
  PetscCall(AssembleBodyForce(da, b));
  PetscCall(BlockSolveRun("elasticity3d", n, A, b, &solve));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
