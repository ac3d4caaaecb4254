// BigBuffer: alignment, reuse, moves, and that a released huge-page buffer
// goes back to the system (repeated block-Jacobi setups grew by one fp64
// inverse array per cycle while such buffers were malloc's memory).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <utility>

#if defined(__linux__)
#include <unistd.h>
#endif

#include "petscmp/core/big_buffer.hpp"

using petscmp::BigArray;
using petscmp::BigBuffer;

namespace {

bool aligned_to(const void *p, std::uintptr_t a)
{
  return reinterpret_cast<std::uintptr_t>(p) % a == 0;
}

TEST(BigBuffer, AlignmentAndReuse)
{
  BigBuffer small, large;
  small.allocate(1000);
  large.allocate(BigBuffer::kHugePage + 1);
  EXPECT_TRUE(aligned_to(small.data(), 64));
  EXPECT_TRUE(aligned_to(large.data(), BigBuffer::kHugePage));
  EXPECT_EQ(large.capacity(), 2 * BigBuffer::kHugePage);
  unsigned char *before = large.data();
  large.allocate(100); // fits: the same memory
  EXPECT_EQ(large.data(), before);
  EXPECT_EQ(large.size(), 100u);
  large.allocate_zeroed(BigBuffer::kHugePage);
  for (std::size_t i = 0; i < large.size(); i += 4096)
    ASSERT_EQ(large.data()[i], 0);
}

TEST(BigBuffer, MovesAndCopiesKeepTheBytes)
{
  BigArray<double> a;
  a.allocate(std::size_t(1) << 19); // 4 MiB: a mapping of its own
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<double>(i);
  BigArray<double> copy = a;
  BigArray<double> moved(std::move(a));
  EXPECT_EQ(a.size(), 0u);
  ASSERT_EQ(moved.size(), copy.size());
  for (std::size_t i = 0; i < copy.size(); i += 997) {
    EXPECT_EQ(copy[i], static_cast<double>(i));
    EXPECT_EQ(moved[i], static_cast<double>(i));
  }
  EXPECT_NE(copy.data(), moved.data());
}

#if defined(__linux__)
long resident_kib()
{
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

TEST(BigBuffer, ReleasedMemoryGoesBackToTheSystem)
{
  const std::size_t bytes = std::size_t(64) << 20;
  long grown              = 0;
  for (int cycle = 0; cycle < 4; ++cycle) {
    const long before = resident_kib();
    {
      BigBuffer b;
      b.allocate(bytes);
      for (std::size_t i = 0; i < bytes; i += 4096)
        b.data()[i] = 1;
      grown = std::max(grown, resident_kib() - before);
    }
    // within 8 MiB of where it started: the 64 MiB are gone
    EXPECT_LT(resident_kib() - before, 8 * 1024) << "cycle " << cycle;
  }
  EXPECT_GE(grown, 56 * 1024); // control: the buffer really was resident
}
#endif

} // namespace

// discard_pages gives back whole pages inside the range only: they read as zeros, and the bytes of pages the range
// only touches (here its first and last ones) keep their values.
TEST(DiscardPages, WholePagesInsideTheRangeOnly)
{
  BigBuffer b;
  b.allocate(BigBuffer::kHugePage); // mapped, 2 MiB-aligned: page boundaries are known
  auto *bytes = static_cast<unsigned char *>(b.data());
  std::memset(bytes, 0x5a, b.size());
  const std::size_t from = 3 * 4096 + 100, to = 40 * 4096 + 7; // pages 4 .. 39 lie wholly inside
  petscmp::discard_pages(bytes + from, bytes + to);
  std::size_t kept = 0, zero = 0;
  for (std::size_t i = 0; i < b.size(); ++i)
    (bytes[i] == 0x5a ? kept : zero) += 1;
#if defined(__linux__)
  EXPECT_EQ(zero, std::size_t(36) * 4096);
  for (std::size_t i = 4 * 4096; i < 40 * 4096; ++i)
    ASSERT_EQ(bytes[i], 0) << "byte " << i << " of a page given back";
#endif
  for (std::size_t i = 0; i < 4 * 4096; ++i)
    ASSERT_EQ(bytes[i], 0x5a) << "byte " << i << " before the range's first whole page changed";
  for (std::size_t i = 40 * 4096; i < b.size(); ++i)
    ASSERT_EQ(bytes[i], 0x5a) << "byte " << i << " after the range's last whole page changed";
  EXPECT_EQ(kept + zero, b.size());
}

#if defined(__linux__)
// A mapped buffer that grows keeps its pages: its bytes are still there (moved, not copied or faulted again), and
// only what is written past them becomes resident. Releasing and mapping anew (before) lost the bytes and faulted
// the written part again.
TEST(BigBuffer, GrowingKeepsThePages)
{
  const std::size_t small = std::size_t(32) << 20, large = std::size_t(128) << 20;
  BigBuffer b;
  b.allocate(small);
  for (std::size_t i = 0; i < small; i += 4096)
    b.data()[i] = static_cast<unsigned char>(1 + i / 4096 % 251);
  const long before = resident_kib();
  b.allocate(large);
  EXPECT_TRUE(aligned_to(b.data(), BigBuffer::kHugePage));
  EXPECT_EQ(b.size(), large);
  for (std::size_t i = 0; i < small; i += 4096)
    ASSERT_EQ(b.data()[i], static_cast<unsigned char>(1 + i / 4096 % 251)) << "byte " << i << " of the kept pages";
  // nothing new is resident until written (within 4 MiB: the huge-page rounding of the old and new ends)
  EXPECT_LT(resident_kib() - before, 4 * 1024);
  std::memset(b.data() + small, 7, large - small);
  EXPECT_EQ(b.data()[large - 1], 7);
  EXPECT_EQ(b.data()[small - 4096], static_cast<unsigned char>(1 + (small / 4096 - 1) % 251));
}
#endif
