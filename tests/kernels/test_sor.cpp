// SOR on stored rows (sor.hpp) against PETSc's MatSOR_SeqAIJ written out here
// over the CSR of the stored values (what an AIJ copy of the matrix holds): bit
// for bit in every sweep kind, storage mode and layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "petscmp/core/accessor.hpp"
#include "petscmp/core/compact_csr.hpp"
#include "petscmp/core/compact_rows.hpp"
#include "csr_matrices.hpp"
#include "sor.hpp"

using namespace petscmp;
using namespace petscmp_test;

namespace {

// A CSR with a->diag as SeqAIJ marks it: the position of each row's diagonal entry.
struct AijRows {
  std::vector<std::int32_t> rowptr, cols, diag;
  std::vector<double> vals;
};

// a->diag as MatMarkDiagonal_SeqAIJ sets it: the diagonal entry's position, or the row's end without one.
void mark_diagonals(AijRows &a)
{
  for (std::int32_t i = 0; i + 1 < static_cast<std::int32_t>(a.rowptr.size()); ++i) {
    std::int32_t d = a.rowptr[i + 1];
    for (std::int32_t k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k)
      if (a.cols[k] == i) d = k;
    a.diag.push_back(d);
  }
}

AijRows stored_csr(const CompactCsr &c)
{
  AijRows a;
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(c.nrows));
  compact_row_lengths(c, lengths.data());
  a.rowptr.assign(static_cast<std::size_t>(c.nrows + 1), 0);
  for (std::int64_t i = 0; i < c.nrows; ++i)
    a.rowptr[i + 1] = a.rowptr[i] + lengths[i];
  a.cols.resize(static_cast<std::size_t>(a.rowptr.back()));
  a.vals.resize(a.cols.size());
  read_compact_csr(c, a.rowptr.data(), a.cols.data(), a.vals.data());
  mark_diagonals(a);
  return a;
}

// The same for a copy that reads the master's pattern (CSR order): each stored value where the master has it.
AijRows stored_csr_of_master(const CompactCsr &c, const Matrix<std::int32_t> &m)
{
  AijRows a;
  a.rowptr = m.rowptr;
  a.cols   = m.cols;
  a.vals.assign(m.vals.size(), 0.0);
  for (const RowBlock &block : c.blocks)
    dispatch_block_values(block, 0, [&](auto tag) {
      using S         = typename decltype(tag)::type;
      const auto vals = make_range(values_of<S>(block), static_cast<std::size_t>(block.stored_count()));
      for (std::int64_t k = 0; k < block.row_count(); ++k) {
        const std::int32_t row = static_cast<std::int32_t>(block.row(k)), start = m.rowptr[row];
        for (std::int32_t e = 0; e < m.rowptr[row + 1] - start; ++e)
          a.vals[start + e] = vals[static_cast<std::size_t>(block.value_index(k, e, start))];
      }
    });
  mark_diagonals(a);
  return a;
}

// MatSOR_SeqAIJ's non-inode path (PETSc 3.18), the flags as booleans; kind: 0 sweeps, 1 Eisenstat, 2 apply upper.
void aij_sor(const AijRows &a, int kind, const SorSweeps &s, const double *b, double *x)
{
  const std::int32_t m = static_cast<std::int32_t>(a.diag.size());
  std::vector<double> idiag(m), mdiag(m), t(m);
  for (std::int32_t i = 0; i < m; ++i) {
    mdiag[i] = a.vals[a.diag[i]];
    idiag[i] = s.omega == 1.0 && s.shift <= 0.0 ? 1.0 / mdiag[i] : s.omega / (s.shift + mdiag[i]);
  }
  auto minus = [&](double &sum, const double *v, std::int32_t from, std::int32_t to) {
    for (std::int32_t k = from; k < to; ++k)
      sum -= a.vals[k] * v[a.cols[k]];
  };
  const double omega = s.omega;
  if (kind == 2) {
    for (std::int32_t i = 0; i < m; ++i) {
      const double d = s.shift + mdiag[i];
      double sum     = b[i] * d / omega;
      for (std::int32_t k = a.diag[i] + 1; k < a.rowptr[i + 1]; ++k)
        sum += a.vals[k] * b[a.cols[k]];
      x[i] = sum;
    }
    return;
  }
  if (kind == 1) {
    const double scale = (2.0 / omega) - 1.0;
    for (std::int32_t i = m - 1; i >= 0; i--) {
      double sum = b[i];
      minus(sum, x, a.diag[i] + 1, a.rowptr[i + 1]);
      x[i] = sum * idiag[i];
    }
    for (std::int32_t i = 0; i < m; i++)
      t[i] = b[i] - scale * (a.vals[a.diag[i]]) * x[i];
    for (std::int32_t i = 0; i < m; i++) {
      double sum = t[i];
      minus(sum, t.data(), a.rowptr[i], a.diag[i]);
      t[i] = sum * idiag[i];
      x[i] += t[i];
    }
    return;
  }
  std::int64_t its = s.its;
  if (s.zero_guess) {
    const double *xb = b;
    if (s.forward) {
      for (std::int32_t i = 0; i < m; i++) {
        double sum = b[i];
        minus(sum, x, a.rowptr[i], a.diag[i]);
        t[i] = sum;
        x[i] = sum * idiag[i];
      }
      xb = t.data();
    }
    if (s.backward)
      for (std::int32_t i = m - 1; i >= 0; i--) {
        double sum = xb[i];
        minus(sum, x, a.diag[i] + 1, a.rowptr[i + 1]);
        x[i] = xb == b ? sum * idiag[i] : (1 - omega) * x[i] + sum * idiag[i];
      }
    its--;
  }
  while (its-- > 0) {
    const double *xb = b;
    if (s.forward) {
      for (std::int32_t i = 0; i < m; i++) {
        double sum = b[i];
        minus(sum, x, a.rowptr[i], a.diag[i]);
        t[i] = sum;
        minus(sum, x, a.diag[i] + 1, a.rowptr[i + 1]);
        x[i] = (1. - omega) * x[i] + sum * idiag[i];
      }
      xb = t.data();
    }
    if (s.backward)
      for (std::int32_t i = m - 1; i >= 0; i--) {
        double sum = xb[i];
        if (xb == b) {
          minus(sum, x, a.rowptr[i], a.rowptr[i + 1]);
          x[i] = (1. - omega) * x[i] + (sum + mdiag[i] * x[i]) * idiag[i];
        } else {
          minus(sum, x, a.diag[i] + 1, a.rowptr[i + 1]);
          x[i] = (1. - omega) * x[i] + sum * idiag[i];
        }
      }
  }
}

