// The storage builder: the only place where formats are chosen.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <utility>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/compact_csr.hpp"
#include "petscmp/core/encode_simd.hpp"
#include "petscmp/core/omp.hpp"

namespace petscmp {

namespace {

const char *const kModeNames[kStorageModeCount] = {"lossless",  "fp32",     "fp16",       "bf16",   "fp11_20", "fp11_4",
                                                   "tolerance", "rowsplit", "entrysplit", "split2", "split4"};

// Ladders, narrowest first; among equal sizes the format with more significand
// bits comes first.
const Format kLosslessLadder[]  = {Format::fp16, Format::bf16, Format::fp32, Format::fp64};
const Format kToleranceLadder[] = {Format::fp16, Format::bf16,    Format::fp11_4,
                                   Format::fp32, Format::fp11_20, Format::fp64};

// The next wider format a uniform lossy mode falls back to for one row.
Format wider_format(Format f)
{
  switch (f) {
  case Format::fp16:
  case Format::bf16:
    return Format::fp32;
  case Format::fp11_4:
    return Format::fp11_20;
  default:
    return Format::fp64;
  }
}

Format uniform_format(StorageMode m)
{
  switch (m) {
  case StorageMode::fp32:
    return Format::fp32;
  case StorageMode::fp16:
    return Format::fp16;
  case StorageMode::bf16:
    return Format::bf16;
  case StorageMode::fp11_20:
    return Format::fp11_20;
  case StorageMode::fp11_4:
    return Format::fp11_4;
  default:
    return Format::fp64;
  }
}

// A row's values, possibly spread over several parts.
template <typename Index> class RowValues {
public:
  RowValues(const std::vector<CsrView<Index>> &parts, Index row) : parts_(parts), row_(row) {}
  template <typename Pred> bool all_of(Pred pred) const
  {
    for (const auto &p : parts_)
      for (Index k = p.rowptr[row_]; k < p.rowptr[row_ + 1]; ++k)
        if (!pred(p.values[k])) return false;
    return true;
  }
  // pred(values, count, end) over runs of at most 8 consecutive values of the
  // row; end: the end of the part's values (what may be read past the row)
  template <typename Pred> bool all_chunks_of8(Pred pred) const
  {
    for (const auto &p : parts_) {
      const double *end = p.values + p.rowptr[p.nrows];
      for (Index k = p.rowptr[row_]; k < p.rowptr[row_ + 1]; k += 8)
        if (!pred(p.values + k, static_cast<unsigned>(std::min<Index>(8, p.rowptr[row_ + 1] - k)), end)) return false;
    }
    return true;
  }
  std::int64_t count() const
  {
    std::int64_t n = 0;
    for (const auto &p : parts_)
      n += p.rowptr[row_ + 1] - p.rowptr[row_];
    return n;
  }
  template <typename Pred> std::int64_t count_if(Pred pred) const
  {
    std::int64_t n = 0;
    for (const auto &p : parts_)
      for (Index k = p.rowptr[row_]; k < p.rowptr[row_ + 1]; ++k)
        n += pred(p.values[k]) ? 1 : 0;
    return n;
  }

private:
  const std::vector<CsrView<Index>> &parts_;
  Index row_;
};

// Stored exactly, or rounded within the format's unit roundoff. Non-finite
// values must be stored exactly (so NaN/Inf stay what they are).
bool stores_within_roundoff(Format f, double v)
{
  const Conversion c = classify_conversion(f, v);
  return c == Conversion::exact || c == Conversion::rounded;
}

// Whether fp32 holds v bit for bit, the lossless ladder's test
// (ExactIn): the round trip through fp32 gives back v's bits.
inline bool exact_in_fp32(double v)
{
  return double_bits(static_cast<double>(static_cast<float>(v))) == double_bits(v);
}

#if defined(PETSCMP_HAVE_AVX512_DECODE)
// The lanes m of x (finite values) that fp32 does not hold bit for bit (exact_in_fp32).
inline __mmask8 lanes_not_exact_in_fp32(__m512d x, __mmask8 m)
{
  const __m512d back = _mm512_maskz_cvtps_pd(0xff, _mm512_maskz_cvtpd_ps(0xff, x));
  return _mm512_mask_cmpneq_epi64_mask(m, _mm512_castpd_si512(back), _mm512_castpd_si512(x));
}
#endif

// Which of fp16, bf16 and fp32 hold every value seen so far bit for bit: the
// lossless ladder in one pass. Finite values take a fast path (one conversion
// to fp32, then bit tests and, for fp16, a hardware round trip where there is
// one); NaN and Inf take classify_conversion's definition.
struct ExactIn {
  bool fp16 = true, bf16 = true, fp32 = true;
  bool any() const { return fp32; } // fp16 and bf16 imply fp32
  void add(double v)
  {
    if (!exact_in_fp32(v)) {
      fp16 = bf16 = fp32 = false;
      return;
    }
    const float f = static_cast<float>(v);
    if (!std::isfinite(f)) {
      fp16 = fp16 && classify_conversion(Format::fp16, v) == Conversion::exact;
      bf16 = bf16 && classify_conversion(Format::bf16, v) == Conversion::exact;
      return;
    }
    bf16 = bf16 && (float_bits(f) & 0xffffu) == 0;
    if (fp16) fp16 = double_bits(decode(encode_as<fp16_t>(v))) == double_bits(v);
  }
  // add() of n <= 8 consecutive values, 8 at once where AVX-512 is there
  void add_upto8(const double *v, unsigned n, [[maybe_unused]] const double *end)
  {
#if defined(PETSCMP_HAVE_AVX512_DECODE)
    const __mmask8 m = first_lanes(n);
    const __m512d x  = simd::load_upto8(v, n, end);
    if (!simd::nonfinite_lanes(x, m)) {
      if (lanes_not_exact_in_fp32(x, m)) {
        fp16 = bf16 = fp32 = false;
        return;
      }
      const __m256 f     = _mm512_maskz_cvtpd_ps(0xff, x);
      const __m256i bits = _mm256_castps_si256(f);
      if (bf16) bf16 = !_mm256_mask_test_epi32_mask(m, bits, _mm256_set1_epi32(0xffff));
      if (fp16) {
        const __m256 back =
            _mm256_maskz_cvtph_ps(0xff, _mm256_maskz_cvtps_ph(0xff, f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        fp16 = !_mm256_mask_cmpneq_epi32_mask(m, _mm256_castps_si256(back), bits);
      }
      return;
    }
#endif
    for (unsigned i = 0; i < n && any(); ++i)
      add(v[i]);
  }
  Format narrowest() const
  {
    return fp16 ? Format::fp16 : bf16 ? Format::bf16 : fp32 ? Format::fp32 : Format::fp64;
  }
};

template <typename Index> Format lossless_row_format(const RowValues<Index> &row)
{
  ExactIn exact;
  row.all_chunks_of8([&exact](const double *v, unsigned n, const double *end) {
    exact.add_upto8(v, n, end);
    return exact.any();
  });
  return exact.narrowest();
}

// stores_within_roundoff, with the common case decided without converting:
// a value in f's normal range is rounded within f's unit roundoff.
bool within_roundoff(Format f, double v, double lo, double hi)
{
  const double a = std::fabs(v);
  return (a >= lo && a <= hi) || stores_within_roundoff(f, v);
}

// within_roundoff of n <= 8 consecutive values (zero is exact in every format)
bool all_within_roundoff(Format f, const double *v, unsigned n, [[maybe_unused]] const double *end, double lo,
                         double hi)
{
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  const __mmask8 m = first_lanes(n);
  const __m512d x = simd::load_upto8(v, n, end), a = _mm512_abs_pd(x);
  const __mmask8 in_range =
      _mm512_cmp_pd_mask(a, _mm512_set1_pd(lo), _CMP_GE_OQ) & _mm512_cmp_pd_mask(a, _mm512_set1_pd(hi), _CMP_LE_OQ);
  const __mmask8 zero = _mm512_cmp_pd_mask(x, _mm512_setzero_pd(), _CMP_EQ_OQ);
  const unsigned rest = m & ~(in_range | zero);
  if (!rest) return true;
  for (unsigned i = 0; i < n; ++i)
    if (((rest >> i) & 1u) && !within_roundoff(f, v[i], lo, hi)) return false;
  return true;
#else
  for (unsigned i = 0; i < n; ++i)
    if (!within_roundoff(f, v[i], lo, hi)) return false;
  return true;
#endif
}

// Whether f stores every value of the row within its unit roundoff.
template <typename Index> bool row_within_roundoff(const RowValues<Index> &row, Format f)
{
  const double lo = min_normal(f), hi = max_finite(f);
  return row.all_chunks_of8([f, lo, hi](const double *v, unsigned n, const double *end) {
    return all_within_roundoff(f, v, n, end, lo, hi);
  });
}

template <typename Index> Format uniform_row_format(const RowValues<Index> &row, Format f)
{
  for (; f != Format::fp64; f = wider_format(f))
    if (row_within_roundoff(row, f)) return f;
  return Format::fp64;
}

// A format qualifies when it stores every value of the row within its unit
// roundoff and within the tolerance. Where the unit roundoff is itself within
// the tolerance, the first condition implies the second, and the 8-wide range
// test of the uniform modes decides without converting a value.
template <typename Index> Format tolerance_row_format(const RowValues<Index> &row, double tol)
{
  static const auto roundoff = [] { // once, not per row
    std::array<double, std::size(kToleranceLadder)> u{};
    for (std::size_t i = 0; i < u.size(); ++i)
      u[i] = unit_roundoff(kToleranceLadder[i]);
    return u;
  }();
  for (std::size_t i = 0; i < std::size(kToleranceLadder); ++i) {
    const Format f = kToleranceLadder[i];
    if (f == Format::fp64) break;
    if (roundoff[i] <= tol ? row_within_roundoff(row, f) : row.all_of([f, tol](double v) {
          return stores_within_roundoff(f, v) && relative_error(f, v) <= tol;
        }))
      return f;
  }
  return Format::fp64;
}

// Thesis row-wise split: fp32 when at least `fraction` of the row lies in
// (-r, r) and every value fits fp32 (we also refuse rows that would underflow).
template <typename Index> Format rowsplit_row_format(const RowValues<Index> &row, double r, double fraction)
{
  const std::int64_t n = row.count();
  if (n == 0) return Format::fp64;
  const std::int64_t inside = row.count_if([r](double v) { return std::fabs(v) < r; });
  if (static_cast<double>(inside) < fraction * static_cast<double>(n)) return Format::fp64;
  return row_within_roundoff(row, Format::fp32) ? Format::fp32 : Format::fp64;
}

// The format of one row in mode opts.mode (r: rowsplit's range).
template <typename Index> Format row_format(const RowValues<Index> &row, const StorageOptions &opts, double r)
{
  switch (opts.mode) {
  case StorageMode::lossless:
    return lossless_row_format(row);
  case StorageMode::tolerance:
    return tolerance_row_format(row, opts.tolerance);
  case StorageMode::rowsplit:
    return rowsplit_row_format(row, r, opts.row_fraction);
  case StorageMode::entrysplit:
    throw StorageError("petscmp: entrysplit chooses formats per entry, not per row");
  default:
    return uniform_row_format(row, uniform_format(opts.mode));
  }
}

// The narrowest format that holds what a and b hold: their first common format
// on the wider_format chains (fp16 and bf16: fp32; fp11_4 and fp32: fp64).
Format join_formats(Format a, Format b)
{
  for (Format x = a;; x = wider_format(x)) {
    for (Format y = b;; y = wider_format(y)) {
      if (x == y) return x;
      if (y == Format::fp64) break;
    }
    if (x == Format::fp64) return Format::fp64;
  }
}

// The rows in a group of StorageOptions::format_group rows (1: none).
int format_group_size(const StorageOptions &opts)
{
  return opts.mode == StorageMode::rowsplit ? 1 : std::max(opts.format_group, 1);
}

// Rows [first, end) of one format group, f[0 .. end - first) their own formats
// on entry, the formats they are stored in on return (see
// StorageOptions::format_group). The rule looks only at the rows' own formats
// (and their fixed pattern): a group's formats change only where a row's own
// format changes, which is what lets a value-only refill confirm a group by
// confirming its rows (RowFormatCheck). No limit on the bytes it adds: ex19's
// lossless Jacobian 2 (fp16-exact rows in fp64 nodes) takes 9.21 bytes a
// nonzero joined against 9.16 in pieces, and sweeps 1.2x faster.
template <typename Index>
void join_group_formats(const std::vector<CsrView<Index>> &parts, Index first, Index end, Format *f)
{
  const Index n = end - first;
  if (n < 2 || std::all_of(f + 1, f + n, [&](Format g) { return g == f[0]; })) return;
  Format join = f[0];
  for (Index k = 1; k < n; ++k)
    join = join_formats(join, f[k]);
  if (std::find(f, f + n, join) == f + n) return;
  for (const auto &p : parts)
    for (Index i = first + 1; i < end; ++i)
      if (!same_pattern(p, first, i)) return;
  std::fill(f, f + n, join);
}

// formats: each row's own format on entry; the formats of the format groups on return.
template <typename Index>
void join_format_groups(const std::vector<CsrView<Index>> &parts, const StorageOptions &opts,
                        std::vector<Format> &formats)
{
  const Index group = static_cast<Index>(format_group_size(opts)), nrows = static_cast<Index>(formats.size());
  if (group < 2) return;
  for (Index first = 0; first < nrows; first += group)
    join_group_formats(parts, first, std::min<Index>(first + group, nrows), formats.data() + first);
}

template <typename Index> double mean_abs(const std::vector<CsrView<Index>> &parts)
{
  AbsSum total;
  for (const auto &p : parts) {
    const AbsSum s = abs_value_sum(p);
    total.sum += s.sum;
    total.count += s.count;
  }
  return total.count ? total.sum / static_cast<double>(total.count) : 0.0;
}

struct Run {
  Format format;
  std::int64_t begin, end;
};

// The row lists of a replaced copy's grouped blocks, lent to the new copy's.
class GroupedSpares {
public:
  void give(std::vector<std::int32_t> &rows, std::vector<std::int64_t> &offsets)
  {
    if (rows.capacity()) rows_.push_back(std::move(rows));
    if (offsets.capacity()) offsets_.push_back(std::move(offsets));
  }
  // The largest spare arrays (a copy has few grouped blocks: one per format).
  void take(std::vector<std::int32_t> &rows, std::vector<std::int64_t> &offsets)
  {
    take_largest(rows_, rows);
    take_largest(offsets_, offsets);
  }

private:
  template <typename T> static void take_largest(std::vector<std::vector<T>> &from, std::vector<T> &to)
  {
    if (from.empty()) return;
    auto largest = std::max_element(from.begin(), from.end(),
                                    [](const auto &a, const auto &b) { return a.capacity() < b.capacity(); });
    to           = std::move(*largest);
    from.erase(largest);
    to.clear();
  }
  std::vector<std::vector<std::int32_t>> rows_;
  std::vector<std::vector<std::int64_t>> offsets_;
};

// Each row's format: one per row, or one for every row (a uniform guess, with
// no array of a byte per row to allocate and fill at each build).
struct RowFormats {
  const std::vector<Format> *per_row = nullptr;
  Format all                         = Format::fp64;
  Format operator[](std::int64_t row) const { return per_row ? (*per_row)[static_cast<std::size_t>(row)] : all; }
};

// Runs of consecutive rows with one format; empty rows join the current run
// (leading empty rows join the first run that has values). Calls
// on_new_run(format, row) for the first row of each run and on_extend(format,
// row) for each row a run takes after it (its format replaces the run's when
// only empty rows came before).
template <typename Index, typename NewRun, typename Extend>
void scan_runs(const CsrView<Index> &csr, const RowFormats &formats, NewRun on_new_run, Extend on_extend)
{
  bool has_values = false; // whether the last run holds a nonempty row
  Format current  = Format::fp64;
  for (Index i = 0; i < csr.nrows; ++i) {
    const bool empty = csr.rowptr[i + 1] == csr.rowptr[i];
    const Format f   = formats[i];
    if (i == 0 || (!empty && has_values && f != current)) {
      on_new_run(f, i);
      current    = f;
      has_values = !empty;
    } else if (empty || f == current) {
      on_extend(current, i);
      has_values = has_values || !empty;
    } else { // only empty rows so far: take this row's format
      current = f;
      on_extend(current, i);
      has_values = true;
    }
  }
}

template <typename Index> std::vector<Run> find_runs(const CsrView<Index> &csr, const RowFormats &formats)
{
  std::vector<Run> runs;
  if (!formats.per_row) { // one format: one run (no pass over the rows)
    if (csr.nrows > 0) runs.push_back({formats.all, 0, csr.nrows});
    return runs;
  }
  scan_runs(
      csr, formats,
      [&](Format f, Index i) {
        runs.push_back({f, i, i + 1});
      },
      [&](Format f, Index i) {
        runs.back().format = f;
        runs.back().end    = i + 1;
      });
  return runs;
}

// How many runs find_runs would return, without making them (a matrix whose
// rows alternate formats has millions), and the nonempty rows.
template <typename Index>
std::int64_t count_runs(const CsrView<Index> &csr, const RowFormats &formats, std::int64_t &nonempty)
{
  nonempty = 0;
  for (Index i = 0; i < csr.nrows; ++i)
    nonempty += csr.rowptr[i + 1] > csr.rowptr[i];
  if (!formats.per_row) return csr.nrows > 0 ? 1 : 0;
  std::int64_t runs = 0;
  scan_runs(
      csr, formats, [&](Format, Index) { ++runs; }, [](Format, Index) {});
  return runs;
}

// Block shapes: which rows each block holds and where their values go in CSR
// order. The values are written afterwards, once, in the block's final layout.
template <typename Index> void shape_runs(const CsrView<Index> &csr, const std::vector<Run> &runs, CompactCsr &out)
{
  for (const Run &run : runs) {
    RowBlock block;
    block.format     = run.format;
    block.row_begin  = run.begin;
    block.row_end    = run.end;
    block.value_base = csr.rowptr[run.begin];
    block.nnz        = csr.rowptr[run.end] - csr.rowptr[run.begin];
    out.blocks.push_back(std::move(block));
  }
  out.all_rows_covered = true;
}

// One block per format of the nonempty rows in that format, in one pass over
// the rows into arrays of their final size (taken from spare when it has some:
// the arrays of the copy being replaced, already mapped).
template <typename Index>
void shape_grouped(const CsrView<Index> &csr, const RowFormats &formats, CompactCsr &out, GroupedSpares &spare)
{
  if (csr.nrows > std::numeric_limits<std::int32_t>::max())
    throw StorageError("petscmp: more than 2^31 local rows need the grouped layout, which indexes rows in 32 bits");
  std::int64_t rows_of[kFormatCount] = {};
  for (Index i = 0; i < csr.nrows; ++i)
    rows_of[static_cast<int>(formats[i])] += csr.rowptr[i + 1] > csr.rowptr[i];
  RowBlock blocks[kFormatCount];
  for (int fi = 0; fi < kFormatCount; ++fi) {
    if (!rows_of[fi]) continue;
    blocks[fi].format = static_cast<Format>(fi);
    spare.take(blocks[fi].rows, blocks[fi].value_offsets);
    blocks[fi].rows.resize(static_cast<std::size_t>(rows_of[fi]));
    blocks[fi].value_offsets.resize(static_cast<std::size_t>(rows_of[fi]) + 1);
    blocks[fi].value_offsets[0] = 0;
  }
  std::int64_t next[kFormatCount] = {};
  for (Index i = 0; i < csr.nrows; ++i) {
    const Index n = csr.rowptr[i + 1] - csr.rowptr[i];
    if (n == 0) continue;
    const int fi           = static_cast<int>(formats[i]);
    RowBlock &b            = blocks[fi];
    const std::int64_t k   = next[fi]++;
    b.rows[k]              = static_cast<std::int32_t>(i);
    b.value_offsets[k + 1] = b.value_offsets[k] + n;
  }
  for (RowBlock &b : blocks) {
    if (b.rows.empty()) continue;
    b.nnz = b.value_offsets.back();
    out.blocks.push_back(std::move(b));
  }
  out.all_rows_covered = false;
}

inline std::int64_t shifted_slice_count(const RowBlock &b)
{
  std::int64_t count = 0;
  for (std::int64_t q = 0; q < b.slice_count(); ++q)
    count += b.shifted_slice(q);
  return count;
}

// Rows of block b in slices of one kind (narrow_slice, patched_slice).
inline std::int64_t slice_rows_of_kind(const RowBlock &b, bool (RowBlock::*kind)(std::int64_t) const)
{
  std::int64_t rows = 0;
  for (std::int64_t q = 0; q < b.slice_count(); ++q)
    if ((b.*kind)(q)) rows += std::min<std::int64_t>(kSliceRows, b.row_count() - q * kSliceRows);
  return rows;
}

// Bytes of indices a product reads for one block: the master's columns and
// row pointers (CSR order, plus the row list and offsets when grouped), or
// the slices' own columns, row lengths and offsets (sliced).
template <typename Index> std::int64_t block_index_bytes(const RowBlock &b)
{
  const std::int64_t rows = b.row_count(), list = b.grouped() ? rows * 4 : 0;
  if (b.node_layout()) return static_cast<std::int64_t>(b.nodes.size() * sizeof(NodeInfo) + b.node_cols.size()) + list;
  if (b.sliced()) { // a shifted slice's row lengths are not read (one length, no padding)
    const std::int64_t gathered = b.slice_count() - shifted_slice_count(b);
    return static_cast<std::int64_t>(b.cols.size()) * 4 + gathered * kSliceRows * 4 + (b.slice_count() + 1) * 16 + list;
  }
  if (b.grouped()) return static_cast<std::int64_t>(sizeof(Index)) * b.nnz + rows * (4 + 8 + 2 * sizeof(Index));
  return static_cast<std::int64_t>(sizeof(Index)) * (b.nnz + rows + 1);
}

// Slices of a listed block are read in groups of kAheadGroupSlices (256 rows:
// a window the automatic layout sorts by length holds consecutive matrix
// rows, so its entries are one span of the CSR arrays, read in a scattered
// order). ListedRowsAhead asks for the next group's span, line by line, spread
// over the slices of the current group, wherever that span is at most twice
// the group's entries and short enough to wait in L2; it returns false where
// not, and the caller may ask row by row. The values are asked for so
// (write_values), and the columns (slice_shape_of, shape_slices).
// Zen 5, in one process, alternated: mixed operator 160^3 (all windows
// sorted), value-only refill fp32 0.136 -> 0.060 s, lossless 0.139 -> 0.068
// s, fp16 0.101 -> 0.049 s (before: row by row, kListedPrefetchSlices ahead);
// one group further ahead, or the span asked for at once, no faster. Where a
// grouped format's rows lie among another's, the other rows' lines are asked
// for too, and still the misses cost more: lossless, one row in 8, 3 or 2 in
// fp32, refills 0.33 / 0.18 / 0.17 s with spans of at most 1.125 times the
// entries, 0.12 / 0.13 / 0.13 s with twice.
constexpr std::int64_t kAheadGroupSlices = 256 / kSliceRows;
constexpr std::int64_t kAheadMaxSpan     = std::int64_t(128) << 10; // bytes

// Whether the span [lo, hi) of an array of element_bytes-wide entries, where
// a group of listed rows keeps `entries` of them, is worth asking for whole:
// at most twice the entries, and short enough to wait in L2.
inline bool span_worth_asking(std::int64_t lo, std::int64_t hi, std::int64_t entries, std::size_t element_bytes)
{
  return hi - lo <= 2 * entries && (hi - lo) * static_cast<std::int64_t>(element_bytes) <= kAheadMaxSpan;
}

template <typename T> class ListedRowsAhead {
public:
  explicit ListedRowsAhead(const T *array) : array_(array) {}

  // Before slice q is read; slices are read in increasing order.
  template <typename Index> bool at_slice(const CsrView<Index> &csr, const RowBlock &b, std::int64_t q)
  {
    if (q % kAheadGroupSlices == 0 || q != last_ + 1) aim_at_group(csr, b, q / kAheadGroupSlices + 1);
    last_ = q;
    if (!next_) return false;
    const std::int64_t slices_left = kAheadGroupSlices - q % kAheadGroupSlices;
    const char *stop               = next_ + ((end_ - next_) / slices_left + 63) / 64 * 64;
    for (; next_ < end_ && next_ < stop; next_ += 64)
      __builtin_prefetch(next_);
    return true;
  }

private:
  template <typename Index> void aim_at_group(const CsrView<Index> &csr, const RowBlock &b, std::int64_t group)
  {
    const std::int64_t k0 = group * kAheadGroupSlices * kSliceRows,
                       k1 = std::min(b.row_count(), k0 + kAheadGroupSlices * kSliceRows);
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0, entries = 0;
    for (std::int64_t k = k0; k < k1; ++k) {
      const std::int64_t row = b.row(k), start = csr.rowptr[row], stop = csr.rowptr[row + 1];
      lo = std::min(lo, start);
      hi = std::max(hi, stop);
      entries += stop - start;
    }
    next_ = end_ = nullptr;
    if (k0 >= k1 || !span_worth_asking(lo, hi, entries, sizeof(T))) return;
    next_ = reinterpret_cast<const char *>(array_ + lo);
    end_  = reinterpret_cast<const char *>(array_ + hi);
    next_ -= reinterpret_cast<std::uintptr_t>(next_) & 63;
  }

  const T *array_;
  const char *next_ = nullptr, *end_ = nullptr;
  std::int64_t last_ = -2;
};

// Whether the 8 block rows of slice q form a shifted slice: one length n, and
// row r's columns are row 0's plus r.
template <typename Index> bool is_shifted_slice(const CsrView<Index> &csr, const RowBlock &b, std::int64_t q)
{
  const std::int64_t k0 = q * kSliceRows;
  if (k0 + kSliceRows > b.row_count()) return false;
  const Index *c0 = csr.cols + csr.rowptr[b.row(k0)];
  const Index n   = csr.rowptr[b.row(k0) + 1] - csr.rowptr[b.row(k0)];
  if (n == 0) return false;
  // consecutive rows (a run block, or most slices of a grouped block where
  // rows of another format are rare): one span of columns, each row's the
  // previous one's plus 1
  bool consecutive = true;
  if (b.grouped())
    for (int r = 1; r < kSliceRows; ++r)
      consecutive &= b.row(k0 + r) == b.row(k0) + r;
  if (consecutive) {
    const Index *p = csr.rowptr + b.row(k0);
    for (int r = 1; r <= kSliceRows; ++r)
      if (p[r] != p[0] + r * n) return false;
    if (c0[n] != c0[0] + 1) return false; // most other slices (a node's rows share their columns) end here
    bool shifted = true;                  // no early exit: a loop the compiler vectorizes
    for (Index j = 0; j < (kSliceRows - 1) * n; ++j)
      shifted &= c0[j + n] == c0[j] + 1;
    return shifted;
  }
  for (int r = 1; r < kSliceRows; ++r) {
    const std::int64_t row = b.row(k0 + r);
    if (csr.rowptr[row + 1] - csr.rowptr[row] != n) return false;
    const Index *c = csr.cols + csr.rowptr[row];
    if (c[0] != c0[0] + r) return false; // (most gathered slices end here, before a vector compare)
    bool shifted = true;                 // no early exit: a loop the compiler vectorizes
    for (Index e = 0; e < n; ++e)
      shifted &= c[e] == c0[e] + r;
    if (!shifted) return false;
  }
  return true;
}

// The lanes l of v[0..kSliceRows) with v[l] == value, as bits. (One vector
// compare, though v was just stored lane by lane and the load waits on store
// forwarding: still 7% faster builds of the mixed operator's slices and 18% of
// the irregular one's than 64 scalar compares; the scalar compares of each
// distinct value alone were no faster, the vector built in registers slower.)
inline unsigned lanes_equal(const std::int64_t *v, std::int64_t value)
{
#if defined(__AVX512F__)
  return _mm512_cmpeq_epi64_mask(_mm512_loadu_si512(v), _mm512_set1_epi64(value));
#else
  unsigned bits = 0;
  for (int l = 0; l < kSliceRows; ++l)
    bits |= static_cast<unsigned>(v[l] == value) << l;
  return bits;
#endif
}

// Where the 8 rows of slice q of block b start in the CSR arrays, and their
// lengths (0 past the block's last row).
struct SliceRows {
  std::int64_t start[kSliceRows] = {}, length[kSliceRows] = {};
};
template <typename Index> SliceRows slice_rows(const CsrView<Index> &csr, const RowBlock &b, std::int64_t q)
{
  SliceRows s;
  for (std::int64_t l = 0, k = q * kSliceRows; l < kSliceRows && k < b.row_count(); ++l, ++k) {
    s.start[l]  = csr.rowptr[b.row(k)];
    s.length[l] = csr.rowptr[b.row(k) + 1] - s.start[l];
  }
  return s;
}

#if defined(__AVX2__)
// 8 column indices from cols[at] on, the lanes of `lanes` (all ones) at least:
// a plain load where the array goes on (a masked one is slow on AMD Zen; the
// caller ignores the other lanes), a masked one at the array's end (readable:
// the indices the array holds).
inline __m256i load_columns8(const std::int32_t *cols, std::int64_t at, std::int64_t readable, __m256i lanes)
{
  if (at + 8 <= readable) return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(cols + at));
  return _mm256_maskload_epi32(cols + at, lanes);
}
#endif

// slice_patch_count's answer (with its bases and masks where asked), or
// kPatchCountUndecided where a shifted column is negative: the scalar search
// then decides whether it is the one most rows agree on. Why: the build asks
// every gathered slice, and the scalar search, entry by entry with a
// store-forwarded vector compare per distinct column, was 40% of the mixed
// operator's build (28% of its slices are patched, the others rejected after
// a few entries). Here 16 (AVX-512) or 8 (AVX2) entries of the 8 rows at once:
// each lane pair compared once, per entry the count of other lanes agreeing
// with each lane; an entry's patches are its live lanes less its largest
// group, its base the largest column of a largest group. The same answer as
// the scalar search: tests/core/test_builder.cpp's check_slices recounts every
// slice, bases and masks included.
constexpr std::int64_t kPatchCountUndecided = -2;
template <typename Index>
std::int64_t vector_patch_count([[maybe_unused]] const CsrView<Index> &csr,
                                [[maybe_unused]] const std::int64_t (&start)[kSliceRows],
                                [[maybe_unused]] const std::int64_t (&length)[kSliceRows],
                                [[maybe_unused]] std::int64_t lanes, [[maybe_unused]] std::int64_t width,
                                [[maybe_unused]] std::int32_t *bases, [[maybe_unused]] std::uint8_t *masks)
{
#if defined(__AVX512F__)
  constexpr int kChunk        = 16;
  const std::int64_t readable = csr.rowptr[csr.nrows]; // columns csr.cols may be read at, by plain loads
  const auto *cols            = reinterpret_cast<const std::int32_t *>(csr.cols);
  const __m512i one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512();
  std::int64_t patches = 0;
  for (std::int64_t e0 = 0; e0 < width; e0 += kChunk) {
    __m512i shifted[kSliceRows], agree[kSliceRows], live_count = zero;
    __mmask16 live[kSliceRows], negative = 0;
    // Every loop over the lanes unrolled, with no branch on a lane's liveness,
    // so that the 8 lanes' vectors stay in registers: a `continue` past the
    // lanes without entries had the compiler keep them in memory, and the
    // patch count was 17-19% of the mixed operator's full build (Zen 5, in one
    // process, alternated: fp32 builds 0.271 -> 0.204 s, 0.566 -> 0.505 s).
#pragma GCC unroll 8
    for (int l = 0; l < kSliceRows; ++l) {
      const std::int64_t left = l < lanes ? length[l] - e0 : 0;
      live[l]                 = left <= 0 ? 0 : left >= kChunk ? 0xffff : static_cast<__mmask16>((1u << left) - 1u);
      agree[l]                = zero;
      // a plain load where the array goes on (a masked one across two cache lines is slow on AMD Zen)
      const std::int64_t at = live[l] ? start[l] + e0 : 0;
      const __m512i c =
          at + kChunk <= readable ? _mm512_loadu_si512(cols + at) : _mm512_maskz_loadu_epi32(live[l], cols + at);
      shifted[l] = _mm512_maskz_sub_epi32(live[l], c, _mm512_set1_epi32(l));
      live_count = _mm512_mask_add_epi32(live_count, live[l], live_count, one);
      negative |= _mm512_mask_cmplt_epi32_mask(live[l], shifted[l], zero);
    }
    if (negative) return kPatchCountUndecided;
    __m512i largest = zero; // per entry: the most other lanes one lane agrees with
#pragma GCC unroll 8
    for (int l = 0; l < kSliceRows; ++l) {
#pragma GCC unroll 8
      for (int m = l + 1; m < kSliceRows; ++m) {
        const __mmask16 same = _mm512_mask_cmpeq_epi32_mask(live[l] & live[m], shifted[l], shifted[m]);
        agree[l]             = _mm512_mask_add_epi32(agree[l], same, agree[l], one);
        agree[m]             = _mm512_mask_add_epi32(agree[m], same, agree[m], one);
      }
      largest = _mm512_maskz_max_epi32(0xffff, largest, agree[l]); // (maskz: GCC 12 warns on the unmasked form)
    }
    // entries some row has (all of them below width): live lanes - (largest group = largest + 1)
    const __mmask16 present = _mm512_cmpgt_epi32_mask(live_count, zero);
    alignas(64) std::int32_t sums[kChunk]; // (GCC 12 warns on _mm512_reduce_add_epi32)
    _mm512_store_si512(sums, _mm512_maskz_sub_epi32(present, _mm512_sub_epi32(live_count, largest), one));
    for (int e = 0; e < kChunk; ++e)
      patches += sums[e];
    if (patches > max_slice_patches(width)) return -1;
    if (!bases) continue;
    __m512i base = _mm512_set1_epi32(std::numeric_limits<std::int32_t>::min()), differ = zero;
#pragma GCC unroll 8
    for (int l = 0; l < kSliceRows; ++l) // the largest column of a largest group
      base = _mm512_mask_max_epi32(base, live[l] & _mm512_cmpeq_epi32_mask(agree[l], largest), base, shifted[l]);
#pragma GCC unroll 8
    for (int l = 0; l < kSliceRows; ++l) // the lanes whose column is not the base's
      differ = _mm512_mask_or_epi32(differ, _mm512_mask_cmpneq_epi32_mask(live[l], shifted[l], base), differ,
                                    _mm512_set1_epi32(1 << l));
    _mm512_mask_storeu_epi32(bases + e0, present, base);
    _mm512_mask_cvtepi32_storeu_epi8(masks + e0, present, differ);
  }
  return patches;
#elif defined(__AVX2__)
  constexpr int kChunk        = 8;
  const std::int64_t readable = csr.rowptr[csr.nrows];
  const auto *cols            = reinterpret_cast<const std::int32_t *>(csr.cols);
  const __m256i entry = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), zero = _mm256_setzero_si256();
  std::int64_t patches = 0;
  for (std::int64_t e0 = 0; e0 < width; e0 += kChunk) {
    // live[l]: all ones in the entries row l has; agree[l] counts down (a compare's all ones is -1)
    __m256i shifted[kSliceRows], agree[kSliceRows], live[kSliceRows], live_count = zero, negative = zero;
    for (int l = 0; l < kSliceRows; ++l) {
      const std::int64_t left =
          l < lanes ? std::min<std::int64_t>(std::max<std::int64_t>(length[l] - e0, 0), kChunk) : 0;
      live[l]    = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(left)), entry);
      agree[l]   = zero;
      shifted[l] = zero;
      if (left == 0) continue;
      const __m256i c = load_columns8(cols, start[l] + e0, readable, live[l]);
      shifted[l]      = _mm256_sub_epi32(c, _mm256_set1_epi32(l));
      live_count      = _mm256_sub_epi32(live_count, live[l]);
      negative        = _mm256_or_si256(negative, _mm256_and_si256(live[l], _mm256_cmpgt_epi32(zero, shifted[l])));
    }
    if (!_mm256_testz_si256(negative, negative)) return kPatchCountUndecided;
    __m256i largest = zero; // counted down: the most other lanes one lane agrees with, negated
    for (int l = 0; l < kSliceRows; ++l) {
      for (int m = l + 1; m < kSliceRows; ++m) {
        const __m256i same =
            _mm256_and_si256(_mm256_and_si256(live[l], live[m]), _mm256_cmpeq_epi32(shifted[l], shifted[m]));
        agree[l] = _mm256_add_epi32(agree[l], same);
        agree[m] = _mm256_add_epi32(agree[m], same);
      }
      largest = _mm256_min_epi32(largest, agree[l]);
    }
    const __m256i present = _mm256_cmpgt_epi32(live_count, zero);
    const __m256i counted =
        _mm256_and_si256(present, _mm256_sub_epi32(_mm256_add_epi32(live_count, largest), _mm256_set1_epi32(1)));
    alignas(32) std::int32_t sums[kChunk];
    _mm256_store_si256(reinterpret_cast<__m256i *>(sums), counted);
    for (int e = 0; e < kChunk; ++e)
      patches += sums[e];
    if (patches > max_slice_patches(width)) return -1;
    if (!bases) continue;
    __m256i base = _mm256_set1_epi32(std::numeric_limits<std::int32_t>::min()), differ = zero;
    for (int l = 0; l < kSliceRows; ++l) {
      const __m256i in_largest = _mm256_and_si256(live[l], _mm256_cmpeq_epi32(agree[l], largest));
      base                     = _mm256_blendv_epi8(base, _mm256_max_epi32(base, shifted[l]), in_largest);
    }
    for (int l = 0; l < kSliceRows; ++l) {
      const __m256i other = _mm256_andnot_si256(_mm256_cmpeq_epi32(shifted[l], base), live[l]);
      differ              = _mm256_or_si256(differ, _mm256_and_si256(other, _mm256_set1_epi32(1 << l)));
    }
    alignas(32) std::int32_t base_of[kChunk], differ_of[kChunk];
    _mm256_store_si256(reinterpret_cast<__m256i *>(base_of), base);
    _mm256_store_si256(reinterpret_cast<__m256i *>(differ_of), differ);
    for (std::int64_t e = 0; e < std::min<std::int64_t>(kChunk, width - e0); ++e) {
      bases[e0 + e] = base_of[e];
      masks[e0 + e] = static_cast<std::uint8_t>(differ_of[e]);
    }
  }
  return patches;
#else
  return kPatchCountUndecided;
#endif
}

