// The CUDA backend: the shared GPU backend (../cuda_hip/) with CUDA's runtime.
#include "gpu_runtime.hpp"

#include "../cuda_hip/backend.inc"
