// The device path of the products, chosen in this one place: where a product's
// vectors live in device memory (VecGetArrayReadAndMemType), aijmp computes it
// with the device kernels over a device mirror of its compact copy.
//   - A build with a GPU backend (PETSCMP_GPU_BACKEND: CUDA or HIP, against a
//     device-enabled PETSc) runs that backend's kernels.
//   - A build without one runs the emulated backend: the same kernels on the
//     host. Only a test Vec that reports device memory over host memory
//     (tests/petsc/test_device.c) takes this path there; a CPU-only PETSc never
//     hands out device memory.
// The mirror is a SELL-32 copy of the compact copy (sell_copy.hpp), so the
// formats stay those the storage builder chose, bit for bit; it is rebuilt
// lazily when the compact copy is (the same staleness key, through the
// copy's build count). The host fp64 CSR stays the master.
#pragma once

#include <map>
#include <memory>

#include <petscmat.h>

#include "petscmpglue.h"

#include "petscmp/core/block_jacobi.hpp"
#include "petscmp/core/compact_csr.hpp"
#include "petscmp/core/sell_copy.hpp"

namespace petscmp {

// "cuda", "hip" or "emulated".
const char *DeviceBackendName();

struct DeviceMirror {
  struct Copy; // one SELL copy where the backend reads it (device memory, or the host for the emulated backend)
  DeviceMirror();
  ~DeviceMirror();
  const CompactCsr *source = nullptr; // the compact copy mirrored, at build `generation`
  PetscInt64 generation    = -1;
  std::unique_ptr<Copy> mult;
  std::map<int, std::unique_ptr<Copy>> transposes; // by read level
  PetscInt64 builds = 0;                           // copies made (for the view and the tests)
  double bytes      = 0;                           // of the copies held
  void clear();
};

// y = A x (+ z) or A^T x (+ z) on device arrays, A the compact copy c at build
// `generation` of its matrix (view: its master pattern), reading `read`
// segments of split storage. z may alias y. The mirror is made first where it
// is stale. Throws StorageError where the device path cannot serve c (an entry
// split): callers check DeviceMirrorServes first. threads: the host threads
// that make the mirror's copy (the matrix's -mat_*_threads).
void DeviceMirrorProduct(DeviceMirror &m, const CompactCsr &c, PetscInt64 generation, const CsrView<PetscInt> &view,
                         bool transpose, int read, const double *x, const double *z, double *y, int threads);

// apbjacobi's blocks where the backend reads them; dropped (clear) whenever
// the preconditioner's storage is made anew.
struct DeviceBlockJacobiMirror {
  struct Copy;
  DeviceBlockJacobiMirror();
  ~DeviceBlockJacobiMirror();
  std::unique_ptr<Copy> copy;
  PetscInt64 builds = 0; // copies made
  void clear();
};

// y = M^{-1} x (or M^{-T} x) on device arrays, M apbjacobi's storage (the
// mirror made first where it holds none).
void DeviceBlockJacobiApply(DeviceBlockJacobiMirror &m, const BlockJacobiStorage &M, const double *x, double *y,
                            bool transpose);

// Whether x, y and z (may be null) all have their arrays in device memory
// (x is asked first: one query when it is host memory, the usual case).
PetscErrorCode DeviceVectors(Vec x, Vec z, Vec y, bool *device);
// Whether A is bound to the CPU (MatBindToCPU); false in a PETSc without
// devices, whose MatBoundToCPU() says true for every matrix.
PetscErrorCode DeviceBoundToCPU(Mat A, bool *bound);

// y = op(A) x (+ z) on the vectors' device arrays: gets x, z and y (z may be
// y: read and written through one array) with their memory types, runs
// product(x, z, y) guarded (no C++ exception reaches PETSc), restores them.
template <typename Product> PetscErrorCode WithDeviceArrays(Vec xx, Vec zz, Vec yy, Product &&product)
{
  const PetscScalar *x, *z = nullptr;
  PetscScalar *y;
  PetscMemType mtype;

  PetscFunctionBegin;
  PetscCall(VecGetArrayReadAndMemType(xx, &x, &mtype));
  if (zz && zz == yy) {
    PetscCall(VecGetArrayAndMemType(yy, &y, &mtype));
    z = y;
  } else {
    if (zz) PetscCall(VecGetArrayReadAndMemType(zz, &z, &mtype));
    PetscCall(VecGetArrayWriteAndMemType(yy, &y, &mtype));
  }
  PetscCall(guarded([&] { product(x, z, y); }));
  if (zz && zz == yy)
    PetscCall(VecRestoreArrayAndMemType(yy, &y));
  else {
    if (zz) PetscCall(VecRestoreArrayReadAndMemType(zz, &z));
    PetscCall(VecRestoreArrayWriteAndMemType(yy, &y));
  }
  PetscCall(VecRestoreArrayReadAndMemType(xx, &x));
  PetscFunctionReturn(0);
}

// Whether the device path computes products of c (every storage but an entry split).
inline bool DeviceMirrorServes(const CompactCsr &c)
{
  return !c.entry_split();
}

} // namespace petscmp