// The patches slice q of block b needs as a patched slice (RowBlock), or -1
// where it cannot be one: more than max_slice_patches, or an entry whose
// shifted column would be negative (the first slice of a block, where a row
// starts before its lane). Entry e's shifted column is the one most of the
// rows with an entry e agree on (a row's column minus its lane; the largest
// of equally shared ones). With bases and masks, writes each entry's shifted
// column and the lanes whose column differs (of the rows with an entry e).
template <typename Index>
std::int64_t slice_patch_count(const CsrView<Index> &csr, const RowBlock &b, std::int64_t q, std::int64_t width,
                               std::int32_t *bases = nullptr, std::uint8_t *masks = nullptr)
{
  const std::int64_t lanes = std::min<std::int64_t>(kSliceRows, b.row_count() - q * kSliceRows);
  const SliceRows rows     = slice_rows(csr, b, q);
  const auto &start = rows.start, &length = rows.length;
  if constexpr (sizeof(Index) == sizeof(std::int32_t)) {
    const std::int64_t count = vector_patch_count(csr, start, length, lanes, width, bases, masks);
    if (count != kPatchCountUndecided) return count;
  }
  std::int64_t patches = 0;
  for (std::int64_t e = 0; e < width; ++e) {
    std::int64_t shifted[kSliceRows] = {}; // (at least one row has entry e: width is the longest row's length)
    int live                         = 0;
    for (std::int64_t l = 0; l < lanes; ++l)
      if (e < length[l]) shifted[live++] = static_cast<std::int64_t>(csr.cols[start[l] + e]) - l;
    // The shifted column most rows agree on, the largest of equally shared
    // ones; each distinct column counted once, for all its lanes at once.
    const unsigned live_lanes = (1u << live) - 1;
    unsigned counted          = 0;
    std::int64_t base         = shifted[0];
    int best                  = 0;
    for (int i = 0; i < live; ++i) {
      if ((counted >> i) & 1u) continue;
      const unsigned same = lanes_equal(shifted, shifted[i]) & live_lanes;
      counted |= same;
      const int agree = __builtin_popcount(same);
      if (agree > best || (agree == best && shifted[i] > base)) {
        best = agree;
        base = shifted[i];
      }
    }
    if (base < 0) return -1;
    patches += live - best;
    if (patches > max_slice_patches(width)) return -1;
    if (bases) {
      unsigned mask = 0;
      for (std::int64_t l = 0; l < lanes; ++l)
        if (e < length[l] && static_cast<std::int64_t>(csr.cols[start[l] + e]) != base + l) mask |= 1u << l;
      bases[e] = static_cast<std::int32_t>(base);
      masks[e] = static_cast<std::uint8_t>(mask);
    }
  }
  return patches;
}

// The entries n rows (row_of(k): the k-th) store in slices of 8, padding
// included: each slice as wide as its longest row.
template <typename Index, typename RowOf>
std::int64_t sliced_entries(const CsrView<Index> &csr, std::int64_t n, RowOf &&row_of)
{
  std::int64_t stored = 0;
  for (std::int64_t k0 = 0; k0 < n; k0 += kSliceRows) {
    std::int64_t width = 0;
    for (std::int64_t k = k0; k < std::min(n, k0 + kSliceRows); ++k) {
      const std::int64_t row = row_of(k);
      width                  = std::max(width, static_cast<std::int64_t>(csr.rowptr[row + 1] - csr.rowptr[row]));
    }
    stored += width * kSliceRows;
  }
  return stored;
}

// The entries rows of lengths len[0 .. n) store in slices of 8 in that order.
inline std::int64_t sliced_entries_of_lengths(const std::int64_t *len, std::int64_t n)
{
  std::int64_t stored = 0;
  for (std::int64_t k0 = 0; k0 < n; k0 += kSliceRows)
    stored += *std::max_element(len + k0, len + std::min(n, k0 + kSliceRows)) * kSliceRows;
  return stored;
}

// The same in the order `order` of decreasing length: each slice as wide as its first row.
inline std::int64_t sliced_entries_sorted(const std::int64_t *len, const std::int64_t *order, std::int64_t n)
{
  std::int64_t stored = 0;
  for (std::int64_t k0 = 0; k0 < n; k0 += kSliceRows)
    stored += len[order[k0]] * kSliceRows;
  return stored;
}

// order[0 .. n): 0 .. n-1 sorted stably by decreasing len. A counting sort
// where the lengths span a range not much wider than the window (row lengths
// are small integers: this is most of the time of a sorted build otherwise),
// a comparison sort else. The window is counted and placed as kSortWays
// stretches side by side, each with its own counters: a row's count then does
// not wait on the previous row's when both have one length (one counter
// incremented in memory row after row was most of the sort's time on the
// mixed operator's windows of two lengths).
constexpr int kSortWays = 4;
inline void order_by_decreasing_length(const std::int64_t *len, std::int64_t n, std::int64_t *order,
                                       std::vector<std::int64_t> &counts)
{
  const auto [lo, hi]      = std::minmax_element(len, len + n);
  const std::int64_t range = *hi - *lo + 1, longest = *hi;
  if (range > 4 * n + 64) {
    std::iota(order, order + n, std::int64_t{0});
    std::stable_sort(order, order + n, [len](std::int64_t i, std::int64_t j) { return len[i] > len[j]; });
    return;
  }
  // stretch s: rows [s * stretch, (s + 1) * stretch); counts[bin * kSortWays + s]
  const std::int64_t stretch = (n + kSortWays - 1) / kSortWays;
  const auto slot            = [&](std::int64_t k, int s) {
    return static_cast<std::size_t>((longest - len[k]) * kSortWays + s); // longest first
  };
  counts.assign(static_cast<std::size_t>(range * kSortWays), 0);
  for (std::int64_t k = 0; k < stretch; ++k)
    for (int s = 0; s < kSortWays; ++s)
      if (s * stretch + k < n) ++counts[slot(s * stretch + k, s)];
  std::int64_t at = 0; // a length's rows of stretch 0, then of stretch 1, ...: stable
  for (std::int64_t &c : counts)
    at += std::exchange(c, at);
  for (std::int64_t k = 0; k < stretch; ++k)
    for (int s = 0; s < kSortWays; ++s)
      if (s * stretch + k < n) order[counts[slot(s * stretch + k, s)]++] = s * stretch + k;
}

// A block's list of rows and their value offsets (a grouped block's), as they
// were before a change that may be undone.
struct RowLists {
  std::vector<std::int32_t> rows;
  std::vector<std::int64_t> value_offsets;
  void swap_with(RowBlock &b)
  {
    rows.swap(b.rows);
    value_offsets.swap(b.value_offsets);
  }
};

// Loads the columns of block rows [k0, k1) into cache where their span is
// worth reading whole (span_worth_asking, as ListedRowsAhead): a load per
// line, in address order. The shifted-slice test of a window reads a column
// or two of each slice whose rows have one length, a line in every few, which
// the hardware prefetcher does not follow: one miss after another. Software
// prefetches of the next window's lines were mostly lost (the test's load
// stayed the hot spot; Zen 5 in a VM, 4 KiB pages); plain loads in address
// order are followed by the hardware prefetcher, and the shaping of the
// window that follows the test then reads from cache (mixed operator 160^3,
// fp32 and bf16 full builds 10% faster with this and the shaping in the
// sort's pass, medians of 4 alternated runs).
// (consecutive: rows [k0, k1) are consecutive matrix rows, as in a run block
// being sorted, whose windows ahead are still in matrix order)
template <typename Index>
void touch_window_columns(const CsrView<Index> &csr, const RowBlock &b, std::int64_t k0, std::int64_t k1,
                          bool consecutive)
{
  const std::int64_t lo = csr.rowptr[b.row(k0)], hi = csr.rowptr[b.row(k1 - 1) + 1];
  std::int64_t entries = hi - lo;
  if (!consecutive) {
    entries = 0;
    for (std::int64_t k = k0; k < k1; ++k)
      entries += csr.rowptr[b.row(k) + 1] - csr.rowptr[b.row(k)];
  }
  if (!span_worth_asking(lo, hi, entries, sizeof(Index))) return;
  const auto *line = reinterpret_cast<const char *>(csr.cols + lo);
  const auto *end  = reinterpret_cast<const char *>(csr.cols + hi);
  for (line -= reinterpret_cast<std::uintptr_t>(line) & 63; line < end; line += 64)
    (void)*reinterpret_cast<const volatile char *>(line); // (within the page of a column: readable)
}

