// Dense test blocks shared by the block-Jacobi unit tests (core and kernels).
#pragma once

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace petscmp_test {

// ---- dense column-major blocks ----------------------------------------------------
struct Dense {
  int n = 0;
  std::vector<double> a;
  explicit Dense(int n_) : n(n_), a(static_cast<std::size_t>(n_) * static_cast<std::size_t>(n_), 0.0) {}
  double &operator()(int r, int c) { return a[static_cast<std::size_t>(r + c * n)]; }
  double operator()(int r, int c) const { return a[static_cast<std::size_t>(r + c * n)]; }
};

inline Dense random_orthogonal(int n, std::mt19937_64 &rng)
{
  std::normal_distribution<double> g(0.0, 1.0);
  Dense q(n);
  for (double &v : q.a)
    v = g(rng);
  for (int c = 0; c < n; ++c) { // modified Gram-Schmidt, twice for orthogonality to working precision
    for (int pass = 0; pass < 2; ++pass)
      for (int k = 0; k < c; ++k) {
        double d = 0.0;
        for (int r = 0; r < n; ++r)
          d += q(r, k) * q(r, c);
        for (int r = 0; r < n; ++r)
          q(r, c) -= d * q(r, k);
      }
    double nrm = 0.0;
    for (int r = 0; r < n; ++r)
      nrm += q(r, c) * q(r, c);
    nrm = std::sqrt(nrm);
    for (int r = 0; r < n; ++r)
      q(r, c) /= nrm;
  }
  return q;
}

// scale * Q diag(sigma) W^T with singular values log-spread over [1, kappa2]
// (W = Q for a symmetric block, then made exactly symmetric).
inline Dense random_block(int n, double kappa2, bool symmetric, double scale, std::mt19937_64 &rng)
{
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const Dense q = random_orthogonal(n, rng);
  const Dense w = symmetric ? q : random_orthogonal(n, rng);
  std::vector<double> sigma(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double t                     = n == 1 ? 0.0 : i == 0 ? 0.0 : i == 1 ? 1.0 : u(rng);
    sigma[static_cast<std::size_t>(i)] = std::pow(kappa2, t) * ((symmetric || (rng() & 1)) ? 1.0 : -1.0);
  }
  Dense d(n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) {
      double s = 0.0;
      for (int k = 0; k < n; ++k)
        s += q(r, k) * sigma[static_cast<std::size_t>(k)] * w(c, k);
      d(r, c) = s * scale;
    }
  if (symmetric)
    for (int c = 0; c < n; ++c)
      for (int r = c + 1; r < n; ++r)
        d(r, c) = d(c, r);
  return d;
}

} // namespace petscmp_test