// 3 unknowns per node of a 1D chain of nodes, each node coupled to its neighbours by dense 3x3 blocks (rows of a
// node share their columns: the node layout), values of the row classes.
Matrix<std::int32_t> node_chain(std::int32_t nodes, unsigned seed)
{
  std::mt19937_64 rng(seed);
  Matrix<std::int32_t> a;
  a.nrows = a.ncols = 3 * nodes;
  for (std::int32_t i = 0; i < a.nrows; ++i) {
    const std::int32_t node = i / 3;
    const int cls           = static_cast<int>(rng() % kClasses);
    for (std::int32_t nb = node - 1; nb <= node + 1; ++nb)
      if (nb >= 0 && nb < nodes)
        for (int d = 0; d < 3; ++d) {
          a.cols.push_back(3 * nb + d);
          a.vals.push_back(class_value(cls, rng) + (3 * nb + d == i ? 8.0 : 0.0));
        }
    a.rowptr.push_back(static_cast<std::int32_t>(a.cols.size()));
  }
  return a;
}

// A square matrix of n rows whose row i holds the (ascending) columns rows_columns(i, cols) appends, each row's
// values of one random class, its diagonal raised by 8.
template <typename RowColumns>
Matrix<std::int32_t> chain_matrix(std::int32_t n, unsigned seed, RowColumns &&rows_columns)
{
  std::mt19937_64 rng(seed);
  Matrix<std::int32_t> a;
  a.nrows = a.ncols = n;
  std::vector<std::int32_t> cols;
  for (std::int32_t i = 0; i < n; ++i) {
    const int cls = static_cast<int>(rng() % kClasses);
    cols.clear();
    rows_columns(i, cols);
    for (std::int32_t j : cols) {
      a.cols.push_back(j);
      a.vals.push_back(class_value(cls, rng) + (j == i ? 8.0 : 0.0));
    }
    a.rowptr.push_back(static_cast<std::int32_t>(a.cols.size()));
  }
  return a;
}

// A chain (rows coupled to their neighbours) whose every 16th row also holds a column at the far end of the
// matrix: the slices holding those rows span more columns than 16-bit offsets reach and are not shifted copies of
// one pattern, so they keep their own 32-bit columns (the gathered slice kind).
Matrix<std::int32_t> wide_chain(std::int32_t n, unsigned seed)
{
  return chain_matrix(n, seed, [n](std::int32_t i, std::vector<std::int32_t> &cols) {
    for (std::int32_t j = i - 1; j <= i + 1; ++j)
      if (j >= 0 && j < n) cols.push_back(j);
    if (i % 16 == 1) cols.push_back(i < n / 2 ? n - 1 - i % 7 : i % 7);
    std::sort(cols.begin(), cols.end());
  });
}

