/* The device path of aijmp's products (issue 12), on a machine without a GPU:
   a test-only Vec reports its host array as device memory
   (VecGetArray*AndMemType say PETSC_MEMTYPE_DEVICE), so aijmp computes the
   products with the device kernels, here the emulated backend (the GPU
   kernels run on the host), over its device mirror (a SELL-32 copy of the
   compact copy). Checks, serial, every storage kind:
   - MatMult, MatMultAdd (z apart and z = y), MatMultTranspose(Add) on the
     "device" vectors are bitwise the host path's products on plain vectors;
   - the mirror is made on the first device product only (MatAIJMPGetInfo's
     device_copies), never for host products, and made again after the values
     change (MatScale): no stale product;
   - split storage at a read level, for products and transposes;
   - where the device path does not serve (entry split, -mat_aijmp_kernel aij,
     per-row read levels) the host path computes, with the same figures.
   ellmp's products too (its mirror follows the matrix's state: ellmp
   changes its values in place). PCAPBJACOBI's apply on such vectors is the device kernel's, bitwise the
   host apply's, one copy of the blocks per setup.
   Serial only: PETSc's own VecScatter (MPIAIJ's ghost exchange) also asks
   the vector for its memory type, and a CPU-only PETSc has no device code to
   pack "device" memory with; MPI products on device vectors need a
   device-enabled PETSc. */
#include <stdlib.h>
#include <unistd.h>

#include <petsc/private/vecimpl.h>

#include "petscmp_test.h"

static PetscErrorCode DeviceGetArray(Vec v, PetscScalar **a, PetscMemType *m)
{
  PetscFunctionBeginUser;
  PetscCall(VecGetArray(v, a)); /* a VECSEQ's own array: petscnative, no operation called */
  if (m) *m = PETSC_MEMTYPE_DEVICE;
  PetscFunctionReturn(0);
}
static PetscErrorCode DeviceRestoreArray(Vec v, PetscScalar **a)
{
  PetscFunctionBeginUser;
  PetscCall(VecRestoreArray(v, a));
  PetscFunctionReturn(0);
}
static PetscErrorCode DeviceGetArrayRead(Vec v, const PetscScalar **a, PetscMemType *m)
{
  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(v, a));
  if (m) *m = PETSC_MEMTYPE_DEVICE;
  PetscFunctionReturn(0);
}
static PetscErrorCode DeviceRestoreArrayRead(Vec v, const PetscScalar **a)
{
  PetscFunctionBeginUser;
  PetscCall(VecRestoreArrayRead(v, a));
  PetscFunctionReturn(0);
}

/* A copy of v whose array reads as device memory. */
static PetscErrorCode DeviceVecDuplicate(Vec v, Vec *d)
{
  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(v, d));
  PetscCall(VecCopy(v, *d));
  (*d)->ops->getarrayandmemtype         = DeviceGetArray;
  (*d)->ops->restorearrayandmemtype     = DeviceRestoreArray;
  (*d)->ops->getarrayreadandmemtype     = DeviceGetArrayRead;
  (*d)->ops->restorearrayreadandmemtype = DeviceRestoreArrayRead;
  PetscFunctionReturn(0);
}

static PetscErrorCode DeviceCopies(Mat A, PetscInt64 *n)
{
  MatAIJMPInfo info;

  PetscFunctionBeginUser;
  PetscCall(MatAIJMPGetInfo(A, &info));
  *n = info.device_copies;
  PetscFunctionReturn(0);
}

