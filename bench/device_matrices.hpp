// The matrices of the PETSc-free benchmarks (bench_gpu, bench_sell_copy,
// bench_build): the 27-point operator on an n^3 grid, a FEM-like block matrix
// (3 dofs per node, 27-node stencil, dense 3x3 blocks), a matrix with long rows
// and the mixed 7/27-point operator in Morton order, their values drawn so that
// they need fp64.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../tests/common/csr_matrices.hpp"

namespace petscmp_bench {

// Wall-clock seconds, for the benchmarks' timers.
inline double seconds()
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A square test matrix (tests/common: its arrays, view() and pattern()) with a name.
struct Csr : petscmp_test::Matrix<std::int32_t> {
  std::string name;
};

inline double need_fp64(std::mt19937_64 &rng)
{
  std::uniform_real_distribution<double> u(0.5, 2.0);
  return (rng() & 1 ? 1.0 : -1.0) * u(rng);
}

// the 27-point operator on an n^3 grid, rows in lexicographic order
inline Csr stencil27(int n)
{
  Csr a;
  a.name  = "27-pt " + std::to_string(n) + "^3";
  a.nrows = a.ncols = n * n * n;
  std::mt19937_64 rng(1);
  a.cols.reserve(static_cast<std::size_t>(a.nrows) * 27);
  a.vals.reserve(static_cast<std::size_t>(a.nrows) * 27);
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              const int px = x + dx, py = y + dy, pz = z + dz;
              if (px < 0 || py < 0 || pz < 0 || px >= n || py >= n || pz >= n) continue;
              a.cols.push_back(px + n * (py + n * pz));
              a.vals.push_back(need_fp64(rng));
            }
        a.rowptr.push_back(static_cast<std::int32_t>(a.cols.size()));
      }
  return a;
}

// 3 dofs per node of an n^3 grid, each node coupled to its 27 neighbours by a dense 3x3 block
inline Csr fem_blocks(int n)
{
  Csr a;
  a.name  = "FEM bs3 " + std::to_string(n) + "^3 nodes";
  a.nrows = a.ncols = 3 * n * n * n;
  std::mt19937_64 rng(2);
  a.cols.reserve(static_cast<std::size_t>(a.nrows) * 81);
  a.vals.reserve(static_cast<std::size_t>(a.nrows) * 81);
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x)
        for (int c = 0; c < 3; ++c) {
          for (int dz = -1; dz <= 1; ++dz)
            for (int dy = -1; dy <= 1; ++dy)
              for (int dx = -1; dx <= 1; ++dx) {
                const int px = x + dx, py = y + dy, pz = z + dz;
                if (px < 0 || py < 0 || pz < 0 || px >= n || py >= n || pz >= n) continue;
                for (int d = 0; d < 3; ++d) {
                  a.cols.push_back(3 * (px + n * (py + n * pz)) + d);
                  a.vals.push_back(need_fp64(rng));
                }
              }
          a.rowptr.push_back(static_cast<std::int32_t>(a.cols.size()));
        }
  return a;
}

// Rows of 16 entries near the diagonal and, every 32nd row, 1024 entries spread
// over the columns (a network or a constraint row): the long rows go to the
// warp-per-row parts, the others to slices that no long row pads.
inline Csr long_rows(int nrows)
{
  Csr a;
  a.name  = "long rows " + std::to_string(nrows / 1000000) + "M (1 in 32 of 1024 entries)";
  a.nrows = a.ncols = nrows;
  std::mt19937_64 rng(4);
  for (int r = 0; r < nrows; ++r) {
    const bool long_row = r % 32 == 7;
    const int n = long_row ? 1024 : 16, step = long_row ? std::max(1, nrows / 1024) : 1;
    const int first =
        long_row ? static_cast<int>(rng() % static_cast<unsigned>(step)) : std::max(0, std::min(r - 8, nrows - 16));
    for (int e = 0; e < n; ++e) {
      a.cols.push_back(first + e * step);
      a.vals.push_back(need_fp64(rng));
    }
    a.rowptr.push_back(static_cast<std::int32_t>(a.cols.size()));
  }
  return a;
}

// y = A x in fp64, serially: the loop of PETSc's non-inode AIJ MatMult, the
// unit the PETSc-free benchmarks time against.
inline void csr_spmv(const Csr &a, const double *x, double *y)
{
  for (std::int32_t i = 0; i < a.nrows; ++i) {
    double sum = 0;
    for (std::int32_t k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k)
      sum += a.vals[static_cast<std::size_t>(k)] * x[a.cols[static_cast<std::size_t>(k)]];
    y[i] = sum;
  }
}

// The points of an n^3 grid in Morton (Z-curve) order: order[k] = x + n (y + n z) of the k-th point.
inline std::vector<int> morton_order(int n)
{
  auto spread = [](std::uint64_t v) { // bit b of v to bit 3b
    std::uint64_t r = 0;
    for (int b = 0; b < 21; ++b)
      r |= ((v >> b) & 1u) << (3 * b);
    return r;
  };
  std::vector<std::pair<std::uint64_t, int>> code;
  code.reserve(static_cast<std::size_t>(n) * n * n);
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x)
        code.emplace_back(spread(x) | spread(y) << 1 | spread(z) << 2, x + n * (y + n * z));
  std::sort(code.begin(), code.end());
  std::vector<int> order(code.size());
  for (std::size_t k = 0; k < code.size(); ++k)
    order[k] = code[k].second;
  return order;
}

// bench_matmult's mixed operator: the 7-point faces, and at one grid point in 8
// (by a hash of its Morton position) the whole 3x3x3 cube,
// rows in Morton order: rows of 7 and 27 entries mixed, so that the automatic
// layout sorts windows of rows by length (gathered slices).
inline Csr mixed_stencil(int n)
{
  Csr a;
  a.name  = "mixed 7/27-pt " + std::to_string(n) + "^3 Morton";
  a.nrows = a.ncols            = n * n * n;
  const std::vector<int> order = morton_order(n);
  std::vector<int> position(order.size());
  for (std::size_t k = 0; k < order.size(); ++k)
    position[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
  std::mt19937_64 rng(3);
  std::vector<std::pair<int, double>> row;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int x = order[k] % n, y = order[k] / n % n, z = order[k] / n / n;
    const bool cube = (((static_cast<std::int64_t>(k) * 2654435761LL) >> 11) & 7) == 0;
    row.clear();
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int px = x + dx, py = y + dy, pz = z + dz;
          if ((dx != 0) + (dy != 0) + (dz != 0) > 1 && !cube) continue;
          if (px < 0 || py < 0 || pz < 0 || px >= n || py >= n || pz >= n) continue;
          row.emplace_back(position[static_cast<std::size_t>(px + n * (py + n * pz))], need_fp64(rng));
        }
    std::sort(row.begin(), row.end());
    for (const auto &[c, v] : row) {
      a.cols.push_back(c);
      a.vals.push_back(v);
    }
    a.rowptr.push_back(static_cast<std::int32_t>(a.cols.size()));
  }
  return a;
}

} // namespace petscmp_bench