// Whether one of the first `probe` full slices of block b is shifted.
constexpr std::int64_t kProbeSlices = 64;
template <typename Index> bool has_shifted_slice(const CsrView<Index> &csr, const RowBlock &b, std::int64_t probe)
{
  for (std::int64_t q = 0; q < std::min(probe, b.row_count() / kSliceRows); ++q)
    if (is_shifted_slice(csr, b, q)) return true;
  return false;
}

// Where the values and the columns of each slice of block b start when sliced:
// each slice as wide as its longest row; 8 columns per entry, 1 when the
// slice is shifted, or a base and 8 16-bit offsets when it is narrow.
struct SliceShape {
  std::vector<std::int64_t> offsets, col_offsets; // slices + 1 each; empty: not sliced
  std::int64_t shifted = 0;                       // shifted slices
  std::int64_t narrow  = 0;                       // narrow slices
  bool empty() const { return offsets.empty(); }
  void clear()
  {
    offsets.clear();
    col_offsets.clear();
    shifted = narrow = 0;
  }
};

// Largest offset from a narrow slice's base column (16 bits).
constexpr std::int64_t kMaxNarrowOffset = 0xffff;

// Whether the rows [k0, k1) of block b have their columns within 2^16 of the
// smallest one. Columns ascend within a row (as PETSc's AIJ keeps them), so a
// row's first and last column bound it; shape_slices checks every column.
template <typename Index>
bool narrow_columns(const CsrView<Index> &csr, const RowBlock &b, std::int64_t k0, std::int64_t k1)
{
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = -1;
  for (std::int64_t k = k0; k < k1; ++k) {
    const std::int64_t row = b.row(k), start = csr.rowptr[row], end = csr.rowptr[row + 1];
    if (start == end) continue;
    lo = std::min<std::int64_t>(lo, csr.cols[start]);
    hi = std::max<std::int64_t>(hi, csr.cols[end - 1]);
  }
  return hi >= 0 && hi - lo <= kMaxNarrowOffset;
}

// Slices [q0, q1) of block b into shape, whose vectors are already sized for
// all of b's slices (their offsets from slice q0 on are written, each after
// the one before); ahead, where given, asks for listed rows' columns ahead.
template <typename Index>
void shape_slice_range(const CsrView<Index> &csr, const RowBlock &b, bool patched_slices, SliceShape &shape,
                       std::int64_t q0, std::int64_t q1, ListedRowsAhead<Index> *ahead)
{
  const std::int64_t nrows = b.row_count();
  const Index *first       = b.grouped() ? nullptr : csr.rowptr + b.row_begin; // run blocks: consecutive rows
  for (std::int64_t q = q0; q < q1; ++q) {
    if (!first && ahead) ahead->at_slice(csr, b, q);
    std::int64_t width    = 0;
    const std::int64_t k1 = std::min(nrows, (q + 1) * kSliceRows);
    if (first)
      for (std::int64_t k = q * kSliceRows; k < k1; ++k)
        width = std::max<std::int64_t>(width, first[k + 1] - first[k]);
    else
      for (std::int64_t k = q * kSliceRows; k < k1; ++k)
        width = std::max<std::int64_t>(width, csr.rowptr[b.row(k) + 1] - csr.rowptr[b.row(k)]);
    const bool shifted         = is_shifted_slice(csr, b, q);
    const std::int64_t patches = !shifted && patched_slices && width > 0 ? slice_patch_count(csr, b, q, width) : -1;
    const bool narrow          = !shifted && patches < 0 && width > 0 && narrow_columns(csr, b, q * kSliceRows, k1);
    shape.offsets[q + 1]       = shape.offsets[q] + width * kSliceRows;
    shape.col_offsets[q + 1]   = shape.col_offsets[q] + (shifted        ? width
                                                         : patches >= 0 ? patched_slice_header(width) + patches
                                                         : narrow       ? RowBlock::narrow_slice_columns(width)
                                                                        : width * kSliceRows);
    shape.shifted += shifted;
    shape.narrow += narrow;
  }
}

// shape's vectors sized for block b's slices, nothing counted yet.
inline void size_shape(SliceShape &shape, std::int64_t nrows)
{
  const std::int64_t nslices = (nrows + kSliceRows - 1) / kSliceRows;
  shape.offsets.assign(static_cast<std::size_t>(nslices) + 1, 0);
  shape.col_offsets.assign(static_cast<std::size_t>(nslices) + 1, 0);
  shape.shifted = shape.narrow = 0;
}

// (shape: in, vectors of a copy being replaced, whose memory is reused: a
// stencil's offsets are 2 bytes per row, fresh pages at each build otherwise)
template <typename Index>
void slice_shape_of(const CsrView<Index> &csr, const RowBlock &b, bool patched_slices, SliceShape &shape)
{
  size_shape(shape, b.row_count());
  ListedRowsAhead<Index> ahead(csr.cols);
  shape_slice_range(csr, b, patched_slices, shape, 0, static_cast<std::int64_t>(shape.offsets.size()) - 1, &ahead);
}

// Sorts the rows of block b by decreasing length within windows of `window`
// block rows (sigma), where a window then stores fewer padding entries and
// holds no shifted slice; a sorted run block becomes a block listing its rows
// (all of them: it still covers its range). Returns the windows sorted. With
// replaced, b's lists before the sort move there when it sorts (undone by
// swapping them back: no copy of the lists, which have a row each). With
// shape (window a multiple of kSliceRows), also shapes b's slices in their
// final order (slice_shape_of's result), each window right after its order is
// decided, while its columns are in cache: a separate shaping pass read them
// from memory again (Zen 5, mixed operator 160^3: about a tenth of a full build).
template <typename Index>
std::int64_t sort_block_rows(const CsrView<Index> &csr, RowBlock &b, int window, RowLists *replaced = nullptr,
                             SliceShape *shape = nullptr, bool patched_slices = false)
{
  const std::int64_t nrows = b.row_count();
  const auto span = static_cast<std::size_t>(std::min<std::int64_t>(window, nrows)); // (a window may exceed the block)
  std::vector<std::int64_t> len(span), order(span), counts;
  std::vector<std::int32_t> was(span); // a sorted window's rows before its sort
  if (shape) size_shape(*shape, nrows);
  const bool run_block = !b.grouped(); // (listing its rows once a window is sorted: the windows ahead are not)
  std::int64_t sorted  = 0;
  for (std::int64_t w = 0; w < nrows; w += window) {
    const std::int64_t n = std::min<std::int64_t>(nrows - w, window);
    if (w + window < nrows)
      touch_window_columns(csr, b, w + window, std::min(nrows, w + 2 * std::int64_t(window)), run_block);
    const auto shape_window = [&] {
      if (shape)
        shape_slice_range(csr, b, patched_slices, *shape, w / kSliceRows, (w + n + kSliceRows - 1) / kSliceRows,
                          static_cast<ListedRowsAhead<Index> *>(nullptr));
    };
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int64_t row = b.row(w + k);
      len[k]                 = csr.rowptr[row + 1] - csr.rowptr[row];
    }
    order_by_decreasing_length(len.data(), n, order.data(), counts);
    bool shifted = sliced_entries_sorted(len.data(), order.data(), n) >= sliced_entries_of_lengths(len.data(), n);
    for (std::int64_t q = w / kSliceRows; q * kSliceRows < w + n && !shifted; ++q)
      shifted = is_shifted_slice(csr, b, q);
    if (shifted) { // (or no fewer entries sorted): the window stays in its order
      shape_window();
      continue;
    }
    if (!sorted) { // b lists its rows from now on, in the order sorted so far (none)
      if (!b.grouped() && b.row_end > std::numeric_limits<std::int32_t>::max())
        throw StorageError("petscmp: rows sorted by length are listed in 32 bits; this block has rows past 2^31");
      std::vector<std::int32_t> rows;
      if (b.grouped())
        rows.assign(b.rows.begin(), b.rows.end());
      else {
        rows.resize(static_cast<std::size_t>(nrows));
        std::iota(rows.begin(), rows.end(), static_cast<std::int32_t>(b.row_begin));
      }
      if (replaced) replaced->swap_with(b);
      b.rows = std::move(rows);
      b.value_offsets.clear(); // (CSR order only)
    }
    std::copy_n(b.rows.begin() + w, n, was.begin());
    for (std::int64_t k = 0; k < n; ++k)
      b.rows[static_cast<std::size_t>(w + k)] = was[static_cast<std::size_t>(order[k])];
    ++sorted;
    shape_window();
  }
  return sorted;
}

// The entries block b stores when sliced, padding included.
template <typename Index> std::int64_t padded_entries(const CsrView<Index> &csr, const RowBlock &b)
{
  return sliced_entries(csr, b.row_count(), [&](std::int64_t k) { return b.row(k); });
}

// Sets apart the rows of block b longer than kLongRowFactor times its mean
// length: returns them in block order, and b then lists the others (no long
// row: none, and b as it was). With replaced, b's lists before move there when
// rows are set apart.
template <typename Index>
std::vector<std::int32_t> take_long_rows(const CsrView<Index> &csr, RowBlock &b, RowLists *replaced = nullptr)
{
  std::vector<std::int32_t> long_rows, kept;
  const std::int64_t nrows = b.row_count();
  if (nrows == 0 || (!b.grouped() && b.row_end > std::numeric_limits<std::int32_t>::max()))
    return long_rows; // (rows are listed in 32 bits)
  const double longest  = kLongRowFactor * static_cast<double>(b.nnz) / static_cast<double>(nrows);
  std::int64_t long_nnz = 0;
  kept.reserve(static_cast<std::size_t>(nrows));
  for (std::int64_t k = 0; k < nrows; ++k) {
    const std::int64_t row = b.row(k), n = csr.rowptr[row + 1] - csr.rowptr[row];
    const bool is_long = static_cast<double>(n) > longest;
    (is_long ? long_rows : kept).push_back(static_cast<std::int32_t>(row));
    long_nnz += is_long ? n : 0;
  }
  if (long_rows.empty()) return long_rows;
  if (replaced) replaced->swap_with(b);
  b.rows = std::move(kept); // (not empty: a row longer than 4 times the mean leaves shorter ones)
  b.value_offsets.clear();  // (CSR order only: b is sliced, or put back as it was)
  b.nnz -= long_nnz;
  return long_rows;
}

// Automatic layout, rows in matrix order: where block b's slices would pad it
// by more than kMaxSlicePadding, its rows are sorted by length within windows
// of kAutoSortWindow rows (SELL-C-sigma) if that brings the padding within the
// limit; else, with set_apart, its long rows (kLongRowFactor) are taken out
// (long_rows, for a block of their own) and the others sliced, sorted where
// that helps, if their padding is then within the limit; else b is left as it
// was (and read in CSR order).
struct SliceSorting {
  std::int64_t windows = 0;            // windows sorted
  std::vector<std::int32_t> long_rows; // rows taken out of the block, ascending
  bool shaped = false;                 // the shape given holds the slices of b as left
};
template <typename Index>
SliceSorting sort_rows_to_slice(const CsrView<Index> &csr, RowBlock &b, bool set_apart, SliceShape &shape,
                                bool patched_slices)
{
  SliceSorting out;
  const auto within_limit = [&](std::int64_t entries) { // (b.nnz: without the long rows once they are set apart)
    return static_cast<double>(entries) <= kMaxSlicePadding * static_cast<double>(b.nnz);
  };
  auto padded_within_limit = [&] { return within_limit(padded_entries(csr, b)); };
  if (padded_within_limit()) return out;
  RowLists before; // (the lists move, not copied: a sort that helps, the common case, copies none)
  out.windows = sort_block_rows(csr, b, kAutoSortWindow, &before, &shape, patched_slices);
  if (out.windows && within_limit(shape.offsets.back())) {
    out.shaped = true;
    return out;
  }
  if (out.windows) before.swap_with(b); // no better: the rows back in matrix order
  out.windows = 0;
  if (!set_apart) return out;
  const std::int64_t nnz = b.nnz;
  out.long_rows          = take_long_rows(csr, b, &before);
  if (out.long_rows.empty()) return out;
  // (A sorted window of the rows left pads by less than 8 times their longest, 32 mean rows; windows holding a
  // shifted slice are not sorted, which may still leave too much padding.)
  if (!padded_within_limit()) out.windows = sort_block_rows(csr, b, kAutoSortWindow);
  if (padded_within_limit()) return out;
  before.swap_with(b); // b as it was
  b.nnz = nnz;
  return SliceSorting();
}

// A block of the given rows (ascending) in format f, in CSR order for now.
template <typename Index>
RowBlock listed_rows_block(const CsrView<Index> &csr, Format f, std::vector<std::int32_t> rows)
{
  RowBlock block;
  block.format = f;
  block.rows   = std::move(rows);
  block.value_offsets.assign(block.rows.size() + 1, 0);
  for (std::size_t k = 0; k < block.rows.size(); ++k)
    block.value_offsets[k + 1] = block.value_offsets[k] + csr.rowptr[block.rows[k] + 1] - csr.rowptr[block.rows[k]];
  block.nnz = block.value_offsets.back();
  return block;
}

// The nodes of block b: runs of at most kMaxNodeRows consecutive block rows
// that are consecutive matrix rows with one column pattern; each node's
// columns as 16-bit offsets from its smallest column where they fit. False
// when a column does not fit 32 bits (the node layout cannot hold the block).
// The view's runs of rows known to share their columns, asked in increasing
// row order (a cursor).
template <typename Index> class KnownRuns {
public:
  struct Run {
    std::int64_t rows; // rows from the asked one on, it included, known to have its columns (1 when unknown)
    bool maximal;      // the row after them is known to have other columns
  };
  explicit KnownRuns(const CsrView<Index> &csr)
      : sizes_(csr.run_sizes), count_(csr.run_sizes ? csr.runs : 0), limit_(csr.run_limit)
  {
  }
  Run from(std::int64_t row)
  {
    while (at_ < count_ && start_ + sizes_[at_] <= row)
      start_ += sizes_[at_++];
    if (at_ >= count_ || row < start_) return {1, false};
    return {start_ + sizes_[at_] - row, limit_ > 0 && sizes_[at_] < limit_};
  }

private:
  const Index *sizes_;
  std::int64_t count_, limit_, at_ = 0, start_ = 0;
};

// The rows of the node that starts at block row k: rows inside one known run
// share their columns; past a maximal run they do not; else they are compared.
template <typename Index>
int node_rows_at(const CsrView<Index> &csr, const RowBlock &b, std::int64_t k, KnownRuns<Index> &known)
{
  const std::int64_t row = b.row(k), nrows = b.row_count();
  const auto run = known.from(row);
  int s          = 1;
  while (s < kMaxNodeRows && k + s < nrows && b.row(k + s) == row + s &&
         (s < run.rows || (!run.maximal && same_pattern<Index>(csr, row, row + s))))
    ++s;
  return s;
}

// The sizes of the nodes find_nodes would make, without making them (a matrix
// without nodes, a stencil, would otherwise get a 40-byte node per row, only
// to drop it). Counting stops once there are more than `limit` nodes (the
// automatic layout then takes none). The sizes are kept, for find_nodes, where
// the first rows show nodes; else (a stencil) only counted.
struct NodeSizes {
  std::int64_t count = 0;
  std::vector<std::uint8_t> sizes; // empty: not kept
};

template <typename Index> NodeSizes node_sizes(const CsrView<Index> &csr, const RowBlock &b, std::int64_t limit)
{
  constexpr std::int64_t kProbeRows = 4096;
  NodeSizes ns;
  KnownRuns<Index> known(csr);
  bool keep = true;
  for (std::int64_t k = 0; k < b.row_count() && ns.count <= limit;) {
    const int s = node_rows_at(csr, b, k, known);
    if (keep) ns.sizes.push_back(static_cast<std::uint8_t>(s));
    ++ns.count;
    k += s;
    if (keep && k >= kProbeRows && kMinNodeRows * static_cast<double>(ns.count) > k) {
      keep     = false;
      ns.sizes = std::vector<std::uint8_t>();
    }
  }
  if (ns.count > limit) ns.sizes = std::vector<std::uint8_t>();
  return ns;
}

// Whether block b surely holds more than `limit` nodes: a node never spans a
// change of row length or of first column, or a gap between listed rows, so
// the rows where one of them occurs are fewer than its nodes. This scan reads
// two row starts and two columns a row, where node_rows_at compares patterns,
// and refuses a matrix without nodes (a scalar stencil in any order, which
// node_sizes scans to two thirds) in a fraction of the time (Zen 5, mixed
// operator 160^3 in a full build: 0.030 -> 0.0064 s, medians of 15,
// alternated). It gives up, undecided, as soon as its rows look like nodes
// (fewer changes than rows / kMinNodeRows).
template <typename Index> bool surely_more_nodes_than(const CsrView<Index> &csr, const RowBlock &b, std::int64_t limit)
{
  constexpr std::int64_t kStep = 4096;
  const std::int64_t nrows     = b.row_count();
  std::int64_t starts          = nrows > 0; // rows that surely start a node: row 0, and those counted
  const auto breaks_node_at    = [&](std::int64_t row, std::int64_t next) { // next: the block row after row
    const Index a = csr.rowptr[row], m = csr.rowptr[row + 1], z = csr.rowptr[next + 1];
    return next != row + 1 || m - a != z - csr.rowptr[next] || (z > m && csr.cols[a] != csr.cols[m]);
  };
  for (std::int64_t k0 = 0; k0 + 1 < nrows; k0 += kStep) {
    const std::int64_t k1 = std::min(nrows - 1, k0 + kStep);
    if (b.grouped()) // (a node's rows are consecutive matrix rows)
      for (std::int64_t k = k0; k < k1; ++k)
        starts += breaks_node_at(b.rows[static_cast<std::size_t>(k)], b.rows[static_cast<std::size_t>(k + 1)]);
    else
      for (std::int64_t k = b.row_begin + k0; k < b.row_begin + k1; ++k)
        starts += breaks_node_at(k, k + 1);
    // rows past k1 that no node starting by row k1 can reach start nodes of at most kMaxNodeRows rows
    const std::int64_t unreached = nrows - 1 - k1 - (kMaxNodeRows - 1);
    if (starts + (unreached > 0 ? unreached / kMaxNodeRows : 0) > limit) return true;
    if (kMinNodeRows * static_cast<double>(starts) <= static_cast<double>(k1 + 1)) return false;
  }
  return false;
}

// ns: node_sizes(csr, b, ...), so that the list is allocated once, at its
// size, and the patterns are not compared again where the sizes were kept.
template <typename Index>
bool find_nodes(const CsrView<Index> &csr, const RowBlock &b, const NodeSizes &ns, std::vector<NodeInfo> &nodes)
{
  const std::int64_t nrows = b.row_count();
  std::int64_t values = 0, indices = 0;
  nodes.clear();
  nodes.reserve(static_cast<std::size_t>(ns.count)); // no reallocation (copies, fresh pages) while growing
  const bool kept = static_cast<std::int64_t>(ns.sizes.size()) == ns.count;
  KnownRuns<Index> known(csr);
  for (std::int64_t k = 0; k < nrows;) {
    const std::int64_t row = b.row(k), start = csr.rowptr[row], n = csr.rowptr[row + 1] - start;
    const int s = kept ? ns.sizes[nodes.size()] : node_rows_at(csr, b, k, known);
    NodeInfo nd;
    nd.first  = k;
    nd.rows   = static_cast<std::uint8_t>(s);
    nd.length = static_cast<std::int32_t>(n);
    nd.values = values;
    if (n > 0) {
      Index lo = csr.cols[start], hi = lo; // a loop the compiler vectorizes (std::minmax_element is not)
      for (std::int64_t e = 1; e < n; ++e) {
        lo = std::min(lo, csr.cols[start + e]);
        hi = std::max(hi, csr.cols[start + e]);
      }
      if (lo < 0 || hi > std::numeric_limits<std::int32_t>::max()) return false;
      nd.col_base = static_cast<std::int32_t>(lo);
      nd.wide     = hi - lo > std::numeric_limits<std::uint16_t>::max();
    }
    if (nd.wide) indices = (indices + 3) / 4 * 4;
    nd.indices = indices;
    indices += n * (nd.wide ? 4 : 2);
    values += n * s;
    nodes.push_back(nd);
    k += s;
  }
  return true;
}

// Bytes of the column indices of `nodes` (what node_cols holds).
inline std::int64_t node_index_bytes(const std::vector<NodeInfo> &nodes)
{
  if (nodes.empty()) return 0;
  const NodeInfo &last = nodes.back();
  return last.indices + static_cast<std::int64_t>(last.length) * (last.wide ? 4 : 2);
}

// |r - v| / |v| for v stored as r: relative_error(f, v) without converting again.
inline double relative_change(double v, double r)
{
  if (double_bits(r) == double_bits(v) || (std::isnan(r) && std::isnan(v))) return 0.0;
  if (!std::isfinite(r) || !std::isfinite(v) || v == 0.0) return std::numeric_limits<double>::infinity();
  return std::fabs(r - v) / std::fabs(v);
}

// worst = max(worst, relative_change(v, r)), with the division only where the
// change may exceed worst (rarely, once the largest change has been seen).
inline void note_change(double v, double r, double &worst)
{
  if (double_bits(r) == double_bits(v)) return;
  if (std::fabs(r - v) <= worst * std::fabs(v)) return; // false for NaN and Inf: decided below
  worst = std::max(worst, relative_change(v, r));
}

// The largest changes are measured on demand (measure_relative_errors), not
// while values are written; a lossless copy changes none.
void forget_relative_errors(StorageStats &stats, StorageMode mode)
{
  for (FormatStats &fs : stats.per_format)
    fs.max_relative_error = 0.0;
  stats.errors_measured = !storage_mode_is_lossy(mode);
}

// The values a uniform lossy format holds within its unit roundoff without a
// closer look: its normal range (and 0). The value-only refill checks this
// range while it encodes, and asks for a row's exact format only when a value
// falls outside.
struct ValueRange {
  double lo, hi;
};

// The test of a block's format that is made while its values are encoded, so
// that a row's format is looked at closely only where the test flags a value:
// - normal_range: the uniform mode's own format holds every value of its
//   normal range within roundoff (ValueRange);
// - exact: lossless fp16 rows (the first format of the lossless ladder) hold
//   every value whose stored form reads back bit for bit;
// - fp64_witness: a lossless fp64 row (the last format of the ladder) holds a
//   value that fp32 does not hold bit for bit, which rules out every narrower
//   format. Each row needs one such witness; only rows without one are looked
//   at closely (the mixed operator 205^3's lossless refill spent 44% of its
//   time in the row test).
enum class FusedCheck : std::uint8_t { none, normal_range, exact, fp64_witness };

// The writing of one unit (a row, a slice or a node): what is checked while
// its values are encoded, and what was seen.
struct UnitWrite {
  const ValueRange *range = nullptr; // when set, values outside it are reported
  bool exact              = false;   // when set, values not stored bit for bit are reported
  bool witness            = false;   // when set, rows holding a value fp32 does not hold bit for bit are reported
  bool outside            = false;   // a value lay outside range, was not exact, or was Inf/NaN
  std::uint32_t witnessed = 0;       // with witness: the unit's rows seen to hold such a value (bit k: its k-th row)
};

// Encodes n values of a row to out[0], out[stride], ... value by value.
template <typename S> void encode_row_scalar(const double *v, std::int64_t n, S *out, std::int64_t stride, UnitWrite &u)
{
  for (std::int64_t e = 0; e < n; ++e) {
    out[e * stride] = encode_as<S>(v[e]);
  }
  u.outside = true; // (the caller's range is not tested here)
}

