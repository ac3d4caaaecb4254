// The device path of the products (device_backend.h).
#include "device_backend.h"

#include "device.hpp"

#include <petsc/private/matimpl.h>

namespace petscmp {

#if defined(PETSCMP_GPU_BACKEND)
struct DeviceMirror::Copy {
  gpu::DeviceSell device;
  explicit Copy(const SellCopy &host) : device(host) {} // the host copy is dropped once uploaded
};
const char *DeviceBackendName()
{
  return gpu::backend_name();
}
static void run(const DeviceMirror::Copy &copy, int read, const double *x, const double *z, double *y)
{
  gpu::spmv(copy.device, read, x, z, y);
}
struct DeviceBlockJacobiMirror::Copy {
  gpu::DeviceBlockJacobi device;
  explicit Copy(const BlockJacobiStorage &M) : device(M) {}
  void apply(const BlockJacobiStorage &, const double *x, double *y, bool transpose) const
  {
    gpu::block_jacobi_apply(device, x, y, transpose);
  }
};
#else
struct DeviceBlockJacobiMirror::Copy { // the emulated backend reads the host storage itself
  explicit Copy(const BlockJacobiStorage &) {}
  void apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose) const
  {
    emulated::block_jacobi_apply(M, x, y, transpose);
  }
};
struct DeviceMirror::Copy {
  SellCopy host;
  explicit Copy(SellCopy &&c) : host(std::move(c)) {}
};
const char *DeviceBackendName()
{
  return "emulated";
}
static void run(const DeviceMirror::Copy &copy, int read, const double *x, const double *z, double *y)
{
  emulated::spmv(copy.host, read, x, z, y);
}
#endif

DeviceMirror::DeviceMirror()  = default;
DeviceMirror::~DeviceMirror() = default;

void DeviceMirror::clear()
{
  mult.reset();
  transposes.clear();
  source     = nullptr;
  generation = -1;
  bytes      = 0;
}

void DeviceMirrorProduct(DeviceMirror &m, const CompactCsr &c, PetscInt64 generation, const CsrView<PetscInt> &view,
                         bool transpose, int read, const double *x, const double *z, double *y, int threads)
{
  if (m.source != &c || m.generation != generation) {
    m.clear();
    m.source     = &c;
    m.generation = generation;
  }
  std::unique_ptr<DeviceMirror::Copy> &copy = transpose ? m.transposes[read] : m.mult;
  if (!copy) {
    SellCopy s = transpose ? make_sell_transpose(c, view.rowptr, view.cols, read, kGpuSliceRows, threads)
                           : make_sell_copy(c, view.rowptr, view.cols, kGpuSliceRows, threads);
    m.bytes += static_cast<double>(s.bytes());
    copy = std::make_unique<DeviceMirror::Copy>(std::move(s));
    ++m.builds;
  }
  // (a product's read level is a kernel argument; the transpose's copy holds the values read at its level)
  run(*copy, transpose ? 0 : read, x, z, y);
}

static PetscErrorCode on_device(Vec v, bool *device)
{
  const PetscScalar *a;
  PetscMemType mtype;

  PetscFunctionBegin;
  PetscCall(VecGetArrayReadAndMemType(v, &a, &mtype));
  PetscCall(VecRestoreArrayReadAndMemType(v, &a));
  *device = PetscMemTypeDevice(mtype);
  PetscFunctionReturn(0);
}

PetscErrorCode DeviceVectors(Vec x, Vec z, Vec y, bool *device)
{
  bool y_dev, z_dev = true;

  PetscFunctionBegin;
  PetscCall(on_device(x, device));
  if (!*device) PetscFunctionReturn(0);
  PetscCall(on_device(y, &y_dev));
  if (z) PetscCall(on_device(z, &z_dev));
  *device = y_dev && z_dev;
  PetscFunctionReturn(0);
}

PetscErrorCode DeviceBoundToCPU(Mat A, bool *bound)
{
  PetscFunctionBegin;
#if defined(PETSC_HAVE_DEVICE)
  *bound = A->boundtocpu;
#else
  (void)A;
  *bound = false; // (only a test Vec reports device memory in such a build)
#endif
  PetscFunctionReturn(0);
}

DeviceBlockJacobiMirror::DeviceBlockJacobiMirror()  = default;
DeviceBlockJacobiMirror::~DeviceBlockJacobiMirror() = default;
void DeviceBlockJacobiMirror::clear()
{
  copy.reset();
  builds = 0;
}

void DeviceBlockJacobiApply(DeviceBlockJacobiMirror &m, const BlockJacobiStorage &M, const double *x, double *y,
                            bool transpose)
{
  if (!m.copy) {
    m.copy = std::make_unique<DeviceBlockJacobiMirror::Copy>(M);
    ++m.builds;
  }
  m.copy->apply(M, x, y, transpose);
}

} // namespace petscmp
