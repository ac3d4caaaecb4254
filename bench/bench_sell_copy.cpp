// The host side of the GPU backends' setup: make_sell_copy (the SELL-32 copy
// a device uploads, made from the compact copy and made again after every
// change of values), timed against a plain fp64 CSR SpMV on the same matrix
// (the loop of PETSc's non-inode AIJ MatMult) on this CPU, serial or with
// OpenMP threads. Needs no GPU and no PETSc; bench_gpu times the same pass
// on a GPU machine.
//   bench_sell_copy [-n27 N] [-fem N] [-threads T] [-reps R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "device_matrices.hpp"
#include "petscmp/core/compact_csr.hpp"
#include "petscmp/core/sell_copy.hpp"

using namespace petscmp;
using namespace petscmp_bench;

namespace {

// The best of reps runs of fn, in seconds.
template <typename Fn> double best_of(int reps, Fn &&fn)
{
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const double t0 = seconds();
    fn();
    best = std::min(best, seconds() - t0);
  }
  return best;
}

void bench(const Csr &a, int threads, int reps)
{
  const std::size_t n = static_cast<std::size_t>(a.nrows), nnz = a.cols.size();
  std::vector<double> x(n, 1.0), y(n);
  const double spmv = best_of(reps, [&] { csr_spmv(a, x.data(), y.data()); });
  std::printf("\n## %s: %zu rows, %zu nonzeros; fp64 CSR SpMV %.1f ms (serial)\n", a.name.c_str(), n, nnz, spmv * 1e3);
  const struct {
    StorageMode mode;
    Layout layout;
  } kinds[] = {{StorageMode::lossless, Layout::csr},       {StorageMode::fp32, Layout::csr},
               {StorageMode::fp16, Layout::csr},           {StorageMode::bf16, Layout::csr},
               {StorageMode::lossless, Layout::automatic}, {StorageMode::fp16, Layout::automatic},
               {StorageMode::split2, Layout::automatic}};
  for (const auto &k : kinds) {
    StorageOptions opts;
    opts.mode          = k.mode;
    opts.layout        = k.layout;
    const CompactCsr A = build_compact_csr(a.view(), opts);
    double bytes       = 0;
    const double t     = best_of(reps, [&] {
      const SellCopy S = make_sell_copy(A, a.rowptr.data(), a.cols.data(), kGpuSliceRows, threads);
      bytes            = static_cast<double>(S.bytes());
    });
    std::printf("%-9s from layout %-5s: make_sell_copy %7.1f ms = %5.2f SpMVs (%.2f ns/nnz), copy %.2f B/nnz\n",
                storage_mode_name(k.mode), layout_name(k.layout), t * 1e3, t / spmv, t * 1e9 / nnz, bytes / nnz);
  }
}

} // namespace

int main(int argc, char **argv)
{
  int n27 = 160, fem = 0, threads = 1, reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    const int v           = std::atoi(argv[i + 1]);
    if (opt == "-n27")
      n27 = v;
    else if (opt == "-fem")
      fem = v;
    else if (opt == "-threads")
      threads = v;
    else if (opt == "-reps")
      reps = v;
    else {
      std::fprintf(stderr, "usage: bench_sell_copy [-n27 N] [-fem N] [-threads T] [-reps R]\n");
      return 1;
    }
  }
  std::printf("make_sell_copy (host side of the device copy), %d thread(s), best of %d\n", threads, reps);
  if (n27 > 0) bench(stencil27(n27), threads, reps);
  if (fem > 0) bench(fem_blocks(fem), threads, reps);
  return 0;
}