#if defined(PETSCMP_HAVE_AVX512_DECODE)
// The 8-wide encoding of one unit: each register of values is tested (range,
// exactness) and encoded; the lanes the tests flag are collected and reported to
// the unit when the encoder goes.
template <typename S> class Encoder8 {
public:
  explicit Encoder8(UnitWrite &unit)
      : u_(unit), lo_(_mm512_set1_pd(unit.range ? unit.range->lo : 0.0)),
        hi_(_mm512_set1_pd(unit.range ? unit.range->hi : 0.0))
  {
  }
  Encoder8(const Encoder8 &)            = delete;
  Encoder8 &operator=(const Encoder8 &) = delete;
  ~Encoder8() { u_.outside = u_.outside || outside_ != 0; }
  // the stored form of the lanes m of x (finite values)
  __attribute__((always_inline)) simd::Encoded8<S> operator()(__m512d x, __mmask8 m)
  {
    if (u_.range) {
      const __m512d a     = _mm512_abs_pd(x);
      const __mmask8 kept = (_mm512_cmp_pd_mask(a, lo_, _CMP_GE_OQ) & _mm512_cmp_pd_mask(a, hi_, _CMP_LE_OQ)) |
                            _mm512_cmp_pd_mask(x, _mm512_setzero_pd(), _CMP_EQ_OQ);
      outside_ |= m & static_cast<__mmask8>(~kept);
      // bf16's normal range has a shorter encoder; lanes outside it are flagged, and rewritten by write_values
      if constexpr (std::is_same_v<S, bf16_t>) return simd::encode8_bf16_in_normal_range(x);
    }
    const simd::Encoded8<S> enc = simd::encode8_as<S>(x);
    if (u_.exact)
      outside_ |= _mm512_mask_cmpneq_epi64_mask(m, _mm512_castpd_si512(enc.decoded()), _mm512_castpd_si512(x));
    return enc;
  }

private:
  UnitWrite &u_;
  const __m512d lo_, hi_;
  __mmask8 outside_ = 0;
};

#endif

// Encodes n values of a row to out[0], out[stride], ...; end: the end of the
// array v lies in (what may be read past the row).
template <typename S>
void encode_row(const double *v, std::int64_t n, [[maybe_unused]] const double *end, S *out, std::int64_t stride,
                UnitWrite &u)
{
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  Encoder8<S> encode(u);
  alignas(64) S chunk[8];
  for (std::int64_t e = 0; e < n; e += 8) {
    const unsigned count = static_cast<unsigned>(std::min<std::int64_t>(8, n - e));
    const __mmask8 m     = first_lanes(count);
    const __m512d x      = simd::load_upto8(v + e, count, end);
    if (simd::nonfinite_lanes(x, m)) { // Inf/NaN: the scalar encoders' payload rules
      encode_row_scalar(v + e, count, out + e * stride, stride, u);
      continue;
    }
    const simd::Encoded8<S> enc = encode(x, m);
    if (u.witness && lanes_not_exact_in_fp32(x, m)) u.witnessed = 1;
    if (stride == 1)
      enc.store(out + e, m);
    else {
      enc.store_all(chunk);
      for (unsigned i = 0; i < count; ++i)
        out[(e + i) * stride] = chunk[i];
    }
  }
#elif defined(PETSCMP_HAVE_AVX2_DECODE)
  alignas(32) S chunk[4];
  for (std::int64_t e = 0; e < n; e += 4) {
    const unsigned count = static_cast<unsigned>(std::min<std::int64_t>(4, n - e));
    const __m256d x      = simd4::load_upto4(v + e, count, end);
    if (simd4::any_nonfinite(x)) { // Inf/NaN: the scalar encoders' payload rules
      encode_row_scalar(v + e, count, out + e * stride, stride, u);
      continue;
    }
    if (stride == 1 && count == 4)
      simd4::encode4(x, out + e);
    else {
      simd4::encode4(x, chunk);
      for (unsigned i = 0; i < count; ++i)
        out[(e + i) * stride] = chunk[i];
    }
  }
  u.outside = true; // (values are not tested here: see span_passes)
#else
  encode_row_scalar(v, n, out, stride, u);
#endif
}

#if defined(PETSCMP_HAVE_AVX2_DECODE)
// Without AVX-512 the encoders do not test values as they convert them. The
// fused check is then a test of the unit's values just before they are written
// (in cache), 4 at a time: whether every value passes check (normal_range:
// zero or inside range; exact: finite and read back bit for bit from fp16).
// False flags the unit (a non-finite value, or one the test cannot pass):
// its rows then get the exact row test.
inline bool passes_scalar(double v, FusedCheck check, const ValueRange &range)
{
  if (!std::isfinite(v)) return false;
  if (check == FusedCheck::exact) return double_bits(decode(encode_as<fp16_t>(v))) == double_bits(v);
  const double a = std::fabs(v);
  return v == 0.0 || (a >= range.lo && a <= range.hi);
}
// Whether fp32 fails to hold one of n values bit for bit (a lossless fp64 row's witness: exact_in_fp32).
bool holds_value_not_exact_in_fp32(const double *v, std::int64_t n)
{
  std::int64_t e = 0;
  for (; e + 4 <= n; e += 4) {
    const __m256d x    = _mm256_loadu_pd(v + e);
    const __m256d back = _mm256_cvtps_pd(_mm256_cvtpd_ps(x));
    const __m256i diff = _mm256_xor_si256(_mm256_castpd_si256(back), _mm256_castpd_si256(x));
    if (!_mm256_testz_si256(diff, diff)) return true;
  }
  for (; e < n; ++e)
    if (!exact_in_fp32(v[e])) return true;
  return false;
}
bool span_passes(const double *v, std::int64_t n, FusedCheck check, const ValueRange &range)
{
  const __m256i exponent = _mm256_set1_epi64x(0x7ff0000000000000LL);
  const __m256d sign = _mm256_set1_pd(-0.0), lo = _mm256_set1_pd(range.lo), hi = _mm256_set1_pd(range.hi);
  __m256i flagged = _mm256_setzero_si256(); // lanes that failed, all ones
  std::int64_t e  = 0;
  for (; e + 4 <= n; e += 4) {
    const __m256d x  = _mm256_loadu_pd(v + e);
    const __m256i xb = _mm256_castpd_si256(x);
    if (!_mm256_testz_si256(_mm256_cmpeq_epi64(_mm256_and_si256(xb, exponent), exponent), _mm256_set1_epi64x(-1)))
      return false; // Inf or NaN: converted by nothing here
    if (check == FusedCheck::exact) {
      const __m128 f    = _mm256_cvtpd_ps(x);
      const __m128 back = _mm_cvtph_ps(_mm_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      flagged           = _mm256_or_si256(flagged, _mm256_xor_si256(_mm256_castpd_si256(_mm256_cvtps_pd(back)), xb));
    } else {
      const __m256d a  = _mm256_andnot_pd(sign, x);
      const __m256d in = _mm256_and_pd(_mm256_cmp_pd(a, lo, _CMP_GE_OQ), _mm256_cmp_pd(a, hi, _CMP_LE_OQ));
      const __m256d ok = _mm256_or_pd(in, _mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_EQ_OQ));
      flagged          = _mm256_or_si256(flagged, _mm256_xor_si256(_mm256_castpd_si256(ok), _mm256_set1_epi64x(-1)));
    }
  }
  if (!_mm256_testz_si256(flagged, flagged)) return false;
  for (; e < n; ++e)
    if (!passes_scalar(v[e], check, range)) return false;
  return true;
}
#endif

#if defined(PETSCMP_HAVE_AVX512_DECODE) || defined(PETSCMP_HAVE_AVX2_DECODE)
// Where a slice's rows are consecutive in memory (the next slice's rows then
// usually follow) and a prefetch is wanted: the address after its values, from
// which the next slice's values are prefetched at the rate this one's are
// read; else null.
inline const char *next_slice_values(const double *const v[kSliceRows], const std::int64_t len[kSliceRows], bool wanted)
{
  for (int i = 0; wanted && i + 1 < kSliceRows; ++i)
    wanted = v[i + 1] == v[i] + len[i];
  return wanted ? reinterpret_cast<const char *>(v[kSliceRows - 1] + len[kSliceRows - 1]) : nullptr;
}

// The lines after `ahead` as far as entries [e, e + entries) of a slice's 8
// rows reach (the next slice's share of what this step reads).
inline void prefetch_slice_entries(const char *ahead, std::int64_t e, std::int64_t entries)
{
  if (!ahead) return;
  for (std::int64_t at = e * kSliceRows; at < (e + entries) * kSliceRows; at += 64 / sizeof(double))
    _mm_prefetch(ahead + at * sizeof(double), _MM_HINT_T0);
}
#endif

#if defined(PETSCMP_HAVE_AVX512_DECODE)
// r[i] = entries e..e+7 of row i  ->  r[j] = entry e+j of rows 0..7.
// (zero-masked forms: GCC 12 warns about the undefined source of the plain ones)
inline void transpose8x8(__m512d r[8])
{
  __m512d a[8], b[8];
  for (int i = 0; i < 8; i += 2) {
    a[i]     = _mm512_maskz_unpacklo_pd(0xff, r[i], r[i + 1]); // entries 0 2 4 6 of rows i, i+1
    a[i + 1] = _mm512_maskz_unpackhi_pd(0xff, r[i], r[i + 1]); // entries 1 3 5 7
  }
  for (int i = 0; i < 8; i += 4)
    for (int odd = 0; odd < 2; ++odd) {
      b[i + odd] =
          _mm512_maskz_shuffle_f64x2(0xff, a[i + odd], a[i + 2 + odd], 0x88); // entries 0 4 (+odd) of rows i..i+3
      b[i + 2 + odd] = _mm512_maskz_shuffle_f64x2(0xff, a[i + odd], a[i + 2 + odd], 0xdd); // entries 2 6 (+odd)
    }
  // b[0]: entries 0/4 of rows 0-3; b[1]: 1/5; b[2]: 2/6; b[3]: 3/7 (b[4..7] rows 4-7)
  for (int j = 0; j < 4; ++j) {
    r[j]     = _mm512_maskz_shuffle_f64x2(0xff, b[j], b[j + 4], 0x88);
    r[j + 4] = _mm512_maskz_shuffle_f64x2(0xff, b[j], b[j + 4], 0xdd);
  }
}

// The values of the 8 rows of a slice (row i: values v[i], length len[i];
// len 0 for lanes past the block's last row), 8 entries at a time: the rows'
// values are transposed in registers, so that each register holds one entry of
// the 8 rows and is encoded and stored with one plain store (encode_row writes
// each row's values one by one, 8 apart). Lanes past a row's end encode 0, the
// padding's value (inside any range, no change). False, with nothing
// reported, when a value is Inf or NaN: the caller then writes the rows one by
// one (the scalar encoders' rules).
template <typename S>
bool encode_slice(const double *const v[kSliceRows], const std::int64_t len[kSliceRows], const double *end,
                  std::int64_t width, S *out, UnitWrite &u, bool prefetch_next)
{
  UnitWrite seen    = u; // reported only when every value was finite
  const char *ahead = next_slice_values(v, len, prefetch_next);
  {
    Encoder8<S> encode(seen);
    for (std::int64_t e = 0; e < width; e += 8) {
      prefetch_slice_entries(ahead, e, 8);
      __m512d r[8];
      __mmask8 nonfinite = 0;
      for (int i = 0; i < kSliceRows; ++i) {
        const std::int64_t n = std::clamp<std::int64_t>(len[i] - e, 0, 8);
        r[i]                 = n > 0 ? simd::load_upto8(v[i] + e, static_cast<unsigned>(n), end) : _mm512_setzero_pd();
        nonfinite |= simd::nonfinite_lanes(r[i], 0xff);
      }
      if (nonfinite) return false; // (values before e are rewritten by the caller)
      transpose8x8(r);
      for (int j = 0; j < 8 && e + j < width; ++j) {
        encode(r[j], 0xff).store_all(out + (e + j) * kSliceRows);
        if (seen.witness) seen.witnessed |= lanes_not_exact_in_fp32(r[j], 0xff); // lane i: row i (padding: 0, exact)
      }
    }
  }
  u = seen;
  return true;
}

// A node's values are stored entry by entry, the node's rows side by side:
// flat position p of a chunk of 8 entries holds entry p / R of row p % R.
// Output register j of the chunk takes lane l (p = 8j + l) from the register of
// row p % R (one merge-masked permute per row) at entry p / R.
struct NodeInterleave {
  __m512i entry[kMaxNodeRows];
  __mmask8 from_row[kMaxNodeRows][kMaxNodeRows]; // [j][r]
};

const NodeInterleave &node_interleave(int rows)
{
  static const std::array<NodeInterleave, kMaxNodeRows + 1> tables = [] {
    std::array<NodeInterleave, kMaxNodeRows + 1> t{};
    for (int R = 1; R <= kMaxNodeRows; ++R)
      for (int j = 0; j < R; ++j) {
        alignas(64) std::int64_t entry[8];
        for (int l = 0; l < 8; ++l) {
          const int p = 8 * j + l;
          entry[l]    = p / R;
          t[R].from_row[j][p % R] |= static_cast<__mmask8>(1u << l);
        }
        t[R].entry[j] = _mm512_load_si512(entry);
      }
    return t;
  }();
  return tables[rows];
}

// The values of a node of R rows (row r's values at v[r], `length` each) into
// out in the node's interleaved order, 8 entries of every row at a time: the
// rows' registers are interleaved, then encoded and stored contiguously (not 8
// scattered stores per register). Inf/NaN take the scalar encoders.
template <typename S, int R>
void encode_node(const double *const v[kMaxNodeRows], std::int64_t length, const double *end, S *out, UnitWrite &u)
{
  const NodeInterleave &t = node_interleave(R);
  // The node reads R short streams side by side, which the hardware prefetcher
  // does not follow (a third slower); the values of the next node (usually
  // next in memory) are prefetched at the rate this node's are read.
  const char *ahead = reinterpret_cast<const char *>(v[0] + R * length);
  Encoder8<S> encode(u);
  __mmask8 inexact[R] = {}; // with u.witness: the lanes of output register j that fp32 does not hold
  for (std::int64_t e = 0; e < length; e += 8) {
    for (int r = 0; r < R; ++r)
      _mm_prefetch(ahead + (e * R + 8 * r) * sizeof(double), _MM_HINT_T0);
    const unsigned count = static_cast<unsigned>(std::min<std::int64_t>(8, length - e));
    __m512d in[R];
    __mmask8 nonfinite = 0;
    for (int r = 0; r < R; ++r) {
      in[r] = simd::load_upto8(v[r] + e, count, end);
      nonfinite |= simd::nonfinite_lanes(in[r], 0xff);
    }
    S *chunk_out = out + e * R;
    if (nonfinite) {
      for (int r = 0; r < R; ++r)
        encode_row_scalar(v[r] + e, count, chunk_out + r, R, u);
      continue;
    }
    const unsigned total = R * count;
    for (int j = 0; j < R && 8u * j < total; ++j) {
      __m512d x = R == 1 ? in[0] : _mm512_setzero_pd();
      if (R > 1)
        for (int r = 0; r < R; ++r)
          x = _mm512_mask_permutexvar_pd(x, t.from_row[j][r], t.entry[j], in[r]);
      const unsigned n            = std::min(8u, total - 8u * j);
      const simd::Encoded8<S> enc = encode(x, first_lanes(n));
      if (u.witness) inexact[j] |= lanes_not_exact_in_fp32(x, first_lanes(n));
      if (n == 8)
        enc.store_all(chunk_out + 8 * j);
      else { // not past the node (another thread may own the next one); no masked store (slow on Zen 5)
        alignas(64) S part[8];
        enc.store_all(part);
        std::memcpy(chunk_out + 8 * j, part, n * sizeof(S));
      }
    }
  }
  for (int j = 0; j < R; ++j) // lane l of register j holds row (8j + l) % R
    for (int r = 0; r < R && inexact[j]; ++r)
      if (inexact[j] & t.from_row[j][r]) u.witnessed |= 1u << r;
}

// encode_node<S, rows>: one instance per node size 1..kMaxNodeRows.
template <typename S, int... R>
void encode_node_of_size(int rows, const double *const v[kMaxNodeRows], std::int64_t length, const double *end, S *out,
                         UnitWrite &u, std::integer_sequence<int, R...>)
{
  (void)((rows == R + 1 ? (encode_node<S, R + 1>(v, length, end, out, u), true) : false) || ...);
}

template <typename S>
void encode_node(const double *const v[kMaxNodeRows], int rows, std::int64_t length, const double *end, S *out,
                 UnitWrite &u)
{
  encode_node_of_size(rows, v, length, end, out, u, std::make_integer_sequence<int, kMaxNodeRows>());
}
#endif

#if defined(PETSCMP_HAVE_AVX2_DECODE)
// r[i] = entries e..e+3 of row i  ->  r[j] = entry e+j of rows 0..3.
inline void transpose4x4(__m256d r[4])
{
  const __m256d a0 = _mm256_unpacklo_pd(r[0], r[1]), a1 = _mm256_unpackhi_pd(r[0], r[1]); // entries 0 2, 1 3
  const __m256d a2 = _mm256_unpacklo_pd(r[2], r[3]), a3 = _mm256_unpackhi_pd(r[2], r[3]);
  r[0] = _mm256_permute2f128_pd(a0, a2, 0x20);
  r[1] = _mm256_permute2f128_pd(a1, a3, 0x20);
  r[2] = _mm256_permute2f128_pd(a0, a2, 0x31);
  r[3] = _mm256_permute2f128_pd(a1, a3, 0x31);
}

// encode_slice without AVX-512: 4 entries of the 8 rows at a time, transposed
// in registers (two 4x4 blocks), so that entry e of rows 0-3 and of rows 4-7
// is encoded 4 values at once and stored with one plain store each (the
// row-by-row path stores each value alone, 8 apart). Lanes past a row's end
// encode 0, the padding's value. False when a value is Inf or NaN (the caller
// then writes the rows one by one). Values are not tested here (span_passes).
template <typename S>
bool encode_slice(const double *const v[kSliceRows], const std::int64_t len[kSliceRows], const double *end,
                  std::int64_t width, S *out, UnitWrite &u, bool prefetch_next)
{
  // As in the AVX-512 encode_slice, but for split storage's fp64 scratch only
  // (x86-64-v3 build on Zen 4, core alone: split refills 0.20-0.21 -> 0.14-0.16 s;
  // fp16/bf16 gained nothing here)
  const char *ahead = next_slice_values(v, len, prefetch_next && std::is_same_v<S, double>);
  for (std::int64_t e = 0; e < width; e += 4) {
    prefetch_slice_entries(ahead, e, 4);
    __m256d r[2][4];
    bool nonfinite = false;
    for (int i = 0; i < kSliceRows; ++i) {
      const std::int64_t n = std::clamp<std::int64_t>(len[i] - e, 0, 4);
      __m256d &x           = r[i / 4][i % 4];
      x                    = n > 0 ? simd4::load_upto4(v[i] + e, static_cast<unsigned>(n), end) : _mm256_setzero_pd();
      nonfinite            = nonfinite || simd4::any_nonfinite(x);
    }
    if (nonfinite) return false;
    transpose4x4(r[0]);
    transpose4x4(r[1]);
    for (int j = 0; j < 4 && e + j < width; ++j) {
      simd4::encode4(r[0][j], out + (e + j) * kSliceRows);
      simd4::encode4(r[1][j], out + (e + j) * kSliceRows + 4);
    }
  }
  u.outside = true;
  return true;
}
#endif

// How far ahead the values of a listed block's slices are asked for, in
// slices (prefetch_listed_rows).
constexpr std::int64_t kListedPrefetchSlices = 16;

// A block that lists its rows reads them in an order the hardware prefetcher
// does not follow, one short row after another: the values of the rows of
// slice q + kListedPrefetchSlices, and the row starts of the slice twice as
// far, are asked for ahead, row by row (rows spread over the matrix: grouped
// formats, long rows set apart; ListedRowsAhead covers sorted windows).
template <typename Index> void prefetch_listed_rows(const CsrView<Index> &csr, const RowBlock &b, std::int64_t q)
{
  const std::int64_t rows = b.row_count(), values_at = (q + kListedPrefetchSlices) * kSliceRows,
                     starts_at = (q + 2 * kListedPrefetchSlices) * kSliceRows;
  for (std::int64_t k = starts_at; k < std::min(rows, starts_at + kSliceRows); ++k)
    __builtin_prefetch(csr.rowptr + b.row(k));
  for (std::int64_t k = values_at; k < std::min(rows, values_at + kSliceRows); ++k) {
    const std::int64_t row = b.row(k);
    const auto *line       = reinterpret_cast<const char *>(csr.values + csr.rowptr[row]);
    const auto *last       = reinterpret_cast<const char *>(csr.values + csr.rowptr[row + 1]) - 1;
    for (line -= reinterpret_cast<std::uintptr_t>(line) & 63; line <= last; line += 64)
      __builtin_prefetch(line);
  }
}

// Slice q of a sliced block: its rows' values, entry by entry. prefetch_next:
// the next slice's values are prefetched while this one's are read (where the
// writes are small or stay in cache; measured, 27-point split refill 0.18 ->
// 0.15 s; no gain, or a loss, where the writes are as large as the reads).
template <typename S, typename Index>
void write_slice(const CsrView<Index> &csr, RowBlock &b, std::int64_t q, S *vals, UnitWrite &u,
                 [[maybe_unused]] bool prefetch_next)
{
  const std::int64_t k0 = q * kSliceRows, rows = std::min<std::int64_t>(kSliceRows, b.row_count() - k0);
  S *out            = vals + b.slice_offsets[q];
  const double *end = csr.values + csr.rowptr[csr.nrows];
#if defined(PETSCMP_HAVE_AVX512_DECODE) || defined(PETSCMP_HAVE_AVX2_DECODE)
  const double *v[kSliceRows];
  std::int64_t len[kSliceRows];
  for (int i = 0; i < kSliceRows; ++i) {
    const std::int64_t row = i < rows ? b.row(k0 + i) : 0;
    v[i]                   = csr.values + (i < rows ? csr.rowptr[row] : 0);
    len[i]                 = i < rows ? csr.rowptr[row + 1] - csr.rowptr[row] : 0;
  }
  const std::int64_t width = (b.slice_offsets[q + 1] - b.slice_offsets[q]) / kSliceRows;
  if (encode_slice(v, len, end, width, out, u, prefetch_next)) return;
  u.outside = true; // (a value is Inf or NaN: the rows are written one by one, then each is checked)
#endif
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::int64_t row = b.row(k0 + i), start = csr.rowptr[row];
    encode_row(csr.values + start, csr.rowptr[row + 1] - start, end, out + i, kSliceRows, u);
  }
}

// The values of node nd (its first row: row0) in the node's interleaved order.
template <typename S, typename Index>
void write_node(const CsrView<Index> &csr, const NodeInfo &nd, std::int64_t row0, S *vals,
                [[maybe_unused]] const double *end, UnitWrite &u)
{
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  const double *v[kMaxNodeRows];
  for (int r = 0; r < nd.rows; ++r)
    v[r] = csr.values + csr.rowptr[row0 + r];
  encode_node(v, nd.rows, nd.length, end, vals + nd.values, u);
#else
  for (int r = 0; r < nd.rows; ++r)
    encode_row(csr.values + csr.rowptr[row0 + r], nd.length, end, vals + nd.values + r, nd.rows, u);
#endif
}