// A chain bordered by its last column (a constraint numbered last): row i has columns i - 3 (odd i), i, i + 2 (i a
// multiple of 3) and n - 1, so its slices are neither shifted nor patched; they are gathered where the last column
// lies more than 2^16 from the rows, else narrow.
Matrix<std::int32_t> bordered_chain(std::int32_t n, unsigned seed)
{
  return chain_matrix(n, seed, [n](std::int32_t i, std::vector<std::int32_t> &cols) {
    if (i % 2 && i >= 3) cols.push_back(i - 3);
    cols.push_back(i);
    if (i % 3 == 0 && i + 2 < n - 1) cols.push_back(i + 2);
    if (i < n - 1) cols.push_back(n - 1);
  });
}

bool same(double a, double b)
{
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// a 7-point stencil with mixed row classes, node_chain, wide_chain, a 7-point stencil in runs of one class (its
// slices with face rows are patched), bordered_chain
enum class Kind { stencil, nodes, wide, stencil_runs, bordered };
struct Case {
  StorageMode mode;
  Layout layout;
  Kind kind;
  bool own_indices; // ellmp's copies; else the master pattern is passed (aijmp's)
};

std::string case_name(const Case &c)
{
  const char *kind = c.kind == Kind::nodes          ? "_nodes"
                     : c.kind == Kind::wide         ? "_wide"
                     : c.kind == Kind::stencil_runs ? "_stencil_runs"
                     : c.kind == Kind::bordered     ? "_bordered"
                                                    : "_stencil";
  return std::string(storage_mode_name(c.mode)) + "_" + layout_name(c.layout) + kind +
         (c.own_indices ? "_own" : "_master");
}
Matrix<std::int32_t> case_matrix(Kind kind)
{
  if (kind == Kind::nodes) return node_chain(700, 3u);
  if (kind == Kind::wide) return wide_chain(66000, 4u);
  if (kind == Kind::stencil_runs) return stencil_matrix<std::int32_t>(13, 7, Shape::runs, 6u, 1 << 20);
  if (kind == Kind::bordered) return bordered_chain(70000, 9u);
  return stencil_matrix<std::int32_t>(13, 7, Shape::fragmented, 5u, 0);
}
void PrintTo(const Case &c, std::ostream *os)
{
  *os << case_name(c);
}

// A case's copy of a, the pattern it reads, its rows for SOR and the CSR of its stored values (what AIJ holds).
struct StoredCase {
  CompactCsr copy;
  CsrPattern<std::int32_t> pattern;
  SorRows rows;
  AijRows aij;
  bool sweepable = false;
};
StoredCase stored_case(const Case &c, const Matrix<std::int32_t> &a)
{
  StorageOptions opts;
  opts.mode        = c.mode;
  opts.layout      = c.layout;
  opts.own_indices = c.own_indices;
  StoredCase out;
  out.copy      = build_compact_csr(a.view(), opts);
  out.pattern   = c.own_indices ? CsrPattern<std::int32_t>{} : a.pattern();
  out.sweepable = reference::sor_rows(out.copy, out.pattern, out.rows);
  out.aij       = c.own_indices ? stored_csr(out.copy) : stored_csr_of_master(out.copy, a);
  return out;
}

class Sor : public ::testing::TestWithParam<Case> {};

TEST_P(Sor, BitwiseAijSweeps)
{
  const Case c        = GetParam();
  const auto a        = case_matrix(c.kind);
  const StoredCase sc = stored_case(c, a);
  ASSERT_TRUE(sc.sweepable);
  const CompactCsr &copy      = sc.copy;
  const auto &pattern         = sc.pattern;
  const SorRows &rows         = sc.rows;
  const AijRows &aij          = sc.aij;
  const std::size_t n         = static_cast<std::size_t>(a.nrows);
  const std::vector<double> b = random_vector(n, 7u), x0 = random_vector(n, 8u);
  std::vector<double> work(n);

  struct Sweep {
    const char *name;
    int kind;
    bool forward, backward, zero_guess;
  };
  const Sweep sweeps[] = {{"forward", 0, true, false, false},      {"backward", 0, false, true, false},
                          {"symmetric", 0, true, true, false},     {"forward zero", 0, true, false, true},
                          {"backward zero", 0, false, true, true}, {"symmetric zero", 0, true, true, true},
                          {"eisenstat", 1, false, false, false},   {"apply upper", 2, false, false, false}};
  for (const Sweep &sw : sweeps)
    for (double omega : {1.0, 0.7, 1.4})
      for (double shift : {0.0, 0.25, -0.5})
        for (std::int64_t its : {1, 3}) {
          SorSweeps s;
          s.omega      = omega;
          s.shift      = shift;
          s.its        = its;
          s.forward    = sw.forward;
          s.backward   = sw.backward;
          s.zero_guess = sw.zero_guess;
          std::vector<double> idiag(n), x = x0, expect = x0;
          for (std::size_t i = 0; i < n; ++i)
            idiag[i] = omega == 1.0 && shift <= 0.0 ? 1.0 / rows.diagonal[i] : omega / (shift + rows.diagonal[i]);
          aij_sor(aij, sw.kind, s, b.data(), expect.data());
          if (sw.kind == 0)
            reference::sor(copy, pattern, rows, s, idiag.data(), work.data(), b.data(), x.data());
          else if (sw.kind == 1)
            reference::sor_eisenstat(copy, pattern, rows, omega, idiag.data(), work.data(), b.data(), x.data());
          else
            reference::sor_apply_upper(copy, pattern, rows, omega, shift, b.data(), x.data());
          for (std::size_t i = 0; i < n; ++i)
            ASSERT_TRUE(same(x[i], expect[i])) << sw.name << " omega " << omega << " shift " << shift << " its " << its
                                               << ": row " << i << " " << x[i] << " vs AIJ's " << expect[i];
        }
}

std::vector<Case> cases()
{
  std::vector<Case> out;
  for (StorageMode m : {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16,
                        StorageMode::split2, StorageMode::split4})
    for (Kind kind : {Kind::stencil, Kind::nodes, Kind::wide, Kind::stencil_runs, Kind::bordered}) {
      out.push_back({m, Layout::automatic, kind, true});
      out.push_back({m, Layout::sliced, kind, true});
      out.push_back({m, Layout::csr, kind, false});
      if (kind == Kind::nodes) out.push_back({m, Layout::node, kind, true});
    }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Modes, Sor, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &i) { return case_name(i.param); });

