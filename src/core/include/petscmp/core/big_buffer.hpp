// Memory for the large arrays of compact copies (values, column indices).
//
// Why not std::vector: a fresh allocation is paid for at its first touch, one
// page fault per 4 KiB page. In the virtual machines we measure on that costs
// about 12 us per page (3.3 s per GiB), more than building the copy itself.
// Buffers of 2 MiB or more are therefore 2 MiB-aligned and advised for
// transparent huge pages (one fault per 2 MiB: 0.08 s per GiB there), and
// std::vector's zero fill (a second pass over the memory) is optional.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace petscmp {

class BigBuffer {
public:
  static constexpr std::size_t kHugePage = std::size_t(1) << 21;

  BigBuffer() = default;
  BigBuffer(const BigBuffer &o) { copy_from(o); }
  BigBuffer(BigBuffer &&o) noexcept { swap(o); }
  BigBuffer &operator=(BigBuffer o) noexcept
  {
    swap(o);
    return *this;
  }
  ~BigBuffer() { release(); }

  // n bytes of undefined content (the previous memory is reused when large enough; a mapping that must grow keeps
  // its pages, see grow_mapping).
  void allocate(std::size_t n)
  {
    if (n > capacity_) {
      if (mapped_ && n >= kHugePage)
        grow_mapping(n);
      else {
        release();
        if (n >= kHugePage)
          map_huge_pages(n);
        else
          allocate_lines(n);
      }
    }
    size_ = n;
  }
  void allocate_zeroed(std::size_t n)
  {
    allocate(n);
    if (n) std::memset(data_, 0, n);
  }
  void release() noexcept
  {
#if defined(__linux__)
    if (mapped_)
      (void)munmap(data_, capacity_);
    else
#endif
      std::free(data_);
    data_     = nullptr;
    capacity_ = size_ = 0;
    mapped_           = false;
  }
  // Gives back the memory past size() of a mapped buffer, whole 4 KiB pages,
  // where it is over a 16th of the buffer: a buffer of just over 2 MiB holds
  // 4 MiB otherwise, and a copy made of many blocks (ellmp's assembly, a range
  // of rows at a time) up to 2 MiB more per array of each block. A smaller
  // tail is kept: trimming splits its huge page, and products reading the
  // buffer through 4 KiB pages were 5% slower (7-point stencil, Zen 4).
  void trim() noexcept
  {
#if defined(__linux__)
    const std::size_t keep = round_up(size_, 4096);
    if (!mapped_ || keep >= capacity_ || 16 * (capacity_ - keep) < capacity_) return;
    if (keep == 0) {
      release();
      return;
    }
    (void)munmap(data_ + keep, capacity_ - keep);
    capacity_ = keep;
#endif
  }
  std::size_t size() const
  {
    return size_;
  }
  std::size_t capacity() const
  {
    return capacity_;
  }
  unsigned char *data()
  {
    return data_;
  }
  const unsigned char *data() const
  {
    return data_;
  }
  void swap(BigBuffer &o) noexcept
  {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    std::swap(mapped_, o.mapped_);
  }

private:
  static std::size_t round_up(std::size_t n, std::size_t to)
  {
    return (n + to - 1) / to * to;
  }
  void allocate_lines(std::size_t n)
  {
    const std::size_t bytes = round_up(n, 64);
    data_                   = static_cast<unsigned char *>(std::aligned_alloc(64, bytes));
    if (!data_) throw std::bad_alloc();
    capacity_ = bytes;
  }
  // A mapping of its own, not malloc's: memory freed to malloc stays in its
  // heap with the huge-page advice, where later small allocations fault whole
  // 2 MiB pages; a process that made and freed large buffers in turn (repeated
  // block-Jacobi setups) grew by a buffer at each cycle. An unmapped buffer
  // goes back to the system.
  void map_huge_pages(std::size_t n)
  {
#if defined(__linux__)
    const std::size_t bytes = round_up(n, kHugePage), span = bytes + kHugePage;
    void *base = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    // keep the 2 MiB-aligned part, give back the rest
    const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(base), aligned = round_up(begin, kHugePage);
    if (aligned > begin) (void)munmap(base, aligned - begin);
    if (begin + span > aligned + bytes)
      (void)munmap(reinterpret_cast<void *>(aligned + bytes), begin + span - aligned - bytes);
    data_     = reinterpret_cast<unsigned char *>(aligned);
    capacity_ = bytes;
    mapped_   = true;
#if defined(MADV_HUGEPAGE)
    (void)madvise(data_, bytes, MADV_HUGEPAGE); // advice only: failure is harmless
#endif
#else
    const std::size_t bytes = round_up(n, kHugePage);
    data_                   = static_cast<unsigned char *>(std::aligned_alloc(kHugePage, bytes));
    if (!data_) throw std::bad_alloc();
    capacity_ = bytes;
#endif
  }
  // A mapping grown to n bytes: a new 2 MiB-aligned range, the old pages moved to its front (mremap moves page
  // tables: no copy, no fault, their bytes kept), the rest fresh memory paid for only where it is written. A
  // block-Jacobi setup on new values asks for room for every block in fp64 and cuts the buffer to what it wrote:
  // releasing and mapping anew instead faulted the whole room again at every setup (3 x 3 blocks, 66.7 M rows,
  // fp16 inverses: 1.2 GB of fresh pages per Newton step, Zen 5).
  void grow_mapping(std::size_t n)
  {
    BigBuffer old; // unmapped when it goes, unless its pages moved (the content is undefined anyway)
    swap(old);
    map_huge_pages(n);
#if defined(__linux__) && defined(MREMAP_FIXED)
    if (mremap(old.data_, old.capacity_, old.capacity_, MREMAP_MAYMOVE | MREMAP_FIXED, data_) != MAP_FAILED) {
      old.data_   = nullptr; // its range now belongs to this buffer
      old.mapped_ = false;
    }
#endif
  }
  void copy_from(const BigBuffer &o)
  {
    allocate(o.size_);
    if (o.size_) std::memcpy(data_, o.data_, o.size_);
  }
  unsigned char *data_  = nullptr;
  std::size_t size_     = 0;
  std::size_t capacity_ = 0;
  bool mapped_          = false; // data_ is a mapping of capacity_ bytes (else malloc's)
};