/* The four products on plain and on "device" vectors: bitwise the same. */
static PetscErrorCode CompareProducts(Mat A, const char *what)
{
  Vec  x, z, y, xt, zt, yt, dx, dz, dy, dxt, dzt, dyt;
  char msg[256];

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(MatCreateVecs(A, &yt, &xt));
  PetscCall(VecDuplicate(y, &z));
  PetscCall(VecDuplicate(yt, &zt));
  PetscCall(TestVecFill(x, 3));
  PetscCall(TestVecFill(z, 4));
  PetscCall(TestVecFill(xt, 5));
  PetscCall(TestVecFill(zt, 6));
  PetscCall(DeviceVecDuplicate(x, &dx));
  PetscCall(DeviceVecDuplicate(z, &dz));
  PetscCall(DeviceVecDuplicate(y, &dy));
  PetscCall(DeviceVecDuplicate(xt, &dxt));
  PetscCall(DeviceVecDuplicate(zt, &dzt));
  PetscCall(DeviceVecDuplicate(yt, &dyt));

  PetscCall(MatMult(A, x, y));
  PetscCall(MatMult(A, dx, dy));
  PetscCall(PetscSNPrintf(msg, sizeof msg, "%s: MatMult on device vectors", what));
  PetscCall(TestCheckBitwise(y, dy, msg));
  PetscCall(MatMultAdd(A, x, z, y));
  PetscCall(MatMultAdd(A, dx, dz, dy));
  PetscCall(PetscSNPrintf(msg, sizeof msg, "%s: MatMultAdd on device vectors", what));
  PetscCall(TestCheckBitwise(y, dy, msg));
  PetscCall(VecCopy(z, y));
  PetscCall(VecCopy(z, dy));
  PetscCall(MatMultAdd(A, x, y, y));
  PetscCall(MatMultAdd(A, dx, dy, dy));
  PetscCall(PetscSNPrintf(msg, sizeof msg, "%s: MatMultAdd (z = y) on device vectors", what));
  PetscCall(TestCheckBitwise(y, dy, msg));
  PetscCall(MatMultTranspose(A, xt, yt));
  PetscCall(MatMultTranspose(A, dxt, dyt));
  PetscCall(PetscSNPrintf(msg, sizeof msg, "%s: MatMultTranspose on device vectors", what));
  PetscCall(TestCheckBitwise(yt, dyt, msg));
  PetscCall(MatMultTransposeAdd(A, xt, zt, yt));
  PetscCall(MatMultTransposeAdd(A, dxt, dzt, dyt));
  PetscCall(PetscSNPrintf(msg, sizeof msg, "%s: MatMultTransposeAdd on device vectors", what));
  PetscCall(TestCheckBitwise(yt, dyt, msg));

  Vec all[] = {x, z, y, xt, zt, yt, dx, dz, dy, dxt, dzt, dyt};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) PetscCall(VecDestroy(&all[k]));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckStorage(MatAIJMPStorage storage, PetscBool inode, PetscBool served)
{
  TestMatOpts o;
  Mat         A;
  PetscInt64  before = 0, after = 0;
  char        what[128];

  PetscFunctionBeginUser;
  TestMatOptsDefault(&o, 600);
  o.inode       = inode;
  o.empty_every = 37;
  PetscCall(PetscSNPrintf(what, sizeof what, "%s%s", MatAIJMPStorages[storage], inode ? " (inodes)" : ""));
  PetscCall(TestMatCreate(PETSC_COMM_SELF, MATAIJMP, &o, &A));
  PetscCall(MatAIJMPSetStorage(A, storage));
  PetscCall(MatSetFromOptions(A));
  { /* host products make no device copy */
    Vec x, y;
    PetscCall(MatCreateVecs(A, &x, &y));
    PetscCall(TestVecFill(x, 3));
    PetscCall(MatMult(A, x, y));
    PetscCall(MatMultTranspose(A, y, x));
    PetscCall(DeviceCopies(A, &before));
    TEST_CHECK(PETSC_COMM_SELF, before == 0, "%s: %" PetscInt64_FMT " device copies after host products", what, before);
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&y));
  }
  PetscCall(CompareProducts(A, what));
  PetscCall(DeviceCopies(A, &after));
  if (served) /* one copy for the products, one for the transposes */
    TEST_CHECK(PETSC_COMM_SELF, after == 2, "%s: %" PetscInt64_FMT " device copies, expected 2", what, after);
  else
    TEST_CHECK(PETSC_COMM_SELF, after == 0, "%s: the host path should compute, but %" PetscInt64_FMT " device copies were made", what, after);
  /* new values: the mirror is made again, the products see them */
  PetscCall(MatScale(A, 0.75));
  PetscCall(CompareProducts(A, what));
  PetscCall(DeviceCopies(A, &before));
  /* (at least: where the host products' measured kernel choice picks AIJ's kernel, it frees the compact values,
     and the next device product builds them, and the mirror, once more) */
  if (served) TEST_CHECK(PETSC_COMM_SELF, before >= after + 2, "%s: after MatScale %" PetscInt64_FMT " device copies, expected at least %" PetscInt64_FMT, what, before, after + 2);
  if (storage == MAT_AIJMP_SPLIT4) { /* the head and one more segment */
    PetscCall(MatAIJMPSetReadLevel(A, 2));
    PetscCall(PetscStrlcat(what, ", read level 2", sizeof what));
    PetscCall(CompareProducts(A, what));
  }
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* The device copies an ellmp matrix reports in its -mat_view ::ascii_info ("device products (...): N copies made"). */
static PetscErrorCode ELLMPDeviceCopies(Mat A, PetscInt64 *n)
{
  char        text[8192];
  const char *at;

  PetscFunctionBeginUser;
  PetscCall(TestViewInfoText(A, "device", text, sizeof text));
  *n = 0;
  at = strstr(text, "device products (emulated backend");
  if (at && (at = strstr(at, "): "))) *n = strtoll(at + 3, NULL, 10);
  PetscFunctionReturn(0);
}