// rowsplit's range when the options give the mean over the whole matrix (an
// MPI matrix's parts), else 0 (a refill then refuses rowsplit)
double given_rowsplit_range(const StorageOptions &opts)
{
  return opts.mode == StorageMode::rowsplit && opts.mean_abs_value >= 0.0 ? opts.range_factor * opts.mean_abs_value
                                                                          : 0.0;
}

// Whether a row of part `part` has format f in mode opts.mode, its format
// decided over the values of all parts (one part: the matrix): the check of a
// value-only refill and of an optimistic build. A row without values in the
// part may sit in a block of any format (runs absorb empty rows).
// With format groups, a row's format is its group's (join_group_formats),
// found once per group: the first of its rows asked decides them all (threads
// may race to it; they write the same formats).
template <typename Index> class RowFormatCheck {
public:
  RowFormatCheck(std::vector<CsrView<Index>> parts, std::size_t part, const StorageOptions &opts)
      : parts_(std::move(parts)), rowptr_(parts_[part].rowptr), opts_(opts), range_(given_rowsplit_range(opts)),
        group_(format_group_size(opts))
  {
    if (group_ < 2) return;
    const std::size_t nrows = static_cast<std::size_t>(parts_.front().nrows);
    decided_                = std::make_unique<std::atomic<std::int8_t>[]>(nrows);
    for (std::size_t i = 0; i < nrows; ++i)
      decided_[i].store(kUndecided, std::memory_order_relaxed);
  }
  bool operator()(std::int64_t row, Format f) const
  {
    if (rowptr_[row + 1] == rowptr_[row]) return true;
    if (group_ < 2) return row_format(RowValues<Index>(parts_, static_cast<Index>(row)), opts_, range_) == f;
    std::int8_t g = decided_[row].load(std::memory_order_relaxed);
    if (g == kUndecided) g = decide_group(row);
    return static_cast<Format>(g) == f;
  }
  // the test that decides for the values of a block of format f without a
  // closer look (see FusedCheck), or none
  FusedCheck fused_check(Format f) const
  {
    if (opts_.mode == StorageMode::lossless)
      return f == Format::fp16 ? FusedCheck::exact : f == Format::fp64 ? FusedCheck::fp64_witness : FusedCheck::none;
    return f == uniform_format(opts_.mode) && f != Format::fp64 ? FusedCheck::normal_range : FusedCheck::none;
  }

private:
  static constexpr std::int8_t kUndecided = -1;
  // The formats of row's group, recorded; row's.
  std::int8_t decide_group(std::int64_t row) const
  {
    const Index first = static_cast<Index>(row - row % group_);
    const Index end   = std::min<Index>(first + static_cast<Index>(group_), parts_.front().nrows);
    // (on the stack for the usual block sizes: no allocation per group on a refill's path)
    std::array<Format, 16> small;
    std::vector<Format> large(end - first > Index(small.size()) ? static_cast<std::size_t>(end - first) : 0);
    Format *f = large.empty() ? small.data() : large.data();
    for (Index i = first; i < end; ++i)
      f[static_cast<std::size_t>(i - first)] = row_format(RowValues<Index>(parts_, i), opts_, range_);
    join_group_formats(parts_, first, end, f);
    for (Index i = first; i < end; ++i)
      decided_[i].store(static_cast<std::int8_t>(f[static_cast<std::size_t>(i - first)]), std::memory_order_relaxed);
    return static_cast<std::int8_t>(f[static_cast<std::size_t>(row - first)]);
  }
  const std::vector<CsrView<Index>> parts_;
  const Index *rowptr_;
  const StorageOptions opts_;
  const double range_;
  const int group_;
  std::unique_ptr<std::atomic<std::int8_t>[]> decided_; // per row, with groups: its group's format, or kUndecided
};

// Fewer nodes or rows than this in a block are written by one thread (a team
// costs a few microseconds to start).
constexpr std::int64_t kMinParallelItems = 512;

// The values of block b, written into its layout (CSR order, slices or nodes),
// whose indices and shape are already in place; the padding of slices and
// nodes is not touched (a slice's padding may be rewritten with its value, 0).
// Shared by the full build and the value-only refill.
// keep_row(row) confirms a row's format (the value-only refill; the full
// build keeps every row); false stops the writing and is returned. It is
// asked before each row is written, unless a check is fused with the
// encoding (see FusedCheck): then each node, slice or row is written while its
// values are tested, and keep_row is asked only for rows of a unit with a
// flagged value (rare: the row may still have the format, a subnormal within
// roundoff say).
// With threads > 1 the nodes (or rows) are shared among OpenMP threads: each
// writes its own values, so the bytes are those of one thread.
// The changes the format made are not tracked here (that was a quarter of a
// bf16 refill): measure_relative_errors finds the largest when it is asked for.
// units: write only units [units.first, units.second) (nodes, slices or rows; all: {0, -1}).
template <typename S, typename Index, typename KeepRow>
bool write_values(const CsrView<Index> &csr, RowBlock &b, KeepRow keep_row, [[maybe_unused]] int threads,
                  [[maybe_unused]] FusedCheck check           = FusedCheck::none,
                  std::pair<std::int64_t, std::int64_t> units = {0, -1}, S *base = nullptr)
{
  [[maybe_unused]] const ValueRange normal{min_normal(b.format), max_finite(b.format)};
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  const ValueRange *range = check == FusedCheck::normal_range ? &normal : nullptr;
  const bool exact        = check == FusedCheck::exact;
  const bool witness      = check == FusedCheck::fp64_witness && std::is_same_v<S, double>;
#else
  const ValueRange *range                   = nullptr; // the portable encoders do not test values as they go
  const bool exact                          = false;
  const bool witness                        = false;
#endif
  const bool fused = range != nullptr || exact || witness;
#if defined(PETSCMP_HAVE_AVX2_DECODE)
  [[maybe_unused]] const FusedCheck pretest = check; // (AVX2: the unit's values are tested before they are written)
#else
  [[maybe_unused]] const FusedCheck pretest = FusedCheck::none;
#endif
  S *vals = base ? base : b.values.as<S>();
  // Slices prefetch the next slice's values where the reads dominate the
  // traffic: split storage's scratch stays in cache, and 2-byte formats write
  // a quarter of what they read (27-point 140^3 on Zen 4, core alone: fp16 and
  // bf16 full builds 8-16% faster, refills 13-19%; fp32 no gain; fp64 slower).
  const bool prefetch = base != nullptr || sizeof(S) <= 2;
  const double *end   = csr.values + csr.rowptr[csr.nrows];
  const bool by_node = b.node_layout(), by_slice = b.sliced(), listed = b.grouped();
  const std::int64_t first = units.first, count = units.second < 0 ? b.unit_count() : units.second;
  [[maybe_unused]] const bool team = threads > 1 && count - first >= kMinParallelItems;
  std::atomic<bool> stopped{false};
  PETSCMP_OMP(omp parallel num_threads(threads) if (team))
  {
    ListedRowsAhead<double> ahead(csr.values); // (each thread's own)
  PETSCMP_OMP(omp for schedule(static))
  for (std::int64_t i = first; i < count; ++i) {
    if (stopped.load(std::memory_order_relaxed)) continue;
    // the unit's rows: block rows [k0, k1), or the node's consecutive matrix rows
    std::int64_t k0 = i, k1 = i + 1, row0 = 0;
    const NodeInfo *nd = nullptr;
    if (by_node) {
      nd   = &b.nodes[static_cast<std::size_t>(i)];
      row0 = b.row(nd->first);
    } else if (by_slice) {
      k0 = i * kSliceRows;
      k1 = std::min(b.row_count(), k0 + kSliceRows);
    }
    const auto unit_rows = [&](auto visit) { // visit(row) for each row of the unit, until one returns false
      if (nd) {
        for (int r = 0; r < nd->rows; ++r)
          if (!visit(row0 + r)) return false;
      } else
        for (std::int64_t k = k0; k < k1; ++k)
          if (!visit(b.row(k))) return false;
      return true;
    };
    // AVX2: the unit's rows as spans of consecutive values, each tested 4 at a time
    const auto unit_values_pass = [&] {
#if defined(PETSCMP_HAVE_AVX2_DECODE)
      if (pretest == FusedCheck::none) return false;
      if (pretest == FusedCheck::fp64_witness) // every row of the unit, one by one
        return unit_rows([&](std::int64_t row) {
          return holds_value_not_exact_in_fp32(csr.values + csr.rowptr[row], csr.rowptr[row + 1] - csr.rowptr[row]);
        });
      std::int64_t begin = 0, stop = 0;
      bool pass = unit_rows([&](std::int64_t row) {
        const std::int64_t first = csr.rowptr[row];
        if (first != stop) {
          if (!span_passes(csr.values + begin, stop - begin, pretest, normal)) return false;
          begin = first;
        }
        stop = csr.rowptr[row + 1];
        return true;
      });
      return pass && span_passes(csr.values + begin, stop - begin, pretest, normal);
#else
      return false;
#endif
    };
    if (!fused && !unit_values_pass() && !unit_rows(keep_row)) {
      stopped.store(true, std::memory_order_relaxed);
      continue;
    }
    const auto write_unit = [&](UnitWrite &u) {
      if (nd) // entry e of the node's rows side by side, then e + 1
        write_node<S>(csr, *nd, row0, vals, end, u);
      else if (by_slice) {
        if (listed && !ahead.at_slice(csr, b, i)) prefetch_listed_rows(csr, b, i);
        write_slice<S>(csr, b, i, vals, u, prefetch);
      } else {
        const std::int64_t row = b.row(i), start = csr.rowptr[row];
        encode_row(csr.values + start, csr.rowptr[row + 1] - start, end, vals + b.value_index(i, 0, start),
                   b.value_stride(i), u);
      }
    };
    UnitWrite u;
    u.range   = range;
    u.exact   = exact;
    u.witness = witness;
    write_unit(u);
    // the rows the encoding did not confirm: all of a unit with a flagged value, or those without a witness
    const auto unconfirmed_rows_kept = [&] {
      int k = 0;
      return unit_rows([&](std::int64_t row) { return (!u.outside && ((u.witnessed >> k++) & 1u)) || keep_row(row); });
    };
    if (fused && (u.outside || witness)) {
      if (!unconfirmed_rows_kept()) {
        stopped.store(true, std::memory_order_relaxed);
        continue;
      }
      if (range && std::is_same_v<S, bf16_t>) { // it keeps bf16: its flagged values need the general encoder
        UnitWrite general;
        write_unit(general);
      }
    }
  }
  }
  return !stopped.load();
}

// Segment k (0: the head) of the fp64 bits of a value cut into Segments.
template <typename Segment, int Segments> Segment segment_bits(std::uint64_t bits, int k)
{
  return static_cast<Segment>(bits >> (64 - 64 / Segments * (k + 1)));
}

// Planes of at least this many bytes are written with non-temporal stores:
// far larger than the caches, they are not read before they are written (a
// plain store reads each line first: a third of a split refill's traffic) and
// do not evict what the products read. Smaller planes stay in the cache for the
// products that follow.
constexpr std::int64_t kStreamingPlaneBytes = std::int64_t(32) << 20;

// cut_into_planes for segments of type Segment: plane k of the block starts at
// planes0 + k * stride (stride a multiple of 32 entries, so that every plane
// has the alignment of the first).
template <typename Segment, int Segments>
void cut_into_typed_planes(const double *src, std::int64_t n, std::int64_t stride, Segment *planes0,
                           [[maybe_unused]] bool streaming)
{
  std::int64_t i  = 0;
  auto cut_scalar = [&](std::int64_t end) {
    for (; i < end; ++i) {
      const std::uint64_t bits = double_bits(src[i]);
      for (int k = 0; k < Segments; ++k)
        planes0[k * stride + i] = segment_bits<Segment, Segments>(bits, k);
    }
  };
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  if (streaming) {
    constexpr std::int64_t kLane = 64 / sizeof(Segment); // entries in one cache line of a plane
    std::int64_t aligned         = 0;                    // the first entry on a line boundary
    while (aligned < n && (reinterpret_cast<std::uintptr_t>(planes0 + aligned) & 63) != 0)
      ++aligned;
    cut_scalar(aligned);
    for (; i + kLane <= n; i += kLane) {
      // (zero-masked forms: GCC 12 warns about the undefined sources of the plain ones)
      const auto srl  = [](__m512i v, unsigned shift) { return _mm512_maskz_srli_epi64(0xff, v, shift); };
      const auto join = [](__m256i lo, __m256i hi) {
        return _mm512_maskz_inserti64x4(0xff, _mm512_maskz_inserti64x4(0xff, _mm512_setzero_si512(), lo, 0), hi, 1);
      };
      __m512i x[kLane / 8]; // the entries' bits, 8 a register
      for (std::int64_t q = 0; q < kLane / 8; ++q)
        x[q] = _mm512_loadu_si512(src + i + 8 * q);
      for (int k = 0; k < Segments; ++k) {
        const unsigned shift = 64 - 64 / Segments * (k + 1);
        __m512i line;
        if constexpr (Segments == 2)
          line = join(_mm512_maskz_cvtepi64_epi32(0xff, srl(x[0], shift)),
                      _mm512_maskz_cvtepi64_epi32(0xff, srl(x[1], shift)));
        else
          line = join(_mm256_set_m128i(_mm512_maskz_cvtepi64_epi16(0xff, srl(x[1], shift)),
                                       _mm512_maskz_cvtepi64_epi16(0xff, srl(x[0], shift))),
                      _mm256_set_m128i(_mm512_maskz_cvtepi64_epi16(0xff, srl(x[3], shift)),
                                       _mm512_maskz_cvtepi64_epi16(0xff, srl(x[2], shift))));
        _mm512_stream_si512(reinterpret_cast<__m512i *>(planes0 + k * stride + i), line);
      }
    }
    cut_scalar(n);
    _mm_sfence(); // (non-temporal stores are weakly ordered: visible before the block is read)
    return;
  }
#endif
  cut_scalar(n);
}

// Entries [0, n) of src (fp64 values) into entries [at, at + n) of the
// segment planes of a block (segments 2 or 4, planes `stride` entries apart;
// segments.hpp): 32-bit head and tail, or four 16-bit segments.
void cut_into_planes(const double *src, std::int64_t n, int segments, std::int64_t stride, std::int64_t at,
                     unsigned char *planes)
{
  const bool streaming = stride * static_cast<std::int64_t>(sizeof(double)) >= kStreamingPlaneBytes;
  if (segments == 2)
    cut_into_typed_planes<std::uint32_t, 2>(src, n, stride, reinterpret_cast<std::uint32_t *>(planes) + at, streaming);
  else
    cut_into_typed_planes<std::uint16_t, 4>(src, n, stride, reinterpret_cast<std::uint16_t *>(planes) + at, streaming);
}

// Fp64 entries a split block is written through at a time (256 KiB).
constexpr std::int64_t kSplitChunkEntries = std::int64_t(1) << 15;

// write_values for a split block (b.segments planes in b.values): the values
// of a run of units at a time are written as fp64 into a scratch buffer that
// stays in cache, padding zeros included, and cut into the planes from there.
// Before, the whole block was written into an fp64 buffer of its size (fresh
// memory at every build and refill) and cut in a second pass over it: a
// value-only rebuild of a 27-point split2 matrix took 3.0 AIJ MatMults.
// With threads > 1 the runs are shared among OpenMP threads, each with its
// own scratch (the bytes are those of one thread).
template <typename Index, typename KeepRow>
bool write_split_values(const CsrView<Index> &csr, RowBlock &b, KeepRow keep_row, [[maybe_unused]] int threads,
                        FusedCheck check)
{
  struct Run {
    std::int64_t u0, u1, v0, n; // units [u0, u1), their entries [v0, v0 + n)
  };
  std::vector<Run> runs;
  std::int64_t longest     = 0;
  const std::int64_t units = b.unit_count();
  for (std::int64_t u0 = 0, u1 = 0; u0 < units; u0 = u1) {
    const std::int64_t v0 = b.unit_value_begin(u0, csr.rowptr);
    u1                    = u0 + 1; // (a unit larger than a run's entries goes alone)
    while (u1 < units && b.unit_value_begin(u1 + 1, csr.rowptr) - v0 <= kSplitChunkEntries)
      ++u1;
    runs.push_back({u0, u1, v0, b.unit_value_begin(u1, csr.rowptr) - v0});
    longest = std::max(longest, runs.back().n);
  }
  const int team =
      static_cast<int>(std::min<std::int64_t>(std::max(threads, 1), static_cast<std::int64_t>(runs.size())));
  std::vector<std::vector<double>> scratch(static_cast<std::size_t>(std::max(team, 1)),
                                           std::vector<double>(static_cast<std::size_t>(longest)));
  std::atomic<bool> stopped{false};
  PETSCMP_OMP(omp parallel for num_threads(team) if (team > 1) schedule(static))
  for (std::size_t r = 0; r < runs.size(); ++r) {
    if (stopped.load(std::memory_order_relaxed)) continue;
    const Run &run = runs[r];
#if defined(_OPENMP)
    double *buffer = scratch[static_cast<std::size_t>(omp_get_thread_num())].data();
#else
    double *buffer = scratch.front().data();
#endif
    std::fill_n(buffer, run.n, 0.0); // (a slice's padding: zeros, written by no unit)
    // The units' values land at their places in the block minus v0: the buffer
    // stands in for entries [v0, v0 + n) of an fp64 block.
    if (!write_values<double>(csr, b, keep_row, 1, check, {run.u0, run.u1}, buffer - run.v0)) {
      stopped.store(true, std::memory_order_relaxed);
      continue;
    }
    cut_into_planes(buffer, run.n, b.segments, b.plane_stride, run.v0, b.values.as<unsigned char>());
  }
  return !stopped.load();
}

// A split block's planes for its stored entries: stride entries a plane, at
// least kNodeValuePadding zeros after each plane's entries (the node kernels
// read 8 entries anywhere), 64-byte aligned planes.
std::int64_t split_plane_stride(std::int64_t stored)
{
  return (stored + kNodeValuePadding + 31) / 32 * 32;
}

// Zeros in each plane past its stored entries (memory lent by a pool holds anything).
void zero_plane_padding(RowBlock &b)
{
  const std::int64_t stored = b.stored_count(), bytes = 8 / b.segments;
  for (int k = 0; k < b.segments; ++k)
    std::memset(b.values.as<unsigned char>() + (k * b.plane_stride + stored) * bytes, 0,
                static_cast<std::size_t>((b.plane_stride - stored) * bytes));
}

inline bool any_row(std::int64_t)
{
  return true;
}

// The columns of patched slice q of block b (RowBlock, PatchedSlice), its row
// lengths and its padding values (0).
template <typename S, typename Index>
void shape_patched_slice(const CsrView<Index> &csr, RowBlock &b, std::int64_t q, S *vals, S zero)
{
  const std::int64_t width = b.slice_width(q), base = b.slice_offsets[q], k0 = q * kSliceRows;
  std::int32_t *slice_cols = b.cols.data() + b.slice_col_offsets[q];
  std::uint8_t *masks = reinterpret_cast<std::uint8_t *>(slice_cols + width), *before = masks + width;
  // (the header's 2 bytes past `before` for an odd width too, which nothing reads)
  std::fill(masks, reinterpret_cast<std::uint8_t *>(slice_cols + patched_slice_header(width)), std::uint8_t{0});
  slice_patch_count(csr, b, q, width, slice_cols, masks);
  std::int32_t *patches = slice_cols + patched_slice_header(width);
  std::int64_t stored   = 0;
  for (std::int64_t e = 0; e < width; ++e) {
    before[e] = static_cast<std::uint8_t>(stored);
    for (int l = 0; l < kSliceRows; ++l)
      if (masks[e] >> l & 1u) {
        const std::int64_t row = b.row(k0 + l);
        patches[stored++]      = static_cast<std::int32_t>(csr.cols[csr.rowptr[row] + e]);
      }
  }
  for (std::int64_t r = 0; r < kSliceRows; ++r) {
    const std::int64_t k = k0 + r;
    const std::int64_t n = k < b.row_count() ? csr.rowptr[b.row(k) + 1] - csr.rowptr[b.row(k)] : 0;
    b.row_lengths[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(n);
    for (std::int64_t e = n; e < width; ++e)
      vals[base + r + e * kSliceRows] = zero;
  }
}

#if defined(__AVX2__)
// r[i] = 32-bit entries e..e+7 of row i  ->  r[j] = entry e+j of rows 0..7.
inline void transpose8x8_epi32(__m256i r[kSliceRows])
{
  __m256i a[kSliceRows], b[kSliceRows];
  for (int i = 0; i < kSliceRows; i += 2) {
    a[i]     = _mm256_unpacklo_epi32(r[i], r[i + 1]); // per half: entries 0 1 (4 5) of rows i, i+1
    a[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]); // entries 2 3 (6 7)
  }
  for (int i = 0; i < kSliceRows; i += 4) {
    b[i]     = _mm256_unpacklo_epi64(a[i], a[i + 2]);     // entry 0 of rows i..i+3 | entry 4
    b[i + 1] = _mm256_unpackhi_epi64(a[i], a[i + 2]);     // entry 1 | 5
    b[i + 2] = _mm256_unpacklo_epi64(a[i + 1], a[i + 3]); // entry 2 | 6
    b[i + 3] = _mm256_unpackhi_epi64(a[i + 1], a[i + 3]); // entry 3 | 7
  }
  for (int j = 0; j < 4; ++j) {
    r[j]     = _mm256_permute2x128_si256(b[j], b[j + 4], 0x20); // entry j of rows 0-3 | of rows 4-7
    r[j + 4] = _mm256_permute2x128_si256(b[j], b[j + 4], 0x31); // entry j + 4
  }
}

// write_slice_columns for 32-bit column indices: 8 entries of the 8 rows at a
// time, transposed in registers and stored one entry (8 rows) at a time. The
// scalar loops, one strided store per column, were most of shape_slices (a
// fifth of the mixed operator's build).
template <typename Out>
bool write_slice_columns_avx2(const std::int32_t *cols, std::int64_t readable, const std::int64_t (&start)[kSliceRows],
                              const std::int64_t (&length)[kSliceRows], std::int64_t width, std::int32_t base, Out *out)
{
  const __m256i entry = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), zero = _mm256_setzero_si256();
  const __m256i lengths =
      _mm256_setr_epi32(static_cast<int>(length[0]), static_cast<int>(length[1]), static_cast<int>(length[2]),
                        static_cast<int>(length[3]), static_cast<int>(length[4]), static_cast<int>(length[5]),
                        static_cast<int>(length[6]), static_cast<int>(length[7]));
  const __m256i base_of = _mm256_set1_epi32(base);
  __m256i beyond        = zero; // narrow: offsets' bits past 16 (a negative offset has them too)
  for (std::int64_t e0 = 0; e0 < width; e0 += kSliceRows) {
    __m256i r[kSliceRows];
    for (int l = 0; l < kSliceRows; ++l) {
      const std::int64_t left = length[l] - e0;
      if (left <= 0) {
        r[l] = zero;
        continue;
      }
      // (lanes past the row are cleared below)
      r[l] = load_columns8(cols, start[l] + e0, readable,
                           _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(left)), entry));
    }
    transpose8x8_epi32(r);
    for (int j = 0; j < kSliceRows && e0 + j < width; ++j) {
      const __m256i live = _mm256_cmpgt_epi32(lengths, _mm256_set1_epi32(static_cast<int>(e0 + j)));
      if constexpr (std::is_same_v<Out, std::uint16_t>) {
        const __m256i offset = _mm256_and_si256(live, _mm256_sub_epi32(r[j], base_of));
        beyond               = _mm256_or_si256(beyond, _mm256_srli_epi32(offset, 16));
        // (16-bit lanes: the offsets of rows 0-3 then 4-7 in the low 128 bits after the permute)
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(offset, offset), 0x08);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + (e0 + j) * kSliceRows), _mm256_castsi256_si128(packed));
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + (e0 + j) * kSliceRows), _mm256_and_si256(live, r[j]));
      }
    }
  }
  return _mm256_testz_si256(beyond, beyond);
}
#endif

