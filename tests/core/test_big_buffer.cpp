// BigBuffer: alignment, reuse, moves, and that a released huge-page buffer
// goes back to the system (repeated block-Jacobi setups grew by one fp64
// inverse array per cycle while such buffers were malloc's memory).
#include <gtest/gtest.h>

#include <cstdint>
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