// The cases above sweep patched slices expanded both ways (SorRows::ExpandedSlices): the stencil's as 16-bit
// offsets, the wide chain's (a row's far column: more than 2^16 apart) as 32-bit columns.
TEST(SorPatchedSlices, ExpandedAsOffsetsAndAsColumns)
{
  for (Kind kind : {Kind::stencil_runs, Kind::wide}) {
    const Case c        = {StorageMode::lossless, Layout::sliced, kind, true};
    const StoredCase sc = stored_case(c, case_matrix(kind));
    ASSERT_TRUE(sc.sweepable);
    ASSERT_GT(sc.copy.stats.patched_rows, 0) << case_name(c);
    ASSERT_EQ(sc.rows.expanded.size(), sc.copy.blocks.size());
    std::size_t offsets = 0, columns = 0;
    for (const SorRows::ExpandedSlices &x : sc.rows.expanded) {
      offsets += x.offsets.size();
      columns += x.columns.size();
    }
    if (kind == Kind::wide)
      EXPECT_GT(columns, 0u) << case_name(c);
    else
      EXPECT_GT(offsets, 0u) << case_name(c);
  }
}

// Inodes of 1-5 rows, mixed: node k's rows share one pattern (dense blocks coupling it to nodes k-1, k and k+1),
// so AIJ's inode criterion finds exactly these nodes.
Matrix<std::int32_t> mixed_node_chain(const std::vector<int> &sizes, unsigned seed, std::size_t reach = 1)
{
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> first(sizes.size() + 1, 0);
  for (std::size_t k = 0; k < sizes.size(); ++k)
    first[k + 1] = first[k] + sizes[k];
  Matrix<std::int32_t> a;
  a.nrows = a.ncols = first.back();
  for (std::size_t k = 0; k < sizes.size(); ++k)
    for (std::int32_t i = first[k]; i < first[k + 1]; ++i) {
      const int cls = static_cast<int>(rng() % kClasses);
      for (std::size_t nb = k < reach ? 0 : k - reach; nb <= k + reach && nb < sizes.size(); ++nb)
        for (std::int32_t j = first[nb]; j < first[nb + 1]; ++j) {
          a.cols.push_back(j);
          a.vals.push_back(class_value(cls, rng) + (j == i ? 10.0 : 0.0));
        }
      a.rowptr.push_back(static_cast<std::int32_t>(a.cols.size()));
    }
  return a;
}

// Where each node's rows (first) and its s x s block (block) start, node after node.
struct NodeOffsets {
  std::vector<std::int32_t> first;
  std::vector<std::size_t> block;
  explicit NodeOffsets(const std::vector<int> &sizes) : first(sizes.size() + 1, 0), block(sizes.size() + 1, 0)
  {
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      first[k + 1] = first[k] + sizes[k];
      block[k + 1] = block[k] + static_cast<std::size_t>(sizes[k] * sizes[k]);
    }
  }
};

// AIJ's inode sum over sz entries (v, idx) of w: sum - (v0 w0 + v1 w1) a pair at a time, then the last alone.
double aij_minus_pairs(const double *v, const std::int32_t *idx, std::int32_t sz, const double *w, double sum)
{
  std::int32_t n = 0;
  for (; n < sz - 1; n += 2) {
    const double tmp0 = w[idx[n]], tmp1 = w[idx[n + 1]];
    sum -= v[n] * tmp0 + v[n + 1] * tmp1;
  }
  if (n == sz - 1) sum -= v[n] * w[idx[n]];
  return sum;
}