// The columns of a slice whose row l starts at start[l] with length[l]
// entries (0 past the block's rows), entry-major: out[l + 8 e] is row l's
// column e, less base when Out is 16 bits (a narrow slice's offsets), and 0
// past a row's end. False when a narrow offset does not fit 16 bits.
template <typename Index, typename Out>
bool write_slice_columns(const CsrView<Index> &csr, const std::int64_t (&start)[kSliceRows],
                         const std::int64_t (&length)[kSliceRows], std::int64_t width, std::int64_t base, Out *out)
{
#if defined(__AVX2__)
  if constexpr (sizeof(Index) == sizeof(std::int32_t))
    return write_slice_columns_avx2(reinterpret_cast<const std::int32_t *>(csr.cols), csr.rowptr[csr.nrows], start,
                                    length, width, static_cast<std::int32_t>(base), out);
#endif
  bool in_range = true; // (no early exit)
  for (int r = 0; r < kSliceRows; ++r) {
    for (std::int64_t e = 0; e < length[r]; ++e) {
      const std::int64_t column = csr.cols[start[r] + e];
      if constexpr (std::is_same_v<Out, std::uint16_t>) {
        in_range &= column - base >= 0 && column - base <= kMaxNarrowOffset;
        out[r + e * kSliceRows] = static_cast<std::uint16_t>(column - base);
      } else {
        out[r + e * kSliceRows] = static_cast<std::int32_t>(column);
      }
    }
    for (std::int64_t e = length[r]; e < width; ++e)
      out[r + e * kSliceRows] = 0;
  }
  return in_range;
}

// Columns of a sliced block (one per entry of a shifted slice) and its
// padding (value 0, column 0).
template <typename S, typename Index> void shape_slices(const CsrView<Index> &csr, RowBlock &b)
{
  const std::int64_t nslices = b.slice_count();
  S *vals                    = b.values.as<S>();
  std::int32_t *cols         = b.cols.data();
  const S zero               = encode_as<S>(0.0);
  ListedRowsAhead<Index> ahead(csr.cols);
  for (std::int64_t q = 0; q < nslices; ++q) {
    if (b.grouped()) ahead.at_slice(csr, b, q);
    const std::int64_t base = b.slice_offsets[q], width = (b.slice_offsets[q + 1] - base) / kSliceRows;
    std::int32_t *slice_cols = cols + b.slice_col_offsets[q];
    const bool shifted       = b.shifted_slice(q);
    if (shifted) { // 8 rows of `width` values: row 0's columns, no padding
      const Index *c0 = csr.cols + csr.rowptr[b.row(q * kSliceRows)];
      for (std::int64_t e = 0; e < width; ++e)
        slice_cols[e] = static_cast<std::int32_t>(c0[e]);
      std::fill_n(b.row_lengths.data() + q * kSliceRows, kSliceRows, static_cast<std::int32_t>(width));
      continue;
    }
    if (b.patched_slice(q)) {
      shape_patched_slice(csr, b, q, vals, zero);
      continue;
    }
    const SliceRows rows = slice_rows(csr, b, q);
    const auto &start = rows.start, &length = rows.length;
    for (std::int64_t r = 0; r < kSliceRows; ++r) {
      b.row_lengths[static_cast<std::size_t>(q * kSliceRows + r)] = static_cast<std::int32_t>(length[r]);
      for (std::int64_t e = length[r]; e < width; ++e)
        vals[base + r + e * kSliceRows] = zero;
    }
    bool in_range = true;
    if (b.narrow_slice(q)) { // the base: the smallest first column (columns ascend within a row)
      std::int64_t col_base = std::numeric_limits<std::int64_t>::max();
      for (int r = 0; r < kSliceRows; ++r)
        if (length[r] > 0) col_base = std::min<std::int64_t>(col_base, csr.cols[start[r]]);
      slice_cols[0] = static_cast<std::int32_t>(col_base);
      in_range =
          write_slice_columns(csr, start, length, width, col_base, reinterpret_cast<std::uint16_t *>(slice_cols + 1));
    } else {
      write_slice_columns(csr, start, length, width, 0, slice_cols);
    }
    if (!in_range) // slice_shape_of bounded the columns by each row's first and last
      throw StorageError("petscmp: the column indices of a row are not in ascending order (PETSc's AIJ keeps "
                         "them sorted; MatCreateSeqAIJWithArrays requires it)");
  }
}

// Column lists of a node block (16-bit offsets from the node's base, or 32-bit
// columns) and the zero values after its values.
template <typename S, typename Index> void shape_nodes(const CsrView<Index> &csr, RowBlock &b)
{
  S *vals = b.values.as<S>();
  for (int p = 0; p < kNodeValuePadding; ++p)
    vals[b.nnz + p] = encode_as<S>(0.0);
  unsigned char *index = b.node_cols.as<unsigned char>();
  for (const NodeInfo &nd : b.nodes) {
    const Index *c0 = csr.cols + csr.rowptr[b.row(nd.first)];
    if (nd.wide) {
      auto *c = reinterpret_cast<std::int32_t *>(index + nd.indices);
      for (std::int32_t e = 0; e < nd.length; ++e)
        c[e] = static_cast<std::int32_t>(c0[e]);
    } else {
      auto *c = reinterpret_cast<std::uint16_t *>(index + nd.indices);
      for (std::int32_t e = 0; e < nd.length; ++e)
        c[e] = static_cast<std::uint16_t>(c0[e] - nd.col_base);
    }
  }
}

// Block b in its layout: memory from the pool, indices and padding, then the
// values; segments > 0: split storage, written into its planes (fp64 blocks).
template <typename S, typename Index>
bool fill_block(const CsrView<Index> &csr, std::vector<NodeInfo> nodes, SliceShape slices, RowBlock &b,
                BufferPool &pool, int threads, const RowFormatCheck<Index> *check, int segments)
{
  // the value buffer for `stored` entries (shaping writes its padding as S: within the planes' bytes too)
  const auto lend_values = [&](std::int64_t stored, std::int64_t padding) {
    const std::int64_t entries = segments ? split_plane_stride(stored) : stored + padding;
    pool.lend(b.values.buffer(), static_cast<std::size_t>(entries) * sizeof(S));
  };
  if (!nodes.empty() || !slices.empty()) { // CSR order keeps a grouped block's offsets
    b.value_offsets.clear();
    b.value_offsets.shrink_to_fit();
  }
  if (!nodes.empty()) {
    b.nodes = std::move(nodes);
    lend_values(b.nnz, kNodeValuePadding);
    pool.lend(b.node_cols.buffer(), static_cast<std::size_t>(node_index_bytes(b.nodes)));
    shape_nodes<S>(csr, b);
  } else if (!slices.empty()) {
    b.slice_offsets            = std::move(slices.offsets);
    b.slice_col_offsets        = std::move(slices.col_offsets);
    const std::int64_t nslices = b.slice_count();
    lend_values(b.slice_offsets.back(), 0);
    pool.lend(b.cols.buffer(), static_cast<std::size_t>(b.slice_col_offsets.back()) * sizeof(std::int32_t));
    pool.lend(b.row_lengths.buffer(), static_cast<std::size_t>(nslices * kSliceRows) * sizeof(std::int32_t));
    shape_slices<S>(csr, b);
  } else {
    lend_values(b.nnz, 0);
  }
  const auto keep          = [&](std::int64_t row) { return !check || (*check)(row, b.format); };
  const FusedCheck checked = check ? check->fused_check(b.format) : FusedCheck::none;
  if (segments) {
    if (b.format != Format::fp64) throw StorageError("petscmp: split storage cuts fp64 values into segments");
    b.segments     = segments;
    b.plane_stride = split_plane_stride(b.stored_count());
    zero_plane_padding(b);
    return write_split_values(csr, b, keep, threads, checked);
  }
  if (!check) return write_values<S>(csr, b, any_row, threads);
  return write_values<S>(csr, b, keep, threads, checked);
}

void count_nodes(const RowBlock &b, StorageStats &stats)
{
  stats.node_rows += b.row_count();
  stats.nodes += static_cast<std::int64_t>(b.nodes.size());
  for (const NodeInfo &nd : b.nodes) {
    stats.wide_nodes += nd.wide;
    ++stats.nodes_of_size[nd.rows];
  }
}

// Nodes when the layout asks for them, or (automatic) when they hold at least
// kMinNodeRows rows on average; empty otherwise.
template <typename Index>
std::vector<NodeInfo> node_layout_of(const CsrView<Index> &csr, Layout layout, const RowBlock &b,
                                     std::vector<std::vector<NodeInfo>> &spare)
{
  std::vector<NodeInfo> nodes;
  if (!spare.empty()) {       // a node list of the copy being replaced (memory already mapped), in its block order:
    nodes.swap(spare.back()); // a rebuild with the same blocks gets each block's own list back
    spare.pop_back();
  }
  if ((layout != Layout::node && layout != Layout::automatic) || b.row_count() == 0) {
    nodes.clear();
    return nodes;
  }
  // automatic: nodes of kMinNodeRows rows on average, at most row_count / kMinNodeRows of them
  const std::int64_t limit = layout == Layout::automatic
                                 ? static_cast<std::int64_t>(static_cast<double>(b.row_count()) / kMinNodeRows)
                                 : b.row_count();
  if (limit < b.row_count() && surely_more_nodes_than(csr, b, limit)) {
    nodes.clear();
    return nodes;
  }
  const NodeSizes ns = node_sizes(csr, b, limit);
  if (ns.count > limit) {
    nodes.clear();
    return nodes;
  }
  if (!find_nodes(csr, b, ns, nodes)) {
    if (layout == Layout::node)
      throw StorageError("petscmp: the node layout stores 32-bit column indices; this block has 2^31 columns or more");
    nodes.clear();
  }
  return nodes;
}

// The layout decision (nodes where rows share patterns, slices where the
// options allow them and padding is small), then the values, written once, and
// the byte accounting.
template <typename Index>
bool fill_blocks(const CsrView<Index> &csr, Layout layout, bool own_indices, int sort_window, bool patched_slices,
                 int threads, int segments, CompactCsr &out, BufferPool &pool,
                 std::vector<std::vector<NodeInfo>> &spare_nodes, std::vector<SliceShape> &spare_slices,
                 const RowFormatCheck<Index> *check)
{
  const bool narrow_columns = csr.ncols <= std::numeric_limits<std::int32_t>::max();
  if ((layout == Layout::sliced || own_indices) && !narrow_columns)
    throw StorageError("petscmp: the sliced layout stores 32-bit column indices; this block has 2^31 columns or more");
  if (own_indices && layout == Layout::csr)
    throw StorageError("petscmp: the CSR layout reads a master's column indices; a matrix without a master (ellmp) "
                       "needs the sliced, node or automatic layout");
  const std::size_t blocks = out.blocks.size(); // (blocks of long rows set apart follow them)
  for (std::size_t i = 0; i < out.blocks.size(); ++i) {
    RowBlock &b     = out.blocks[i];
    FormatStats &fs = out.stats.per_format[static_cast<int>(b.format)];
    SliceSorting sorting;
    const bool may_slice = layout != Layout::csr && layout != Layout::node && narrow_columns && b.row_count() > 0;
    SliceShape slices;
    bool spare_taken = false, shaped = false; // shaped: slices hold b's slices in its current order
    auto take_spare_slices = [&] {
      if (!spare_taken && !spare_slices.empty()) { // the next block of the copy being replaced: memory already mapped
        slices = std::move(spare_slices.back());
        spare_slices.pop_back();
      }
      spare_taken = true;
    };
    auto shape_slices_of_block = [&] {
      take_spare_slices();
      slice_shape_of(csr, b, patched_slices, slices);
      shaped = true;
    };
    // Rows 1-7 of a shifted slice each start a node (each has other columns than the row before): with more
    // such rows than the automatic layout's node limit, it takes no nodes, and they are not looked for (on a
    // stencil that search is a pass over the column indices). Where the first slices show shifted ones, the
    // slices are shaped first; else (nodes, FEM) the nodes are looked for first. The layout is the same.
    const bool slices_first = layout == Layout::automatic && may_slice && has_shifted_slice(csr, b, kProbeSlices);
    bool nodes_possible     = true;
    if (slices_first) {
      shape_slices_of_block();
      nodes_possible = (kSliceRows - 1) * slices.shifted <=
                       static_cast<std::int64_t>(static_cast<double>(b.row_count()) / kMinNodeRows);
    }
    std::vector<NodeInfo> nodes = node_layout_of(csr, nodes_possible ? layout : Layout::sliced, b, spare_nodes);
    if (!nodes.empty())
      slices.clear();
    else if (may_slice) {
      // (a sort shapes the slices as it goes, where they are not shaped yet: slices_first shaped them in matrix
      // order, which a sort makes stale)
      take_spare_slices();
      std::int64_t sorted = 0;
      if (sort_window > 1 && !slices_first) {
        sorted = sort_block_rows(csr, b, sort_window, nullptr, &slices, patched_slices);
        shaped = true;
      } else if (sort_window > 1) {
        sorted = sort_block_rows(csr, b, sort_window);
        shaped = shaped && !sorted;
      }
      out.stats.sorted_windows += sorted;
      if (layout == Layout::automatic && sort_window == 1 && !own_indices) {
        SliceShape sorted_shape; // (slices_first: the unsorted shape stays in slices until a sort succeeds)
        SliceShape &target = slices_first ? sorted_shape : slices;
        sorting            = sort_rows_to_slice(csr, b, i < blocks, target, patched_slices);
        if (sorting.windows || !sorting.long_rows.empty()) shaped = sorting.shaped;
        if (sorting.shaped && slices_first) slices = std::move(sorted_shape);
      }
      out.stats.sorted_windows += sorting.windows;
      out.stats.long_rows += static_cast<std::int64_t>(sorting.long_rows.size());
      if (!shaped) shape_slices_of_block();
      if (layout != Layout::sliced && !own_indices &&
          slices.offsets.back() > kMaxSlicePadding * static_cast<double>(b.nnz))
        slices.clear();
    }
    const bool written = dispatch_format(b.format, [&](auto tag) {
      using S = typename decltype(tag)::type;
      return fill_block<S>(csr, std::move(nodes), std::move(slices), b, pool, threads, check, segments);
    });
    if (!written) return false;
    if (b.grouped()) // (grouped blocks list their rows: those with values, or a sorted run's)
      for (std::int64_t k = 0; k < b.row_count(); ++k)
        fs.rows += csr.rowptr[b.row(k) + 1] > csr.rowptr[b.row(k)];
    else
      for (std::int64_t k = b.row_begin; k < b.row_end; ++k)
        fs.rows += csr.rowptr[k + 1] > csr.rowptr[k];
    fs.nnz += b.nnz;
    out.stats.stored += b.stored_count();
    if (b.sliced()) out.stats.sliced_rows += b.row_count();
    out.stats.shifted_rows += shifted_slice_count(b) * kSliceRows;
    out.stats.narrow_rows += slice_rows_of_kind(b, &RowBlock::narrow_slice);
    out.stats.patched_rows += slice_rows_of_kind(b, &RowBlock::patched_slice);
    if (b.node_layout()) count_nodes(b, out.stats);
    // a node block's padding is never read as values
    // (split planes: the entries' 8 bytes, their planes' padding not counted, as before they were cut)
    out.stats.value_bytes += b.node_layout() ? b.nnz * static_cast<std::int64_t>(format_bytes(b.format))
                             : b.segments    ? b.stored_count() * static_cast<std::int64_t>(sizeof(double))
                                             : static_cast<std::int64_t>(b.values.size());
    out.stats.index_bytes += block_index_bytes<Index>(b);
    if (!sorting.long_rows.empty()) // (b is not used after this)
      out.blocks.push_back(listed_rows_block(csr, b.format, std::move(sorting.long_rows)));
  }
  return true;
}

void check_options(const StorageOptions &opts)
{
  if (opts.mode == StorageMode::tolerance && !(opts.tolerance >= 0.0))
    throw StorageError("petscmp: the tolerance must be a nonnegative number");
  if (opts.mode == StorageMode::rowsplit &&
      (!(opts.range_factor > 0.0) || !(opts.row_fraction >= 0.0 && opts.row_fraction <= 1.0)))
    throw StorageError("petscmp: rowsplit needs a positive range factor and a row fraction in [0, 1]");
  if (opts.format_group < 0) throw StorageError("petscmp: a format group must be 0 or 1 (none) or a number of rows");
}

// The options of the layout and of the writing, for builds and refills.
void check_build_options(const StorageOptions &opts)
{
  if (opts.sort_window < 1 || (opts.sort_window > 1 && opts.sort_window % kSliceRows != 0))
    throw StorageError(
        "petscmp: the sorting window (sigma) must be 1 (no sorting) or a multiple of the slice height 8");
  if (opts.min_run_rows < 1 && opts.min_run_rows != kRunsByNonzeros)
    throw StorageError("petscmp: the shortest run must be at least one row");
  if (opts.threads < 1) throw StorageError("petscmp: the builder needs at least one thread");
}

template <typename Index> void check_view(const CsrView<Index> &csr)
{
  if (csr.nrows < 0 || csr.ncols < 0) throw StorageError("petscmp: negative matrix dimensions");
  if (csr.nrows > 0 && (!csr.rowptr || (csr.rowptr[csr.nrows] > 0 && (!csr.cols || !csr.values))))
    throw StorageError("petscmp: the CSR arrays of the matrix are missing");
  if (csr.run_sizes) {
    std::int64_t rows = 0;
    for (Index r = 0; r < csr.runs; ++r) {
      if (csr.run_sizes[r] < 1) throw StorageError("petscmp: a run of rows with one pattern must hold a row");
      rows += csr.run_sizes[r];
    }
    if (rows != csr.nrows) throw StorageError("petscmp: the runs of rows with one pattern do not cover the rows");
  }
}

} // namespace

const char *storage_mode_name(StorageMode m)
{
  return kModeNames[static_cast<int>(m)];
}

const char *const kLayoutNames[kLayoutCount] = {"auto", "csr", "sliced", "node"};
const char *layout_name(Layout l)
{
  return kLayoutNames[static_cast<int>(l)];
}

bool parse_layout(const char *name, Layout *l)
{
  for (int i = 0; i < kLayoutCount; ++i)
    if (name && std::strcmp(name, kLayoutNames[i]) == 0) {
      *l = static_cast<Layout>(i);
      return true;
    }
  return false;
}

bool parse_storage_mode(const char *name, StorageMode *m)
{
  for (int i = 0; i < kStorageModeCount; ++i)
    if (name && std::strcmp(name, kModeNames[i]) == 0) {
      *m = static_cast<StorageMode>(i);
      return true;
    }
  return false;
}

bool parse_format(const char *name, Format *f)
{
  for (int i = 0; i < kFormatCount; ++i)
    if (name && std::strcmp(name, format_name(static_cast<Format>(i))) == 0) {
      *f = static_cast<Format>(i);
      return true;
    }
  return false;
}

double StorageStats::max_relative_error() const
{
  double e = 0.0;
  for (const auto &f : per_format)
    e = std::max(e, f.max_relative_error);
  return e;
}

// In kSumLanes partial sums, added in a fixed order at the end: the same sum
// on every machine, with one chain of dependent adds per lane. (One running
// sum waited on the add before it at each value: 12% of a rowsplit build of
// the 27-point stencil, 100^3.)
constexpr int kSumLanes = 8;
template <typename Index> AbsSum abs_value_sum(const CsrView<Index> &csr)
{
  const std::int64_t nnz        = csr.nrows ? csr.rowptr[csr.nrows] : 0;
  double sum[kSumLanes]         = {};
  std::int64_t count[kSumLanes] = {};
  const auto add                = [&](int lane, double v) {
    const bool counted = std::fabs(v) < std::numeric_limits<double>::infinity() && v != 0.0; // finite, nonzero
    sum[lane] += counted ? std::fabs(v) : 0.0;
    count[lane] += counted;
  };
  std::int64_t k = 0;
  for (; k + kSumLanes <= nnz; k += kSumLanes)
    for (int lane = 0; lane < kSumLanes; ++lane)
      add(lane, csr.values[k + lane]);
  for (; k < nnz; ++k)
    add(0, csr.values[k]);
  AbsSum s;
  for (int lane = 0; lane < kSumLanes; ++lane) {
    s.sum += sum[lane];
    s.count += count[lane];
  }
  return s;
}

template <typename Index>
std::vector<Format> choose_row_formats(const std::vector<CsrView<Index>> &parts, const StorageOptions &opts)
{
  if (parts.empty()) return {};
  const Index nrows = parts.front().nrows;
  for (const auto &p : parts) {
    check_view(p);
    if (p.nrows != nrows) throw StorageError("petscmp: the parts of a matrix disagree on the number of rows");
  }
  check_options(opts);

  double r = 0.0; // one pass over the values, for rowsplit only
  if (opts.mode == StorageMode::rowsplit)
    r = opts.range_factor * (opts.mean_abs_value >= 0.0 ? opts.mean_abs_value : mean_abs(parts));
  std::vector<Format> formats(static_cast<std::size_t>(nrows), Format::fp64);
  for (Index i = 0; i < nrows; ++i)
    formats[i] = row_format(RowValues<Index>(parts, i), opts, r);
  join_format_groups(parts, opts, formats);
  return formats;
}

namespace {
// Split storage: the fp64 values block b holds, written as for any fp64 block,
// become its segment planes (segments.hpp) in a new buffer: 8 bytes per entry
// as before, plus each plane's padding (kNodeValuePadding zeros at least, so a
// node kernel may read 8 entries anywhere; 64-byte aligned planes).
void split_block_values(RowBlock &b, int segments)
{
  if (b.format != Format::fp64) throw StorageError("petscmp: split storage cuts fp64 values into segments");
  const std::int64_t stride = split_plane_stride(b.stored_count());
  AlignedBytes planes(static_cast<std::size_t>(stride) * sizeof(double));
  cut_into_planes(b.values.as<double>(), b.stored_count(), segments, stride, 0, planes.as<unsigned char>());
  b.values       = std::move(planes);
  b.segments     = segments;
  b.plane_stride = stride;
}

void split_blocks(CompactCsr &copy, StorageMode mode)
{
  if (const int segments = storage_mode_segments(mode))
    for (RowBlock &b : copy.blocks)
      if (!b.segments) split_block_values(b, segments); // (a full build writes its planes directly)
}

} // namespace

