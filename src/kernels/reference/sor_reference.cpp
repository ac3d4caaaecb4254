// SOR sweeps on stored rows (sor.hpp), in the operations and order of PETSc's
// MatSOR_SeqAIJ: every `sum -= a_ij v_j` runs over a row's entries in column
// order, the lower triangle (j < i) and the upper one (j > i) each alone, and
// the updates of x are AIJ's expressions, term for term.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "../row_dot.hpp"
#include "../sor.hpp"

namespace petscmp {
namespace reference {

namespace {

// The entries of one stored row, e < n, columns ascending: value(e), and the
// column shift + cols[e * ColStride] (a product indexes v + shift by the
// stored index alone). Stride: the distance between the row's values, fixed at
// compile time for slices (kSliceRows) and CSR order (1), else (0) the node's
// height. The index kinds: a node's 32-bit columns or 16-bit offsets from its
// base (shift); a slice row's shifted columns (the slice's, shift the lane),
// 16-bit offsets from the slice base or gathered columns (kSliceRows apart);
// the master's CSR columns.
template <typename Vals, typename Col, std::int64_t Stride, std::int64_t ColStride> struct StoredRow {
  static constexpr bool kSlice = false;
  Vals vals;
  const Col *cols;
  std::int64_t shift, first, stride, n;
  double value(std::int64_t e) const { return vals[static_cast<std::size_t>(first + e * (Stride ? Stride : stride))]; }
  std::int64_t index(std::int64_t e) const { return static_cast<std::int64_t>(cols[e * ColStride]); }
  std::int64_t column(std::int64_t e) const { return shift + index(e); }
};
template <std::int64_t Stride, std::int64_t ColStride, typename Vals, typename Col>
StoredRow<Vals, Col, Stride, ColStride> stored_row(Vals vals, const Col *cols, std::int64_t shift, std::int64_t first,
                                                   std::int64_t stride, std::int64_t n)
{
  return {vals, cols, shift, first, stride, n};
}

// The s rows of one node of a node layout block (they share its columns): the
// value of row r at entry e is vals[first + e * s + r], the column of entry e
// shift + cols[e]. row(r) is row r alone, as the row walk hands it over.
template <typename Vals, typename Col> struct NodeRows {
  Vals vals;
  const Col *cols;
  std::int64_t shift, first, rows, n;
  std::int64_t index(std::int64_t e) const { return static_cast<std::int64_t>(cols[e]); }
  StoredRow<Vals, Col, 0, 1> row(std::int64_t r) const { return {vals, cols, shift, first + r, rows, n}; }
};

// A row callback with a node callback beside it: a walk that meets a whole
// node of a node layout hands it over at once (node(first row, NodeRows)), so
// that a kernel reading all its rows together loads each column's x once, as
// AIJ's inode routines do; other rows go to row(i, StoredRow) one by one.
template <typename RowFn, typename NodeFn> struct RowsAndNodes {
  RowFn row;
  NodeFn node;
};
template <typename Fn> struct takes_nodes : std::false_type {
};
template <typename RowFn, typename NodeFn> struct takes_nodes<RowsAndNodes<RowFn, NodeFn>> : std::true_type {
};
template <typename RowFn, typename NodeFn> RowsAndNodes<RowFn, NodeFn> rows_and_nodes(RowFn row, NodeFn node)
{
  return {row, node};
}
template <typename Fn, typename Row> void call_row(Fn &fn, std::int64_t i, const Row &r)
{
  if constexpr (takes_nodes<std::decay_t<Fn>>::value)
    fn.row(i, r);
  else
    fn(i, r);
}

// One row of a slice, its values in fp64 or fp32: value e at v[e * kSliceRows]
// (v starts at the row's lane), index e at c[e * ColStride] (kSliceRows for a
// slice's own or narrow columns, 1 for a shifted slice's shared ones), column
// shift + index.
template <typename Value, typename Col, std::int64_t ColStride> struct SliceRow {
  static constexpr bool kSlice             = true;
  static constexpr std::int64_t kColStride = ColStride;
  const Value *v;
  const Col *c;
  std::int64_t shift, n;
  double value(std::int64_t e) const { return v[e * kSliceRows]; }
  std::int64_t index(std::int64_t e) const { return static_cast<std::int64_t>(c[e * ColStride]); }
  std::int64_t column(std::int64_t e) const { return shift + index(e); }
};

// Asks for slice q's values and columns in L2, kPrefetchSlices slices ahead
// of the sweep (where q stores one value per entry). A sweep reads a slice
// row by row, its values kSliceRows apart, which the hardware prefetchers do
// not follow (measured on a 27-point operator, fp64 values: 0.70x AIJ's speed
// without this, 0.72x with prefetcht0, which fills the L1's miss buffers with
// a slice's 27 lines at once, 1.09x with prefetcht1 four slices ahead).
inline constexpr std::int64_t kPrefetchSlices = 4;
inline constexpr std::int64_t kPrefetchNodes  = 8;
// (an asm statement: GCC drops a loop of __builtin_prefetch calls it inlines as a loop without effects)
inline void prefetch_to_l2(const char *p)
{
#if defined(__x86_64__)
  asm volatile("prefetcht1 %0" : : "m"(*p));
#else
  __builtin_prefetch(p, 0, 2);
#endif
}
// Node n's values and columns into L2 (as prefetch_slice).
inline void prefetch_node(const RowBlock &block, std::int64_t n)
{
  if (n < 0 || n >= static_cast<std::int64_t>(block.nodes.size()) || block.segments > 1) return;
  const NodeInfo &nd      = block.nodes[static_cast<std::size_t>(n)];
  const std::size_t word  = format_bytes(block.format);
  const std::size_t bytes = static_cast<std::size_t>(nd.length) * nd.rows * word;
  const char *values      = block.values.as<char>() + static_cast<std::size_t>(nd.values) * word;
  for (std::size_t o = 0; o < bytes; o += 64)
    prefetch_to_l2(values + o);
  prefetch_to_l2(block.node_cols.as<char>() + nd.indices);
}
inline void prefetch_slice(const RowBlock &block, const SorRows::ExpandedSlices &expanded, std::int64_t q)
{
  if (q < 0 || q >= block.slice_count() || block.segments > 1) return;
  const std::size_t word = format_bytes(block.format), at = static_cast<std::size_t>(block.slice_offsets[q]);
  const std::size_t bytes = (static_cast<std::size_t>(block.slice_offsets[q + 1]) - at) * word;
  const char *values      = block.values.as<char>() + at * word;
  for (std::size_t o = 0; o < bytes; o += 64)
    prefetch_to_l2(values + o);
  const char *cols      = nullptr; // the columns the walk reads: a patched slice's expanded ones
  std::size_t col_bytes = 0;
  if (block.patched_slice(q)) {
    const std::size_t from = static_cast<std::size_t>(expanded.at[static_cast<std::size_t>(q)]);
    const std::size_t n    = static_cast<std::size_t>(block.slice_width(q) * kSliceRows);
    const bool narrow      = expanded.base[static_cast<std::size_t>(q)] >= 0;
    cols                   = narrow ? reinterpret_cast<const char *>(expanded.offsets.data() + from)
                                    : reinterpret_cast<const char *>(expanded.columns.data() + from);
    col_bytes              = n * (narrow ? sizeof(std::uint16_t) : sizeof(std::int32_t));
  } else {
    const std::size_t col_at = static_cast<std::size_t>(block.slice_col_offsets[q]);
    cols                     = reinterpret_cast<const char *>(block.cols.data() + col_at);
    col_bytes = (static_cast<std::size_t>(block.slice_col_offsets[q + 1]) - col_at) * sizeof(std::int32_t);
  }
  for (std::size_t o = 0; o < col_bytes; o += 64)
    prefetch_to_l2(cols + o);
}

// The columns of block's patched slices expanded as a narrow or a gathered slice's
// (SorRows::ExpandedSlices).
inline void expand_patched_slices(const RowBlock &block, SorRows::ExpandedSlices &out)
{
  for (std::int64_t q = 0; q < block.slice_count(); ++q) {
    if (!block.patched_slice(q)) continue;
    if (out.at.empty()) {
      out.at.assign(static_cast<std::size_t>(block.slice_count()), -1);
      out.base.assign(static_cast<std::size_t>(block.slice_count()), -1);
    }
    const std::int64_t width = block.slice_width(q), k0 = q * kSliceRows;
    const std::int64_t lanes   = std::min<std::int64_t>(kSliceRows, block.row_count() - k0);
    const PatchedSlice patched = block.patched_columns(q);
    auto length                = [&](std::int64_t l) { return block.row_lengths[static_cast<std::size_t>(k0 + l)]; };
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = -1; // the columns of the slice's entries
    for (std::int64_t l = 0; l < lanes; ++l)
      for (std::int64_t e = 0; e < length(l); ++e) {
        lo = std::min(lo, patched.column(e, static_cast<int>(l)));
        hi = std::max(hi, patched.column(e, static_cast<int>(l)));
      }
    const bool narrow                     = hi - lo <= std::numeric_limits<std::uint16_t>::max();
    const std::int64_t at                 = static_cast<std::int64_t>(narrow ? out.offsets.size() : out.columns.size());
    out.at[static_cast<std::size_t>(q)]   = at;
    out.base[static_cast<std::size_t>(q)] = narrow ? static_cast<std::int32_t>(lo) : -1;
    if (narrow)
      out.offsets.resize(static_cast<std::size_t>(at + width * kSliceRows), 0);
    else
      out.columns.resize(static_cast<std::size_t>(at + width * kSliceRows), 0);
    for (std::int64_t l = 0; l < lanes; ++l) // (padding entries: 0, never read)
      for (std::int64_t e = 0; e < length(l); ++e) {
        const std::int64_t column = patched.column(e, static_cast<int>(l));
        const std::size_t i       = static_cast<std::size_t>(at + e * kSliceRows + l);
        if (narrow)
          out.offsets[i] = static_cast<std::uint16_t>(column - lo);
        else
          out.columns[i] = static_cast<std::int32_t>(column);
      }
  }
}

// Where the walk of one sweep left a block, kept across its runs: the last
// slice (decoded into values, or into floats from fp16 and bf16, where it is
// not stored in fp64 or fp32) and the last node. Where rows of other formats
// lie between a block's rows (the rows of a node in two formats, say), the
// walk meets the block in many short runs: decoding the slice again and
// searching the node for each made a cache-resident inode sweep 0.3x AIJ's
// speed.
struct BlockCursor {
  bool prefetch                           = true;    // SorRows::prefetch
  const SorRows::ExpandedSlices *expanded = nullptr; // the block's, from SorRows
  std::vector<double> values;
  std::vector<float> floats; // the last slice's 16-bit values in fp32, from float_at
  const float *float_at = nullptr;
  const double *at      = nullptr;
  std::int64_t q        = -1;
  std::int64_t node     = -1;
  // Room for n floats from a 64-byte boundary, so that each 32-byte store of the widening lies in one cache line
  // (at malloc's 16-byte alignment half of them straddled two lines, and in 4 of 22 processes the fp16 sweeps of a
  // cache-resident 27-point operator ran at 0.72-0.75x AIJ's speed instead of 0.92-1.0x; aligned, none of 22).
  float *floats_for(std::size_t n)
  {
    if (floats.size() < n + 16) floats.resize(n + 16);
    const std::uintptr_t misaligned = reinterpret_cast<std::uintptr_t>(floats.data()) % 64;
    return floats.data() + (misaligned ? (64 - misaligned) / sizeof(float) : 0);
  }
};

// Calls fn(row, StoredRow) for the rows of one run of block rows [k0, k0 +
// count) (rows first_row + j), ascending or descending: the node or slice a
// row lies in is followed as the walk goes (no search, one kind test per
// slice). With a RowsAndNodes fn, a node of a node layout that lies whole in
// the run goes to fn.node at once. cursor: where the sweep left the block.
template <bool Descending, typename Index, typename Vals, typename Fn>
void walk_run(const RowBlock &block, CsrPattern<Index> p, const Vals &vals, const SorRows::Run &run,
              BlockCursor &cursor, Fn &&fn)
{
  auto at = [&](std::int64_t j0) { return Descending ? run.count - 1 - j0 : j0; };
  if (block.node_layout()) {
    std::int64_t node = cursor.node;
    if (node < 0)
      node = block.node_of(run.first_k + at(0)); // the block's first run; after it, the walks below
    else if (Descending)                         // (and in the loop) find the next node
      while (block.nodes[static_cast<std::size_t>(node)].first + block.nodes[static_cast<std::size_t>(node)].rows <=
             run.first_k + at(0))
        ++node;
    else
      while (block.nodes[static_cast<std::size_t>(node)].first > run.first_k)
        --node;
    for (std::int64_t j0 = 0; j0 < run.count; ++j0) {
      const std::int64_t j = at(j0), k = run.first_k + j;
      if (Descending) {
        while (block.nodes[static_cast<std::size_t>(node)].first > k)
          --node;
      } else {
        while (k >=
               block.nodes[static_cast<std::size_t>(node)].first + block.nodes[static_cast<std::size_t>(node)].rows)
          ++node;
      }
      const NodeInfo &nd      = block.nodes[static_cast<std::size_t>(node)];
      const unsigned char *ix = block.node_cols.as<unsigned char>() + nd.indices;
      if constexpr (takes_nodes<std::decay_t<Fn>>::value) { // the whole node at its first row met
        const bool inside = nd.first >= run.first_k && nd.first + nd.rows <= run.first_k + run.count;
        if (inside && k == (Descending ? nd.first + nd.rows - 1 : nd.first)) {
          if (cursor.prefetch) prefetch_node(block, Descending ? node - kPrefetchNodes : node + kPrefetchNodes);
          const std::int64_t row0 = run.first_row + (nd.first - run.first_k);
          if (nd.wide)
            fn.node(row0, NodeRows<Vals, std::int32_t>{vals, reinterpret_cast<const std::int32_t *>(ix), 0, nd.values,
                                                       nd.rows, nd.length});
          else
            fn.node(row0, NodeRows<Vals, std::uint16_t>{vals, reinterpret_cast<const std::uint16_t *>(ix), nd.col_base,
                                                        nd.values, nd.rows, nd.length});
          j0 += nd.rows - 1;
          continue;
        }
      }
      const std::int64_t first = nd.values + (k - nd.first);
      if (nd.wide)
        call_row(fn, run.first_row + j,
                 stored_row<0, 1>(vals, reinterpret_cast<const std::int32_t *>(ix), 0, first, nd.rows, nd.length));
      else
        call_row(fn, run.first_row + j,
                 stored_row<0, 1>(vals, reinterpret_cast<const std::uint16_t *>(ix), nd.col_base, first, nd.rows,
                                  nd.length));
    }
    cursor.node = node;
    return;
  }
  if (block.sliced()) {
    // slice by slice: the slice's kind, columns and fp64 values found once, then its rows in walk order, each
    // row as pointers to its first value and index (a cache-resident 7-point sweep ran at 0.72-0.92x AIJ's
    // speed when every row found its slice, lane and kind anew)
    const std::int64_t k_first = run.first_k, k_end = run.first_k + run.count;
    const std::int64_t q_first = k_first / kSliceRows, q_last = (k_end - 1) / kSliceRows;
    const std::int32_t *lengths = block.row_lengths.data();
    // fp32 values are read in place, each converted as the sum takes it (one instruction more a product): decoded
    // to fp64 together at the slice's start, the slice's first row waited for the whole slice (Zen 4, 27-point
    // 30^3 in L3: 0.77-0.91x AIJ's speed decoded, 0.84-1.03x in place; 120^3: 1.05-1.08x, 1.22x). fp16 and bf16
    // values are widened to fp32 at the slice's start (exact; one 32-byte store per 8 values, where fp64 took two,
    // and each read in place as above: 27-point 30^3 fp16 / bf16, medians of 10 processes, 0.91x / 0.95x decoded
    // to fp64, 0.98x / 1.01x widened); their scalar conversion in place takes three instructions (120^3 fp16:
    // 0.99x, 1.32x decoded).
    constexpr bool kInPlace = std::is_same_v<typename Vals::storage_type, float>;
    constexpr bool kWiden =
        std::is_same_v<typename Vals::storage_type, fp16_t> || std::is_same_v<typename Vals::storage_type, bf16_t>;
    for (std::int64_t q0 = 0; q0 <= q_last - q_first; ++q0) {
      const std::int64_t q = Descending ? q_last - q0 : q_first + q0, slice_k = q * kSliceRows;
      const std::int64_t k0 = std::max(slice_k, k_first), k1 = std::min(slice_k + kSliceRows, k_end);
      const std::int64_t width = block.slice_width(q), from = block.slice_offsets[static_cast<std::size_t>(q)];
      const std::int32_t *slice_cols = block.cols.data() + block.slice_col_offsets[static_cast<std::size_t>(q)];
      // the slice's values decoded together (SIMD, in their stored order) where they are not fp64 or fp32: to fp32
      // from fp16 and bf16, to fp64 from the others; a row then reads them, not one scalar decode per entry (fp16
      // 27-point: 0.94x AIJ's speed with those)
      if (cursor.q != q) {
        if (cursor.prefetch)
          prefetch_slice(block, *cursor.expanded, Descending ? q - kPrefetchSlices : q + kPrefetchSlices);
        const std::size_t stored = static_cast<std::size_t>(width * kSliceRows);
        if constexpr (kWiden) {
          float *floats = cursor.floats_for(stored);
          widen_n(vals.data() + from, stored, floats);
          cursor.float_at = floats;
        } else if constexpr (!kInPlace) {
          if (cursor.values.size() < stored) cursor.values.resize(stored);
          cursor.at = vals.read_n(static_cast<std::size_t>(from), stored, cursor.values.data());
        }
        cursor.q = q;
      }
      const auto *sv = [&] {
        if constexpr (kInPlace)
          return vals.data() + from;
        else if constexpr (kWiden)
          return cursor.float_at;
        else
          return cursor.at;
      }();
      using Value                  = std::remove_cv_t<std::remove_pointer_t<decltype(sv)>>;
      const std::int64_t row_shift = run.first_row - run.first_k; // row = k + row_shift
      auto rows_of_slice           = [&](auto make_row) {
        if (Descending) {
          for (std::int64_t k = k1 - 1; k >= k0; --k)
            call_row(fn, k + row_shift, make_row(k - slice_k, lengths[k]));
        } else {
          for (std::int64_t k = k0; k < k1; ++k)
            call_row(fn, k + row_shift, make_row(k - slice_k, lengths[k]));
        }
      };
      if (block.shifted_slice(q))
        rows_of_slice([&](std::int64_t lane, std::int64_t n) {
          return SliceRow<Value, std::int32_t, 1>{sv + lane, slice_cols, lane, n};
        });
      else if (block.narrow_slice(q)) {
        const std::uint16_t *offsets = block.narrow_offsets(q);
        const std::int32_t base      = block.narrow_base(q);
        rows_of_slice([&](std::int64_t lane, std::int64_t n) {
          return SliceRow<Value, std::uint16_t, kSliceRows>{sv + lane, offsets + lane, base, n};
        });
      } else if (block.patched_slice(q) && cursor.expanded->base[static_cast<std::size_t>(q)] >= 0) {
        // a patched slice's columns as sor_rows expanded them (SorRows::expanded): 16-bit offsets, or 32-bit columns
        const std::uint16_t *offsets =
            cursor.expanded->offsets.data() + cursor.expanded->at[static_cast<std::size_t>(q)];
        const std::int32_t base = cursor.expanded->base[static_cast<std::size_t>(q)];
        rows_of_slice([&](std::int64_t lane, std::int64_t n) {
          return SliceRow<Value, std::uint16_t, kSliceRows>{sv + lane, offsets + lane, base, n};
        });
      } else {
        const std::int32_t *columns =
            block.patched_slice(q) ? cursor.expanded->columns.data() + cursor.expanded->at[static_cast<std::size_t>(q)]
                                   : slice_cols;
        rows_of_slice([&](std::int64_t lane, std::int64_t n) {
          return SliceRow<Value, std::int32_t, kSliceRows>{sv + lane, columns + lane, 0, n};
        });
      }
    }
    return;
  }
  for (std::int64_t j0 = 0; j0 < run.count; ++j0) {
    const std::int64_t j = at(j0), k = run.first_k + j, row = block.row(k);
    const std::int64_t start = p.rowptr[row];
    call_row(fn, run.first_row + j,
             stored_row<1, 1>(vals, p.cols + start, 0, block.value_index(k, 0, start), 1, p.rowptr[row + 1] - start));
  }
}

// Calls fn(row, StoredRow) for every row, in ascending (Descending false) or
// descending row order, run by run, each run's format dispatched once.
template <bool Descending, typename Index, typename Fn>
void for_each_row(const CompactCsr &A, CsrPattern<Index> p, const SorRows &rows, Fn &&fn)
{
  const std::size_t nruns = rows.runs.size();
  std::vector<BlockCursor> cursors(A.blocks.size());
  for (std::size_t b = 0; b < cursors.size(); ++b) {
    cursors[b].prefetch = rows.prefetch;
    cursors[b].expanded = &rows.expanded[b];
  }
  for (std::size_t r0 = 0; r0 < nruns; ++r0) {
    const SorRows::Run &run = rows.runs[Descending ? nruns - 1 - r0 : r0];
    const RowBlock &block   = A.blocks[static_cast<std::size_t>(run.block)];
    dispatch_block_values(block, 0, [&](auto tag) {
      using S         = typename decltype(tag)::type;
      const auto vals = make_range(values_of<S>(block), static_cast<std::size_t>(block.stored_count()));
      walk_run<Descending>(block, p, vals, run, cursors[static_cast<std::size_t>(run.block)], fn);
    });
  }
}

// Prefetches into L2 a stream read node after node (a node block's values, or
// its column indices): `ahead` bytes beyond the node being read, each line
// once (where the walk reached, the next line to ask for is kept). The
// hardware prefetchers do not keep up with a sweep over a cache-resident node
// block (Zen 4, FEM 20^3, 23 MB of AIJ, lossless: 1.6x AIJ's speed without,
// 1.55x asking for every other line, 4.0x for every line), and asking for each
// node's lines anew (prefetch_node) cost 85 instructions a node.
template <bool Descending> class StreamPrefetch {
public:
  // next: where the walk's last run in this stream stopped asking (-1: the walk starts)
  StreamPrefetch(const char *begin, std::int64_t size, std::int64_t ahead, std::int64_t &next)
      : begin_(begin), size_(size), ahead_(ahead), next_(next)
  {
    if (next_ < 0) next_ = Descending ? size : 0;
  }
  // The walk reads bytes [from, to) of the stream now. (The loops on a local: as a member, next_ went through
  // memory at every line.)
  void reading(std::int64_t from, std::int64_t to)
  {
    std::int64_t next = next_; // (two lines a turn: the loop's own instructions were 4 of every 5)
    if constexpr (Descending) {
      const std::int64_t want = std::max<std::int64_t>(from - ahead_, 0);
      next                    = std::min(next, from);
      for (; next - 64 > want; next -= 128) {
        prefetch_to_l2(begin_ + next - 1);
        prefetch_to_l2(begin_ + next - 65);
      }
      if (next > want) {
        prefetch_to_l2(begin_ + next - 1);
        next -= 64;
      }
    } else {
      const std::int64_t want = std::min(to + ahead_, size_);
      next                    = std::max(next, to);
      for (; next + 64 < want; next += 128) {
        prefetch_to_l2(begin_ + next);
        prefetch_to_l2(begin_ + next + 64);
      }
      if (next < want) {
        prefetch_to_l2(begin_ + next);
        next += 64;
      }
    }
    next_ = next;
  }

private:
  const char *begin_;
  std::int64_t size_, ahead_;
  std::int64_t &next_; // the next byte to ask for
};
inline constexpr std::int64_t kPrefetchValueBytes = 4096, kPrefetchIndexBytes = 512;

// Node runs (SorRows::node_runs) of A's runs where each is whole nodes of a node block; false where one is not.
bool node_runs_of(const CompactCsr &A, SorRows &rows)
{
  rows.node_runs.clear();
  for (const SorRows::Run &run : rows.runs) {
    const RowBlock &block = A.blocks[static_cast<std::size_t>(run.block)];
    if (!block.node_layout()) return false;
    std::int64_t n = block.node_of(run.first_k);
    if (block.nodes[static_cast<std::size_t>(n)].first != run.first_k) return false;
    const std::int64_t end_k = run.first_k + run.count, nodes = static_cast<std::int64_t>(block.nodes.size());
    while (n < nodes && block.nodes[static_cast<std::size_t>(n)].first < end_k) {
      const NodeInfo &nd = block.nodes[static_cast<std::size_t>(n)];
      if (nd.first + nd.rows > end_k) return false;
      const std::int64_t row = run.first_row + (nd.first - run.first_k);
      SorRows::NodeRun *last = rows.node_runs.empty() ? nullptr : &rows.node_runs.back();
      if (last && last->block == run.block && last->node_end == n && last->wide == (nd.wide != 0))
        last->node_end = n + 1;
      else
        rows.node_runs.push_back({run.block, n, n + 1, row, nd.wide != 0});
      ++n;
    }
  }
  return true;
}

// Calls fn(first row, NodeRows) for every stored node, in ascending or descending row order, each node run's
// format and index width dispatched once (rows.node_runs not empty). The walk reads nothing but the nodes: no
// search, no test per row.
template <bool Descending, typename Fn> void for_each_node(const CompactCsr &A, const SorRows &rows, Fn &&fn)
{
  const std::size_t count = rows.node_runs.size();
  // each block's streams go on from run to run (where formats alternate, a walk meets a block in many short runs)
  std::vector<std::int64_t> next(2 * A.blocks.size(), -1);
  for (std::size_t r0 = 0; r0 < count; ++r0) {
    const SorRows::NodeRun &run     = rows.node_runs[Descending ? count - 1 - r0 : r0];
    const RowBlock &block           = A.blocks[static_cast<std::size_t>(run.block)];
    const NodeInfo *nodes           = block.nodes.data();
    const std::int64_t row_of_first = run.first_row - nodes[run.node_begin].first; // a node's row: this + first
    dispatch_block_values(block, 0, [&](auto tag) {
      using S                 = typename decltype(tag)::type;
      const auto vals         = make_range(values_of<S>(block), static_cast<std::size_t>(block.stored_count()));
      const std::int64_t word = block.segments > 1 ? 0 : static_cast<std::int64_t>(sizeof(S)); // (split: none)
      const char *indices     = block.node_cols.as<char>();
      const std::size_t b     = 2 * static_cast<std::size_t>(run.block);
      StreamPrefetch<Descending> value_stream(block.values.as<char>(), block.nnz * word, kPrefetchValueBytes, next[b]);
      StreamPrefetch<Descending> index_stream(indices, static_cast<std::int64_t>(block.node_cols.size()),
                                              kPrefetchIndexBytes, next[b + 1]);
      auto walk = [&](auto col_type) {
        using Col = typename decltype(col_type)::type;
        for (std::int64_t n0 = run.node_begin; n0 < run.node_end; ++n0) {
          const NodeInfo &nd = nodes[Descending ? run.node_end - 1 - (n0 - run.node_begin) : n0];
          if (rows.prefetch) {
            value_stream.reading(nd.values * word, (nd.values + std::int64_t{nd.length} * nd.rows) * word);
            index_stream.reading(nd.indices, nd.indices + nd.length * static_cast<std::int64_t>(sizeof(Col)));
          }
          fn(row_of_first + nd.first,
             NodeRows<decltype(vals), Col>{vals, reinterpret_cast<const Col *>(indices + nd.indices),
                                           run.wide ? 0 : nd.col_base, nd.values, nd.rows, nd.length});
        }
      };
      if (run.wide)
        walk(type_tag<std::int32_t>{});
      else
        walk(type_tag<std::uint16_t>{});
    });
  }
}

// sum - a_ij v_j over entries [from, to) of the row, in column order (the
// lower triangle: [0, d); the upper: [d + 1, n), d the diagonal's position).
template <typename Row> void minus_range(const Row &r, std::int64_t from, std::int64_t to, const double *v, double &sum)
{
  const double *vs = v + r.shift;
  double s         = sum;
  if constexpr (Row::kSlice) { // the loops as lean as AIJ's: a sweep is bound by its sums' latency, and every
                               // other instruction narrows the window in which the next rows' loads overlap it
    if constexpr (Row::kColStride == kSliceRows) { // one index for values and columns
      for (std::int64_t j = from * kSliceRows, end = to * kSliceRows; j < end; j += kSliceRows)
        s -= r.v[j] * vs[r.c[j]];
    } else {
      for (std::int64_t e = from; e < to; ++e)
        s -= r.v[e * kSliceRows] * vs[r.c[e]];
    }
  } else {
    for (std::int64_t e = from; e < to; ++e)
      s -= r.value(e) * vs[r.index(e)];
  }
  sum = s;
}

// sum - (a_e v_e + a_e+1 v_e+1) over the pairs of entries [from, to), then sum
// - a_e v_e for an entry left over: the order of AIJ's inode routines.
template <typename Row>
__attribute__((always_inline)) inline double minus_pairs(const Row &r, std::int64_t from, std::int64_t to,
                                                         const double *v, double sum)
{
  const double *vs = v + r.shift;
  std::int64_t e   = from;
  for (; e + 1 < to; e += 2)
    sum -= r.value(e) * vs[r.index(e)] + r.value(e + 1) * vs[r.index(e + 1)];
  if (e < to) sum -= r.value(e) * vs[r.index(e)];
  return sum;
}

// minus_pairs for each row r < Rows of a whole node at once: S[r] - (a_re v_e
// + a_re+1 v_e+1) over the pairs of entries [from, to), then the last entry
// alone, each column's v read once for all the rows (AIJ's inode routines do
// the same; every row's sum keeps its own order, so its bits are those of
// minus_pairs on that row alone).
// (Not inlined: inside a row walk's large body GCC 12 ran out of registers and
// moved each column index through a vector register, 0.6x AIJ's speed.)
template <int Rows, typename Node>
__attribute__((noinline)) void node_minus_pairs(const Node &nd, std::int64_t from, std::int64_t to, const double *v,
                                                double *S)
{
  const double *vs = v + nd.shift;
  double sum[Rows];
  for (int r = 0; r < Rows; ++r)
    sum[r] = S[r];
  // the pairs of entries [e0, e1), then the last entry alone where e1 is to; w(e, r): entry e of row r
  auto pairs = [&](auto w, std::int64_t e0, std::int64_t e1) {
    std::int64_t e = e0;
    for (; e + 1 < e1; e += 2) {
      const double x0 = vs[nd.index(e)], x1 = vs[nd.index(e + 1)];
      for (int r = 0; r < Rows; ++r)
        sum[r] -= w(e, r) * x0 + w(e + 1, r) * x1;
    }
    if (e < e1) {
      const double x0 = vs[nd.index(e)];
      for (int r = 0; r < Rows; ++r)
        sum[r] -= w(e, r) * x0;
    }
  };
  using Storage = typename decltype(nd.vals)::storage_type;
  if constexpr (std::is_same_v<Storage, double> || std::is_same_v<Storage, float>) { // converted in the loop
    pairs([&](std::int64_t e, int r) { return nd.vals[static_cast<std::size_t>(nd.first + e * Rows + r)]; }, from, to);
  } else {
    // 16-bit formats and split segments: kChunk entries (of all the rows) at a time in fp64 by the accessor's bulk
    // SIMD decode (one scalar conversion per value made fp16 nodes 0.6x AIJ's speed; fp32 is as fast converted in
    // the loop). kChunk is even: a pair of entries never straddles two chunks.
    constexpr std::int64_t kChunk = 32;
    double buffer[kChunk * Rows + 8]; // (+8: the AVX-512 decode stores 8 values at a time)
    for (std::int64_t c0 = from; c0 < to; c0 += kChunk) {
      const std::int64_t c1 = std::min(to, c0 + kChunk);
      const double *w       = nd.vals.read_n(static_cast<std::size_t>(nd.first + c0 * Rows),
                                             static_cast<std::size_t>((c1 - c0) * Rows), buffer) -
                        c0 * Rows;
      pairs([&](std::int64_t e, int r) { return w[e * Rows + r]; }, c0, c1);
    }
  }
  for (int r = 0; r < Rows; ++r)
    S[r] = sum[r];
}

// The sums of a node's R <= 4 rows side by side in one vector (GCC's vector extensions: each lane does what the
// scalar code does to its row, operation for operation, so the bits are the same), 2 or 4 lanes. (Vectors pass
// by reference here: by value, their ABI differs with and without AVX, which GCC warns of.)
typedef double Doubles2 __attribute__((vector_size(16)));
typedef double Doubles4 __attribute__((vector_size(32)));
typedef float Floats2 __attribute__((vector_size(8)));
typedef float Floats4 __attribute__((vector_size(16)));
inline constexpr int kMaxLaneRows = 4;
template <int R> struct NodeLanes { // (GCC drops vector_size from a type that depends on R: named types here)
  static_assert(R >= 1 && R <= kMaxLaneRows, "a node of 1-4 rows");
  using type   = std::conditional_t<(R <= 2), Doubles2, Doubles4>;
  using narrow = std::conditional_t<(R <= 2), Floats2, Floats4>;
};
template <int R> using Lanes = typename NodeLanes<R>::type;
// v = p[0..R) in lanes 0..R (the other lanes 0), and back. (Built from scalars: a memcpy of 3 doubles into a
// vector of 4 went through the stack, and its reload waited on the stores: a 3-row FEM sweep 0.8x AIJ's speed.)
template <int R> void load_lanes(Lanes<R> &v, const double *p)
{
  if constexpr (R == 1)
    v = Lanes<R>{p[0], 0.0};
  else if constexpr (R == 2)
    v = Lanes<R>{p[0], p[1]};
  else if constexpr (R == 3)
    v = Lanes<R>{p[0], p[1], p[2], 0.0};
  else
    v = Lanes<R>{p[0], p[1], p[2], p[3]};
}
template <int R> void store_lanes(double *p, const Lanes<R> &v)
{
  for (int r = 0; r < R; ++r)
    p[r] = v[r];
}
// A node's values of one entry, p[0..R) in lanes 0..R and, in the lanes past R, what follows (the next entry's
// values or the zeros after a node block's last value: kNodeValuePadding): one load.
template <int R> void load_values(Lanes<R> &v, const double *p)
{
  std::memcpy(&v, p, sizeof v);
}
template <int R> void load_values(Lanes<R> &v, const float *p)
{
  typename NodeLanes<R>::narrow f;
  std::memcpy(&f, p, sizeof f);
  v = __builtin_convertvector(f, Lanes<R>);
}

// sum - (a_e v_e + a_e+1 v_e+1) over the pairs of entries [from, to) of a node's R rows, then the last entry
// alone (minus_pairs on each row); w + e R: the rows' values of entry e.
template <int R, typename Storage, typename Col>
__attribute__((always_inline)) inline void lanes_minus_pairs(Lanes<R> &sum, const Storage *w, const Col *cols,
                                                             const double *vs, std::int64_t from, std::int64_t to)
{
  Lanes<R> w0, w1;
  std::int64_t e = from;
  for (; e + 1 < to; e += 2) {
    const double x0 = vs[cols[e]], x1 = vs[cols[e + 1]];
    load_values<R>(w0, w + e * R);
    load_values<R>(w1, w + (e + 1) * R);
    sum -= w0 * x0 + w1 * x1;
  }
  if (e < to) {
    load_values<R>(w0, w + e * R);
    sum -= w0 * vs[cols[e]];
  }
}

// node_minus_pairs on a whole node of R rows, its sums in lanes: fp64 and fp32 values read in place, other
// formats decoded kChunk entries at a time (as node_minus_pairs).
template <int R, typename Node>
__attribute__((always_inline)) inline void node_lanes_minus_pairs(const Node &nd, std::int64_t from, std::int64_t to,
                                                                  const double *v, Lanes<R> &sum)
{
  const double *vs = v + nd.shift;
  using Storage    = typename decltype(nd.vals)::storage_type;
  if constexpr (std::is_same_v<Storage, double> || std::is_same_v<Storage, float>) {
    lanes_minus_pairs<R>(sum, nd.vals.data() + nd.first, nd.cols, vs, from, to);
  } else {
    constexpr std::int64_t kChunk = 32;
    double buffer[kChunk * R + 8];
    for (std::int64_t c0 = from; c0 < to; c0 += kChunk) {
      const std::int64_t c1 = std::min(to, c0 + kChunk);
      const double *w =
          nd.vals.read_n(static_cast<std::size_t>(nd.first + c0 * R), static_cast<std::size_t>((c1 - c0) * R), buffer) -
          c0 * R;
      buffer[(c1 - c0) * R] = 0.0; // (the lanes past R of the last entry's load read it)
      lanes_minus_pairs<R>(sum, w, nd.cols, vs, c0, c1);
    }
  }
}

// x of a whole inode of R rows from its sums S: lane r is sum_c S_c inverse[c R + r], c ascending (as
// apply_node_inverse).
template <int R>
__attribute__((always_inline)) inline void lanes_times_inverse(const Lanes<R> &S, const double *inverse, Lanes<R> &x)
{
  Lanes<R> column;
  load_lanes<R>(column, inverse);
  x = S[0] * column;
  for (int c = 1; c < R; ++c) {
    load_lanes<R>(column, inverse + c * R);
    x += S[c] * column;
  }
}

// fn(std::integral_constant<int, s>) for a node size s of 1-5 (AIJ's inodes), as the builder's encode_node_of_size.
// (Max: kMaxLaneRows for the lanes. Inlined: as a call, it and its lambdas cost a whole-inode sweep 10% more
// instructions.)
template <typename Fn, int... R>
__attribute__((always_inline)) inline void with_node_size(int s, Fn &&fn, std::integer_sequence<int, R...>)
{
  (void)((s == R + 1 ? (fn(std::integral_constant<int, R + 1>{}), true) : false) || ...);
}
template <int Max = 5, typename Fn> __attribute__((always_inline)) inline void with_node_size(int s, Fn &&fn)
{
  with_node_size(s, fn, std::make_integer_sequence<int, Max>());
}

// x[r] = sum_c S[c] inverse[c s + r] (c ascending) for the s rows of a node, or x[r] += that sum (add).
template <int Size = 0>
__attribute__((always_inline)) inline void apply_node_inverse(const double *S, const double *inverse, int size,
                                                              double *x, bool add)
{
  const int s = Size ? Size : size;
  for (int r = 0; r < s; ++r) {
    double v = S[0] * inverse[r];
    for (int c = 1; c < s; ++c)
      v += S[c] * inverse[c * s + r];
    x[r] = add ? x[r] + v : v;
  }
}

// node_minus_pairs, the sums in lanes where the node has at most kMaxLaneRows rows.
template <int R, typename Node>
__attribute__((always_inline)) inline void node_sums(const Node &nd, std::int64_t from, std::int64_t to,
                                                     const double *v, double *S)
{
  if constexpr (R <= kMaxLaneRows) {
    Lanes<R> sum;
    load_lanes<R>(sum, S);
    node_lanes_minus_pairs<R>(nd, from, to, v, sum);
    store_lanes<R>(S, sum);
  } else
    node_minus_pairs<R>(nd, from, to, v, S);
}

// apply_node_inverse, in lanes where the inode has at most kMaxLaneRows rows (an inode stored in pieces: its
// x once the last piece's sums are in S).
inline void apply_inverse(const double *S, const double *inverse, int s, double *x, bool add)
{
  if (s > kMaxLaneRows) return apply_node_inverse(S, inverse, s, x, add);
  with_node_size<kMaxLaneRows>(s, [&](auto size) {
    constexpr int R = decltype(size)::value;
    Lanes<R> sum, v, old;
    load_lanes<R>(sum, S);
    lanes_times_inverse<R>(sum, inverse, v);
    if (add) {
      load_lanes<R>(old, x);
      v = old + v;
    }
    store_lanes<R>(x, v);
  });
}

// The sums of a stored node's R rows, rows j.. of an inode of s rows: where the node is the whole inode, the
// inode's x (x[r], or x[r] + with add) at once from the sums in registers; else they wait in S[j..] for the
// inode's other pieces.
template <int R>
__attribute__((always_inline)) inline void piece_sums(const double *sums, int s, std::int64_t j, double *S,
                                                      const double *inverse, double *x, bool add)
{
  if (R == s)
    apply_node_inverse<R>(sums, inverse, R, x, add);
  else
    for (int r = 0; r < R; ++r)
      S[j + r] = sums[r];
}

// Where run ends: extends it with (row, block, k) when they follow on.
void add_row(std::vector<SorRows::Run> &runs, std::int64_t block, std::int64_t row, std::int64_t k)
{
  if (!runs.empty()) {
    SorRows::Run &last = runs.back();
    if (last.block == block && last.first_row + last.count == row && last.first_k + last.count == k) {
      ++last.count;
      return;
    }
  }
  runs.push_back({block, row, k, 1});
}

} // namespace

template <typename Index> bool sor_rows(const CompactCsr &A, CsrPattern<Index> p, SorRows &rows)
{
  rows = SorRows{};
  if (A.entry_split() || !A.rows_in_order() || A.nrows != A.ncols) return false;
  rows.expanded.resize(A.blocks.size());
  for (std::size_t b = 0; b < A.blocks.size(); ++b)
    expand_patched_slices(A.blocks[b], rows.expanded[b]);
  // each block's stretches of consecutive rows (a run-layout block is one), in row order
  for (std::size_t b = 0; b < A.blocks.size(); ++b) {
    const RowBlock &block = A.blocks[b];
    for (std::int64_t k = 0; k < block.row_count(); ++k)
      add_row(rows.runs, static_cast<std::int64_t>(b), block.row(k), k);
  }
  std::sort(rows.runs.begin(), rows.runs.end(),
            [](const SorRows::Run &a, const SorRows::Run &b) { return a.first_row < b.first_row; });
  std::int64_t covered = 0; // every row in exactly one run: a row of no block is empty (no diagonal)
  for (const SorRows::Run &run : rows.runs) {
    if (run.first_row != covered) break;
    covered += run.count;
  }
  bool ok = covered == A.nrows;
  // each row's diagonal: its entries up to the first column >= the row's
  if (ok) {
    rows.diagonal.assign(static_cast<std::size_t>(A.nrows), 0.0);
    rows.diagonal_at.assign(static_cast<std::size_t>(A.nrows), 0);
  }
  if (ok)
    for_each_row<false>(A, p, rows, [&](std::int64_t i, const auto &r) {
      std::int64_t e = 0;
      while (e < r.n && r.column(e) < i)
        ++e;
      if (e < r.n && r.column(e) == i && e <= std::numeric_limits<std::int32_t>::max()) {
        rows.diagonal[static_cast<std::size_t>(i)]    = r.value(e);
        rows.diagonal_at[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(e);
      } else
        ok = false;
    });
  if (ok && !node_runs_of(A, rows)) rows.node_runs.clear();
  std::int64_t stored = 0; // the bytes the walks read: values, and columns as each layout keeps them
  for (const RowBlock &b : A.blocks)
    stored += static_cast<std::int64_t>(b.values.size() + b.node_cols.size() + b.cols.size() * sizeof(std::int32_t));
  rows.prefetch = stored >= kPrefetchFromBytes;
  if (!ok) rows = SorRows{};
  return ok;
}

template <typename Index>
void sor(const CompactCsr &A, CsrPattern<Index> p, const SorRows &rows, const SorSweeps &s, const double *idiag,
         double *t, const double *b, double *x)
{
  const double *mdiag             = rows.diagonal.data();
  const std::int32_t *diagonal_at = rows.diagonal_at.data();
  const double omega              = s.omega;
  std::int64_t its                = s.its;
  if (s.zero_guess) {
    const double *xb = b;
    if (s.forward) {
      for_each_row<false>(A, p, rows, [&](std::int64_t i, const auto &r) {
        double sum = b[i];
        minus_range(r, 0, diagonal_at[i], x, sum);
        t[i] = sum;
        x[i] = sum * idiag[i];
      });
      xb = t;
    }
    if (s.backward) {
      for_each_row<true>(A, p, rows, [&](std::int64_t i, const auto &r) {
        double sum = xb[i];
        minus_range(r, diagonal_at[i] + 1, r.n, x, sum);
        if (xb == b)
          x[i] = sum * idiag[i];
        else
          x[i] = (1 - omega) * x[i] + sum * idiag[i]; // (omega in idiag)
      });
    }
    --its;
  }
  while (its-- > 0) {
    const double *xb = b;
    if (s.forward) {
      for_each_row<false>(A, p, rows, [&](std::int64_t i, const auto &r) {
        double sum           = b[i];
        const std::int64_t d = diagonal_at[i];
        minus_range(r, 0, d, x, sum);
        t[i] = sum; // the lower triangle's part, for the backward sweep
        minus_range(r, d + 1, r.n, x, sum);
        x[i] = (1. - omega) * x[i] + sum * idiag[i];
      });
      xb = t;
    }
    if (s.backward) {
      for_each_row<true>(A, p, rows, [&](std::int64_t i, const auto &r) {
        double sum = xb[i];
        if (xb == b) { // the whole row, the diagonal's term added back
          minus_range(r, 0, r.n, x, sum);
          x[i] = (1. - omega) * x[i] + (sum + mdiag[i] * x[i]) * idiag[i];
        } else {
          minus_range(r, diagonal_at[i] + 1, r.n, x, sum);
          x[i] = (1. - omega) * x[i] + sum * idiag[i];
        }
      });
    }
  }
}

template <typename Index>
void sor_eisenstat(const CompactCsr &A, CsrPattern<Index> p, const SorRows &rows, double omega, const double *idiag,
                   double *t, const double *b, double *x)
{
  const double *mdiag             = rows.diagonal.data();
  const std::int32_t *diagonal_at = rows.diagonal_at.data();
  const double scale              = (2.0 / omega) - 1.0;
  // x = (E + U)^-1 b
  for_each_row<true>(A, p, rows, [&](std::int64_t i, const auto &r) {
    double sum = b[i];
    minus_range(r, diagonal_at[i] + 1, r.n, x, sum);
    x[i] = sum * idiag[i];
  });
  // t = b - (2E - D) x
  for (std::int64_t i = 0; i < A.nrows; ++i)
    t[i] = b[i] - scale * mdiag[i] * x[i];
  // t = (E + L)^-1 t, x = x + t
  for_each_row<false>(A, p, rows, [&](std::int64_t i, const auto &r) {
    double sum = t[i];
    minus_range(r, 0, diagonal_at[i], t, sum);
    t[i] = sum * idiag[i];
    x[i] += t[i];
  });
}

template <typename Index>
void sor_apply_upper(const CompactCsr &A, CsrPattern<Index> p, const SorRows &rows, double omega, double shift,
                     const double *b, double *x)
{
  const double *mdiag             = rows.diagonal.data();
  const std::int32_t *diagonal_at = rows.diagonal_at.data();
  for_each_row<false>(A, p, rows, [&](std::int64_t i, const auto &r) {
    const double d   = shift + mdiag[i];
    double sum       = b[i] * d / omega;
    const double *bs = b + r.shift;
    for (std::int64_t e = diagonal_at[i] + 1; e < r.n; ++e)
      sum += r.value(e) * bs[r.index(e)];
    x[i] = sum;
  });
}

template <typename Index>
bool inode_diagonal_blocks(const CompactCsr &A, CsrPattern<Index> p, const SorRows &rows, const int *sizes,
                           double *blocks)
{
  const std::int32_t *diagonal_at = rows.diagonal_at.data();
  std::int64_t node = 0, row0 = 0;
  std::vector<std::int64_t> pattern; // the node's first row's columns: every row of an inode has them
  bool same = true;
  for_each_row<false>(A, p, rows, [&](std::int64_t i, const auto &r) {
    const int s          = sizes[node];
    const std::int64_t j = i - row0; // the row in its node: a(i, row0 + k) is the entry k - j after its diagonal
    if (j == 0) {
      pattern.resize(static_cast<std::size_t>(r.n));
      for (std::int64_t e = 0; e < r.n; ++e)
        pattern[static_cast<std::size_t>(e)] = r.column(e);
    } else if (r.n != static_cast<std::int64_t>(pattern.size()))
      same = false;
    else
      for (std::int64_t e = 0; e < r.n; ++e)
        same = same && r.column(e) == pattern[static_cast<std::size_t>(e)];
    if (same && diagonal_at[i] - j >= 0 && diagonal_at[i] - j + s <= r.n)
      for (int k = 0; k < s; ++k)
        blocks[k * s + j] = r.value(diagonal_at[i] - j + k);
    else
      same = false;
    if (j == s - 1) {
      blocks += s * s;
      row0 += s;
      ++node;
    }
  });
  return same;
}

namespace {
// The backward sweep of AIJ's inode SOR: xb minus the columns after the node (the last row's entries after its
// diagonal), x of the node = its inverse times S; or (whole) xb minus the whole rows, x of the node += its inverse
// times S. (Eisenstat's x = (U + D)^-1 b is the first.)
template <typename Index>
void inode_backward_pass(const CompactCsr &A, CsrPattern<Index> p, const SorRows &rows, const int *sizes,
                         std::int64_t nodes, const double *inverses, const double *xb, bool whole, double *x)
{
  const std::int32_t *diagonal_at = rows.diagonal_at.data();
  double S[5];
  std::int64_t total = 0;
  for (std::int64_t n = 0; n < nodes; ++n)
    total += sizes[n] * sizes[n];
  std::int64_t node = nodes - 1, last = A.nrows - 1;
  const double *inverse = inverses + total;
  // the columns after the inode: those after the last row's diagonal (the same columns in each of its rows)
  auto upper_from = [&]() { return whole ? 0 : diagonal_at[last] + 1; };
  auto row        = [&](std::int64_t i, const auto &r) {
    const int s             = sizes[node];
    const std::int64_t row0 = last - s + 1, j = i - row0;
    if (i == last) inverse -= s * s;
    S[j] = minus_pairs(r, upper_from(), r.n, x, xb[i]);
    if (j == 0) {
      apply_inverse(S, inverse, s, x + row0, whole);
      last = row0 - 1;
      --node;
    }
  };
  // a stored node: its rows' sums together; the inode's x at once where it is the whole inode
  auto whole_node = [&](std::int64_t first, const auto &nd) {
    const int s             = sizes[node];
    const std::int64_t row0 = last - s + 1, end = first + nd.rows;
    if (first == row0 && nd.rows == s && s <= kMaxLaneRows) { // the whole inode: its sums in registers
      inverse -= s * s;
      with_node_size<kMaxLaneRows>(s, [&](auto size) {
        constexpr int R = decltype(size)::value;
        Lanes<R> sum, v, old;
        load_lanes<R>(sum, xb + first);
        node_lanes_minus_pairs<R>(nd, upper_from(), nd.n, x, sum);
        lanes_times_inverse<R>(sum, inverse, v);
        if (whole) {
          load_lanes<R>(old, x + first);
          v = old + v;
        }
        store_lanes<R>(x + first, v);
      });
      last = row0 - 1;
      --node;
      return;
    }
    if (first < row0 || end - 1 > last) { // across two inodes: row by row
      for (std::int64_t r = nd.rows - 1; r >= 0; --r)
        row(first + r, nd.row(r));
      return;
    }
    if (end - 1 == last) inverse -= s * s;
    with_node_size(static_cast<int>(nd.rows), [&](auto size) { // (nd.rows <= s <= 5)
      constexpr int R = decltype(size)::value;
      double sums[R]; // (not S: a local array stays in registers, x cannot alias it)
      for (int r = 0; r < R; ++r)
        sums[r] = xb[first + r];
      node_sums<R>(nd, upper_from(), nd.n, x, sums);
      piece_sums<R>(sums, s, first - row0, S, inverse, x + row0, whole);
    });
    if (first == row0) {
      if (nd.rows != s) apply_inverse(S, inverse, s, x + row0, whole);
      last = row0 - 1;
      --node;
    }
  };
  if (rows.node_runs.empty())
    for_each_row<true>(A, p, rows, rows_and_nodes(row, whole_node));
  else
    for_each_node<true>(A, rows, whole_node);
}
} // namespace

template <typename Index>
void sor_inode(const CompactCsr &A, CsrPattern<Index> p, const SorRows &rows, const int *sizes, std::int64_t nodes,
               const double *inverses, const SorSweeps &sweeps, double *t, const double *b, double *x)
{
  const std::int32_t *diagonal_at = rows.diagonal_at.data();
  double S[5]; // the sums of the node's rows (AIJ's inodes hold at most 5 rows)
  // forward: b minus the columns before the node (the first row's entries before its diagonal, the same columns in
  // each row) saved in t, then (with_upper) minus the columns after the node; x of the node = its inverse times S
  auto forward_pass = [&](bool with_upper) {
    std::int64_t node = 0, row0 = 0;
    const double *inverse = inverses;
    auto row              = [&](std::int64_t i, const auto &r) {
      const int s          = sizes[node];
      const std::int64_t j = i - row0, lower = diagonal_at[row0];
      double sum = t[i] = minus_pairs(r, 0, lower, x, b[i]);
      if (with_upper) sum = minus_pairs(r, lower + s, r.n, x, sum);
      S[j] = sum;
      if (j == s - 1) {
        apply_inverse(S, inverse, s, x + row0, false);
        inverse += s * s;
        row0 += s;
        ++node;
      }
    };
    // a stored node: its rows' sums together; the inode's x at once where it is the whole inode
    auto whole_node = [&](std::int64_t first, const auto &nd) {
      const int s = sizes[node];
      if (first == row0 && nd.rows == s && s <= kMaxLaneRows) { // the whole inode: its sums in registers
        const std::int64_t lower = diagonal_at[row0];
        with_node_size<kMaxLaneRows>(s, [&](auto size) {
          constexpr int R = decltype(size)::value;
          Lanes<R> sum, v;
          load_lanes<R>(sum, b + first);
          node_lanes_minus_pairs<R>(nd, 0, lower, x, sum);
          store_lanes<R>(t + first, sum);
          if (with_upper) node_lanes_minus_pairs<R>(nd, lower + s, nd.n, x, sum);
          lanes_times_inverse<R>(sum, inverse, v);
          store_lanes<R>(x + first, v);
        });
        inverse += s * s;
        row0 += s;
        ++node;
        return;
      }
      if (first < row0 || first + nd.rows > row0 + s) { // across two inodes: row by row
        for (std::int64_t r = 0; r < nd.rows; ++r)
          row(first + r, nd.row(r));
        return;
      }
      const std::int64_t lower = diagonal_at[row0];
      with_node_size(static_cast<int>(nd.rows), [&](auto size) { // (nd.rows <= s <= 5)
        constexpr int R = decltype(size)::value;
        double sums[R]; // (not S: a local array stays in registers, x cannot alias it)
        for (int r = 0; r < R; ++r)
          sums[r] = b[first + r];
        node_sums<R>(nd, 0, lower, x, sums);
        for (int r = 0; r < R; ++r)
          t[first + r] = sums[r];
        if (with_upper) node_sums<R>(nd, lower + s, nd.n, x, sums);
        piece_sums<R>(sums, s, first - row0, S, inverse, x + row0, false);
      });
      if (first + nd.rows == row0 + s) {
        if (nd.rows != s) apply_inverse(S, inverse, s, x + row0, false);
        inverse += s * s;
        row0 += s;
        ++node;
      }
    };
    if (rows.node_runs.empty())
      for_each_row<false>(A, p, rows, rows_and_nodes(row, whole_node));
    else
      for_each_node<false>(A, rows, whole_node);
  };
  auto backward_pass = [&](const double *xb, bool whole) {
    inode_backward_pass(A, p, rows, sizes, nodes, inverses, xb, whole, x);
  };
  std::int64_t its = sweeps.its;
  if (sweeps.zero_guess) {
    if (sweeps.forward) forward_pass(false);
    if (sweeps.backward) backward_pass(sweeps.forward ? t : b, false);
    --its;
  }
  while (its-- > 0) {
    if (sweeps.forward) forward_pass(true);
    if (sweeps.backward) backward_pass(sweeps.forward ? t : b, !sweeps.forward);
  }
}

void inode_block_product(const int *sizes, std::int64_t nodes, const double *blocks, const double *x, double *y)
{
  for (std::int64_t node = 0, row0 = 0; node < nodes; ++node) {
    const int s = sizes[node];
    for (int r = 0; r < s; ++r) {
      double v = x[row0] * blocks[r];
      for (int c = 1; c < s; ++c)
        v += x[row0 + c] * blocks[c * s + r];
      y[row0 + r] = v;
    }
    blocks += s * s;
    row0 += s;
  }
}

template <typename Index>
void sor_inode_eisenstat(const CompactCsr &A, CsrPattern<Index> p, const SorRows &rows, const int *sizes,
                         std::int64_t nodes, const double *blocks, const double *inverses, double *t, const double *b,
                         double *x)
{
  const std::int32_t *diagonal_at = rows.diagonal_at.data();
  double S[5], y[5];
  inode_backward_pass(A, p, rows, sizes, nodes, inverses, b, false, x); // x = (U + D)^-1 b
  // t = b - D x, D the block diagonal: each row's products summed before the subtraction
  inode_block_product(sizes, nodes, blocks, x, t);
  for (std::int64_t i = 0; i < A.nrows; ++i)
    t[i] = b[i] - t[i];
  { // t = (L + D)^-1 t: t minus the columns before the node, read from t; x += t
    std::int64_t node = 0, row0 = 0;
    const double *inverse = inverses;
    auto node_done        = [&](int s) {
      for (int k = 0; k < s; ++k) {
        t[row0 + k] = y[k];
        x[row0 + k] += y[k];
      }
      inverse += s * s;
      row0 += s;
      ++node;
    };
    auto row = [&](std::int64_t i, const auto &r) {
      const int s          = sizes[node];
      const std::int64_t j = i - row0;
      S[j]                 = minus_pairs(r, 0, diagonal_at[row0], t, t[i]);
      if (j == s - 1) {
        apply_inverse(S, inverse, s, y, false);
        node_done(s);
      }
    };
    auto whole_node = [&](std::int64_t first, const auto &nd) { // as in sor_inode's forward sweep
      const int s = sizes[node];
      if (first == row0 && nd.rows == s && s <= kMaxLaneRows) {
        with_node_size<kMaxLaneRows>(s, [&](auto size) {
          constexpr int R = decltype(size)::value;
          Lanes<R> sum, v;
          load_lanes<R>(sum, t + first);
          node_lanes_minus_pairs<R>(nd, 0, diagonal_at[row0], t, sum);
          lanes_times_inverse<R>(sum, inverse, v);
          store_lanes<R>(y, v);
        });
        node_done(s);
        return;
      }
      if (first < row0 || first + nd.rows > row0 + s) {
        for (std::int64_t r = 0; r < nd.rows; ++r)
          row(first + r, nd.row(r));
        return;
      }
      with_node_size(static_cast<int>(nd.rows), [&](auto size) {
        constexpr int R = decltype(size)::value;
        double sums[R];
        for (int r = 0; r < R; ++r)
          sums[r] = t[first + r];
        node_sums<R>(nd, 0, diagonal_at[row0], t, sums);
        piece_sums<R>(sums, s, first - row0, S, inverse, y, false);
      });
      if (first + nd.rows == row0 + s) {
        if (nd.rows != s) apply_inverse(S, inverse, s, y, false);
        node_done(s);
      }
    };
    if (rows.node_runs.empty())
      for_each_row<false>(A, p, rows, rows_and_nodes(row, whole_node));
    else
      for_each_node<false>(A, rows, whole_node);
  }
}

#define PETSCMP_SOR_INSTANCES(Index)                                                                                   \
  template bool sor_rows<Index>(const CompactCsr &, CsrPattern<Index>, SorRows &);                                     \
  template void sor<Index>(const CompactCsr &, CsrPattern<Index>, const SorRows &, const SorSweeps &, const double *,  \
                           double *, const double *, double *);                                                        \
  template void sor_eisenstat<Index>(const CompactCsr &, CsrPattern<Index>, const SorRows &, double, const double *,   \
                                     double *, const double *, double *);                                              \
  template void sor_apply_upper<Index>(const CompactCsr &, CsrPattern<Index>, const SorRows &, double, double,         \
                                       const double *, double *);                                                      \
  template bool inode_diagonal_blocks<Index>(const CompactCsr &, CsrPattern<Index>, const SorRows &, const int *,      \
                                             double *);                                                                \
  template void sor_inode<Index>(const CompactCsr &, CsrPattern<Index>, const SorRows &, const int *, std::int64_t,    \
                                 const double *, const SorSweeps &, double *, const double *, double *);               \
  template void sor_inode_eisenstat<Index>(const CompactCsr &, CsrPattern<Index>, const SorRows &, const int *,        \
                                           std::int64_t, const double *, const double *, double *, const double *,     \
                                           double *);
PETSCMP_SOR_INSTANCES(std::int32_t)
PETSCMP_SOR_INSTANCES(std::int64_t)
#undef PETSCMP_SOR_INSTANCES

} // namespace reference
} // namespace petscmp
