// Summation order inside a row. PETSc's SeqAIJ sums sequentially; when it has
// detected inodes it adds pairs of products (sum += a0*x0 + a1*x1). Lossless
// mode reproduces whichever PETSc uses, so results match AIJ bit for bit, on
// the CPU and on the GPU (kernels/row_sum.hpp).
#pragma once

#include <cstdint>

namespace petscmp {
enum class SumOrder : std::uint8_t { sequential, paired };
} // namespace petscmp
