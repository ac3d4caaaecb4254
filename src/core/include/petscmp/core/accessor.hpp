// The memory accessor: a range over values stored in format Storage that reads
// (and, for builders, writes) them as the arithmetic type Arithmetic (fp64).
//
// Following the accessor idea, the arithmetic a kernel performs is decoupled
// from the format the bytes have in memory: a kernel is written once against
// `range[i]` and instantiated per storage type; conversion happens in registers
// on load. No kernel converts values by hand.
#pragma once

#include <cstddef>
#include <type_traits>

#include "petscmp/core/formats.hpp"
#include "petscmp/core/segments.hpp"

namespace petscmp {

template <typename Storage, typename Arithmetic = double> class reduced_range {
public:
  using storage_type    = Storage;
  using arithmetic_type = Arithmetic;
  using pointer         = storage_pointer_t<Storage>; // a plain pointer, or split storage's segment_ptr

  PETSCMP_HOST_DEVICE constexpr reduced_range(pointer data, std::size_t length) : data_(data), length_(length) {}

  // Reads element i, converted exactly to the arithmetic type.
  PETSCMP_HOST_DEVICE Arithmetic operator[](std::size_t i) const { return static_cast<Arithmetic>(decode(data_[i])); }
  PETSCMP_HOST_DEVICE constexpr std::size_t length() const { return length_; }
  // A sub-range starting at `offset` (the values of one row, say).
  PETSCMP_HOST_DEVICE constexpr reduced_range subrange(std::size_t offset, std::size_t length) const
  {
    return reduced_range(data_ + offset, length);
  }
  PETSCMP_HOST_DEVICE constexpr pointer data() const { return data_; }
  // Reads up to 8 elements [offset, offset + n) into out[0..n): one SIMD
  // conversion where the CPU has it, never reading past the range.
  void read_upto8(std::size_t offset, unsigned n, Arithmetic *out) const { decode_upto8(data_ + offset, n, out); }
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  // Reads the lanes of mask m of [offset, offset + 8) into a register (others 0).
  __m512d read8(std::size_t offset, __mmask8 m) const
  {
    return decode8(data_ + offset, m);
  }
#endif
  // Elements [offset, offset + n) as arithmetic values: a pointer into the
  // storage itself when it already holds Arithmetic (fp64: no copy), else
  // `scratch` (room for n values) filled by one bulk conversion (decode_n).
  const Arithmetic *read_n(std::size_t offset, std::size_t n, Arithmetic *scratch) const
  {
    if constexpr (std::is_same_v<Storage, Arithmetic>) {
      (void)n;
      (void)scratch;
      return data_ + offset;
    } else {
      decode_n(data_ + offset, n, scratch);
      return scratch;
    }
  }

private:
  pointer data_;
  std::size_t length_;
};

// A writable range: stores arithmetic values rounded once into Storage.
template <typename Storage, typename Arithmetic = double> class reduced_writer {
public:
  constexpr reduced_writer(Storage *data, std::size_t length) : data_(data), length_(length) {}
  void store(std::size_t i, Arithmetic v) const { data_[i] = encode_as<Storage>(static_cast<double>(v)); }
  Arithmetic load(std::size_t i) const { return static_cast<Arithmetic>(decode(data_[i])); }
  constexpr std::size_t length() const { return length_; }

private:
  Storage *data_;
  std::size_t length_;
};

template <typename Storage>
PETSCMP_HOST_DEVICE constexpr reduced_range<Storage> make_range(const Storage *data, std::size_t length)
{
  return reduced_range<Storage>(data, length);
}
template <int Segments, int Read>
PETSCMP_HOST_DEVICE constexpr reduced_range<segment_read<Segments, Read>> make_range(segment_ptr<Segments, Read> data,
                                                                                     std::size_t length)
{
  return reduced_range<segment_read<Segments, Read>>(data, length);
}

} // namespace petscmp