// Row r of a node's inverse times its sums S: sum1 * ib[r] + sum2 * ib[s + r] + ..., left to right.
double aij_node_row(int s, const double *inverse, const double *S, int r)
{
  double v = S[0] * inverse[r];
  for (int c = 1; c < s; ++c)
    v = v + S[c] * inverse[c * s + r];
  return v;
}

// MatSOR_SeqAIJ_Inode's sweeps (PETSc 3.18, inode.c) written out over a CSR with its pointers: forward from ii[row]
// (diag[row0] - ii[row0] entries, saved in t), then without a zero guess from ii[row] + that + s (ii[row0 + 1] -
// diag[row0] - s entries); backward from diag[row] + (s - r) (the last row's ii[L + 1] - diag[L] - 1 entries), or,
// backward alone without a zero guess, whole rows from ii[row] added to x; pairs of products, x = sum1 * ib[r] +
// sum2 * ib[s + r] + ...
void aij_inode(const AijRows &a, const std::vector<int> &sizes, const std::vector<double> &ib, const SorSweeps &sw,
               const double *b, double *t, double *x)
{
  auto minus_pairs = [&](const double *v, const std::int32_t *idx, std::int32_t sz, double sum) {
    return aij_minus_pairs(v, idx, sz, x, sum);
  };
  auto update = [&](std::int32_t row0, int s, const double *inverse, const double *S, bool add) {
    for (int r = 0; r < s; ++r) {
      const double v = aij_node_row(s, inverse, S, r);
      x[row0 + r]    = add ? x[row0 + r] + v : v;
    }
  };
  const NodeOffsets offsets(sizes);
  const std::vector<std::int32_t> &first = offsets.first;
  const std::vector<std::size_t> &block  = offsets.block;
  auto forward                           = [&](bool with_upper) {
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const std::int32_t row0 = first[k];
      const int s             = sizes[k];
      const std::int32_t sz = a.diag[row0] - a.rowptr[row0], sz2 = a.rowptr[row0 + 1] - a.diag[row0] - s;
      double S[5];
      for (int r = 0; r < s; ++r) {
        const double *v = a.vals.data() + a.rowptr[row0 + r];
        double sum      = minus_pairs(v, a.cols.data() + a.rowptr[row0], sz, b[row0 + r]);
        t[row0 + r]     = sum;
        if (with_upper) sum = minus_pairs(v + sz + s, a.cols.data() + a.diag[row0] + s, sz2, sum);
        S[r] = sum;
      }
      update(row0, s, ib.data() + block[k], S, false);
    }
  };
  auto backward = [&](const double *xb, bool whole) {
    for (std::size_t k = sizes.size(); k-- > 0;) {
      const std::int32_t row0 = first[k], last = first[k + 1] - 1;
      const int s = sizes[k];
      double S[5];
      for (int r = 0; r < s; ++r) {
        if (whole)
          S[r] = minus_pairs(a.vals.data() + a.rowptr[row0 + r], a.cols.data() + a.rowptr[last],
                             a.rowptr[last + 1] - a.rowptr[last], xb[row0 + r]);
        else
          S[r] = minus_pairs(a.vals.data() + a.diag[row0 + r] + (s - r), a.cols.data() + a.diag[last] + 1,
                             a.rowptr[last + 1] - a.diag[last] - 1, xb[row0 + r]);
      }
      update(row0, s, ib.data() + block[k], S, whole);
    }
  };
  std::int64_t its = sw.its;
  if (sw.zero_guess) {
    if (sw.forward) forward(false);
    if (sw.backward) backward(sw.forward ? t : b, false);
    --its;
  }
  while (its-- > 0) {
    if (sw.forward) forward(true);
    if (sw.backward) backward(sw.forward ? t : b, !sw.forward);
  }
}

