// The kernels of the GPU backends (cuda_hip/, compiled for CUDA or HIP) and of
// the emulated backend (the same kernels run on the host), over the SELL copy
// of a compact matrix (sell_copy.hpp).
//   spmv: y = A x (z == nullptr) or y = A x + z (z may alias y), reading
//         `read` segments of split storage (0: all; other formats ignore it);
//         with the copy of A^T (make_sell_transpose), y = A^T x (+ z).
//   block_jacobi_apply: y = M^{-1} x or M^{-T} x over apbjacobi's storage
//         (x and y must not alias).
// Every row is summed by one thread in PETSc's order (the reference's order
// for the block-Jacobi apply): bitwise the reference backend's result, in
// every format.
#pragma once

#include <memory>
#include <string>

#include "petscmp/core/block_jacobi.hpp"
#include "petscmp/core/sell_copy.hpp"

namespace petscmp {

// Threads per block of every launch (8 warps of 32; the kernels index lanes
// globally, so any slice height works).
inline constexpr int kThreadsPerBlock = 256;

// How the block-Jacobi apply's threads take their rows (block_jacobi_apply.hpp;
// bitwise the same result, bench_gpu measures each):
//   one:   a row a thread, over the windows of rows of each launch's format;
//   two:   two rows a thread, over the same windows;
//   pairs: the blocks of 16-bit formats two rows a thread, by row pairs
//          where the block size is even (rows out and out + 1 of a block in
//          one 32-bit load); other formats as one.
// The default is pairs: on an H200 (2026-11-28, bench_gpu, 1 GB of fp64
// inverses, alternated in one run) pairs were the fastest of the three in all
// six cases: storage all in fp16 1.40x / 1.66x / 1.95x the fp64 apply (3x3,
// 8x8, 32x32 blocks) against one's 1.17x / 1.42x / 1.48x, mixed formats 0.79x /
// 1.06x / 1.20x against 0.72x / 1.02x / 1.12x.
enum class ApplyRows { one, two, pairs };

// How the SpMV's warps take the long rows of warp-per-row parts (sell_spmv.hpp;
// bitwise the same result, bench_gpu measures both):
//   one:     a row a warp; one lane adds each chunk of 32 products;
//   grouped: kWarpRowGroup (8) rows a warp; lane j adds row j's chunks.
// The default is one, the kernel measured on a GPU (0.86-0.96x cuSPARSE's
// fp64 SpMV on the long-row matrix, ncu: issue- and L2-bound with 9.9 active
// lanes a warp). grouped is built and tested bitwise (emulated backend; the
// device tests run it) but has not run on a GPU yet: the next bench_gpu run
// decides the default.
enum class WarpRows { one, grouped };

namespace emulated {
void spmv(const SellCopy &A, int read, const double *x, const double *z, double *y, WarpRows how = WarpRows::one);
void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose,
                        ApplyRows how = ApplyRows::pairs);
} // namespace emulated

// The GPU backend this library was built with (CUDA or HIP: one per build,
// as PETSc itself is built for one). Pointers are device memory.
namespace gpu {
// "cuda" or "hip".
const char *backend_name();
// Whether a device can run kernels; why not otherwise (no device, no driver).
bool device_available(std::string *why);

// A SellCopy's arrays in device memory (uploaded once; the host copy may go).
class DeviceSell {
public:
  explicit DeviceSell(const SellCopy &A);
  ~DeviceSell();
  DeviceSell(const DeviceSell &)            = delete;
  DeviceSell &operator=(const DeviceSell &) = delete;
  struct Impl;
  const Impl &impl() const { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

void spmv(const DeviceSell &A, int read, const double *x, const double *z, double *y, WarpRows how = WarpRows::one);

// apbjacobi's block storage in device memory.
class DeviceBlockJacobi {
public:
  explicit DeviceBlockJacobi(const BlockJacobiStorage &M);
  ~DeviceBlockJacobi();
  DeviceBlockJacobi(const DeviceBlockJacobi &)            = delete;
  DeviceBlockJacobi &operator=(const DeviceBlockJacobi &) = delete;
  struct Impl;
  const Impl &impl() const { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

void block_jacobi_apply(const DeviceBlockJacobi &M, const double *x, double *y, bool transpose,
                        ApplyRows how = ApplyRows::pairs);

// Device memory for the tests and benchmarks: n doubles, from and to the host.
class DeviceVector {
public:
  explicit DeviceVector(std::size_t n);
  ~DeviceVector();
  DeviceVector(const DeviceVector &)            = delete;
  DeviceVector &operator=(const DeviceVector &) = delete;
  void upload(const double *host);
  void download(double *host) const;
  double *data() { return data_; }
  const double *data() const { return data_; }
  std::size_t size() const { return n_; }

private:
  double *data_  = nullptr;
  std::size_t n_ = 0;
};
// Waits for the device and turns a kernel failure into an exception.
void synchronize();
} // namespace gpu

} // namespace petscmp
