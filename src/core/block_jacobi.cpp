// Adaptive-precision block-Jacobi setup: detection, inversion, selection, packing.
// Block-Jacobi format selection lives in select_block_formats() and nowhere else.
#include "petscmp/core/block_jacobi.hpp"

#include <algorithm>
#include <chrono>
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

void uniform_partition(std::int64_t nrows, int block_size, BlockPartition &p)
{
  check_block_size(block_size);
  const std::int64_t nblk = nrows > 0 ? (nrows + block_size - 1) / block_size : 0;
  p.offsets.resize(static_cast<std::size_t>(nblk) + 1);
  for (std::int64_t b = 0; b < nblk; ++b)
    p.offsets[b] = b * block_size;
  p.offsets[nblk] = std::max<std::int64_t>(nrows, 0);
}

BlockPartition uniform_partition(std::int64_t nrows, int block_size)
{
  BlockPartition p;
  uniform_partition(nrows, block_size, p);
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

// D = A(rows, rows) of block [begin, begin + n), column-major; other columns ignored. Rows are sorted by column
// (invert_diagonal_blocks' contract): the block's columns are found by a binary search, not a scan of the row (an
// FEM row of 81 entries holds 3 of them).
template <typename Index>
PETSCMP_INLINE void extract_block(const CsrView<Index> &csr, std::int64_t begin, int n, double *d)
{
  std::fill(d, d + n * n, 0.0);
  for (int r = 0; r < n; ++r) {
    const std::int64_t row = begin + r;
    const Index *cols = csr.cols + csr.rowptr[row], *end = csr.cols + csr.rowptr[row + 1];
    for (const Index *k = std::lower_bound(cols, end, static_cast<Index>(begin)); k < end; ++k) {
      const std::int64_t c = static_cast<std::int64_t>(*k) - begin;
      if (c >= n) break;
      d[r + c * n] = csr.values[k - csr.cols];
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

namespace {
// Blocks [first, last) of p inverted into out, whose arrays (and out.partition, the blocks' offsets) start at block
// first; the arrays' memory is reused when large enough (the chunks of build_block_jacobi).
template <typename Index>
void invert_range(const CsrView<Index> &csr, const BlockPartition &p, std::int64_t first, std::int64_t last,
                  InvertedBlocks &out)
{
  out.partition.offsets.assign(p.offsets.begin() + first, p.offsets.begin() + last + 1);
  out.failed_blocks       = 0;
  out.first_failed_block  = -1;
  const std::int64_t nblk = last - first;
  out.value_offsets.allocate(static_cast<std::size_t>(nblk) + 1);
  out.value_offsets[0] = 0;
  for (std::int64_t b = 0; b < nblk; ++b)
    out.value_offsets[b + 1] =
        out.value_offsets[b] + std::int64_t(out.partition.block_size(b)) * out.partition.block_size(b);
  out.inverses.allocate(static_cast<std::size_t>(out.value_offsets[nblk])); // every block is written below
  out.norm_d.allocate(static_cast<std::size_t>(nblk));                      // every block sets its entries
  out.kappa.allocate(static_cast<std::size_t>(nblk));
  out.status.resize(nblk);
  out.symmetric.resize(nblk);
  int pivots[kMaxBlockSize];
  for (std::int64_t b = 0; b < nblk; ++b) {
    with_block_size(out.partition.block_size(b),
                    [&](auto size) { invert_block<decltype(size)::value>(csr, b, out, pivots); });
  }
}
} // namespace

template <typename Index> InvertedBlocks invert_diagonal_blocks(const CsrView<Index> &csr, const BlockPartition &p)
{
  if (p.row_count() != csr.nrows) throw StorageError("the block partition does not cover the matrix rows");
  InvertedBlocks out;
  invert_range(csr, p, 0, p.block_count(), out);
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

// An upper bound of block b's rounding perturbation in f (perturbation_of), found without rounding a value: an
// entry within f's normal range changes by at most u(f) of itself, a smaller one by at most min_normal(f) (rounded
// to a subnormal or flushed to zero), so each column of E - round(E) sums to at most u ||E||_1 + n min_normal and
// the perturbation is at most kappa (u + n min_normal / ||E||_1). Infinity when an entry is beyond f's largest
// finite value (or not finite): the perturbation must then be computed.
double perturbation_bound(const InvertedBlocks &blocks, std::int64_t b, Format f)
{
  const int n     = blocks.partition.block_size(b);
  const double *e = blocks.inverses.data() + blocks.value_offsets[b];
  const double hi = max_finite(f);
  double norm_e   = 0.0;
  bool finite     = true;
  for (int c = 0; c < n; ++c) {
    double col = 0.0;
    for (int r = 0; r < n; ++r) {
      const double a = std::fabs(e[r + c * n]);
      finite &= a <= hi; // (false for NaN and Inf)
      col += a;
    }
    norm_e = std::max(norm_e, col);
  }
  if (!finite || !(norm_e > 0.0)) return std::numeric_limits<double>::infinity();
  return blocks.kappa[b] * (unit_roundoff(f) + n * min_normal(f) / norm_e);
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

// Whether block b's rounding perturbation in f is at most bound (perturbation_of's value, computed): yes without
// rounding a value where perturbation_bound is at most half the bound (the computed perturbation exceeds its exact
// value by far less than that margin, so the answer is the computed one's); else it is computed.
bool perturbation_within(const InvertedBlocks &blocks, std::int64_t b, Format f, double bound)
{
  if (perturbation_bound(blocks, b, f) <= 0.5 * bound) return true;
  return rounding_perturbation(blocks, b, f) <= bound;
}

} // namespace

bool format_admissible(const InvertedBlocks &blocks, std::int64_t b, Format f, double accuracy, bool check_range)
{
  if (blocks.status[b] != InversionStatus::ok) return f == Format::fp64;
  const double kappa_u = blocks.kappa[b] * unit_roundoff(f);
  if (!(kappa_u <= accuracy)) return false;
  return !check_range || perturbation_within(blocks, b, f, accuracy);
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
      if (s.forced == Format::fp64 || perturbation_bound(blocks, b, s.forced) <= 0.5 ||
          rounding_perturbation(blocks, b, s.forced) < 1.0)
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
        if (has_reduced_range(f) && !perturbation_within(blocks, b, f, s.accuracy)) {
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

std::vector<GroupRun> find_group_runs(const std::vector<BlockGroup> &groups)
{
  std::vector<GroupRun> runs;
  const std::int64_t count = static_cast<std::int64_t>(groups.size());
  for (std::int64_t first = 0, end; first < count; first = end) {
    const BlockGroup &g     = groups[static_cast<std::size_t>(first)];
    const std::int64_t rows = std::int64_t(g.nblocks) * g.block_size;
    const std::int64_t bytes =
        std::int64_t(g.nblocks) * g.block_size * g.block_size * static_cast<std::int64_t>(format_bytes(g.format));
    for (end = first + 1; end < count; ++end) {
      const BlockGroup &h = groups[static_cast<std::size_t>(end)];
      if (h.format != g.format || h.block_size != g.block_size || h.nblocks != g.nblocks ||
          h.row_begin != g.row_begin + (end - first) * rows || h.byte_offset != g.byte_offset + (end - first) * bytes)
        break;
    }
    runs.push_back(GroupRun{first, end});
  }
  return runs;
}

namespace {
// Appends the groups of the blocks of `blocks` (formats given) to s, from byte `bytes` of its values on (each group
// 8-byte aligned); returns where they end. first_block: each new group's first block in `blocks`.
std::int64_t plan_groups(const BlockPartition &p, const std::vector<Format> &formats, int group_blocks,
                         BlockJacobiStorage &s, std::int64_t bytes, std::vector<std::int64_t> &first_block)
{
  const std::int64_t nblk = p.block_count();
  if (static_cast<std::int64_t>(formats.size()) != nblk) throw StorageError("one format per block is needed");
  group_blocks      = std::max(1, group_blocks);
  const auto opened = s.groups.size();
  first_block.clear();
  for (std::int64_t b = 0; b < nblk; ++b) {
    s.block_format.push_back(static_cast<std::uint8_t>(formats[b]));
    BlockGroup *g = s.groups.size() == opened ? nullptr : &s.groups.back();
    if (!g || g->format != formats[b] || g->block_size != p.block_size(b) || g->nblocks == group_blocks) {
      bytes = (bytes + 7) / 8 * 8;
      s.groups.push_back(BlockGroup{formats[b], p.block_size(b), 0, p.offsets[b], bytes});
      first_block.push_back(b);
      g = &s.groups.back();
    }
    ++g->nblocks;
    bytes += std::int64_t(p.block_size(b)) * p.block_size(b) * static_cast<std::int64_t>(format_bytes(formats[b]));
  }
  return bytes;
}

// The values of groups [first_group, ...) of s, each rounded once from the fp64 inverse in `blocks`.
void write_groups(const InvertedBlocks &blocks, BlockJacobiStorage &s, std::size_t first_group,
                  const std::vector<std::int64_t> &first_block)
{
  for (std::size_t gi = first_group; gi < s.groups.size(); ++gi) {
    const BlockGroup &g = s.groups[gi];
    dispatch_format(g.format, [&](auto tag) {
      using S        = typename decltype(tag)::type;
      const int n    = g.block_size;
      const auto out = reduced_writer<S>(s.values.as<S>() + g.byte_offset / static_cast<std::int64_t>(sizeof(S)),
                                         static_cast<std::size_t>(g.nblocks) * n * n);
      for (int i = 0; i < g.nblocks; ++i) {
        const double *e = blocks.inverses.data() + blocks.value_offsets[first_block[gi - first_group] + i];
        for (int c = 0; c < n; ++c)
          for (int r = 0; r < n; ++r)
            out.store(static_cast<std::size_t>((c * g.nblocks + i) * n + r), e[r + c * n]);
      }
    });
  }
}
} // namespace

BlockJacobiStorage pack_block_jacobi(const InvertedBlocks &blocks, const std::vector<Format> &formats, int group_blocks,
                                     BlockJacobiStorage *recycle)
{
  BlockJacobiStorage s;
  s.nrows = blocks.partition.row_count();
  std::vector<std::int64_t> first_block;
  const std::int64_t bytes = plan_groups(blocks.partition, formats, group_blocks, s, 0, first_block);
  if (recycle) s.values.take_memory_of(recycle->values);
  s.values.resize(static_cast<std::size_t>(bytes));
  write_groups(blocks, s, 0, first_block);
  s.runs = find_group_runs(s.groups);
  return s;
}

template <typename Index>
BlockJacobiSetup build_block_jacobi(const CsrView<Index> &csr, const BlockPartition &p, const FormatSelection &sel,
                                    int group_blocks, BlockJacobiStorage *recycle, std::int64_t chunk_blocks)
{
  using clock = std::chrono::steady_clock;
  if (p.row_count() != csr.nrows) throw StorageError("the block partition does not cover the matrix rows");
  group_blocks            = std::max(1, group_blocks);
  chunk_blocks            = std::max<std::int64_t>(1, chunk_blocks / group_blocks) * group_blocks;
  const std::int64_t nblk = p.block_count();
  BlockJacobiSetup out;
  BlockJacobiStorage &s = out.storage;
  s.nrows               = p.row_count();
  // room for every block in fp64 and each group's alignment; cut to what was written at the end
  std::int64_t room = 0;
  for (std::int64_t b = 0; b < nblk; ++b)
    room += std::int64_t(p.block_size(b)) * p.block_size(b) * 8;
  room += 8 * (nblk + 1);
  if (recycle) { // its arrays' memory, not their content
    s.values.take_memory_of(recycle->values);
    s.groups.swap(recycle->groups);
    s.block_format.swap(recycle->block_format);
    s.groups.clear();
    s.block_format.clear();
  }
  s.block_format.reserve(static_cast<std::size_t>(nblk));
  s.groups.reserve(static_cast<std::size_t>(nblk / group_blocks + 1)); // (more when formats or sizes change often)
  s.values.resize_uninitialized(static_cast<std::size_t>(room));
  out.kappa_min = std::numeric_limits<double>::infinity();
  InvertedBlocks chunk;
  std::vector<std::int64_t> first_block;
  std::int64_t bytes = 0;
  for (std::int64_t first = 0; first < nblk; first += chunk_blocks) {
    const std::int64_t last = std::min(nblk, first + chunk_blocks);
    const auto t0           = clock::now();
    invert_range(csr, p, first, last, chunk);
    const auto t1 = clock::now();
    SelectionStats st;
    const std::vector<Format> formats = select_block_formats(chunk, sel, &st);
    const std::size_t first_group     = s.groups.size();
    const std::int64_t end            = plan_groups(chunk.partition, formats, group_blocks, s, bytes, first_block);
    std::int64_t at                   = bytes; // the alignment bytes before each group: zeros
    for (std::size_t g = first_group; g < s.groups.size(); ++g) {
      const BlockGroup &group = s.groups[g];
      std::memset(s.values.as<unsigned char>() + at, 0, static_cast<std::size_t>(group.byte_offset - at));
      at = group.byte_offset + std::int64_t(group.nblocks) * group.block_size * group.block_size *
                                   static_cast<std::int64_t>(format_bytes(group.format));
    }
    write_groups(chunk, s, first_group, first_block);
    bytes = end;
    for (int f = 0; f < kFormatCount; ++f)
      out.selection.blocks_per_format[f] += st.blocks_per_format[f];
    out.selection.range_rejections += st.range_rejections;
    out.selection.forced_fallbacks += st.forced_fallbacks;
    if (chunk.failed_blocks && out.failed_blocks == 0) {
      out.first_failed_block = first + chunk.first_failed_block;
      out.first_failure      = chunk.status[static_cast<std::size_t>(chunk.first_failed_block)];
    }
    out.failed_blocks += chunk.failed_blocks;
    for (std::int64_t b = 0; b < last - first; ++b)
      if (chunk.status[static_cast<std::size_t>(b)] == InversionStatus::ok) {
        out.kappa_min = std::min(out.kappa_min, chunk.kappa[b]);
        out.kappa_max = std::max(out.kappa_max, chunk.kappa[b]);
      }
    out.seconds_inversion += std::chrono::duration<double>(t1 - t0).count();
    out.seconds_selection += std::chrono::duration<double>(clock::now() - t1).count();
  }
  s.values.shrink_to(static_cast<std::size_t>(bytes));
  s.runs = find_group_runs(s.groups);
  return out;
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
template BlockJacobiSetup build_block_jacobi<std::int32_t>(const CsrView<std::int32_t> &, const BlockPartition &,
                                                           const FormatSelection &, int, BlockJacobiStorage *,
                                                           std::int64_t);
template BlockJacobiSetup build_block_jacobi<std::int64_t>(const CsrView<std::int64_t> &, const BlockPartition &,
                                                           const FormatSelection &, int, BlockJacobiStorage *,
                                                           std::int64_t);

} // namespace petscmp
