// The CUDA names of the few runtime calls the shared GPU backend makes
// (../cuda_hip/backend.inc); hip/gpu_runtime.hpp maps the same names to HIP.
#pragma once

#include <cuda_runtime.h>

#define PETSCMP_GPU_BACKEND_NAME "cuda"

// Orders a warp's shared-memory writes before its lanes read them (the
// warp-per-row kernel's two phases).
#define PETSCMP_SYNC_WARP() __syncwarp()

namespace petscmp {
namespace gpu {
namespace rt {
using error_t                    = cudaError_t;
inline constexpr error_t success = cudaSuccess;
inline error_t allocate(void **p, std::size_t bytes)
{
  return cudaMalloc(p, bytes);
}
inline error_t release(void *p)
{
  return cudaFree(p);
}
inline error_t to_device(void *device, const void *host, std::size_t bytes)
{
  return cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
}
inline error_t to_host(void *host, const void *device, std::size_t bytes)
{
  return cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
}
inline error_t device_count(int *n)
{
  return cudaGetDeviceCount(n);
}
inline error_t synchronize()
{
  return cudaDeviceSynchronize();
}
inline error_t last_error()
{
  return cudaGetLastError();
}
inline const char *error_string(error_t e)
{
  return cudaGetErrorString(e);
}
} // namespace rt
} // namespace gpu
} // namespace petscmp
