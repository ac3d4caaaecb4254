// Random CSR test matrices shared by the SpMV kernel tests (reference and openmp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "petscmp/core/compact_csr.hpp"
#include "spmv.hpp"

namespace petscmp_test {

using petscmp::CsrPattern;
using petscmp::CsrView;

// Value classes: each row draws its values from one, so the modes choose
// different formats for different rows.
// Each class is stored in one format per mode, whatever the random draws, so
// that a matrix whose class changes every few thousand rows keeps the run
// layout in every mode (tolerance 1e-3 included).
inline double class_value(int cls, std::mt19937_64 &rng)
{
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double sign = (rng() & 1) ? 1.0 : -1.0;
  switch (cls) {
  case 0: // fp16 exact
    return sign * (static_cast<double>(rng() % 9) + 0.5);
  case 1: // random doubles in [0.5, 2): fp16 within its unit roundoff, exact nowhere but fp64
    return sign * (0.5 + 1.5 * u(rng));
  case 2: // beyond fp16; exact in fp32, bf16 error >= 2^-9 (> 1e-3)
    return sign *
           std::ldexp(1 + 0x1p-9 + static_cast<double>(rng() % 2048) * 0x1p-20, 17 + static_cast<int>(rng() % 4));
  case 3: // beyond fp32; fp11_4 truncation error > 1e-3, fp11_20 error <= 2^-20
    return sign * std::ldexp(1 + static_cast<double>(rng() % 16) * 0x1p-4 + 0x1p-8 + u(rng) * 0x1p-9, 200);
  case 4: // double subnormals: every lossy mode falls back to fp64
    return sign * std::ldexp(0.5 + u(rng), -1040);
  default: // bf16 exact, beyond fp16
    return sign * 3.0 * std::ldexp(1.0, 17 + static_cast<int>(rng() % 20));
  }
}

inline constexpr int kClasses = 6;

enum class Shape { fragmented, runs, mostly_empty };
inline const char *shape_name(Shape s)
{
  return s == Shape::fragmented ? "fragmented" : s == Shape::runs ? "runs" : "mostly_empty";
}

template <typename Index> struct Matrix {
  Index nrows = 0, ncols = 0;
  std::vector<Index> rowptr{0}, cols;
  std::vector<double> vals;
  CsrView<Index> view() const
  {
    CsrView<Index> v;
    v.nrows  = nrows;
    v.ncols  = ncols;
    v.rowptr = rowptr.data();
    v.cols   = cols.data();
    v.values = vals.data();
    return v;
  }
  CsrPattern<Index> pattern() const { return CsrPattern<Index>{rowptr.data(), cols.data()}; }
};

// Random rows of the value classes. fragmented: each row draws its class, so
// the formats change every few rows (grouped layout); runs: the class changes
// every recipe.run_rows rows (run layout); mostly_empty: most rows are empty.
struct RowRecipe {
  std::int64_t run_rows    = 64; // runs: rows per class
  std::size_t min_nnz      = 0;  // nonzeros drawn per row: min_nnz + rng() % nnz_spread (duplicates merged)
  std::size_t nnz_spread   = 12;
  unsigned empty_tenths    = 7; // mostly_empty: this many rows in ten are empty
  std::int64_t empty_every = 0; // > 0: every empty_every-th row is empty in any shape
  int max_node_rows        = 1; // > 1: rows come in nodes of 1..max_node_rows rows sharing one column pattern
  std::int64_t node_window = 0; // > 0: 7 nodes in 8 draw their columns within this many columns of the diagonal
};

template <typename Index>
Matrix<Index> random_matrix(Index nrows, Index ncols, Shape shape, unsigned seed, const RowRecipe &recipe = RowRecipe{})
{
  std::mt19937_64 rng(seed);
  Matrix<Index> a;
  a.nrows = nrows;
  a.ncols = ncols;
  std::vector<Index> row;
  Index node_left = 0; // rows that still share the current node's pattern
  for (Index i = 0; i < nrows; ++i) {
    const int cls =
        shape == Shape::runs ? static_cast<int>(i / recipe.run_rows) % kClasses : static_cast<int>(rng() % kClasses);
    if (node_left > 0) {
      --node_left;
    } else {
      std::size_t n = recipe.min_nnz + rng() % recipe.nnz_spread;
      if (shape == Shape::mostly_empty && rng() % 10 < recipe.empty_tenths) n = 0;
      if (recipe.empty_every > 0 && i % recipe.empty_every == 0) n = 0;
      if (recipe.max_node_rows > 1) node_left = static_cast<Index>(rng() % static_cast<unsigned>(recipe.max_node_rows));
      std::int64_t lo = 0, span = ncols;
      if (recipe.node_window > 0 && rng() % 8 != 0) {
        span = std::min<std::int64_t>(recipe.node_window, ncols);
        lo   = std::min<std::int64_t>(static_cast<std::int64_t>(i) * ncols / std::max<Index>(nrows, 1), ncols - span);
      }
      row.clear();
      for (std::size_t k = 0; k < n; ++k)
        row.push_back(static_cast<Index>(lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span))));
      std::sort(row.begin(), row.end());
      row.erase(std::unique(row.begin(), row.end()), row.end());
    }
    for (Index c : row) {
      a.cols.push_back(c);
      a.vals.push_back(class_value(cls, rng));
    }
    a.rowptr.push_back(static_cast<Index>(a.vals.size()));
  }
  return a;
}

