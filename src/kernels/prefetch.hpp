// When the CPU kernels ask for memory ahead of them (software prefetch) and when
// they write around the cache (streaming stores), shared by the backends'
// streaming kernels.
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

// A kernel whose call moves kStreamStoresFromBytes or more (what it reads and
// writes) writes its output with streaming (non-temporal) stores: the output
// would leave the cache before it is read again, and a plain store first reads
// the line it writes (8 bytes more per fp64 value). Twice the 32 MiB of L3 a
// Zen 5 core shares (a guess at "does not stay in cache", not measured at the
// threshold). Zen 5, block-Jacobi apply of 3 x 3 blocks, 1.6 GB of fp64
// inverses, against PCPBJACOBI in the same process (bench_pcapply, four
// processes each way): apbjacobi adaptive 1.65-1.98x with plain stores,
// 1.90-2.43x streaming; fp16 1.74-2.02x / 1.88-2.45x; fp32 1.39-1.59x /
// 1.48-1.92x; fp64 0.81-1.07x / 0.80-1.07x.
inline constexpr std::int64_t kStreamStoresFromBytes = std::int64_t{64} << 20;

} // namespace petscmp
