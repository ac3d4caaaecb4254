// When the CPU kernels ask for memory ahead of them (software prefetch) and when
// they write around the cache (streaming stores), shared by the backends'
// streaming kernels.
#pragma once

#include <algorithm>
#include <cstdint>

#include "petscmp/core/segments.hpp"

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

// A product's value stream of kNarrowValueBytes or fewer bytes per entry (fp32,
// fp16, bf16, the fp11 formats, split storage's heads or its first two 16-bit
// planes) is asked for kValuesAheadBytes ahead of the kernel in each plane
// (ValuesAhead). Zen 4, 27-point operator 167^3 (1.5 GB of AIJ), serial, the
// sliced kernel: fp32 39.1 -> 31-32 ms, bf16 32.3 -> 23-25 ms, split2 heads
// 38.4 -> 30.7-32.4 ms. The core's own prefetcher keeps one narrow stream only
// about 16 GB/s fed, two planes of 4 bytes (split2 read whole) or fp64's 8 bytes
// at 22-25 GB/s; asking for those as well made them slower (split2 whole
// 44 -> 49-57 ms), so wider reads are left to the hardware.
inline constexpr int kNarrowValueBytes          = 4;
inline constexpr std::int64_t kValuesAheadBytes = 4096;

// Software prefetch of a block's values ahead of a kernel that walks them in
// order: upto(at) asks for every line of entries up to at + the distance that it
// has not asked for yet, in each plane the read touches. Does nothing where the
// stream is wide or the block's values fit in cache (kPrefetchFromBytes).
class ValuesAhead {
public:
  template <typename T> ValuesAhead(const T *values, std::int64_t count)
  {
    plane_[0] = reinterpret_cast<const char *>(values);
    setup(1, static_cast<int>(sizeof(T)), count);
  }
  template <int Segments, int Read> ValuesAhead(segment_ptr<Segments, Read> values, std::int64_t count)
  {
    for (int s = 0; s < Read; ++s)
      plane_[s] = reinterpret_cast<const char *>(values.p + s * values.plane);
    setup(Read, static_cast<int>(sizeof(*values.p)), count);
  }
  bool active() const { return planes_ > 0; }
  // The entries asked for so far: [.., asked_until()).
  std::int64_t asked_until() const { return next_; }
  void upto(std::int64_t at)
  {
    if (!planes_) return;
    if (next_ < at) next_ = at; // a kernel's first call, or one that skipped ahead
    const std::int64_t target = std::min(at + distance_, count_);
    for (; next_ < target; next_ += line_entries_)
      for (int s = 0; s < planes_; ++s)
        __builtin_prefetch(plane_[s] + next_ * word_, 0, 3);
  }

private:
  void setup(int planes, int word, std::int64_t count)
  {
    const bool narrow = planes * word <= kNarrowValueBytes;
    const bool big    = count * planes * word >= kPrefetchFromBytes;
    planes_           = narrow && big ? planes : 0;
    word_             = word;
    count_            = count;
    distance_         = kValuesAheadBytes / word;
    line_entries_     = 64 / word;
  }
  const char *plane_[4] = {};
  int planes_ = 0, word_ = 1;
  std::int64_t count_ = 0, distance_ = 0, line_entries_ = 1, next_ = 0;
};

} // namespace petscmp
