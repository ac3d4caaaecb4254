// The storage builder alone: full builds of the compact copy (the layout
// decided each time, in the memory of the copy it replaces) and value-only
// refills (after a scaling by 2 or 1/2), per storage mode, timed against a
// plain fp64 CSR SpMV on the same matrix (the loop of PETSc's non-inode AIJ
// MatMult), serially. Needs no PETSc. Builds alternate with refills, and each
// figure is the median of reps (bench_matmult times one build per mode).
//   bench_build [-mixed N] [-n27 N] [-fem N] [-reps R] [-modes lossless,fp32,fp16,bf16]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device_matrices.hpp"
#include "petscmp/core/compact_csr.hpp"

using namespace petscmp;
using namespace petscmp_bench;

namespace {

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void print_cpu()
{
  char line[512], model[256] = "unknown";
  if (FILE *f = std::fopen("/proc/cpuinfo", "r")) {
    while (std::fgets(line, sizeof(line), f))
      if (!std::strncmp(line, "model name", 10) && std::sscanf(line, "model name : %255[^\n]", model) == 1) break;
    std::fclose(f);
  }
  std::printf("CPU: %s\n", model);
}

void bench(Csr &a, int reps, const std::vector<StorageMode> &modes)
{
  const std::size_t n = static_cast<std::size_t>(a.nrows), nnz = a.cols.size();
  std::vector<double> x(n, 1.0), y(n), spmv;
  for (int r = 0; r < reps; ++r) {
    const double t0 = seconds();
    csr_spmv(a, x.data(), y.data());
    spmv.push_back(seconds() - t0);
  }
  const double t_spmv = median(spmv);
  std::printf("\n## %s: %zu rows, %zu nonzeros; fp64 CSR SpMV %.1f ms (median of %d)\n", a.name.c_str(), n, nnz,
              t_spmv * 1e3, reps);
  for (StorageMode mode : modes) {
    StorageOptions opts;
    opts.mode          = mode;
    double t0          = seconds();
    CompactCsr copy    = build_compact_csr(a.view(), opts);
    const double first = seconds() - t0;
    std::vector<double> full, refill;
    bool refused = false;
    for (int r = 0; r < reps; ++r) {
      t0   = seconds();
      copy = build_compact_csr(a.view(), opts, &copy);
      full.push_back(seconds() - t0);
      for (double &v : a.vals) // exact scalings: every row keeps its format
        v *= r % 2 ? 0.5 : 2.0;
      t0                  = seconds();
      const bool refilled = refill_compact_values(a.view(), opts, copy);
      refill.push_back(seconds() - t0);
      if (!refilled) {
        refused = true;
        copy    = build_compact_csr(a.view(), opts, &copy);
      }
    }
    if (reps % 2)
      for (double &v : a.vals) // (back to the values the other modes start from)
        v *= 0.5;
    const double tf = median(full), tr = median(refill);
    std::printf(
        "%-9s first build %6.3f s = %5.1f SpMVs; full build %6.3f s = %4.1f SpMVs (%.2f ns/nnz); "
        "value-only %6.3f s = %4.1f SpMVs%s; %lld sorted windows, %lld sliced rows; fastest full build %.2f ns/nnz\n",
        storage_mode_name(mode), first, first / t_spmv, tf, tf / t_spmv, tf * 1e9 / static_cast<double>(nnz), tr,
        tr / t_spmv, refused ? " (refused: a full build)" : "", static_cast<long long>(copy.stats.sorted_windows),
        static_cast<long long>(copy.stats.sliced_rows),
        *std::min_element(full.begin(), full.end()) * 1e9 / static_cast<double>(nnz));
  }
}

} // namespace

int main(int argc, char **argv)
{
  int mixed = 160, n27 = 0, fem = 0, reps = 7;
  std::vector<StorageMode> modes = {StorageMode::lossless, StorageMode::fp32, StorageMode::fp16, StorageMode::bf16};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    const int v           = std::atoi(argv[i + 1]);
    if (opt == "-modes") {
      modes.clear();
      std::string list = argv[i + 1];
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        StorageMode m;
        if (!parse_storage_mode(list.substr(at, comma - at).c_str(), &m)) {
          std::fprintf(stderr, "bench_build: unknown storage mode in -modes %s\n", argv[i + 1]);
          return 1;
        }
        modes.push_back(m);
        at = comma + 1;
      }
    } else if (opt == "-mixed")
      mixed = v;
    else if (opt == "-n27")
      n27 = v;
    else if (opt == "-fem")
      fem = v;
    else if (opt == "-reps")
      reps = v;
    else {
      std::fprintf(stderr, "usage: bench_build [-mixed N] [-n27 N] [-fem N] [-reps R] [-modes LIST]\n");
      return 1;
    }
  }
  if (reps < 1) {
    std::fprintf(stderr, "bench_build: -reps must be positive\n");
    return 1;
  }
  print_cpu();
  std::printf("storage builder alone, serial: medians of %d full builds and %d value-only refills, alternated\n", reps,
              reps);
  if (mixed > 0) {
    Csr a = mixed_stencil(mixed);
    bench(a, reps, modes);
  }
  if (n27 > 0) {
    Csr a = stencil27(n27);
    bench(a, reps, modes);
  }
  if (fem > 0) {
    Csr a = fem_blocks(fem);
    bench(a, reps, modes);
  }
  return 0;
}