// The memory of copies being replaced (their buffers, node lists, slice shapes
// and row lists), lent to the copy that replaces them: a rebuild writes into
// memory that is already mapped. It outlives a failed attempt of the one-pass
// build, which gives its blocks back, so that the build after it finds all of
// the old copy's memory (not only what the attempt had taken: the rest went
// back to the system, and its pages were faulted in afresh at every such
// rebuild).
struct Recycled {
  BufferPool pool;
  std::vector<std::vector<NodeInfo>> spare_nodes; // taken from the back: first block first
  std::vector<SliceShape> spare_slices;
  GroupedSpares grouped;
  // Takes the memory of c's blocks (which it clears); c's first block's lists are taken first.
  void take(CompactCsr &c)
  {
    std::vector<std::vector<NodeInfo>> nodes;
    std::vector<SliceShape> slices;
    for (RowBlock &b : c.blocks) {
      pool.give(b.values.buffer());
      pool.give(b.cols.buffer());
      pool.give(b.row_lengths.buffer());
      pool.give(b.node_cols.buffer());
      if (b.nodes.capacity()) nodes.push_back(std::move(b.nodes));
      if (b.slice_offsets.capacity()) slices.push_back({std::move(b.slice_offsets), std::move(b.slice_col_offsets)});
      grouped.give(b.rows, b.value_offsets);
    }
    std::move(nodes.rbegin(), nodes.rend(), std::back_inserter(spare_nodes));
    std::move(slices.rbegin(), slices.rend(), std::back_inserter(spare_slices));
    c.blocks.clear();
  }
};

// The copy for these row formats, in recycled memory; with check, each row's
// format is confirmed as its values are written, and false is returned (out
// half written) at the first row that has another.
template <typename Index>
bool assemble_copy(const CsrView<Index> &csr, const RowFormats &row_formats, const StorageOptions &opts,
                   Recycled &recycled, const RowFormatCheck<Index> *check, CompactCsr &out)
{
  check_view(csr);
  if (row_formats.per_row && static_cast<Index>(row_formats.per_row->size()) != csr.nrows)
    throw StorageError("petscmp: one format per row is needed");
  check_build_options(opts);
  out                  = CompactCsr();
  out.nrows            = csr.nrows;
  out.ncols            = csr.ncols;
  out.mode             = opts.mode;
  out.order            = opts.order;
  out.layout_option    = opts.layout;
  out.min_run_rows     = opts.min_run_rows;
  out.own_indices      = opts.own_indices;
  out.sort_window      = opts.sort_window;
  out.patched_slices   = opts.patched_slices;
  out.stats.nrows      = csr.nrows;
  out.stats.nnz        = csr.nrows ? csr.rowptr[csr.nrows] : 0;
  out.stats.index_size = sizeof(Index);
  forget_relative_errors(out.stats, opts.mode);

  std::int64_t nonempty   = 0;
  const std::int64_t runs = count_runs(csr, row_formats, nonempty);
  const bool mostly_empty = 2 * nonempty < csr.nrows;
  const std::int64_t nnz  = csr.nrows ? csr.rowptr[csr.nrows] : 0;
  const bool fragmented   = opts.min_run_rows == kRunsByNonzeros
                                ? runs * kMinRunNonzeros > std::max<std::int64_t>(nnz, 1)
                                : runs * opts.min_run_rows > std::max<std::int64_t>(nonempty, 1);
  if ((runs <= 1 && !mostly_empty) || !(fragmented || mostly_empty))
    shape_runs(csr, find_runs(csr, row_formats), out);
  else
    shape_grouped(csr, row_formats, out, recycled.grouped);
  const int segments = opts.split_later ? 0 : storage_mode_segments(opts.mode); // (planes written directly)
  if (!fill_blocks(csr, opts.layout, opts.own_indices, opts.sort_window, opts.patched_slices, opts.threads, segments,
                   out, recycled.pool, recycled.spare_nodes, recycled.spare_slices, check))
    return false;
  if (!opts.split_later) split_blocks(out, opts.mode);
  return true;
}

namespace {
// The copy of csr for the formats chosen over all parts, in the memory of copy
// (which it takes) and of recycled.
template <typename Index>
CompactCsr build_for_chosen_formats(const CsrView<Index> &csr, const std::vector<Format> &formats,
                                    const StorageOptions &opts, CompactCsr &copy, Recycled &recycled)
{
  recycled.take(copy);
  CompactCsr out;
  assemble_copy<Index>(csr, RowFormats{&formats}, opts, recycled, nullptr, out);
  return out;
}
} // namespace

template <typename Index>
CompactCsr assemble_compact_csr(const CsrView<Index> &csr, const std::vector<Format> &row_formats,
                                const StorageOptions &opts, CompactCsr *recycle)
{
  Recycled recycled;
  CompactCsr none;
  return build_for_chosen_formats(csr, row_formats, opts, recycle ? *recycle : none, recycled);
}

// Whether copy was built from a matrix of csr's shape with these options, so
// that its layout is the one a new build would make (given the same formats).
template <typename Index>
bool layout_reusable(const CsrView<Index> &csr, const StorageOptions &opts, const CompactCsr &copy)
{
  std::int64_t held = 0; // a copy whose blocks were dropped (only statistics kept) holds none
  for (const RowBlock &b : copy.blocks)
    held += b.values.size() ? b.nnz : 0;
  return !copy.entry_split() && !copy.indices_released && copy.mode == opts.mode && copy.order == opts.order &&
         copy.layout_option == opts.layout && copy.min_run_rows == opts.min_run_rows &&
         copy.own_indices == opts.own_indices && copy.sort_window == opts.sort_window &&
         copy.patched_slices == opts.patched_slices && copy.nrows == csr.nrows && copy.ncols == csr.ncols &&
         copy.stats.nnz == (csr.nrows ? csr.rowptr[csr.nrows] : 0) && held == copy.stats.nnz;
}

// The values of every block, each row written after keeps(row, f) confirmed
// its block's format f (or, with a fused check fused(f), while it is written:
// see write_values).
template <typename Index, typename Keeps, typename Fused>
bool rewrite_values(const CsrView<Index> &csr, const StorageOptions &opts, CompactCsr &copy, Keeps keeps, Fused fused)
{
  check_build_options(opts);
  forget_relative_errors(copy.stats, opts.mode);
  for (RowBlock &b : copy.blocks) {
    const auto keep = [&](std::int64_t row) { return keeps(row, b.format); };
    const bool kept =
        b.segments ? write_split_values(csr, b, keep, opts.threads, fused(b.format))
                   : dispatch_format(b.format, [&](auto tag) {
                       return write_values<typename decltype(tag)::type>(csr, b, keep, opts.threads, fused(b.format));
                     });
    if (!kept) return false;
  }
  return true;
}

template <typename Index>
bool refill_compact_values(const CsrView<Index> &csr, const std::vector<Format> &row_formats,
                           const StorageOptions &opts, CompactCsr &copy)
{
  check_view(csr);
  if (!layout_reusable(csr, opts, copy) || static_cast<Index>(row_formats.size()) != csr.nrows) return false;
  // (formats chosen from several parts: a part's values alone do not decide)
  return rewrite_values(
      csr, opts, copy,
      [&](std::int64_t row, Format f) {
        return csr.rowptr[row + 1] == csr.rowptr[row] || row_formats[static_cast<std::size_t>(row)] == f;
      },
      [](Format) { return FusedCheck::none; });
}

namespace {
// Whether refill_part can rewrite copy in place at all: its layout is the one a
// build with these options would make, and its values are held (not dropped).
template <typename Index>
bool refill_possible(const CsrView<Index> &csr, const StorageOptions &opts, const CompactCsr &copy)
{
  return layout_reusable(csr, opts, copy) && !(opts.mode == StorageMode::rowsplit && opts.mean_abs_value < 0.0);
}

// The value-only refill of part `part`, each row's format decided over all
// parts as it is written.
template <typename Index>
bool refill_part(const std::vector<CsrView<Index>> &parts, std::size_t part, const StorageOptions &opts,
                 CompactCsr &copy)
{
  const CsrView<Index> &csr = parts[part];
  check_view(csr);
  check_options(opts);
  if (!refill_possible(csr, opts, copy)) return false;
  const RowFormatCheck<Index> check(parts, part, opts);
  return rewrite_values(csr, opts, copy, std::cref(check), [&](Format f) { return check.fused_check(f); });
}
} // namespace

template <typename Index>
bool refill_compact_values(const CsrView<Index> &csr, const StorageOptions &opts, CompactCsr &copy)
{
  const std::vector<CsrView<Index>> parts{csr};
  if (opts.mode != StorageMode::rowsplit || opts.mean_abs_value >= 0.0 || !layout_reusable(csr, opts, copy))
    return refill_part(parts, 0, opts, copy);
  StorageOptions with_mean = opts; // rowsplit's range from the mean a full build takes (a pass over the values)
  with_mean.mean_abs_value = mean_abs(parts);
  return refill_part(parts, 0, with_mean, copy);
}

template <typename Index> CompactCsr build_entry_split(const CsrView<Index> &csr, const StorageOptions &opts)
{
  check_view(csr);
  if (csr.ncols > std::numeric_limits<std::int32_t>::max())
    throw StorageError("petscmp: entrysplit stores 32-bit column indices; this block has more than 2^31 columns");
  CompactCsr out;
  out.nrows            = csr.nrows;
  out.ncols            = csr.ncols;
  out.mode             = opts.mode;
  out.order            = opts.order;
  out.stats.nrows      = csr.nrows;
  out.stats.nnz        = csr.nrows ? csr.rowptr[csr.nrows] : 0;
  out.stats.index_size = sizeof(Index);
  auto goes_to_fp32    = [&opts](double v) {
    return std::fabs(v) < opts.range && stores_within_roundoff(Format::fp32, v);
  };

  for (Format f : {Format::fp32, Format::fp64}) {
    SplitPart part;
    part.format = f;
    part.rowptr.assign(static_cast<std::size_t>(csr.nrows) + 1, 0);
    for (Index i = 0; i < csr.nrows; ++i) {
      std::int64_t n = 0;
      for (Index k = csr.rowptr[i]; k < csr.rowptr[i + 1]; ++k)
        n += goes_to_fp32(csr.values[k]) == (f == Format::fp32);
      part.rowptr[i + 1] = part.rowptr[i] + n;
    }
    const std::int64_t nnz = part.rowptr.back();
    part.cols.resize(static_cast<std::size_t>(nnz));
    part.values.resize(static_cast<std::size_t>(nnz) * format_bytes(f));
    FormatStats &fs = out.stats.per_format[static_cast<int>(f)];
    dispatch_format(f, [&](auto tag) {
      using S = typename decltype(tag)::type;
      const reduced_writer<S> vals(part.values.as<S>(), static_cast<std::size_t>(nnz));
      std::int64_t dst = 0;
      for (Index i = 0; i < csr.nrows; ++i) {
        for (Index k = csr.rowptr[i]; k < csr.rowptr[i + 1]; ++k) {
          if (goes_to_fp32(csr.values[k]) != (f == Format::fp32)) continue;
          part.cols[dst] = static_cast<std::int32_t>(csr.cols[k]);
          vals.store(static_cast<std::size_t>(dst++), csr.values[k]);
          fs.max_relative_error = std::max(fs.max_relative_error, relative_error(f, csr.values[k]));
        }
        fs.rows += part.rowptr[i + 1] > part.rowptr[i];
      }
    });
    fs.nnz = nnz;
    out.stats.stored += nnz;
    out.stats.value_bytes += static_cast<std::int64_t>(part.values.size());
    out.stats.index_bytes += nnz * 4 + (csr.nrows + 1) * 8;
    out.split.push_back(std::move(part));
  }
  return out;
}

// Rows that guess_one_format samples, spread over the matrix: a guess that a
// sampled row refutes costs no failed attempt. An attempt that fails shapes
// every block's indices before the row that fails it is written (a third of a
// build); 2048 rows cost about 0.3 ms and find one of the rows needing fp32 in
// 4 of 5 fp16 builds of the 27-point random matrix (0.08% of its rows). Large
// matrices sample one row in kGuessRowsPerSample: a format that a fraction p
// of the rows refutes then goes unseen with probability exp(-p n / 256) (the
// mixed operator 205^3: 2231 fp16 rows of 8.6M need fp32, unseen in 0.02% of
// builds, against 59% with 2048 samples), for 1/256 of a pass over the values.
constexpr std::int64_t kGuessSampleRows    = 2048;
constexpr std::int64_t kGuessRowsPerSample = 256;

// The format every row probably has: a uniform lossy mode's own format, or in
// lossless mode the format of the sampled rows when they agree, each row's
// format decided over all parts (as the build decides it: an MPI matrix's
// off-diagonal block, whose rows are mostly empty there, gets the guess of the
// whole rows); false when a sampled row has another format, or there is no
// good guess (tolerance, rowsplit). A copy being replaced, of the same mode,
// that had rows in other formats suggests this one will too (a copy of another
// mode says nothing: lossless after fp16 is one format for most matrices).
template <typename Index>
bool guess_one_format(const std::vector<CsrView<Index>> &parts, const StorageOptions &opts, const CompactCsr *recycle,
                      Format &guess)
{
  if (recycle && recycle->mode == opts.mode)
    for (const RowBlock &b : recycle->blocks)
      if (b.format != recycle->blocks.front().format) return false;
  const bool lossless = opts.mode == StorageMode::lossless;
  guess               = uniform_format(opts.mode);
  if (guess == Format::fp64 && !lossless) return false;
  const std::int64_t nrows   = parts.front().nrows;
  const std::int64_t samples = std::min(std::max(kGuessSampleRows, nrows / kGuessRowsPerSample), nrows);
  bool seen                  = false;
  for (std::int64_t k = 0; k < samples; ++k) {
    // (row nrows k / samples, without forming nrows k)
    const std::int64_t row = nrows / samples * k + nrows % samples * k / samples;
    const RowValues<Index> values(parts, static_cast<Index>(row));
    if (values.count() == 0) continue;
    const Format f = lossless ? lossless_row_format(values) : uniform_row_format(values, guess);
    if (f != guess && (seen || !lossless)) return false;
    guess = f;
    seen  = true;
  }
  return seen || !lossless;
}

namespace {
// Most matrices give every row one format (a uniform lossy mode's own; one
// format of lossless values). The build then assumes the guessed format: it
// makes the layout for it, writes the values and checks each row's format
// (decided over all parts) as it goes, which reads the values once instead of
// twice (once to choose the formats, once to write them). copy: in, the copy
// being replaced; out, the new copy when true is returned. False when there is
// no guess (copy untouched) or a row needs another format (copy's memory and
// the attempt's are then in recycled): the caller starts again from the chosen
// formats (build_for_chosen_formats), in that memory.
template <typename Index>
bool build_for_one_format(const std::vector<CsrView<Index>> &parts, std::size_t part, const StorageOptions &opts,
                          CompactCsr &copy, Recycled &recycled)
{
  const CsrView<Index> &csr = parts[part];
  Format guess              = Format::fp64;
  if (!guess_one_format(parts, opts, &copy, guess)) return false;
  recycled.take(copy);
  const RowFormatCheck<Index> check(parts, part, opts);
  CompactCsr out;
  const bool built = assemble_copy<Index>(csr, RowFormats{nullptr, guess}, opts, recycled, &check, out);
  if (built)
    copy = std::move(out);
  else
    recycled.take(out);
  return built;
}

} // namespace

template <typename Index>
CompactCsr build_compact_csr(const CsrView<Index> &csr, const StorageOptions &opts, CompactCsr *recycle)
{
  if (opts.mode == StorageMode::entrysplit) return build_entry_split(csr, opts);
  check_view(csr);
  check_options(opts);
  CompactCsr copy;
  if (recycle) {
    copy = std::move(*recycle);
    recycle->blocks.clear();
  }
  const std::vector<CsrView<Index>> parts{csr};
  Recycled recycled;
  if (build_for_one_format(parts, 0, opts, copy, recycled)) return copy;
  return build_for_chosen_formats(csr, choose_row_formats(parts, opts), opts, copy, recycled);
}

namespace {
// Whether every row has one format in all parts where it has values. Each
// part's rows were confirmed as they were written, but a fused check sees only
// the part's own values: a row in its uniform format in one part may need a
// wider one for its values in another, which then confirmed that wider format.
// When every part agrees, the formats are those decided over all parts.
template <typename Index>
bool formats_agree(const std::vector<CsrView<Index>> &views, const std::vector<CompactPart<Index>> &parts)
{
  int formats = 0; // bit f: a block of format f
  for (const CompactPart<Index> &p : parts)
    for (const RowBlock &b : p.copy.blocks)
      formats |= 1 << static_cast<int>(b.format);
  if ((formats & (formats - 1)) == 0) return true; // one format (or none)
  const Index nrows = views.front().nrows;
  std::vector<std::int8_t> format(static_cast<std::size_t>(nrows), -1);
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (const RowBlock &b : parts[i].copy.blocks)
      for (std::int64_t k = 0; k < b.row_count(); ++k) {
        const std::int64_t row = b.row(k);
        if (views[i].rowptr[row + 1] == views[i].rowptr[row]) continue;
        std::int8_t &seen = format[static_cast<std::size_t>(row)];
        if (seen >= 0 && seen != static_cast<std::int8_t>(b.format)) return false;
        seen = static_cast<std::int8_t>(b.format);
      }
  return true;
}

// update_compact_parts in one pass over the values: each part refilled, or
// built for one guessed format, its rows checked as they are written. False
// when a part's rows need other formats: the copies are then unfinished.
// A reusable copy whose layout cannot be refilled (other options, or values
// dropped while AIJ's kernel computed the products) is built for the guess,
// as a first build is: not from formats chosen in a pass of its own (a
// second pass over the values, 1.6 times the time on 2 ranks of the 27-point
// stencil).
template <typename Index>
bool update_parts_in_one_pass(const std::vector<CsrView<Index>> &views, std::vector<CompactPart<Index>> &parts,
                              std::vector<Recycled> &recycled)
{
  for (std::size_t i = 0; i < parts.size(); ++i) {
    CompactPart<Index> &p = parts[i];
    if (p.reusable && !refill_possible(p.csr, p.opts, p.copy)) p.reusable = false; // (it would refuse again)
    if (p.reusable) {
      p.refilled = refill_part(views, i, p.opts, p.copy);
      p.reusable = p.refilled; // (a row needs another format: a refill with the chosen formats fails as well)
      if (!p.refilled) return false;
      continue;
    }
    if (!build_for_one_format(views, i, p.opts, p.copy, recycled[i])) return false;
  }
  return formats_agree(views, parts);
}
} // namespace

template <typename Index> void update_compact_parts(std::vector<CompactPart<Index>> &parts)
{
  if (parts.empty()) return;
  std::vector<CsrView<Index>> views;
  for (const CompactPart<Index> &p : parts) {
    check_view(p.csr);
    check_options(p.opts);
    if (p.csr.nrows != parts.front().csr.nrows)
      throw StorageError("petscmp: the parts of a matrix disagree on the number of rows");
    if (p.opts.mode != parts.front().opts.mode || p.opts.mode == StorageMode::entrysplit)
      throw StorageError("petscmp: the parts of a matrix need one row-wise storage mode");
    views.push_back(p.csr);
  }
  for (CompactPart<Index> &p : parts)
    p.refilled = false;
  std::vector<Recycled> recycled(parts.size());
  if (update_parts_in_one_pass(views, parts, recycled)) return;
  const std::vector<Format> formats = choose_row_formats(views, parts.front().opts);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    CompactPart<Index> &p = parts[i];
    p.refilled            = p.reusable && refill_compact_values(p.csr, formats, p.opts, p.copy);
    if (!p.refilled) p.copy = build_for_chosen_formats(p.csr, formats, p.opts, p.copy, recycled[i]);
  }
}

namespace {
// Rows [begin, end) of a matrix, and where they start in the run list of each part (-1: inside a run).
template <typename Index> struct RowRange {
  Index begin = 0, end = 0;
  std::vector<Index> first_run, end_run;
};

// The first run of csr starting at `row` (walking on from `run`, which starts at `start`), or -1.
template <typename Index> Index run_starting_at(const CsrView<Index> &csr, Index row, Index &run, Index &start)
{
  while (run < csr.runs && start + csr.run_sizes[run] <= row)
    start += csr.run_sizes[run++];
  return start == row ? run : Index(-1);
}

// Consecutive row ranges of about step_nnz nonzeros, each starting with a run of parts[0] and a format group (its
// rows' formats are decided together: a range holds whole groups).
template <typename Index>
std::vector<RowRange<Index>> row_ranges(const std::vector<CsrView<Index>> &parts, std::int64_t step_nnz,
                                        const StorageOptions &opts)
{
  const Index group          = static_cast<Index>(format_group_size(opts));
  const Index align          = std::lcm(static_cast<Index>(kSliceRows), group);
  const CsrView<Index> &lead = parts.front();
  const Index nrows          = lead.nrows;
  auto nnz_before            = [&](Index row) {
    std::int64_t n = 0;
    for (const auto &p : parts)
      n += p.rowptr[row];
    return n;
  };
  // The first ranges are smaller: until a range's rows are given back, its copy comes on top of the assembly
  // matrix (the peak of an assembly is the first range's copy over AIJ's), and each range may hold the bytes the
  // ranges before it gave back: 5/4 of the last one where a copy takes at most 9.6 bytes per nonzero (AIJ 12).
  std::int64_t size = std::max<std::int64_t>(step_nnz / 64, 1);
  std::vector<Index> cuts{0};
  Index run = 0, row = 0;
  while (row < nrows) {
    const std::int64_t target = nnz_before(cuts.back()) + size;
    size                      = std::min(step_nnz, size + std::max<std::int64_t>(size / 4, 1));
    // whole runs of the lead part (single rows without runs) until the step is full, then on to a row that starts a
    // slice (within a few runs), so that the sliced blocks of neighbouring ranges can be joined (merge_ranges)
    while (row < nrows && nnz_before(row) < target)
      row += lead.run_sizes ? lead.run_sizes[run++] : 1;
    for (int more = 0; row < nrows && row % align != 0 && more < 4 * kSliceRows; ++more)
      row += lead.run_sizes ? lead.run_sizes[run++] : 1;
    while (row < nrows && row % group != 0)
      row += lead.run_sizes ? lead.run_sizes[run++] : 1;
    cuts.push_back(row);
  }
  std::vector<RowRange<Index>> ranges(cuts.size() - 1);
  std::vector<Index> runs(parts.size(), 0), starts(parts.size(), 0);
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    RowRange<Index> &r = ranges[k];
    r.begin            = cuts[k];
    r.end              = cuts[k + 1];
    for (std::size_t i = 0; i < parts.size(); ++i) {
      Index first = -1, last = -1;
      if (parts[i].run_sizes) {
        first         = run_starting_at(parts[i], r.begin, runs[i], starts[i]);
        Index run_end = runs[i], start_end = starts[i];
        last = run_starting_at(parts[i], r.end, run_end, start_end);
        if (last < 0 && r.end == nrows) last = parts[i].runs;
      }
      r.first_run.push_back(first >= 0 && last >= 0 ? first : Index(-1));
      r.end_run.push_back(first >= 0 && last >= 0 ? last : Index(-1));
    }
  }
  return ranges;
}

