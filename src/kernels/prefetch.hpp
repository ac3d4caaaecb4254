// When the CPU kernels ask for memory ahead of them (software prefetch), shared
// by the backends' streaming kernels.
#pragma once

#include <cstdint>

namespace petscmp {

// Data of kPrefetchFromBytes or more streams from memory: the kernels that walk
// it ask for what lies ahead. Below, it stays in cache from one call to the
// next, and asking costs more than it brings. Zen 5, SSOR sweeps against AIJ's
// inode SOR (bench_sor, in-process): without the prefetches, ex19's Jacobians
// (3.2 MB stored, lossless) 0.92-1.03x instead of 0.78-1.07x, FEM 15^3 nodes
// (3.3 MB, fp32) 1.03x instead of 0.98x; with them, FEM 17^3 (4.9 MB, fp32)
// 1.46x instead of 1.20x, lossless (9.0 MB) 1.63x instead of 1.01x.
inline constexpr std::int64_t kPrefetchFromBytes = std::int64_t{4} << 20;

} // namespace petscmp
