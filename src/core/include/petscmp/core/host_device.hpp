// Marks the functions that host and device code share: the scalar decoders,
// the accessor's reads and the row sums. The CPU compilers see plain inline
// functions; nvcc and hipcc compile them for both sides, so a GPU kernel reads
// a stored value exactly as the CPU kernels do.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define PETSCMP_HOST_DEVICE __host__ __device__
#else
#define PETSCMP_HOST_DEVICE
#endif

// Defined while a GPU compiler compiles the device side of a function (the
// host-side code paths, SIMD intrinsics and memcpy, are left out there).
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define PETSCMP_DEVICE_PASS 1
#endif

// Full unrolling of a short constant-count loop in device code (the CPU
// compilers are left to their own choice, and GCC would warn about the pragma).
#if defined(PETSCMP_DEVICE_PASS)
#define PETSCMP_DEVICE_UNROLL _Pragma("unroll")
#else
#define PETSCMP_DEVICE_UNROLL
#endif