// Rows [r.begin, r.end) of part i as a matrix of its own (row pointers from 0, kept in rowptr).
template <typename Index>
CsrView<Index> range_view(const CsrView<Index> &csr, const RowRange<Index> &r, std::size_t i,
                          std::vector<Index> &rowptr)
{
  const Index base = csr.rowptr[r.begin];
  if (r.begin > 0) { // (the first range reads csr's own: at the peak of an assembly a copy would come on top)
    rowptr.resize(static_cast<std::size_t>(r.end - r.begin) + 1);
    for (Index k = r.begin; k <= r.end; ++k)
      rowptr[static_cast<std::size_t>(k - r.begin)] = csr.rowptr[k] - base;
  }
  CsrView<Index> v = csr;
  v.nrows          = r.end - r.begin;
  v.rowptr         = r.begin > 0 ? rowptr.data() : csr.rowptr;
  v.cols           = csr.cols ? csr.cols + base : nullptr;
  v.values         = csr.values ? csr.values + base : nullptr;
  v.run_sizes      = nullptr;
  v.runs           = 0;
  if (csr.run_sizes && r.first_run[i] >= 0) {
    v.run_sizes = csr.run_sizes + r.first_run[i];
    v.runs      = r.end_run[i] - r.first_run[i];
  }
  return v;
}

// Appends `piece`, the copy of rows [first_row, ...) whose values start at value_base of the whole, to `whole`.
void append_rows(CompactCsr &whole, CompactCsr &&piece, std::int64_t first_row, std::int64_t value_base)
{
  for (RowBlock &b : piece.blocks) {
    b.row_begin += first_row;
    b.row_end += first_row;
    b.value_base += value_base;
    for (auto &row : b.rows)
      row = static_cast<std::int32_t>(row + first_row);
    for (auto &offset : b.value_offsets)
      offset += value_base;
    whole.blocks.push_back(std::move(b));
  }
  whole.all_rows_covered = whole.all_rows_covered && piece.all_rows_covered;
  StorageStats &w        = whole.stats;
  const StorageStats &p  = piece.stats;
  for (int f = 0; f < kFormatCount; ++f) {
    w.per_format[f].rows += p.per_format[f].rows;
    w.per_format[f].nnz += p.per_format[f].nnz;
    w.per_format[f].max_relative_error =
        std::max(w.per_format[f].max_relative_error, p.per_format[f].max_relative_error);
  }
  w.stored += p.stored;
  w.sliced_rows += p.sliced_rows;
  w.shifted_rows += p.shifted_rows;
  w.narrow_rows += p.narrow_rows;
  w.patched_rows += p.patched_rows;
  w.node_rows += p.node_rows;
  w.nodes += p.nodes;
  w.wide_nodes += p.wide_nodes;
  w.sorted_windows += p.sorted_windows;
  w.long_rows += p.long_rows;
  for (int n = 0; n <= kMaxNodeRows; ++n)
    w.nodes_of_size[n] += p.nodes_of_size[n];
  w.value_bytes += p.value_bytes;
  w.index_bytes += p.index_bytes;
  w.errors_measured = w.errors_measured && p.errors_measured;
}
} // namespace

namespace {
// Bytes [0, n) of `from` appended to `to` at byte `at` (to has room), and from's memory given back.
void move_bytes(BigBuffer &to, std::size_t at, BigBuffer &from, std::size_t n)
{
  if (n) std::memcpy(to.data() + at, from.data(), n);
  from.release();
}

// Whether block b (of the next range, same format) can be joined to a: both a run of rows, b's right after a's, or
// both lists of rows; and both node blocks, or both sliced with a ending at a slice boundary.
bool joinable(const RowBlock &a, const RowBlock &b)
{
  if (a.format != b.format || a.grouped() != b.grouped()) return false;
  if (!a.grouped() && a.row_end != b.row_begin) return false;
  if (a.node_layout() && b.node_layout()) return true;
  return a.sliced() && b.sliced() && a.row_count() % kSliceRows == 0;
}

// Joins the blocks of consecutive ranges (build_compact_parts_by_rows) that hold the same format in the same layout:
// the copy is then laid out as a whole build lays it out (one block per run of a format), so products read it as
// one stream (measured: 20 ranges of a 7-point stencil cost its products 3-5%). Each block's memory is given back
// as it is copied, so the join holds the copy and one range's block at most.
void merge_ranges(CompactCsr &c)
{
  // the row lists of one format next to each other, in range order (as a whole build keeps one per format)
  const auto lists =
      std::stable_partition(c.blocks.begin(), c.blocks.end(), [](const RowBlock &b) { return !b.grouped(); });
  std::stable_sort(lists, c.blocks.end(), [](const RowBlock &a, const RowBlock &b) { return a.format < b.format; });
  std::vector<RowBlock> merged;
  std::size_t k = 0;
  while (k < c.blocks.size()) {
    std::size_t end = k + 1;
    while (end < c.blocks.size() && joinable(c.blocks[end - 1], c.blocks[end]))
      ++end;
    if (end == k + 1) {
      merged.push_back(std::move(c.blocks[k++]));
      continue;
    }
    RowBlock m;
    const RowBlock &first = c.blocks[k];
    m.format              = first.format;
    m.row_begin           = first.row_begin;
    m.row_end             = c.blocks[end - 1].row_end;
    m.value_base          = first.value_base;
    const std::size_t S   = format_bytes(first.format);
    std::size_t values = 0, cols = 0, lengths = 0, node_cols = 0;
    for (std::size_t j = k; j < end; ++j) {
      const RowBlock &b = c.blocks[j];
      m.nnz += b.nnz;
      values += first.node_layout() ? static_cast<std::size_t>(b.nnz) * S : b.values.size();
      cols += b.cols.size();
      lengths += b.row_lengths.size();
      node_cols += (b.node_cols.size() + 3) / 4 * 4; // (32-bit columns of wide nodes stay 4-byte aligned)
    }
    if (first.node_layout()) values += kNodeValuePadding * S; // the zeros after a node block's values
    m.values.resize_uninitialized(values);
    std::size_t at_values = 0, at_cols = 0, at_lengths = 0, at_node_cols = 0;
    if (first.sliced()) {
      m.cols.allocate(cols);
      m.row_lengths.allocate(lengths);
      m.slice_offsets.push_back(0);
      m.slice_col_offsets.push_back(0);
    } else
      m.node_cols.resize_uninitialized(node_cols);
    for (std::size_t j = k; j < end; ++j) {
      RowBlock &b             = c.blocks[j];
      const std::int64_t row0 = b.grouped() ? static_cast<std::int64_t>(m.rows.size()) : b.row_begin - m.row_begin;
      m.rows.insert(m.rows.end(), b.rows.begin(), b.rows.end());
      if (b.node_layout()) {
        at_node_cols = (at_node_cols + 3) / 4 * 4;
        for (NodeInfo nd : b.nodes) {
          nd.values += static_cast<std::int64_t>(at_values / S);
          nd.indices += static_cast<std::int64_t>(at_node_cols);
          nd.first += row0;
          m.nodes.push_back(nd);
        }
        const std::size_t n = static_cast<std::size_t>(b.nnz) * S + (j + 1 == end ? kNodeValuePadding * S : 0);
        move_bytes(m.values.buffer(), at_values, b.values.buffer(), n);
        at_values += static_cast<std::size_t>(b.nnz) * S;
        const std::size_t ni = b.node_cols.size();
        move_bytes(m.node_cols.buffer(), at_node_cols, b.node_cols.buffer(), ni);
        at_node_cols += ni;
      } else {
        const std::int64_t value_shift = m.slice_offsets.back(), col_shift = m.slice_col_offsets.back();
        for (std::size_t q = 1; q < b.slice_offsets.size(); ++q) {
          m.slice_offsets.push_back(b.slice_offsets[q] + value_shift);
          m.slice_col_offsets.push_back(b.slice_col_offsets[q] + col_shift);
        }
        const std::size_t nv = b.values.size(), nc = b.cols.size() * sizeof(std::int32_t),
                          nl = b.row_lengths.size() * sizeof(std::int32_t);
        move_bytes(m.values.buffer(), at_values, b.values.buffer(), nv);
        move_bytes(m.cols.buffer(), at_cols, b.cols.buffer(), nc);
        move_bytes(m.row_lengths.buffer(), at_lengths, b.row_lengths.buffer(), nl);
        at_values += nv;
        at_cols += nc;
        at_lengths += nl;
      }
    }
    merged.push_back(std::move(m));
    k = end;
  }
  c.blocks = std::move(merged);
}
} // namespace

namespace {
// The formats of the rows of views (rows begin, begin + 1, ... of the whole matrix) decided over all of them, where
// preset (per row of the whole matrix, -1: none) does not fix them.
template <typename Index>
std::vector<Format> formats_with_preset(const std::vector<CsrView<Index>> &views, const StorageOptions &opts,
                                        const std::vector<std::int8_t> &preset, std::int64_t begin)
{
  std::vector<Format> formats = choose_row_formats(views, opts);
  for (std::size_t k = 0; k < formats.size() && static_cast<std::size_t>(begin) + k < preset.size(); ++k) {
    const std::int8_t f = preset[static_cast<std::size_t>(begin) + k];
    if (f >= 0) formats[k] = static_cast<Format>(f);
  }
  return formats;
}

// Whether preset fixes the format of a row in [begin, end).
bool preset_in(const std::vector<std::int8_t> *preset, std::int64_t begin, std::int64_t end)
{
  if (!preset) return false;
  const std::int64_t last = std::min<std::int64_t>(end, static_cast<std::int64_t>(preset->size()));
  for (std::int64_t row = begin; row < last; ++row)
    if ((*preset)[static_cast<std::size_t>(row)] >= 0) return true;
  return false;
}

// The parts of a range (or of the whole matrix, begin 0) built anew: update_compact_parts, or, where preset fixes
// some rows' formats, each part assembled with the formats decided over all parts and those.
template <typename Index>
void build_parts(std::vector<CompactPart<Index>> &parts, const std::vector<std::int8_t> *preset, std::int64_t begin)
{
  const std::int64_t rows = parts.front().csr.nrows;
  if (!preset_in(preset, begin, begin + rows)) {
    update_compact_parts(parts);
    return;
  }
  std::vector<CsrView<Index>> views;
  for (const CompactPart<Index> &p : parts)
    views.push_back(p.csr);
  const std::vector<Format> formats = formats_with_preset(views, parts.front().opts, *preset, begin);
  for (CompactPart<Index> &p : parts) {
    p.copy     = assemble_compact_csr(p.csr, formats, p.opts, nullptr);
    p.refilled = false;
  }
}

// build_compact_parts_by_rows; preset (may be null): per row, a format the row keeps (-1: chosen as usual).
template <typename Index>
void build_parts_by_rows(std::vector<CompactPart<Index>> &parts, std::int64_t step_nnz,
                         const std::function<void(std::int64_t)> &rows_done, const std::vector<std::int8_t> *preset)
{
  if (parts.empty()) return;
  std::vector<CsrView<Index>> views;
  for (CompactPart<Index> &p : parts) {
    check_view(p.csr);
    if (!p.opts.own_indices)
      throw StorageError("petscmp: a copy built a range of rows at a time must hold its own column indices");
    p.copy     = CompactCsr(); // the copies being replaced go first: their memory is not held during the build
    p.reusable = p.refilled = false;
    views.push_back(p.csr);
  }
  const Index nrows = views.front().nrows;
  std::int64_t nnz  = 0;
  for (const auto &v : views)
    nnz += v.nrows ? v.rowptr[v.nrows] : 0;
  if (parts.size() == 1 && parts.front().opts.mode == StorageMode::entrysplit) {
    parts.front().copy = build_entry_split(views.front(), parts.front().opts);
    rows_done(nrows);
    return;
  }
  const bool whole = step_nnz <= 0 || nnz <= step_nnz;
  if (whole) {
    build_parts(parts, preset, 0);
    for (CompactPart<Index> &p : parts)
      measure_relative_errors(p.csr, p.copy);
    rows_done(nrows);
    return;
  }
  if (parts.front().opts.mode == StorageMode::rowsplit && parts.front().opts.mean_abs_value < 0.0) {
    const double mean = mean_abs(views); // the range is a mean over the whole matrix
    for (CompactPart<Index> &p : parts)
      p.opts.mean_abs_value = mean;
  }
  for (std::size_t i = 0; i < parts.size(); ++i) { // the whole copies' frame; blocks come range by range
    CompactCsr &c      = parts[i].copy;
    c.nrows            = views[i].nrows;
    c.ncols            = views[i].ncols;
    c.mode             = parts[i].opts.mode;
    c.order            = parts[i].opts.order;
    c.layout_option    = parts[i].opts.layout;
    c.min_run_rows     = parts[i].opts.min_run_rows;
    c.own_indices      = true;
    c.sort_window      = parts[i].opts.sort_window;
    c.patched_slices   = parts[i].opts.patched_slices;
    c.stats.nrows      = views[i].nrows;
    c.stats.nnz        = views[i].nrows ? views[i].rowptr[views[i].nrows] : 0;
    c.stats.index_size = sizeof(Index);
  }
  std::vector<CompactPart<Index>> pieces(parts.size());
  std::vector<std::vector<Index>> rowptrs(parts.size());
  for (const RowRange<Index> &r : row_ranges(views, step_nnz, parts.front().opts)) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      pieces[i]                  = CompactPart<Index>();
      pieces[i].csr              = range_view(views[i], r, i, rowptrs[i]);
      pieces[i].opts             = parts[i].opts;
      pieces[i].opts.split_later = true; // (ranges are joined value by value: split storage is cut at the end)
    }
    build_parts(pieces, preset, r.begin);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      measure_relative_errors(pieces[i].csr, pieces[i].copy);
      append_rows(parts[i].copy, std::move(pieces[i].copy), r.begin, views[i].rowptr[r.begin]);
    }
    rows_done(r.end);
  }
  for (CompactPart<Index> &p : parts) {
    merge_ranges(p.copy);
    split_blocks(p.copy, p.opts.mode);
    p.copy.stats.index_bytes = 0; // (the index bytes a product reads, as for a whole build)
    for (RowBlock &b : p.copy.blocks) {
      p.copy.stats.index_bytes += block_index_bytes<Index>(b);
      for (BigBuffer *buffer : {&b.values.buffer(), &b.cols.buffer(), &b.row_lengths.buffer(), &b.node_cols.buffer()})
        buffer->trim(); // (the blocks joined and those left alone: each array's unused tail once)
    }
  }
}
} // namespace

template <typename Index>
void build_compact_parts_by_rows(std::vector<CompactPart<Index>> &parts, std::int64_t step_nnz,
                                 const std::function<void(std::int64_t)> &rows_done)
{
  build_parts_by_rows(parts, step_nnz, rows_done, nullptr);
}

namespace {
// Whether a copy can be refilled a range of rows at a time: each block's units (nodes, slices) hold ascending rows,
// and its values are in one format (split storage rewrites whole planes).
bool refillable_by_rows(const CompactCsr &c)
{
  if (!c.rows_in_order()) return false;
  return std::none_of(c.blocks.begin(), c.blocks.end(), [](const RowBlock &b) { return b.segments != 0; });
}

// The largest changes the format of block b makes to the values of units [first, last), noted in stats (a lossy
// copy's changes, measured while the matrix's values are still there).
template <typename Index>
void measure_units(const CsrView<Index> &csr, const RowBlock &b, std::int64_t first, std::int64_t last,
                   StorageStats &stats)
{
  double &worst = stats.per_format[static_cast<int>(b.format)].max_relative_error;
  dispatch_format(b.format, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (std::int64_t k = b.unit_begin(first), end = b.unit_end(last - 1); k < end; ++k) {
      const std::int64_t row = b.row(k);
      for (std::int64_t e = csr.rowptr[row]; e < csr.rowptr[row + 1]; ++e)
        note_change(csr.values[e], decode(encode_as<S>(csr.values[e])), worst);
    }
    return true;
  });
}

// The format each row of rows [0, rows) is stored in (where a part holds values of it); -1 elsewhere.
template <typename Index>
std::vector<std::int8_t> stored_row_formats(const std::vector<CompactPart<Index>> &parts, std::int64_t rows)
{
  std::vector<std::int8_t> format(static_cast<std::size_t>(rows), -1);
  for (const CompactPart<Index> &p : parts)
    for (const RowBlock &b : p.copy.blocks)
      for (std::int64_t k = 0; k < b.row_count(); ++k) {
        const std::int64_t row = b.row(k);
        if (row < rows && p.csr.rowptr[row + 1] > p.csr.rowptr[row])
          format[static_cast<std::size_t>(row)] = static_cast<std::int8_t>(b.format);
      }
  return format;
}
} // namespace

template <typename Index>
bool refill_compact_parts_by_rows(std::vector<CompactPart<Index>> &parts, std::int64_t step_nnz,
                                  const std::function<void(std::int64_t)> &rows_done,
                                  const std::function<void(std::size_t, std::int64_t)> &restore)
{
  if (parts.empty()) return false;
  std::vector<CsrView<Index>> views;
  for (CompactPart<Index> &p : parts) {
    check_view(p.csr);
    check_options(p.opts);
    const StorageMode mode = parts.front().opts.mode;
    if (!p.reusable || p.opts.mode != mode || mode == StorageMode::entrysplit ||
        (mode == StorageMode::rowsplit && p.opts.mean_abs_value < 0.0) || p.csr.nrows != parts.front().csr.nrows ||
        !layout_reusable(p.csr, p.opts, p.copy) || !refillable_by_rows(p.copy))
      return false;
    views.push_back(p.csr);
  }
  const Index nrows = views.front().nrows;
  const bool lossy  = storage_mode_is_lossy(parts.front().opts.mode);
  std::vector<RowFormatCheck<Index>> checks;
  std::vector<std::vector<std::int64_t>> next_unit(parts.size()); // per part and block: the first unit not written
  for (std::size_t i = 0; i < parts.size(); ++i) {
    checks.emplace_back(views, i, parts[i].opts);
    forget_relative_errors(parts[i].copy.stats, parts[i].opts.mode);
    next_unit[i].assign(parts[i].copy.blocks.size(), 0);
    parts[i].refilled = false;
  }
  std::int64_t nnz = 0;
  for (const auto &v : views)
    nnz += v.nrows ? v.rowptr[v.nrows] : 0;
  std::vector<RowRange<Index>> ranges(1); // (the whole matrix in one step)
  ranges[0].end = nrows;
  if (step_nnz > 0 && nnz > step_nnz) ranges = row_ranges(views, step_nnz, parts.front().opts);
  std::int64_t given_back = 0; // rows [0, given_back) of every part are given back: their values are in the copies
  bool kept               = true;
  for (const RowRange<Index> &r : ranges) {
    std::int64_t written = nrows; // every row below is in units written
    for (std::size_t i = 0; kept && i < parts.size(); ++i) {
      CompactCsr &c = parts[i].copy;
      for (std::size_t j = 0; kept && j < c.blocks.size(); ++j) {
        RowBlock &b              = c.blocks[j];
        const std::int64_t units = b.unit_count();
        std::int64_t &first = next_unit[i][j], last = first;
        while (last < units && b.row(b.unit_begin(last)) < r.end)
          ++last;
        if (last > first) {
          kept = dispatch_format(b.format, [&](auto tag) {
            return write_values<typename decltype(tag)::type>(
                views[i], b, [&](std::int64_t row) { return checks[i](row, b.format); }, parts[i].opts.threads,
                checks[i].fused_check(b.format), {first, last});
          });
          if (kept && lossy) measure_units(views[i], b, first, last, c.stats);
          first = last;
        }
        if (first < units) written = std::min<std::int64_t>(written, b.row(b.unit_begin(first)));
      }
    }
    if (!kept) break;
    given_back = written;
    rows_done(given_back);
  }
  if (kept) {
    for (CompactPart<Index> &p : parts) {
      p.refilled                   = true;
      p.copy.stats.errors_measured = true;
    }
    return true;
  }
  // A row needs another format. Rows [0, given_back) kept theirs (each was confirmed as it was written) and have
  // their new values only in the copies: they go back into the matrix, the copies go, and every part is built anew a
  // range of rows at a time (the memory of an assembly stays that of its matrix, where a whole build would add a
  // whole copy: measured 1.59 times AIJ's peak on a DMDA's reassembly), with those rows' formats and the formats the
  // other rows' values ask for, as a whole build from the matrix would decide them.
  const std::vector<std::int8_t> kept_formats = stored_row_formats(parts, given_back);
  for (std::size_t i = 0; i < parts.size() && given_back > 0; ++i)
    restore(i, given_back);
  std::vector<std::vector<double>> measured(parts.size()); // the changes of the rows given back, measured against
  for (std::size_t i = 0; i < parts.size(); ++i)           // their own values (restored, they hold the stored ones)
    for (const FormatStats &fs : parts[i].copy.stats.per_format)
      measured[i].push_back(fs.max_relative_error);
  build_parts_by_rows(parts, step_nnz, rows_done, &kept_formats);
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (int f = 0; f < kFormatCount; ++f) {
      double &worst = parts[i].copy.stats.per_format[f].max_relative_error;
      worst         = std::max(worst, measured[i][static_cast<std::size_t>(f)]);
    }
  return true;
}

template <typename Index> void measure_relative_errors(const CsrView<Index> &csr, CompactCsr &copy)
{
  if (copy.stats.errors_measured) return;
  check_view(csr);
  if (copy.entry_split() || copy.nrows != csr.nrows || copy.stats.nnz != (csr.nrows ? csr.rowptr[csr.nrows] : 0))
    throw StorageError("petscmp: the changes of a compact copy are measured against the matrix it was built from");
  for (FormatStats &fs : copy.stats.per_format)
    fs.max_relative_error = 0.0;
  for (const RowBlock &b : copy.blocks) {
    double &worst = copy.stats.per_format[static_cast<int>(b.format)].max_relative_error;
    dispatch_format(b.format, [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (std::int64_t k = 0; k < b.row_count(); ++k) {
        const std::int64_t row = b.row(k);
        for (std::int64_t e = csr.rowptr[row]; e < csr.rowptr[row + 1]; ++e)
          note_change(csr.values[e], decode(encode_as<S>(csr.values[e])), worst);
      }
      return true;
    });
  }
  copy.stats.errors_measured = true;
}

#define PETSCMP_INSTANTIATE_BUILDER(Index)                                                                             \
  template AbsSum abs_value_sum<Index>(const CsrView<Index> &);                                                        \
  template std::vector<Format> choose_row_formats<Index>(const std::vector<CsrView<Index>> &, const StorageOptions &); \
  template CompactCsr assemble_compact_csr<Index>(const CsrView<Index> &, const std::vector<Format> &,                 \
                                                  const StorageOptions &, CompactCsr *);                               \
  template CompactCsr build_compact_csr<Index>(const CsrView<Index> &, const StorageOptions &, CompactCsr *);          \
  template CompactCsr build_entry_split<Index>(const CsrView<Index> &, const StorageOptions &);                        \
  template bool refill_compact_values<Index>(const CsrView<Index> &, const std::vector<Format> &,                      \
                                             const StorageOptions &, CompactCsr &);                                    \
  template bool refill_compact_values<Index>(const CsrView<Index> &, const StorageOptions &, CompactCsr &);            \
  template void update_compact_parts<Index>(std::vector<CompactPart<Index>> &);                                        \
  template void build_compact_parts_by_rows<Index>(std::vector<CompactPart<Index>> &, std::int64_t,                    \
                                                   const std::function<void(std::int64_t)> &);                         \
  template void measure_relative_errors<Index>(const CsrView<Index> &, CompactCsr &);                                  \
  template bool refill_compact_parts_by_rows<Index>(std::vector<CompactPart<Index>> &, std::int64_t,                   \
                                                    const std::function<void(std::int64_t)> &,                         \
                                                    const std::function<void(std::size_t, std::int64_t)> &);
PETSCMP_INSTANTIATE_BUILDER(std::int32_t)
PETSCMP_INSTANTIATE_BUILDER(std::int64_t)
#undef PETSCMP_INSTANTIATE_BUILDER

} // namespace petscmp