// MatSOR_SeqAIJ_Inode's SOR_EISENSTAT (PETSc 3.18, inode.c) over a CSR with its pointers: from the last node, sums
// from diag[row] + (s - r) (the last row's ii[L + 1] - diag[L] - 1 entries) over x, x = sum1 * ib[r] + ...; t = b -
// (x1 * bd[r] + x2 * bd[s + r] + ...); from the first node, sums from ii[row] (diag[row0] - ii[row0] entries) over t,
// x += t = sum1 * ib[r] + ...
void aij_inode_eisenstat(const AijRows &a, const std::vector<int> &sizes, const std::vector<double> &bd,
                         const std::vector<double> &ib, const double *b, double *t, double *x)
{
  const auto minus_pairs = aij_minus_pairs;
  const auto apply       = aij_node_row;
  const NodeOffsets offsets(sizes);
  const std::vector<std::int32_t> &first = offsets.first;
  const std::vector<std::size_t> &block  = offsets.block;
  for (std::size_t k = sizes.size(); k-- > 0;) {
    const std::int32_t row0 = first[k], last = first[k + 1] - 1;
    const int s = sizes[k];
    double S[5];
    for (int r = 0; r < s; ++r)
      S[r] = minus_pairs(a.vals.data() + a.diag[row0 + r] + (s - r), a.cols.data() + a.diag[last] + 1,
                         a.rowptr[last + 1] - a.diag[last] - 1, x, b[row0 + r]);
    for (int r = 0; r < s; ++r)
      x[row0 + r] = apply(s, ib.data() + block[k], S, r);
  }
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const int s = sizes[k];
    for (int r = 0; r < s; ++r) {
      double tmp = x[first[k]] * bd[block[k] + static_cast<std::size_t>(r)];
      for (int c = 1; c < s; ++c)
        tmp = tmp + x[first[k] + c] * bd[block[k] + static_cast<std::size_t>(c * s + r)];
      t[first[k] + r] = b[first[k] + r] - tmp;
    }
  }
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::int32_t row0 = first[k];
    const int s             = sizes[k];
    double S[5];
    for (int r = 0; r < s; ++r)
      S[r] = minus_pairs(a.vals.data() + a.rowptr[row0 + r], a.cols.data() + a.rowptr[row0],
                         a.diag[row0] - a.rowptr[row0], t, t[row0 + r]);
    for (int r = 0; r < s; ++r) {
      t[row0 + r] = apply(s, ib.data() + block[k], S, r);
      x[row0 + r] += t[row0 + r];
    }
  }
}

// The inode sweeps over every layout and mode bitwise MatSOR_SeqAIJ_Inode's over the stored values, and the
// diagonal blocks as AIJ copies them (bdiag[k s + j] = a[diag[row0 + j] - j + k]).
class SorInodes : public ::testing::TestWithParam<Case> {};
// The sweeps and Eisenstat on a's inodes (sizes) against AIJ's, bitwise.
void sweeps_of(const Case &c, const std::vector<int> &sizes, const Matrix<std::int32_t> &a);

TEST_P(SorInodes, BitwiseAijInodeSweeps)
{
  std::vector<int> sizes;
  for (int k = 0; k < 240; ++k)
    sizes.push_back(1 + (k * 7 + k / 5) % 5); // every size next to every other
  // each node coupled to the next node on either side, and (reach 12) to 12: ranges of 36-60 entries, longer
  // than the node kernel's decode chunks (32 entries)
  for (std::size_t reach : {1, 12}) {
    SCOPED_TRACE("reach " + std::to_string(reach));
    sweeps_of(GetParam(), sizes, mixed_node_chain(sizes, 11u, reach));
  }
  // rows sharing their columns 6-8 at a time, which AIJ cuts into inodes of at most 5 (8 = 5 + 3, ...) while the
  // stored nodes hold up to 8 rows: stored nodes across two inodes
  std::vector<int> patterns, inodes;
  for (int k = 0; k < 60; ++k) {
    const int rows = 6 + k % 3;
    patterns.push_back(rows);
    inodes.push_back(5);
    inodes.push_back(rows - 5);
  }
  SCOPED_TRACE("inodes of 5 and 1-3 rows inside nodes of 6-8");
  sweeps_of(GetParam(), inodes, mixed_node_chain(patterns, 11u, 1));
}