/* ellmp: the stored matrix on device vectors, bitwise the host products; the mirror follows in-place changes. */
static PetscErrorCode CheckELLMP(MatAIJMPStorage storage)
{
  TestMatOpts o;
  Mat         A;
  PetscInt64  copies = 0, again = 0;
  char        what[64];

  PetscFunctionBeginUser;
  TestMatOptsDefault(&o, 600);
  o.inode = PETSC_TRUE;
  PetscCall(PetscSNPrintf(what, sizeof what, "ellmp %s", MatAIJMPStorages[storage]));
  PetscCall(MatCreate(PETSC_COMM_SELF, &A));
  PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, o.M, o.N));
  PetscCall(MatSetType(A, MATELLMP));
  PetscCall(MatELLMPSetStorage(A, storage));
  PetscCall(MatSeqAIJSetPreallocation(A, 12, NULL));
  PetscCall(TestMatSetEntries(A, &o, 1.0));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(CompareProducts(A, what));
  PetscCall(ELLMPDeviceCopies(A, &copies));
  TEST_CHECK(PETSC_COMM_SELF, copies == 2, "%s: %" PetscInt64_FMT " device copies, expected 2", what, copies);
  PetscCall(MatScale(A, 0.5)); /* in place: the state changes, the mirror is made again */
  PetscCall(MatShift(A, 1.0));
  PetscCall(CompareProducts(A, what));
  PetscCall(ELLMPDeviceCopies(A, &again));
  TEST_CHECK(PETSC_COMM_SELF, again == copies + 2, "%s: after MatScale and MatShift %" PetscInt64_FMT " device copies, expected %" PetscInt64_FMT, what, again, copies + 2);
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

