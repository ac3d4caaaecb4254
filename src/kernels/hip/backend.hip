// The HIP backend: the shared GPU backend (../cuda_hip/) with HIP's runtime.
#include "gpu_runtime.hpp"

#include "../cuda_hip/backend.inc"