void sweeps_of(const Case &c, const std::vector<int> &sizes, const Matrix<std::int32_t> &a)
{
  const StoredCase sc = stored_case(c, a);
  ASSERT_TRUE(sc.sweepable);
  const CompactCsr &copy = sc.copy;
  const auto &pattern    = sc.pattern;
  const SorRows &rows    = sc.rows;
  const AijRows &aij     = sc.aij;
  std::size_t room       = 0;
  for (int s : sizes)
    room += static_cast<std::size_t>(s * s);
  std::vector<double> blocks(room), expect_blocks(room);
  ASSERT_TRUE(reference::inode_diagonal_blocks(copy, pattern, rows, sizes.data(), blocks.data()));
  std::size_t cnt = 0, row0 = 0;
  for (const int sz : sizes) {
    for (int j = 0; j < sz; ++j)
      for (int k = 0; k < sz; ++k)
        expect_blocks[cnt + static_cast<std::size_t>(k * sz + j)] =
            aij.vals[static_cast<std::size_t>(aij.diag[row0 + static_cast<std::size_t>(j)] - j + k)];
    cnt += static_cast<std::size_t>(sz * sz);
    row0 += static_cast<std::size_t>(sz);
  }
  for (std::size_t e = 0; e < room; ++e)
    ASSERT_TRUE(same(blocks[e], expect_blocks[e])) << "diagonal block entry " << e;
  // the kernel applies whatever inverses it is given: random ones test every coefficient's place
  // (scaled below 1 / (5 R), R the largest absolute row sum, so that the sweeps contract: unscaled, x overflowed
  // to NaN after some 70 rows, and NaN compared equal to NaN)
  double R = 0;
  for (std::int32_t i = 0; i < a.nrows; ++i) {
    double sum = 0;
    for (std::int32_t e = a.rowptr[i]; e < a.rowptr[i + 1]; ++e)
      sum += std::fabs(a.vals[static_cast<std::size_t>(e)]);
    R = std::max(R, sum);
  }
  std::vector<double> inverses = random_vector(room, 12u);
  for (double &v : inverses)
    v *= 0.1 / R;
  const std::size_t n         = static_cast<std::size_t>(a.nrows);
  const std::vector<double> b = random_vector(n, 13u), x0 = random_vector(n, 14u);
  for (int kind = 0; kind < 3; ++kind)
    for (bool zero_guess : {true, false})
      for (std::int64_t its : {1, 2}) {
        SorSweeps sw;
        sw.forward            = kind != 1;
        sw.backward           = kind != 0;
        sw.zero_guess         = zero_guess;
        sw.its                = its;
        std::vector<double> x = x0, expect = x0, t(n), expect_t(n);
        aij_inode(aij, sizes, inverses, sw, b.data(), expect_t.data(), expect.data());
        reference::sor_inode(copy, pattern, rows, sizes.data(), static_cast<std::int64_t>(sizes.size()),
                             inverses.data(), sw, t.data(), b.data(), x.data());
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_TRUE(same(x[i], expect[i]) && std::isnormal(x[i]))
              << (sw.forward ? "forward " : "") << (sw.backward ? "backward " : "") << (zero_guess ? "zero guess " : "")
              << "its " << its << ": row " << i << " " << x[i] << " vs AIJ's " << expect[i];
      }
  { // Eisenstat (x is overwritten: its entry values do not matter)
    std::vector<double> x = x0, expect = random_vector(n, 15u), t(n), expect_t(n);
    aij_inode_eisenstat(aij, sizes, expect_blocks, inverses, b.data(), expect_t.data(), expect.data());
    reference::sor_inode_eisenstat(copy, pattern, rows, sizes.data(), static_cast<std::int64_t>(sizes.size()),
                                   blocks.data(), inverses.data(), t.data(), b.data(), x.data());
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_TRUE(same(x[i], expect[i]) && std::isnormal(x[i]))
          << "Eisenstat: row " << i << " " << x[i] << " vs AIJ's " << expect[i];
  }
}

// Node sizes that are not the rows' inodes (two nodes taken as one; a node overrunning its rows into the next) are
// refused, not swept.
TEST(SorInodesRefused, SizesNotTheRowsPatterns)
{
  const std::vector<int> sizes = {2, 3, 1, 4, 2, 5, 3};
  const auto a                 = mixed_node_chain(sizes, 5u);
  StorageOptions opts;
  opts.own_indices      = true;
  const CompactCsr copy = build_compact_csr(a.view(), opts);
  SorRows rows;
  ASSERT_TRUE(reference::sor_rows(copy, CsrPattern<std::int32_t>{}, rows));
  std::vector<double> blocks(200);
  EXPECT_TRUE(reference::inode_diagonal_blocks(copy, CsrPattern<std::int32_t>{}, rows, sizes.data(), blocks.data()));
  const std::vector<int> merged = {5, 1, 4, 2, 5, 3}, shifted = {3, 2, 1, 4, 2, 5, 3};
  EXPECT_FALSE(reference::inode_diagonal_blocks(copy, CsrPattern<std::int32_t>{}, rows, merged.data(), blocks.data()));
  EXPECT_FALSE(reference::inode_diagonal_blocks(copy, CsrPattern<std::int32_t>{}, rows, shifted.data(), blocks.data()));
}

std::vector<Case> inode_cases()
{
  std::vector<Case> out;
  for (const Case &c : cases())
    if (c.kind == Kind::nodes) out.push_back(c);
  return out;
}
INSTANTIATE_TEST_SUITE_P(Modes, SorInodes, ::testing::ValuesIn(inode_cases()),
                         [](const ::testing::TestParamInfo<Case> &i) { return case_name(i.param); });