// Stencil rows, whose slices of 8 consecutive rows are mostly shifted (one
// length, columns shifted by one per row): the points of an n x n x n grid in
// lexicographic order, each row the 7 or 27 neighbours inside the grid (rows
// at the faces are shorter, so slices that hold face rows are not shifted).
// band > 0 instead: row i has the columns i .. i + band - 1 of a matrix with
// nrows + band - 1 columns (every full slice is shifted; the last one reads
// the last entry of x). Values as random_matrix's for the shape (fragmented:
// a class per row; runs: a class per run_rows rows).
template <typename Index>
Matrix<Index> stencil_matrix(Index n, int points, Shape shape, unsigned seed, std::int64_t run_rows, Index band = 0)
{
  std::mt19937_64 rng(seed);
  Matrix<Index> a;
  a.nrows         = band > 0 ? n : n * n * n;
  a.ncols         = band > 0 ? n + band - 1 : a.nrows;
  const int reach = points == 27 ? 1 : 0; // 27: all offsets in {-1,0,1}^3; 7: one nonzero offset
  for (Index i = 0; i < a.nrows; ++i) {
    const int cls =
        shape == Shape::runs ? static_cast<int>(i / run_rows) % kClasses : static_cast<int>(rng() % kClasses);
    auto add = [&](Index c) {
      a.cols.push_back(c);
      a.vals.push_back(class_value(cls, rng));
    };
    if (band > 0) {
      for (Index c = i; c < i + band; ++c)
        add(c);
    } else {
      const Index x = i % n, y = (i / n) % n, z = i / (n * n);
      for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            const int nonzero_offsets = (dx != 0) + (dy != 0) + (dz != 0);
            if (reach == 0 && nonzero_offsets > 1) continue;
            const Index px = x + dx, py = y + dy, pz = z + dz;
            if (px < 0 || py < 0 || pz < 0 || px >= n || py >= n || pz >= n) continue;
            add(px + n * (py + n * pz));
          }
    }
    a.rowptr.push_back(static_cast<Index>(a.vals.size()));
  }
  return a;
}

inline std::vector<double> random_vector(std::size_t n, unsigned seed)
{
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto &x : v)
    x = u(rng);
  return v;
}

// Rows [from, to) of each matrix overwritten with NaN values and column -1: rows a builder said it is done with
// (build_compact_parts_by_rows, refill_compact_parts_by_rows), so that a later read of them would show.
template <typename Index> void poison_rows(std::vector<Matrix<Index>> &mats, std::int64_t from, std::int64_t to)
{
  for (auto &m : mats)
    for (Index e = m.rowptr[from]; e < m.rowptr[to]; ++e) {
      m.vals[static_cast<std::size_t>(e)] = std::numeric_limits<double>::quiet_NaN();
      m.cols[static_cast<std::size_t>(e)] = -1;
    }
}

} // namespace petscmp_test