// An array of trivially copyable T in a BigBuffer: the few operations the
// builder and the kernels use.
template <typename T> class BigArray {
public:
  BigArray() = default;
  // n elements of undefined content
  void allocate(std::size_t n) { buffer_.allocate(n * sizeof(T)); }
  void assign(std::size_t n, T value)
  {
    allocate(n);
    for (std::size_t i = 0; i < n; ++i)
      data()[i] = value;
  }
  void release() { buffer_.release(); }
  std::size_t size() const { return buffer_.size() / sizeof(T); }
  bool empty() const { return size() == 0; }
  T *data() { return reinterpret_cast<T *>(buffer_.data()); }
  const T *data() const { return reinterpret_cast<const T *>(buffer_.data()); }
  T &operator[](std::size_t i) { return data()[i]; }
  const T &operator[](std::size_t i) const { return data()[i]; }
  T &back() { return data()[size() - 1]; }
  const T &back() const { return data()[size() - 1]; }
  BigBuffer &buffer() { return buffer_; }

private:
  BigBuffer buffer_;
};

// Gives the pages lying wholly inside [begin, end) back to the system while
// the memory stays allocated: they read as zeros afterwards. For a large
// array that will not be read again before it is freed (ellmp's assembly
// matrix, as its rows are stored), so that its memory shrinks as the copy
// grows. Pages shared with anything outside the range are kept.
inline void discard_pages([[maybe_unused]] const void *begin, [[maybe_unused]] const void *end)
{
#if defined(__linux__)
  constexpr std::uintptr_t page = 4096;
  const std::uintptr_t first    = (reinterpret_cast<std::uintptr_t>(begin) + page - 1) & ~(page - 1);
  const std::uintptr_t last     = reinterpret_cast<std::uintptr_t>(end) & ~(page - 1);
  if (last > first) (void)madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
#endif
}

// discard_pages for whole 2 MiB pages only: memory written again afterwards
// comes back as huge pages (4 KiB discards split a huge page, and the pages
// written again then stay small: products over them were 5% slower).
inline void discard_huge_pages([[maybe_unused]] const void *begin, [[maybe_unused]] const void *end)
{
#if defined(__linux__)
  constexpr std::uintptr_t page = std::uintptr_t(1) << 21;
  const std::uintptr_t first    = (reinterpret_cast<std::uintptr_t>(begin) + page - 1) & ~(page - 1);
  const std::uintptr_t last     = reinterpret_cast<std::uintptr_t>(end) & ~(page - 1);
  if (last > first) (void)madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
#endif
}

// Buffers of a copy being replaced, lent to the copy that replaces it: a
// rebuild after a value change then writes into memory that is already
// mapped (no page faults), and the memory in use does not double.
class BufferPool {
public:
  void give(BigBuffer &b)
  {
    if (!b.capacity()) return;
    BigBuffer kept;
    kept.swap(b);
    const std::size_t capacity = kept.capacity();
    free_.emplace(capacity, std::move(kept));
  }
  // target holds n bytes (undefined content): the smallest pooled buffer that
  // is large enough, else a new allocation. A map by capacity: a copy of
  // thousands of blocks lends thousands of buffers.
  void lend(BigBuffer &target, std::size_t n)
  {
    const auto best = free_.lower_bound(n);
    if (best != free_.end()) {
      target.swap(best->second);
      free_.erase(best);
    }
    target.allocate(n);
  }

private:
  std::multimap<std::size_t, BigBuffer> free_;
};

} // namespace petscmp
