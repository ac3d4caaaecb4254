// Adaptive-precision block-Jacobi setup: detection, inversion, selection, packing.
// Block-Jacobi format selection lives in select_block_formats() and nowhere else.
#include "petscmp/core/block_jacobi.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "petscmp/core/accessor.hpp"

namespace petscmp {

int BlockPartition::max_block_size() const
{
  int m = 0;
  for (std::int64_t b = 0; b < block_count(); ++b)
    m = std::max(m, block_size(b));
  return m;
}

// ---- detection ---------------------------------------------------------------------

namespace {

void check_block_size(int size)
{
  if (size < 1 || size > kMaxBlockSize)
    throw StorageError("block size " + std::to_string(size) + " is outside [1, " + std::to_string(kMaxBlockSize) + "]");
}

} // namespace

template <typename Index> BlockPartition detect_pattern_runs(const CsrView<Index> &csr, int max_block_size)
{
  check_block_size(max_block_size);
  const std::int64_t n = csr.nrows;
  BlockPartition p;
  std::int64_t row = 0;
  while (row < n) {
    std::int64_t end = row + 1;
    while (end < n && end - row < max_block_size && same_pattern(csr, row, end))
      ++end;
    p.offsets.push_back(end);
    row = end;
  }
  return p;
}

BlockPartition agglomerate(const BlockPartition &nodes, int max_block_size)
{
  check_block_size(max_block_size);
  BlockPartition p;
  std::int64_t block_begin = 0;
  for (std::int64_t k = 0; k < nodes.block_count(); ++k) {
    const std::int64_t begin = nodes.offsets[k], end = nodes.offsets[k + 1];
    if (begin > block_begin && end - block_begin > max_block_size) { // does not fit: close the block before it
      p.offsets.push_back(begin);
      block_begin = begin;
    }
  }
  if (nodes.row_count() > 0) p.offsets.push_back(nodes.row_count());
  return p;
}

template <typename Index> BlockPartition detect_supervariable_blocks(const CsrView<Index> &csr, int max_block_size)
{
  return agglomerate(detect_pattern_runs(csr, max_block_size), max_block_size);
}

bool runs_are_nodes(const BlockPartition &runs)
{
  return runs.row_count() > 0 && 10 * runs.block_count() <= 9 * runs.row_count();
}

BlockPartition uniform_partition(std::int64_t nrows, int block_size)
{
  check_block_size(block_size);
  BlockPartition p;
  for (std::int64_t r = block_size; r < nrows; r += block_size)
    p.offsets.push_back(r);
  if (nrows > 0) p.offsets.push_back(nrows);
  return p;
}

BlockPartition partition_from_sizes(const std::int64_t *sizes, std::int64_t count, std::int64_t nrows)
{
  BlockPartition p;
  p.offsets.reserve(static_cast<std::size_t>(count) + 1);
  for (std::int64_t b = 0; b < count; ++b) {
    check_block_size(static_cast<int>(std::min<std::int64_t>(sizes[b], kMaxBlockSize + 1)));
    p.offsets.push_back(p.offsets.back() + sizes[b]);
  }
  if (p.row_count() != nrows)
    throw StorageError("the block sizes add up to " + std::to_string(p.row_count()) + " rows, but the matrix has " +
                       std::to_string(nrows) + " local rows");
  return p;
}

// ---- dense blocks --------------------------------------------------------------------

namespace {
// The dense-block routines are inline with the size as a parameter: called
// with a constant size (blocks of 1-8 rows, below) the compiler unrolls them,
// with the same operations in the same order, so the results are the bits of
// the general code (test BlockJacobiInversion.FixedSizesMatchTheGeneralCode).
#define PETSCMP_INLINE inline __attribute__((always_inline))

PETSCMP_INLINE double norm1_of(int n, const double *a)
{
  double best = 0.0;
  for (int c = 0; c < n; ++c) {
    double s = 0.0;
    for (int r = 0; r < n; ++r)
      s += std::fabs(a[r + c * n]);
    if (!(s <= best)) best = s; // NaN propagates
  }
  return best;
}

// fn(std::integral_constant<int, n>{}) for blocks of 1-6 rows (FEM nodes: code
// unrolled for the size), fn(std::integral_constant<int, 0>{}) for any other.
template <typename Fn> PETSCMP_INLINE decltype(auto) with_block_size(int n, Fn &&fn)
{
  switch (n) {
  case 1:
    return fn(std::integral_constant<int, 1>{});
  case 2:
    return fn(std::integral_constant<int, 2>{});
  case 3:
    return fn(std::integral_constant<int, 3>{});
  case 4:
    return fn(std::integral_constant<int, 4>{});
  case 5:
    return fn(std::integral_constant<int, 5>{});
  case 6:
    return fn(std::integral_constant<int, 6>{});
  default:
    return fn(std::integral_constant<int, 0>{});
  }
}

PETSCMP_INLINE bool exactly_symmetric(int n, const double *a)
{
  for (int c = 0; c < n; ++c)
    for (int r = c + 1; r < n; ++r)
      if (double_bits(a[r + c * n]) != double_bits(a[c + r * n])) return false;
  return true;
}
} // namespace

double norm1(int n, const double *a)
{
  return norm1_of(n, a);
}

bool is_exactly_symmetric(int n, const double *a)
{
  return exactly_symmetric(n, a);
}

const char *inversion_status_name(InversionStatus s)
{
  switch (s) {
  case InversionStatus::ok:
    return "ok";
  case InversionStatus::singular:
    return "singular";
  default:
    return "not finite";
  }
}

namespace {
PETSCMP_INLINE InversionStatus gauss_jordan(int n, double *a, int *pivots)
{
  for (int i = 0; i < n * n; ++i)
    if (!std::isfinite(a[i])) return InversionStatus::not_finite;
  // a pivot below this is rounding noise of the elimination: numerically singular
  const double negligible = n * std::numeric_limits<double>::epsilon() * norm1_of(n, a);
  for (int k = 0; k < n; ++k) {
    int p = k;
    for (int i = k + 1; i < n; ++i)
      if (std::fabs(a[i + k * n]) > std::fabs(a[p + k * n])) p = i;
    if (!(std::fabs(a[p + k * n]) > negligible)) return InversionStatus::singular;
    pivots[k] = p;
    if (p != k)
      for (int j = 0; j < n; ++j)
        std::swap(a[k + j * n], a[p + j * n]);
    const double pivot = a[k + k * n];
    a[k + k * n]       = 1.0;
    for (int j = 0; j < n; ++j)
      a[k + j * n] /= pivot; // row k, now with 1/pivot at (k, k)
    // a(i, j) -= a(i, k) a(k, j) for i != k, column by column (contiguous in
    // column-major storage); row k is restored after each column
    for (int j = 0; j < n; ++j) {
      if (j == k) continue;
      const double akj = a[k + j * n];
      double *col      = a + j * n;
      const double *ck = a + k * n;
      for (int i = 0; i < n; ++i)
        col[i] -= ck[i] * akj;
      col[k] = akj;
    }
    const double inv = a[k + k * n];
    for (int i = 0; i < n; ++i)
      if (i != k) a[i + k * n] = 0.0 - a[i + k * n] * inv;
  }
  // the row swaps made this (P D)^{-1} = D^{-1} P^T: swap columns back in reverse order
  for (int k = n - 1; k >= 0; --k)
    if (pivots[k] != k)
      for (int i = 0; i < n; ++i)
        std::swap(a[i + k * n], a[i + pivots[k] * n]);
  for (int i = 0; i < n * n; ++i)
    if (!std::isfinite(a[i])) return InversionStatus::singular;
  return InversionStatus::ok;
}
} // namespace

InversionStatus invert_gauss_jordan(int n, double *a, int *pivots)
{
  return gauss_jordan(n, a, pivots);
}

// ---- inversion ----------------------------------------------------------------------------

namespace {

// D = A(rows, rows) of block [begin, begin + n), column-major; other columns ignored.
template <typename Index>
PETSCMP_INLINE void extract_block(const CsrView<Index> &csr, std::int64_t begin, int n, double *d)
{
  std::fill(d, d + n * n, 0.0);
  for (int r = 0; r < n; ++r) {
    const std::int64_t row = begin + r;
    for (Index k = csr.rowptr[row]; k < csr.rowptr[row + 1]; ++k) {
      const std::int64_t c = static_cast<std::int64_t>(csr.cols[k]) - begin;
      if (c >= 0 && c < n) d[r + c * n] = csr.values[k];
    }
  }
}

PETSCMP_INLINE void symmetrize(int n, double *a)
{
  for (int c = 0; c < n; ++c)
    for (int r = c + 1; r < n; ++r)
      a[r + c * n] = a[c + r * n] = 0.5 * (a[r + c * n] + a[c + r * n]);
}

// Block b of out: extracted, inverted, symmetrized when D_b is, kappa_1.
// N > 0: blocks of N rows (unrolled); N = 0: any size.
template <int N, typename Index>
void invert_block(const CsrView<Index> &csr, std::int64_t b, InvertedBlocks &out, int *pivots)
{
  const BlockPartition &p = out.partition;
  const int n             = N > 0 ? N : p.block_size(b);
  double *e               = out.inverses.data() + out.value_offsets[b];
  extract_block(csr, p.offsets[b], n, e);
  out.norm_d[b]    = norm1_of(n, e);
  out.symmetric[b] = exactly_symmetric(n, e);
  out.status[b]    = gauss_jordan(n, e, pivots);
  if (out.status[b] == InversionStatus::ok) {
    // CG needs a symmetric preconditioner; elimination does not keep symmetry exactly
    if (out.symmetric[b]) symmetrize(n, e);
    out.kappa[b] = out.norm_d[b] * norm1_of(n, e);
    // an inverse whose condition number reaches 1/eps carries no correct digit
    if (!(out.kappa[b] * std::numeric_limits<double>::epsilon() < 1.0)) out.status[b] = InversionStatus::singular;
  }
  if (out.status[b] != InversionStatus::ok) {
    out.kappa[b] = std::numeric_limits<double>::infinity();
    std::fill(e, e + n * n, 0.0);
    if (out.failed_blocks++ == 0) out.first_failed_block = b;
  }
}

} // namespace

template <typename Index> InvertedBlocks invert_diagonal_blocks(const CsrView<Index> &csr, const BlockPartition &p)
{
  if (p.row_count() != csr.nrows) throw StorageError("the block partition does not cover the matrix rows");
  InvertedBlocks out;
  out.partition           = p;
  const std::int64_t nblk = p.block_count();
  out.value_offsets.allocate(static_cast<std::size_t>(nblk) + 1);
  out.value_offsets[0] = 0;
  for (std::int64_t b = 0; b < nblk; ++b)
    out.value_offsets[b + 1] = out.value_offsets[b] + std::int64_t(p.block_size(b)) * p.block_size(b);
  out.inverses.allocate(static_cast<std::size_t>(out.value_offsets[nblk])); // every block is written below
  out.norm_d.allocate(static_cast<std::size_t>(nblk));                      // every block sets its entries
  out.kappa.allocate(static_cast<std::size_t>(nblk));
  out.status.resize(nblk);
  out.symmetric.resize(nblk);
  int pivots[kMaxBlockSize];
  for (std::int64_t b = 0; b < nblk; ++b) {
    with_block_size(p.block_size(b), [&](auto size) { invert_block<decltype(size)::value>(csr, b, out, pivots); });
  }
  return out;
}

// ---- selection ---------------------------------------------------------------------------

const char *format_policy_name(FormatPolicy p)
{
  switch (p) {
  case FormatPolicy::all:
    return "all";
  case FormatPolicy::ieee:
    return "ieee";
  case FormatPolicy::range_preserving:
    return "range_preserving";
  default:
    return "forced";
  }
}

std::vector<Format> candidate_formats(const FormatSelection &s)
{
  switch (s.policy) {
  case FormatPolicy::all:
    return {Format::fp16, Format::bf16, Format::fp11_4, Format::fp32, Format::fp11_20, Format::fp64};
  case FormatPolicy::ieee:
    return {Format::fp16, Format::fp32, Format::fp64};
  case FormatPolicy::range_preserving:
    return {Format::fp11_4, Format::fp11_20, Format::fp64};
  default:
    return {s.forced};
  }
}

bool has_reduced_range(Format f)
{
  return f == Format::fp16 || f == Format::bf16 || f == Format::fp32;
}

namespace {

// kappa * ||E - round(E)||_1 / ||E||_1, which bounds ||I - round(E) D||_1;
// infinity when rounding overflows.
template <typename S> PETSCMP_INLINE double perturbation_of(int n, const double *e, double kappa)
{
  double worst_diff = 0.0, norm_e = 0.0;
  for (int c = 0; c < n; ++c) {
    double diff = 0.0, col = 0.0;
    for (int r = 0; r < n; ++r) {
      const double v = e[r + c * n], stored = decode(encode_as<S>(v));
      if (!std::isfinite(stored)) return std::numeric_limits<double>::infinity();
      diff += std::fabs(v - stored);
      col += std::fabs(v);
    }
    worst_diff = std::max(worst_diff, diff);
    norm_e     = std::max(norm_e, col);
  }
  return kappa * worst_diff / norm_e;
}

// One dispatch per block, not per value; blocks of 1-6 rows unrolled (the same bits).
double rounding_perturbation(const InvertedBlocks &blocks, std::int64_t b, Format f)
{
  const int n        = blocks.partition.block_size(b);
  const double *e    = blocks.inverses.data() + blocks.value_offsets[b];
  const double kappa = blocks.kappa[b];
  return dispatch_format(f, [&](auto tag) {
    using S = typename decltype(tag)::type;
    return with_block_size(n, [&](auto size) {
      constexpr int N = decltype(size)::value;
      return perturbation_of<S>(N > 0 ? N : n, e, kappa);
    });
  });
}

} // namespace

bool format_admissible(const InvertedBlocks &blocks, std::int64_t b, Format f, double accuracy, bool check_range)
{
  if (blocks.status[b] != InversionStatus::ok) return f == Format::fp64;
  if (!(blocks.kappa[b] * unit_roundoff(f) <= accuracy)) return false;
  return !check_range || rounding_perturbation(blocks, b, f) <= accuracy;
}

std::vector<Format> select_block_formats(const InvertedBlocks &blocks, const FormatSelection &s, SelectionStats *stats)
{
  SelectionStats local;
  const std::vector<Format> candidates = candidate_formats(s);
  std::vector<double> roundoff;
  for (Format f : candidates)
    roundoff.push_back(unit_roundoff(f));
  const std::int64_t nblk = blocks.partition.block_count();
  std::vector<Format> formats(static_cast<std::size_t>(nblk), Format::fp64);
  for (std::int64_t b = 0; b < nblk; ++b) {
    Format chosen = Format::fp64;
    if (blocks.status[b] != InversionStatus::ok) {
      // never applied: the PC reports the failure
    } else if (s.policy == FormatPolicy::forced) {
      // the user's format, unless it cannot even keep the stored inverse nonsingular
      // (kappa * relative perturbation < 1), e.g. on overflow
      if (s.forced == Format::fp64 || rounding_perturbation(blocks, b, s.forced) < 1.0)
        chosen = s.forced;
      else
        ++local.forced_fallbacks;
    } else {
      // format_admissible without its repeated work: the unit roundoffs are computed once, the rounding test
      // runs once per reduced-range candidate that kappa admits
      for (std::size_t ci = 0; ci < candidates.size(); ++ci) {
        const Format f = candidates[ci];
        if (f == Format::fp64) break;
        if (!(blocks.kappa[b] * roundoff[ci] <= s.accuracy)) continue;
        if (has_reduced_range(f) && !(rounding_perturbation(blocks, b, f) <= s.accuracy)) {
          ++local.range_rejections;
          continue;
        }
        chosen = f;
        break;
      }
    }
    formats[b] = chosen;
    ++local.blocks_per_format[static_cast<int>(chosen)];
  }
  if (stats) *stats = local;
  return formats;
}

// ---- storage -----------------------------------------------------------------------------

std::int64_t BlockJacobiStorage::fp64_bytes() const
{
  std::int64_t bytes = 0;
  for (const BlockGroup &g : groups)
    bytes += std::int64_t(g.nblocks) * g.block_size * g.block_size * 8;
  return bytes;
}

BlockJacobiStorage pack_block_jacobi(const InvertedBlocks &blocks, const std::vector<Format> &formats, int group_blocks,
                                     BlockJacobiStorage *recycle)
{
  const BlockPartition &p = blocks.partition;
  const std::int64_t nblk = p.block_count();
  if (static_cast<std::int64_t>(formats.size()) != nblk) throw StorageError("one format per block is needed");
  group_blocks = std::max(1, group_blocks);
  BlockJacobiStorage s;
  s.nrows = p.row_count();
  s.block_format.resize(static_cast<std::size_t>(nblk));
  // groups and their byte offsets
  std::int64_t bytes = 0;
  std::vector<std::int64_t> first_block;
  for (std::int64_t b = 0; b < nblk; ++b) {
    s.block_format[b] = static_cast<std::uint8_t>(formats[b]);
    BlockGroup *g     = s.groups.empty() ? nullptr : &s.groups.back();
    if (!g || g->format != formats[b] || g->block_size != p.block_size(b) || g->nblocks == group_blocks) {
      bytes = (bytes + 7) / 8 * 8;
      s.groups.push_back(BlockGroup{formats[b], p.block_size(b), 0, p.offsets[b], bytes});
      first_block.push_back(b);
      g = &s.groups.back();
    }
    ++g->nblocks;
    bytes += std::int64_t(p.block_size(b)) * p.block_size(b) * static_cast<std::int64_t>(format_bytes(formats[b]));
  }
  if (recycle) s.values.take_memory_of(recycle->values);
  s.values.resize(static_cast<std::size_t>(bytes));
  // values, each rounded once from fp64
  for (std::size_t gi = 0; gi < s.groups.size(); ++gi) {
    const BlockGroup &g = s.groups[gi];
    dispatch_format(g.format, [&](auto tag) {
      using S        = typename decltype(tag)::type;
      const int n    = g.block_size;
      const auto out = reduced_writer<S>(s.values.as<S>() + g.byte_offset / static_cast<std::int64_t>(sizeof(S)),
                                         static_cast<std::size_t>(g.nblocks) * n * n);
      for (int i = 0; i < g.nblocks; ++i) {
        const double *e = blocks.inverses.data() + blocks.value_offsets[first_block[gi] + i];
        for (int c = 0; c < n; ++c)
          for (int r = 0; r < n; ++r)
            out.store(static_cast<std::size_t>((c * g.nblocks + i) * n + r), e[r + c * n]);
      }
    });
  }
  return s;
}

double stored_entry(const BlockJacobiStorage &s, const BlockGroup &g, int i, int r, int c)
{
  return dispatch_format(g.format, [&](auto tag) {
    using S      = typename decltype(tag)::type;
    const int n  = g.block_size;
    const auto v = make_range(s.values.as<S>() + g.byte_offset / static_cast<std::int64_t>(sizeof(S)),
                              static_cast<std::size_t>(g.nblocks) * n * n);
    return v[static_cast<std::size_t>((c * g.nblocks + i) * n + r)];
  });
}

template BlockPartition detect_supervariable_blocks<std::int32_t>(const CsrView<std::int32_t> &, int);
template BlockPartition detect_supervariable_blocks<std::int64_t>(const CsrView<std::int64_t> &, int);
template BlockPartition detect_pattern_runs<std::int32_t>(const CsrView<std::int32_t> &, int);
template BlockPartition detect_pattern_runs<std::int64_t>(const CsrView<std::int64_t> &, int);
template InvertedBlocks invert_diagonal_blocks<std::int32_t>(const CsrView<std::int32_t> &, const BlockPartition &);
template InvertedBlocks invert_diagonal_blocks<std::int64_t>(const CsrView<std::int64_t> &, const BlockPartition &);

} // namespace petscmp