/* PCAPBJACOBI's apply on device vectors: bitwise the host apply; one copy of the blocks per setup. */
static PetscErrorCode CheckAPBJacobi(void)
{
  TestMatOpts o;
  Mat         A;
  PC          pc;
  Vec         x, y, dx, dy;
  PCAPBJacobiInfo info;

  PetscFunctionBeginUser;
  TestMatOptsDefault(&o, 900);
  o.inode = PETSC_TRUE; /* nodes of 3 rows: blocks of several sizes and formats */
  PetscCall(TestMatCreate(PETSC_COMM_SELF, MATAIJ, &o, &A));
  PetscCall(MatShift(A, 40.0)); /* diagonally dominant blocks */
  PetscCall(PCCreate(PETSC_COMM_SELF, &pc));
  PetscCall(PCSetType(pc, PCAPBJACOBI));
  PetscCall(PCSetOperators(pc, A, A));
  PetscCall(PCSetUp(pc));
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(TestVecFill(x, 8));
  PetscCall(DeviceVecDuplicate(x, &dx));
  PetscCall(DeviceVecDuplicate(y, &dy));
  for (int round = 0; round < 2; round++) { /* the second after new values and a new setup */
    PetscCall(PCApply(pc, x, y));
    PetscCall(PCAPBJacobiGetInfo(pc, &info));
    TEST_CHECK(PETSC_COMM_SELF, info.device_copies == 0, "apbjacobi: %" PetscInt64_FMT " device copies after a host apply", info.device_copies);
    PetscCall(PCApply(pc, dx, dy));
    PetscCall(TestCheckBitwise(y, dy, "apbjacobi: PCApply on device vectors"));
    PetscCall(PCApplyTranspose(pc, x, y));
    PetscCall(PCApplyTranspose(pc, dx, dy));
    PetscCall(TestCheckBitwise(y, dy, "apbjacobi: PCApplyTranspose on device vectors"));
    PetscCall(PCAPBJacobiGetInfo(pc, &info));
    TEST_CHECK(PETSC_COMM_SELF, info.device_copies == 1, "apbjacobi: %" PetscInt64_FMT " device copies, expected 1", info.device_copies);
    PetscCall(MatScale(A, 1.5));
    PetscCall(PCSetUp(pc));
  }
  EXPECT_ERROR(PCApply(pc, dx, y), "apbjacobi: x in device memory, y in host memory");
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&dx));
  PetscCall(VecDestroy(&dy));
  PetscCall(PCDestroy(&pc));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscMPInitializePackage());
  const MatAIJMPStorage served[] = {MAT_AIJMP_LOSSLESS, MAT_AIJMP_FP32,      MAT_AIJMP_FP16,  MAT_AIJMP_BF16,
                                    MAT_AIJMP_FP11_4,   MAT_AIJMP_TOLERANCE, MAT_AIJMP_SPLIT2, MAT_AIJMP_SPLIT4};
  for (size_t k = 0; k < sizeof served / sizeof served[0]; k++)
    for (int inode = 0; inode < 2; inode++) PetscCall(CheckStorage(served[k], inode ? PETSC_TRUE : PETSC_FALSE, PETSC_TRUE));
  PetscCall(CheckStorage(MAT_AIJMP_ENTRYSPLIT, PETSC_FALSE, PETSC_FALSE)); /* two CSR parts: no SELL copy */
  { /* PETSc's AIJ kernel asked for: the host path */
    TestMatOpts o;
    Mat         A;
    PetscInt64  n = 0;
    TestMatOptsDefault(&o, 300);
    PetscCall(TestMatCreate(PETSC_COMM_SELF, MATAIJMP, &o, &A));
    PetscCall(MatAIJMPSetKernel(A, MAT_AIJMP_KERNEL_AIJ));
    PetscCall(CompareProducts(A, "kernel aij"));
    PetscCall(DeviceCopies(A, &n));
    TEST_CHECK(PETSC_COMM_SELF, n == 0, "kernel aij: %" PetscInt64_FMT " device copies", n);
    PetscCall(MatDestroy(&A));
  }
  PetscCall(CheckELLMP(MAT_AIJMP_LOSSLESS));
  PetscCall(CheckELLMP(MAT_AIJMP_FP16));
  PetscCall(CheckELLMP(MAT_AIJMP_SPLIT4));
  PetscCall(CheckAPBJacobi());
  int rc = TestFinish();
  PetscCall(PetscFinalize());
  return rc;
}
