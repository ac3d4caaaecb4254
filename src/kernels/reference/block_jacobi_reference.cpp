// Reference block-Jacobi apply: the readable ground truth. One block at a
// time, one output entry at a time, summing over the block in increasing order.
#include "../block_jacobi_apply.hpp"
#include "petscmp/core/accessor.hpp"

namespace petscmp {
namespace reference {

void block_jacobi_apply(const BlockJacobiStorage &M, const double *x, double *y, bool transpose)
{
  for (const BlockGroup &g : M.groups) {
    dispatch_format(g.format, [&](auto tag) {
      using S     = typename decltype(tag)::type;
      const int n = g.block_size, nb = g.nblocks;
      const auto E = make_range(M.values.as<S>() + g.byte_offset / static_cast<std::int64_t>(sizeof(S)),
                                static_cast<std::size_t>(nb) * n * n);
      // entry (r, c) of block i of the group
      auto entry = [&](int i, int r, int c) { return E[static_cast<std::size_t>((c * nb + i) * n + r)]; };
      for (int i = 0; i < nb; ++i) {
        const std::int64_t base = g.row_begin + std::int64_t(i) * n;
        for (int out = 0; out < n; ++out) {
          double sum = 0.0;
          for (int k = 0; k < n; ++k)
            sum += (transpose ? entry(i, k, out) : entry(i, out, k)) * x[base + k];
          y[base + out] = sum;
        }
      }
    });
  }
}

} // namespace reference
} // namespace petscmp
