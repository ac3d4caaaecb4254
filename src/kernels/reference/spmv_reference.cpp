// Reference backend: plain loops, the ground truth the other backends are
// tested against. Rows are visited in block order, entries in row order.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "../row_dot.hpp"
#include "../spmv.hpp"

namespace petscmp {
namespace reference {

namespace {

// y = A x (+ z) over the rows of a node block, row by row.
template <typename S, SumOrder Order>
void node_block_spmv(const RowBlock &block, const double *x, const double *z, double *y)
{
  const auto vals = make_range(values_of<S>(block), static_cast<std::size_t>(block.nnz));
  for (const NodeInfo &nd : block.nodes) {
    const auto node_vals =
        vals.subrange(static_cast<std::size_t>(nd.values), static_cast<std::size_t>(nd.length) * nd.rows);
    with_node_columns(block, nd, x, [&](auto cols, const double *xs) {
      for (int r = 0; r < nd.rows; ++r) {
        const std::int64_t row = block.row(nd.first + r);
        const double init      = z ? z[row] : 0.0; // (each row in one block)
        y[row]                 = node_row_dot<Order>(init, node_vals, r, nd.rows, cols, nd.length, xs);
      }
    });
  }
}

template <typename Index>
void rowwise_spmv(const CompactCsr &A, CsrPattern<Index> p, const double *x, const double *z, double *y)
{
  if (!A.all_rows_covered) // rows outside every block are empty: y = z or 0 there
    for (std::int64_t i = 0; i < A.nrows; ++i)
      y[i] = z ? z[i] : 0.0;
  for (const RowBlock &block : A.blocks) {
    dispatch_block_values(block, A.read_segments, [&](auto tag) {
      using S         = typename decltype(tag)::type;
      const auto vals = make_range(values_of<S>(block), static_cast<std::size_t>(block.stored_count()));
      dispatch_order(A.order, [&](auto order) {
        if (block.node_layout()) {
          node_block_spmv<S, decltype(order)::value>(block, x, z, y);
          return;
        }
        for (std::int64_t k = 0; k < block.row_count(); ++k) {
          const std::int64_t row = block.row(k);
          const double init      = z ? z[row] : 0.0; // (each row in one block)
          with_row_entries(
              block, p.rowptr, p.cols, k, [&](auto cols, std::int64_t first, std::int64_t stride, std::int64_t n) {
                y[row] = row_dot<decltype(order)::value>(init, vals.subrange(first, n * stride), cols, n, x, stride);
              });
        }
      });
    });
  }
}

void split_spmv(const CompactCsr &A, const double *x, const double *z, double *y)
{
  for (std::int64_t i = 0; i < A.nrows; ++i)
    y[i] = z ? z[i] : 0.0;
  for (const SplitPart &part : A.split) {
    dispatch_format(part.format, [&](auto tag) {
      using S         = typename decltype(tag)::type;
      const auto vals = make_range(part.values.as<S>(), part.cols.size());
      for (std::int64_t i = 0; i < A.nrows; ++i) {
        const std::int64_t start = part.rowptr[i], n = part.rowptr[i + 1] - start;
        y[i] = row_dot<SumOrder::sequential>(y[i], vals.subrange(start, n), part.cols.data() + start, n, x);
      }
    });
  }
}

} // namespace

template <typename Index>
void spmv(const CompactCsr &A, CsrPattern<Index> pattern, const double *x, const double *z, double *y)
{
  if (A.entry_split())
    split_spmv(A, x, z, y);
  else
    rowwise_spmv(A, pattern, x, z, y);
}

// Each row at the highest level among the rows stored with it (its node, its
// slice of 8 rows, or itself): the definition, row by row.
template <typename Index>
void spmv_row_levels(const CompactCsr &A, CsrPattern<Index> p, const std::uint8_t *levels, const double *x,
                     const double *z, double *y)
{
  if (A.entry_split()) throw StorageError("petscmp: per-row read levels need split storage, not an entry split");
  if (!A.all_rows_covered)
    for (std::int64_t i = 0; i < A.nrows; ++i)
      y[i] = z ? z[i] : 0.0;
  for (const RowBlock &block : A.blocks)
    for (std::int64_t k = 0; k < block.row_count(); ++k) {
      std::int64_t first = k, last = k + 1; // the block rows stored with row k
      if (block.node_layout()) {
        const NodeInfo &nd = block.nodes[static_cast<std::size_t>(block.node_of(k))];
        first              = nd.first;
        last               = nd.first + nd.rows;
      } else if (block.sliced()) {
        first = k / kSliceRows * kSliceRows;
        last  = std::min(block.row_count(), first + kSliceRows);
      }
      int level = 0;
      for (std::int64_t j = first; j < last; ++j)
        level = std::max<int>(level, levels[block.row(j)]);
      const std::int64_t row = block.row(k);
      y[row]                 = block_row_product(block, p.rowptr, p.cols, A.order, level, k, x, z ? z[row] : 0.0);
    }
}

// The block rows of one block in ascending row order. Rows sorted by length
// (sort_window, or the automatic layout's windows) are permuted within windows
// of `window` block rows only: each window is put back in order when reached
// (window 0: the block's rows are in order).
class AscendingRows {
public:
  AscendingRows(const RowBlock &block, std::int64_t window) : block_(block), window_(window) {}
  bool done() const { return next_ >= block_.row_count(); }
  std::int64_t row() { return block_.row(k()); }
  std::int64_t take()
  {
    const std::int64_t k = this->k();
    ++next_;
    return k;
  }

private:
  std::int64_t k()
  {
    if (window_ == 0 || !block_.grouped()) return next_; // (a run's rows are in order)
    if (next_ >= loaded_end_) load(next_);
    return order_[static_cast<std::size_t>(next_ - loaded_begin_)];
  }
  void load(std::int64_t first)
  {
    loaded_begin_ = first;
    loaded_end_   = std::min(block_.row_count(), first + window_);
    order_.resize(static_cast<std::size_t>(loaded_end_ - first));
    for (std::int64_t k = first; k < loaded_end_; ++k)
      order_[static_cast<std::size_t>(k - first)] = k;
    std::sort(order_.begin(), order_.end(),
              [&](std::int64_t a, std::int64_t b) { return block_.row(a) < block_.row(b); });
  }
  const RowBlock &block_;
  std::int64_t window_, next_ = 0, loaded_begin_ = 0, loaded_end_ = 0;
  std::vector<std::int64_t> order_;
};

// Visits the rows of all blocks in ascending row order (a merge over at most
// kFormatCount blocks, each visited in ascending order), so y[col] accumulates
// in SeqAIJ's order and the transpose matches it bitwise.
template <typename Fn> void for_each_row_in_order(const CompactCsr &A, Fn &&fn)
{
  const std::int64_t window = A.stats.sorted_windows == 0 ? 0 : A.sort_window > 1 ? A.sort_window : kAutoSortWindow;
  std::vector<AscendingRows> cursors;
  cursors.reserve(A.blocks.size());
  for (const RowBlock &block : A.blocks)
    cursors.emplace_back(block, window);
  for (;;) {
    std::size_t best      = A.blocks.size();
    std::int64_t best_row = 0;
    for (std::size_t b = 0; b < A.blocks.size(); ++b) {
      if (cursors[b].done()) continue;
      const std::int64_t row = cursors[b].row();
      if (best == A.blocks.size() || row < best_row) {
        best     = b;
        best_row = row;
      }
    }
    if (best == A.blocks.size()) return;
    fn(A.blocks[best], cursors[best].take(), best_row);
  }
}

template <typename Index>
void spmv_transpose(const CompactCsr &A, CsrPattern<Index> p, const double *x, const double *z, double *y)
{
  for (std::int64_t j = 0; j < A.ncols; ++j)
    y[j] = z ? z[j] : 0.0;
  // y[col] += a * x[row], rows in ascending order, entries in row order
  for_each_row_in_order(A, [&](const RowBlock &block, std::int64_t k, std::int64_t row) {
    dispatch_block_values(block, A.read_segments, [&](auto tag) {
      using S         = typename decltype(tag)::type;
      const auto vals = make_range(values_of<S>(block), static_cast<std::size_t>(block.stored_count()));
      if (block.node_layout()) {
        const NodeInfo &nd = block.nodes[block.node_of(k)];
        const int r        = static_cast<int>(k - nd.first);
        with_node_columns(block, nd, y, [&](auto cols, double *ys) {
          for (std::int64_t e = 0; e < nd.length; ++e)
            ys[cols[e]] += vals[nd.values + e * nd.rows + r] * x[row];
        });
        return;
      }
      with_row_entries(block, p.rowptr, p.cols, k,
                       [&](auto cols, std::int64_t first, std::int64_t stride, std::int64_t n) {
                         for (std::int64_t e = 0; e < n; ++e)
                           y[cols[e * stride]] += vals[first + e * stride] * x[row];
                       });
    });
  });
  // entry split: the fp32 part, then the fp64 part (Ahmad et al.'s two products)
  for (const SplitPart &part : A.split) {
    dispatch_format(part.format, [&](auto tag) {
      using S         = typename decltype(tag)::type;
      const auto vals = make_range(part.values.as<S>(), part.cols.size());
      for (std::int64_t i = 0; i < A.nrows; ++i)
        for (std::int64_t e = part.rowptr[i]; e < part.rowptr[i + 1]; ++e)
          y[part.cols[e]] += vals[e] * x[i];
    });
  }
}

template void spmv<std::int32_t>(const CompactCsr &, CsrPattern<std::int32_t>, const double *, const double *,
                                 double *);
template void spmv<std::int64_t>(const CompactCsr &, CsrPattern<std::int64_t>, const double *, const double *,
                                 double *);
template void spmv_transpose<std::int32_t>(const CompactCsr &, CsrPattern<std::int32_t>, const double *, const double *,
                                           double *);
template void spmv_transpose<std::int64_t>(const CompactCsr &, CsrPattern<std::int64_t>, const double *, const double *,
                                           double *);
template void spmv_row_levels<std::int32_t>(const CompactCsr &, CsrPattern<std::int32_t>, const std::uint8_t *,
                                            const double *, const double *, double *);
template void spmv_row_levels<std::int64_t>(const CompactCsr &, CsrPattern<std::int64_t>, const std::uint8_t *,
                                            const double *, const double *, double *);

} // namespace reference
} // namespace petscmp
