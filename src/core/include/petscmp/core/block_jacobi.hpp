// Adaptive-precision block-Jacobi: block detection, inversion, per-block format
// selection and the interleaved storage the apply kernels read. PETSc-free.
//
// The preconditioner is M^{-1} = diag(E_1, ..., E_N), E_i the fp64 inverse of
// the diagonal block D_i, each E_i stored in the narrowest format that keeps the
// preconditioner accurate to the requested level (Anzt et al., adaptive
// precision block-Jacobi). All arithmetic of the apply is fp64: values are
// widened on load through the accessor, so M^{-1} stays a fixed linear operator.
//
// Setup runs in three passes, timed separately by the caller:
//   1. detection:  a BlockPartition (supervariables, a uniform size, or given sizes);
//   2. inversion:  invert_diagonal_blocks(): extract, Gauss-Jordan in fp64, kappa_1;
//   3. selection:  select_block_formats() and pack_block_jacobi().
// Format selection for block-Jacobi lives in select_block_formats() only.
#pragma once

#include <cstdint>
#include <vector>

#include "petscmp/core/big_buffer.hpp"
#include "petscmp/core/compact_csr.hpp"
#include "petscmp/core/formats.hpp"

namespace petscmp {

// Largest diagonal block handled (the register/shared-memory limit of the
// paper's kernels, kept here so storage groups stay small).
inline constexpr int kMaxBlockSize = 32;

// Consecutive blocks: block b holds rows [offsets[b], offsets[b+1]).
struct BlockPartition {
  std::vector<std::int64_t> offsets{0};
  std::int64_t block_count() const { return static_cast<std::int64_t>(offsets.size()) - 1; }
  int block_size(std::int64_t b) const { return static_cast<int>(offsets[b + 1] - offsets[b]); }
  std::int64_t row_count() const { return offsets.back(); }
  int max_block_size() const;
};

// Supervariable agglomeration: agglomerate(detect_pattern_runs(csr, max), max).
// Adjacent rows with identical column patterns form a supervariable (split when
// longer than max_block_size); adjacent supervariables are then merged greedily,
// in row order, while the block stays within max_block_size. Limits: it is greedy
// and depends on the row ordering (unknowns of one node must be numbered
// consecutively; a supervariable never spans two blocks, so a block may be smaller
// than the maximum), and it sees the pattern only, not the values.
template <typename Index> BlockPartition detect_supervariable_blocks(const CsrView<Index> &csr, int max_block_size);
// The supervariables alone: runs of adjacent rows with identical column patterns,
// each at most max_block_size rows. In an FEM matrix these are its nodes (PETSc's
// inodes, without their limit of 5 rows).
template <typename Index> BlockPartition detect_pattern_runs(const CsrView<Index> &csr, int max_block_size);
// Adjacent parts of `nodes` merged greedily, in order, while a block stays within
// max_block_size. A node is never split: one larger than the maximum is a block
// of its own.
BlockPartition agglomerate(const BlockPartition &nodes, int max_block_size);
// True when the runs of `runs` are nodes worth keeping whole: on average longer
// than one row by PETSc's inode criterion (at most 90% as many runs as rows).
bool runs_are_nodes(const BlockPartition &runs);
// Blocks of one size (the last may be shorter when nrows is not a multiple).
BlockPartition uniform_partition(std::int64_t nrows, int block_size);
// The same into p, reusing its memory (a new setup of the same PC: 22 M blocks are 178 MB of offsets).
void uniform_partition(std::int64_t nrows, int block_size, BlockPartition &p);
// Blocks of the given sizes; throws StorageError when a size is outside
// [1, kMaxBlockSize] or the sizes do not add up to nrows.
BlockPartition partition_from_sizes(const std::int64_t *sizes, std::int64_t count, std::int64_t nrows);

// ---- dense n x n blocks, column-major: a[r + c * n] -----------------------------
double norm1(int n, const double *a);
bool is_exactly_symmetric(int n, const double *a);
enum class InversionStatus : std::uint8_t {
  ok,
  singular,  // a pivot is zero or negligible against ||D||_1 (numerically singular)
  not_finite // D holds NaN or Inf
};
const char *inversion_status_name(InversionStatus s);
// In-place inverse by Gauss-Jordan elimination with partial (row) pivoting, in
// fp64. work must hold n ints. On failure a is left undefined.
InversionStatus invert_gauss_jordan(int n, double *a, int *work);

// ---- pass 2: inversion --------------------------------------------------------
struct InvertedBlocks {
  BlockPartition partition;
  // BigArrays (huge pages, no zero fill): every setup makes them anew, and a
  // std::vector of tens of MB is zeroed and faulted 4 KiB at a time
  BigArray<std::int64_t> value_offsets; // block b's inverse at values[value_offsets[b] ...], b*b entries
  BigArray<double> inverses;            // fp64, column-major per block
  BigArray<double> norm_d;              // ||D_b||_1
  BigArray<double> kappa;               // ||D_b||_1 ||E_b||_1 (infinity for failed blocks)
  std::vector<InversionStatus> status;
  std::vector<std::uint8_t> symmetric; // D_b exactly symmetric: E_b was made exactly symmetric
  std::int64_t failed_blocks      = 0;
  std::int64_t first_failed_block = -1;
};
// Extracts each diagonal block of csr (columns outside the block are ignored;
// each row's columns ascending, as PETSc's AIJ keeps them) and inverts it. A failed block gets status != ok and is
// never used.
template <typename Index> InvertedBlocks invert_diagonal_blocks(const CsrView<Index> &csr, const BlockPartition &p);

// ---- pass 3: format selection -----------------------------------------------------
enum class FormatPolicy : std::uint8_t {
  all,              // fp16, bf16, fp11_4, fp32, fp11_20, fp64 (the paper's list)
  ieee,             // fp16, fp32, fp64
  range_preserving, // fp11_4, fp11_20, fp64: double's exponent range, no range check needed
  forced            // one format for every block (fp64 where it cannot represent the block)
};
inline constexpr int kFormatPolicyCount = 4;
const char *format_policy_name(FormatPolicy p);

struct FormatSelection {
  FormatPolicy policy = FormatPolicy::all;
  Format forced       = Format::fp64; // the format of FormatPolicy::forced
  double accuracy     = 1e-2;         // bound on ||I - E_stored D||_1 kept by every block
};
// The candidate formats of a policy, narrowest first, more significand bits
// first among equal sizes.
std::vector<Format> candidate_formats(const FormatSelection &s);
// True for formats whose exponent range is narrower than fp64's, so that
// rounding the inverse may overflow or underflow (fp16, bf16, fp32).
bool has_reduced_range(Format f);

// Why a block got its format; counted in the view.
struct SelectionStats {
  std::int64_t blocks_per_format[kFormatCount] = {};
  std::int64_t range_rejections                = 0; // a format admitted by kappa failed the over/underflow check
  std::int64_t forced_fallbacks                = 0; // forced format could not represent the block: fp64 used
};
// Admissibility of format f for block b: kappa * u(f) <= accuracy and, for
// reduced-range formats, the rounded inverse E~ must be finite and satisfy
// kappa * ||E - E~||_1 / ||E||_1 <= accuracy, which bounds ||I - E~ D||_1 by the
// accuracy (underflow to zero or to subnormals shows up as a larger ||E - E~||).
bool format_admissible(const InvertedBlocks &blocks, std::int64_t b, Format f, double accuracy, bool check_range);
// The format of every block (fp64 for failed blocks, which are never applied).
std::vector<Format> select_block_formats(const InvertedBlocks &blocks, const FormatSelection &s,
                                         SelectionStats *stats = nullptr);

// ---- storage the apply reads ---------------------------------------------------------
// A group: nblocks consecutive blocks of one size and one format. Column j of
// all blocks of the group is stored together, so an apply streams contiguous
// memory: entry (r, j) of block i of the group is element (j * nblocks + i) * size + r.
// Every group starts 8-byte aligned, so value_bytes() includes up to 7 bytes of
// padding per group (none between groups of 8-byte formats).
struct BlockGroup {
  Format format            = Format::fp64;
  int block_size           = 0;
  int nblocks              = 0;
  std::int64_t row_begin   = 0; // first row of the group
  std::int64_t byte_offset = 0; // start of the group's values in BlockJacobiStorage::values
};

inline constexpr int kDefaultGroupBlocks = 8;

// Groups [first, end) that one loop can take: one format, one block size and
// one number of blocks, their rows and values one after the other (group
// first + k starts k * nblocks * block_size rows and k times the group's value
// bytes after group first). Found once when the storage is packed, so an apply
// does not scan the group records to find them: 22 M blocks of 3 rows are 2.8 M
// records of 32 bytes; the apply scanned them twice, 180 MB, 7% of the bytes of
// its fp64 storage and vectors.
struct GroupRun {
  std::int64_t first = 0, end = 0;
};
// The runs of `groups`, in order, each as long as it can be: they cover every group once.
std::vector<GroupRun> find_group_runs(const std::vector<BlockGroup> &groups);

// Bytes that start on a cache line (64 bytes): with groups of 8 blocks, the fp64
// columns of small blocks then fill whole lines, and no 64-byte load of them
// splits across two (malloc's 16-byte alignment would split every one). A
// BigBuffer: from 2 MiB on, huge pages, one page fault per 2 MiB of fresh
// memory instead of 512 (the setup of 1.6 GB of inverses paid seconds for 4 KiB
// faults on the VMs measured).
class CacheLineBytes {
public:
  void resize(std::size_t n) { buffer_.allocate_zeroed(n); }
  // n bytes of undefined content (the memory reused where large enough), then cut to the n written first.
  void resize_uninitialized(std::size_t n) { buffer_.allocate(n); }
  void shrink_to(std::size_t n)
  {
    buffer_.allocate(n); // (n <= size(): the same memory, its first n bytes kept)
    buffer_.trim();
  }
  void take_memory_of(CacheLineBytes &o) { buffer_.swap(o.buffer_); }
  std::size_t size() const { return buffer_.size(); }
  template <typename T> T *as() { return reinterpret_cast<T *>(buffer_.data()); }
  template <typename T> const T *as() const { return reinterpret_cast<const T *>(buffer_.data()); }

private:
  BigBuffer buffer_;
};

struct BlockJacobiStorage {
  std::int64_t nrows = 0;
  std::vector<BlockGroup> groups;
  std::vector<GroupRun> runs;             // find_group_runs(groups)
  std::vector<std::uint8_t> block_format; // the one-byte format tag of every block
  CacheLineBytes values;
  std::int64_t fp64_bytes() const; // the same blocks all stored in fp64
  std::int64_t value_bytes() const { return static_cast<std::int64_t>(values.size()); }
};
// Packs the inverses in the chosen formats (rounded once from fp64), grouping
// consecutive blocks of equal size and format, at most group_blocks per group.
// recycle: a storage being replaced, whose value memory is reused (a new setup
// on new values of the same matrix: no fresh pages).
BlockJacobiStorage pack_block_jacobi(const InvertedBlocks &blocks, const std::vector<Format> &formats,
                                     int group_blocks = kDefaultGroupBlocks, BlockJacobiStorage *recycle = nullptr);
// The whole setup after detection, a chunk of blocks at a time: each chunk's
// blocks are inverted (invert_diagonal_blocks), their formats selected
// (select_block_formats) and packed (pack_block_jacobi) before the next chunk,
// so no fp64 copy of all inverses is ever made (it was the largest and
// freshest memory of a setup: 72 bytes a 3 x 3 block, more than its storage)
// and each chunk's inverses are packed while they are in cache. The formats
// and stored values are those of the three passes; a group also ends at a
// chunk's end (chunk_blocks is a multiple of group_blocks, so groups of
// uniform blocks are the same).
struct BlockJacobiSetup {
  BlockJacobiStorage storage;
  SelectionStats selection;
  std::int64_t failed_blocks      = 0;
  std::int64_t first_failed_block = -1;
  InversionStatus first_failure   = InversionStatus::ok;
  double kappa_min = 0.0, kappa_max = 0.0;                 // over the blocks inverted (kappa_min infinite when none)
  double seconds_inversion = 0.0, seconds_selection = 0.0; // of the chunks' inversions, and of selection + packing
};
template <typename Index>
BlockJacobiSetup build_block_jacobi(const CsrView<Index> &csr, const BlockPartition &p, const FormatSelection &s,
                                    int group_blocks = kDefaultGroupBlocks, BlockJacobiStorage *recycle = nullptr,
                                    std::int64_t chunk_blocks = std::int64_t(1) << 14);

// Reads entry (r, c) of block i of group g back as fp64 (for tests and views).
double stored_entry(const BlockJacobiStorage &s, const BlockGroup &g, int i, int r, int c);

} // namespace petscmp
