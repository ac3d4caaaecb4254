// The HIP names of the few runtime calls the shared GPU backend makes
// (../cuda_hip/backend.inc); cuda/gpu_runtime.hpp maps the same names to CUDA.
#pragma once

#include <hip/hip_runtime.h>

#define PETSCMP_GPU_BACKEND_NAME "hip"

// Orders a warp's shared-memory writes before its lanes read them (the
// warp-per-row kernel's two phases). A warp of the kernels is half a
// wavefront, whose lanes run in lockstep: a wavefront barrier and a fence of
// the work-group's memory suffice (ROCm 5's hipcc has no __syncwarp).
#define PETSCMP_SYNC_WARP()                                                                                            \
  do {                                                                                                                 \
    __builtin_amdgcn_wave_barrier();                                                                                   \
    __threadfence_block();                                                                                             \
  } while (0)

namespace petscmp {
namespace gpu {
namespace rt {
using error_t                    = hipError_t;
inline constexpr error_t success = hipSuccess;
inline error_t allocate(void **p, std::size_t bytes)
{
  return hipMalloc(p, bytes);
}
inline error_t release(void *p)
{
  return hipFree(p);
}
inline error_t to_device(void *device, const void *host, std::size_t bytes)
{
  return hipMemcpy(device, host, bytes, hipMemcpyHostToDevice);
}
inline error_t to_host(void *host, const void *device, std::size_t bytes)
{
  return hipMemcpy(host, device, bytes, hipMemcpyDeviceToHost);
}
inline error_t device_count(int *n)
{
  return hipGetDeviceCount(n);
}
inline error_t synchronize()
{
  return hipDeviceSynchronize();
}
inline error_t last_error()
{
  return hipGetLastError();
}
inline const char *error_string(error_t e)
{
  return hipGetErrorString(e);
}
} // namespace rt
} // namespace gpu
} // namespace petscmp