// Copies SOR cannot walk say so: a row without its diagonal, a rectangular matrix, an entry split.
TEST(SorRowsRefused, MissingDiagonalRectangularEntrySplit)
{
  auto a = stencil_matrix<std::int32_t>(6, 7, Shape::fragmented, 2u, 0);
  SorRows rows;
  {
    const CompactCsr c = build_compact_csr(a.view(), StorageOptions{});
    ASSERT_TRUE(reference::sor_rows(c, a.pattern(), rows));
    ASSERT_EQ(rows.diagonal.size(), static_cast<std::size_t>(a.nrows));
  }
  Matrix<std::int32_t> holed; // a without the diagonal entry of row 40
  holed.nrows = holed.ncols = a.nrows;
  for (std::int32_t i = 0; i < a.nrows; ++i) {
    for (std::int32_t k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k)
      if (!(i == 40 && a.cols[k] == 40)) {
        holed.cols.push_back(a.cols[k]);
        holed.vals.push_back(a.vals[k]);
      }
    holed.rowptr.push_back(static_cast<std::int32_t>(holed.cols.size()));
  }
  StorageOptions own;
  own.own_indices = true;
  EXPECT_FALSE(reference::sor_rows(build_compact_csr(holed.view(), own), CsrPattern<std::int32_t>{}, rows));
  EXPECT_TRUE(rows.runs.empty());
  const auto wide = random_matrix<std::int32_t>(50, 80, Shape::fragmented, 3u);
  EXPECT_FALSE(reference::sor_rows(build_compact_csr(wide.view(), own), CsrPattern<std::int32_t>{}, rows));
  StorageOptions split;
  split.mode = StorageMode::entrysplit;
  EXPECT_FALSE(reference::sor_rows(build_compact_csr(a.view(), split), a.pattern(), rows));
}

// 64-bit PetscInt: the sweeps read a CSR-order block's columns through the master's 64-bit pattern as they do
// through a 32-bit one (one sweep code for both index widths, the width taken at run time), bit for bit.
TEST(SorPattern, Int64SweepsEqualInt32)
{
  std::vector<int> sizes;
  for (int k = 0; k < 150; ++k)
    sizes.push_back(1 + (k * 3 + k / 4) % 5);
  const auto a = mixed_node_chain(sizes, 5u, 3);
  StorageOptions opts;
  opts.layout           = Layout::csr;
  const CompactCsr copy = build_compact_csr(a.view(), opts);
  for (const RowBlock &block : copy.blocks)
    ASSERT_TRUE(!block.sliced() && !block.node_layout()); // every row read through the pattern
  const std::vector<std::int64_t> rowptr(a.rowptr.begin(), a.rowptr.end()), cols(a.cols.begin(), a.cols.end());
  const CsrPattern<std::int64_t> wide{rowptr.data(), cols.data()};
  SorRows rows32, rows64;
  ASSERT_TRUE(reference::sor_rows(copy, a.pattern(), rows32));
  ASSERT_TRUE(reference::sor_rows(copy, wide, rows64));
  ASSERT_EQ(rows32.diagonal_at, rows64.diagonal_at);
  const std::size_t n         = static_cast<std::size_t>(a.nrows);
  const std::vector<double> b = random_vector(n, 21u), x0 = random_vector(n, 22u);
  std::vector<double> idiag(n);
  for (std::size_t i = 0; i < n; ++i)
    idiag[i] = 0.9 / rows32.diagonal[i];
  std::size_t room = 0;
  for (int s : sizes)
    room += static_cast<std::size_t>(s * s);
  std::vector<double> blocks32(room), blocks64(room), inverses = random_vector(room, 23u);
  for (double &v : inverses)
    v *= 1e-3;
  ASSERT_TRUE(reference::inode_diagonal_blocks(copy, a.pattern(), rows32, sizes.data(), blocks32.data()));
  ASSERT_TRUE(reference::inode_diagonal_blocks(copy, wide, rows64, sizes.data(), blocks64.data()));
  ASSERT_EQ(0, std::memcmp(blocks32.data(), blocks64.data(), room * sizeof(double)));
  const std::int64_t nodes = static_cast<std::int64_t>(sizes.size());
  SorSweeps s;
  s.forward = s.backward = true;
  s.its                  = 2;
  s.omega                = 0.9;
  const auto sweeps      = [&](auto pattern, const SorRows &rows, int kind, std::vector<double> &x) {
    std::vector<double> t(n);
    if (kind == 0) reference::sor(copy, pattern, rows, s, idiag.data(), t.data(), b.data(), x.data());
    if (kind == 1) reference::sor_eisenstat(copy, pattern, rows, s.omega, idiag.data(), t.data(), b.data(), x.data());
    if (kind == 2) reference::sor_apply_upper(copy, pattern, rows, s.omega, 0.0, b.data(), x.data());
    if (kind == 3)
      reference::sor_inode(copy, pattern, rows, sizes.data(), nodes, inverses.data(), s, t.data(), b.data(), x.data());
    if (kind == 4)
      reference::sor_inode_eisenstat(copy, pattern, rows, sizes.data(), nodes, blocks32.data(), inverses.data(),
                                          t.data(), b.data(), x.data());
  };
  for (int kind = 0; kind < 5; ++kind) {
    std::vector<double> x32 = x0, x64 = x0;
    sweeps(a.pattern(), rows32, kind, x32);
    sweeps(wide, rows64, kind, x64);
    EXPECT_NE(x32, x0) << "sweep " << kind << " changed nothing";
    EXPECT_EQ(0, std::memcmp(x32.data(), x64.data(), n * sizeof(double))) << "sweep " << kind;
  }
}

} // namespace
