// make bench-gpu: the device SpMV of petscmp's GPU backend (SELL-32, one
// thread per row, values in their stored formats, fp64 arithmetic) against
// cuSPARSE's CSR SpMV with fp64 values and with fp32 values (fp64 vectors),
// and against a device-to-device copy measured in the same run. Matrices: the
// 27-point operator on an n^3 grid and a FEM-like block matrix (3 dofs per node,
// 27-node stencil, dense 3x3 blocks), values drawn so that they need fp64.
// Split storage (split2, split4) is also read at each lower level (heads
// only, ...). Then apbjacobi's apply (adaptive formats) against the same
// kernel over fp64 blocks, on block-diagonal matrices of 3x3, 8x8 and 32x32
// blocks whose fp64 inverses fill about 1 GB.
// Runs alternate the variants rep by rep and report medians. Each petscmp
// product is also checked bitwise against the CPU reference backend.
// A third matrix has long rows (1 in 32 of 1024 entries): warp-per-row parts.
// Each matrix's setup (compact build, SELL copy, upload) is printed as a
// multiple of one cuSPARSE fp64 product.
//   bench_gpu [-n27 N] [-fem N] [-long MILLIONS_OF_ROWS] [-reps R] [-modes lossless,fp32,...] [-bj_gb G]
//             [-bj_sizes 3,8,32]
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../tests/common/csr_matrices.hpp"
#include "device_matrices.hpp"
#include "block_jacobi_apply.hpp"
#include "device.hpp"
#include "petscmp/core/block_jacobi.hpp"
#include "petscmp/core/compact_csr.hpp"
#include "petscmp/core/sell_copy.hpp"
#include "spmv.hpp"

using namespace petscmp;
using namespace petscmp_bench;

namespace {

#define CHECK_CUDA(call)                                                                                               \
  do {                                                                                                                 \
    cudaError_t e_ = (call);                                                                                           \
    if (e_ != cudaSuccess) {                                                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                                 \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

template <typename T> T *to_device(const T *host, std::size_t n)
{
  void *d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, n * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(d, host, n * sizeof(T), cudaMemcpyHostToDevice));
  return static_cast<T *>(d);
}

// milliseconds of one call of fn, timed by events
template <typename Fn> double time_ms(Fn &&fn)
{
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  CHECK_CUDA(cudaEventRecord(a));
  fn();
  CHECK_CUDA(cudaEventRecord(b));
  CHECK_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  return ms;
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// cuSPARSE CSR SpMV, y = A x, matrix values of type vtype, vectors and compute fp64
struct CusparseSpmv {
  cusparseHandle_t handle = nullptr;
  cusparseSpMatDescr_t A  = nullptr;
  cusparseDnVecDescr_t X = nullptr, Y = nullptr;
  void *buffer   = nullptr;
  bool supported = false;
  std::string why;
  CusparseSpmv(cusparseHandle_t h, const Csr &a, std::int32_t *rowptr, std::int32_t *cols, void *vals,
               cudaDataType vtype, double *x, double *y)
      : handle(h)
  {
    cusparseStatus_t s =
        cusparseCreateCsr(&A, a.nrows, a.nrows, static_cast<std::int64_t>(a.cols.size()), rowptr, cols, vals,
                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, vtype);
    if (s == CUSPARSE_STATUS_SUCCESS) s = cusparseCreateDnVec(&X, a.nrows, x, CUDA_R_64F);
    if (s == CUSPARSE_STATUS_SUCCESS) s = cusparseCreateDnVec(&Y, a.nrows, y, CUDA_R_64F);
    std::size_t bytes = 0;
    const double one = 1.0, zero = 0.0;
    if (s == CUSPARSE_STATUS_SUCCESS)
      s = cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y, CUDA_R_64F,
                                  CUSPARSE_SPMV_CSR_ALG1, &bytes);
    if (s == CUSPARSE_STATUS_SUCCESS && bytes) CHECK_CUDA(cudaMalloc(&buffer, bytes));
    if (s == CUSPARSE_STATUS_SUCCESS)
      s = cusparseSpMV_preprocess(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y, CUDA_R_64F,
                                  CUSPARSE_SPMV_CSR_ALG1, buffer);
    supported = s == CUSPARSE_STATUS_SUCCESS;
    if (!supported) why = cusparseGetErrorString(s);
  }
  void run()
  {
    const double one = 1.0, zero = 0.0;
    const cusparseStatus_t s = cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y, CUDA_R_64F,
                                            CUSPARSE_SPMV_CSR_ALG1, buffer);
    if (s != CUSPARSE_STATUS_SUCCESS) {
      std::fprintf(stderr, "cusparseSpMV: %s\n", cusparseGetErrorString(s));
      std::exit(1);
    }
  }
  ~CusparseSpmv()
  {
    if (A) cusparseDestroySpMat(A);
    if (X) cusparseDestroyDnVec(X);
    if (Y) cusparseDestroyDnVec(Y);
    if (buffer) cudaFree(buffer);
  }
};

double copy_bandwidth(int reps)
{
  const std::size_t bytes = std::size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMemset(a, 1, bytes));
  std::vector<double> t;
  for (int r = 0; r < reps + 1; ++r) {
    const double ms = time_ms([&] { CHECK_CUDA(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice)); });
    if (r) t.push_back(ms);
  }
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  return 2.0 * bytes / (median(t) * 1e6); // GB/s, read + write
}

struct Variant {
  std::string name;
  double bytes = 0; // moved by one product
  std::vector<double> ms;
  std::function<void()> run;
};

// One warm-up product each, then reps rounds of every variant in turn.
void time_alternated(std::vector<Variant> &variants, int reps)
{
  for (Variant &v : variants)
    v.run();
  CHECK_CUDA(cudaDeviceSynchronize());
  for (int r = 0; r < reps; ++r)
    for (Variant &v : variants)
      v.ms.push_back(time_ms(v.run));
}

// The medians against the first variant's and, where second_label is given,
// against second_base (milliseconds; 0: that column left empty).
void print_variants(const std::vector<Variant> &variants, double copy_gbs, const char *second_label, double second_base)
{
  const double base = median(variants[0].ms);
  std::printf("%-26s %9s %9s %8s %9s", "variant", "ms", "GB/s", "of copy", "vs fp64");
  if (second_label) std::printf(" %9s", second_label);
  std::printf("\n");
  for (const Variant &v : variants) {
    const double ms = median(v.ms), gbs = v.bytes / (ms * 1e6);
    std::printf("%-26s %9.3f %9.1f %7.0f%% %8.2fx", v.name.c_str(), ms, gbs, 100 * gbs / copy_gbs, base / ms);
    if (second_label && second_base > 0) std::printf(" %8.2fx", second_base / ms);
    std::printf("\n");
  }
}

using Clock = std::chrono::steady_clock;
double milliseconds(Clock::time_point a, Clock::time_point b)
{
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The device copy's setup on the host (one thread): the compact build from the
// fp64 CSR, the SELL copy made from it, and its upload (pageable memory).
struct Setup {
  std::string mode;
  double build_ms, sell_copy_ms, upload_ms;
};

void print_setups(const std::vector<Setup> &setups, double product_ms)
{
  std::printf("setup (host thread + upload) %9s %9s %9s %9s  in cuSPARSE fp64 products (%.3f ms)\n", "build",
              "SELL copy", "upload", "total", product_ms);
  for (const Setup &s : setups) {
    const double total = s.build_ms + s.sell_copy_ms + s.upload_ms;
    std::printf("  %-26s %7.0f ms %7.0f ms %7.0f ms %7.0f ms  = %.0f products (SELL copy + upload %.0f)\n",
                s.mode.c_str(), s.build_ms, s.sell_copy_ms, s.upload_ms, total, total / product_ms,
                (s.sell_copy_ms + s.upload_ms) / product_ms);
  }
}

void bench_matrix(const Csr &a, const std::vector<StorageMode> &modes, int reps, double copy_gbs)
{
  const std::size_t nnz = a.cols.size(), n = static_cast<std::size_t>(a.nrows);
  const double aij_bytes = nnz * 12.0 + (n + 1) * 4.0 + 2 * n * 8.0; // values, columns, row pointers, x and y
  std::printf("\n## %s: %zu rows, %zu nonzeros, %.2f GB of fp64 CSR\n", a.name.c_str(), n, nnz, aij_bytes / 1e9);
  std::vector<double> x(n);
  std::mt19937_64 rng(3);
  for (double &v : x)
    v = need_fp64(rng);
  double *dx = to_device(x.data(), n), *dy = nullptr;
  CHECK_CUDA(cudaMalloc(&dy, n * sizeof(double)));
  std::int32_t *drow = to_device(a.rowptr.data(), n + 1), *dcol = to_device(a.cols.data(), nnz);
  double *dval = to_device(a.vals.data(), nnz);
  std::vector<float> v32(a.vals.begin(), a.vals.end());
  float *dval32 = to_device(v32.data(), nnz);
  cusparseHandle_t handle;
  cusparseCreate(&handle);
  std::vector<Variant> variants;
  CusparseSpmv fp64(handle, a, drow, dcol, dval, CUDA_R_64F, dx, dy);
  CusparseSpmv mixed(handle, a, drow, dcol, dval32, CUDA_R_32F, dx, dy);
  variants.push_back({"cuSPARSE CSR fp64", aij_bytes, {}, [&] { fp64.run(); }});
  if (mixed.supported)
    variants.push_back({"cuSPARSE CSR fp32 values", aij_bytes - nnz * 4.0, {}, [&] { mixed.run(); }});
  else
    std::printf("cuSPARSE CSR with fp32 values and fp64 vectors: not supported here (%s)\n", mixed.why.c_str());

  const CsrView<std::int32_t> view = a.view();
  std::vector<std::unique_ptr<gpu::DeviceSell>> copies;
  std::vector<Setup> setups;
  for (StorageMode mode : modes) {
    StorageOptions opts;
    opts.mode               = mode;
    opts.layout             = Layout::csr; // the fastest host build; the SELL copy has its own layout
    const std::string label = storage_mode_name(mode);
    Setup setup             = {label, 0, 0, 0};
    const auto t0           = Clock::now();
    CompactCsr A            = build_compact_csr(view, opts);
    const auto t1           = Clock::now();
    const SellCopy S        = make_sell_copy(A, a.rowptr.data(), a.cols.data());
    const auto t2           = Clock::now();
    copies.push_back(std::make_unique<gpu::DeviceSell>(S));
    gpu::synchronize();
    const auto t3      = Clock::now();
    setup.build_ms     = milliseconds(t0, t1);
    setup.sell_copy_ms = milliseconds(t1, t2);
    setup.upload_ms    = milliseconds(t2, t3);
    setups.push_back(setup);
    gpu::DeviceSell *d = copies.back().get();
    std::printf("petscmp %-16s: SELL-32 copy %.2f GB (%.2f B/nnz with row data)\n", label.c_str(), S.bytes() / 1e9,
                static_cast<double>(S.bytes()) / nnz);
    const int segments = S.parts.empty() ? 0 : S.parts[0].segments;
    double value_bytes = 0;
    bool has_warp_rows = false;
    for (const SellPart &p : S.parts) {
      value_bytes += static_cast<double>(p.values.size());
      has_warp_rows = has_warp_rows || p.warp_rows;
    }
    // a variant reading `read` segments (0: all; split storage's lower levels), after its product was checked
    // bitwise against the CPU reference's at that level
    std::vector<double> ref(n), y(n);
    for (int read = 0; read < std::max(segments, 1); ++read) {
      A.read_segments = read;
      reference::spmv(A, a.pattern(), x.data(), nullptr, ref.data());
      A.read_segments    = 0;
      const double bytes = S.bytes() - (read ? value_bytes * (segments - read) / segments : 0.0) + 2 * n * 8.0;
      // long rows (warp-per-row parts) also 8 rows a warp (WarpRows, device.hpp)
      for (WarpRows how : {WarpRows::one, WarpRows::grouped}) {
        if (how == WarpRows::grouped && !has_warp_rows) continue;
        gpu::spmv(*d, read, dx, nullptr, dy, how);
        gpu::synchronize();
        CHECK_CUDA(cudaMemcpy(y.data(), dy, n * sizeof(double), cudaMemcpyDeviceToHost));
        std::string name = "petscmp " + label;
        if (read) name += " read " + std::to_string(read);
        if (how == WarpRows::grouped) name += ", 8 rows/warp";
        const bool same = std::memcmp(y.data(), ref.data(), n * sizeof(double)) == 0;
        std::printf("%-26s: %s the CPU reference\n", name.c_str(), same ? "bitwise equal to" : "DIFFERS FROM");
        if (!same) std::exit(1);
        variants.push_back({name, bytes, {}, [d, dx, dy, read, how] { gpu::spmv(*d, read, dx, nullptr, dy, how); }});
      }
    }
  }
  time_alternated(variants, reps);
  print_variants(variants, copy_gbs, "vs fp32v", mixed.supported ? median(variants[1].ms) : 0.0);
  print_setups(setups, median(variants[0].ms));
  cusparseDestroy(handle);
  for (void *p : {(void *)dx, (void *)dy, (void *)drow, (void *)dcol, (void *)dval, (void *)dval32})
    cudaFree(p);
}

// A block-diagonal matrix of bs x bs blocks with values that need fp64. Not
// mixed: every block diagonally dominant (apbjacobi's selection stores them
// all in fp16, as on a well-conditioned FEM operator). Mixed: runs of 64
// blocks take turns being dominant (fp16), plain random (condition numbers
// of tens to thousands: mostly fp32) and nearly singular (two rows 1e-9
// apart: fp64), so the apply runs one launch per format over interleaved
// groups, as on a harder operator.
Csr block_diagonal(int bs, std::int64_t nrows, bool mixed)
{
  Csr a;
  a.name  = std::string(mixed ? "mixed " : "") + "block diagonal " + std::to_string(bs) + "x" + std::to_string(bs);
  a.nrows = a.ncols = static_cast<std::int32_t>(nrows);
  std::mt19937_64 rng(5);
  a.cols.reserve(static_cast<std::size_t>(nrows) * bs);
  a.vals.reserve(static_cast<std::size_t>(nrows) * bs);
  std::vector<double> block(static_cast<std::size_t>(bs) * bs);
  for (std::int64_t base = 0; base < nrows; base += bs) {
    const int kind = mixed ? static_cast<int>(base / bs / 64 % 3) : 0;
    for (int r = 0; r < bs; ++r)
      for (int c = 0; c < bs; ++c) {
        double &v = block[static_cast<std::size_t>(r) * bs + c];
        v         = kind == 0 ? (r == c ? 2.0 * bs + need_fp64(rng) : need_fp64(rng) * 0.5) : need_fp64(rng);
        if (kind == 2 && r == 1) v = block[static_cast<std::size_t>(c)] * (1.0 + 1e-9 * need_fp64(rng));
      }
    for (int r = 0; r < bs; ++r) {
      for (int c = 0; c < bs; ++c) {
        a.cols.push_back(static_cast<std::int32_t>(base + c));
        a.vals.push_back(block[static_cast<std::size_t>(r) * bs + c]);
      }
      a.rowptr.push_back(static_cast<std::int32_t>(a.cols.size()));
    }
  }
  return a;
}

// apbjacobi's apply (adaptive formats, the default selection) against the
// same kernel over blocks all stored in fp64: both bitwise the reference.
void bench_block_jacobi(int bs, double gb, bool mixed, int reps, double copy_gbs)
{
  const std::int64_t nblocks = static_cast<std::int64_t>(gb * 1e9 / (8.0 * bs * bs));
  const std::int64_t nrows   = nblocks * bs;
  const Csr a                = block_diagonal(bs, nrows, mixed);
  const BlockPartition p     = uniform_partition(nrows, bs);
  const InvertedBlocks inv   = invert_diagonal_blocks(a.view(), p);
  FormatSelection adaptive, fp64;
  fp64.policy = FormatPolicy::forced;
  fp64.forced = Format::fp64;
  SelectionStats stats;
  const std::vector<Format> chosen = select_block_formats(inv, adaptive, &stats);
  std::vector<std::unique_ptr<BlockJacobiStorage>> storages;
  storages.push_back(std::make_unique<BlockJacobiStorage>(pack_block_jacobi(inv, select_block_formats(inv, fp64))));
  storages.push_back(std::make_unique<BlockJacobiStorage>(pack_block_jacobi(inv, chosen)));
  std::printf("\n## apbjacobi apply, %s blocks: %lld rows, %lld blocks, fp64 inverses %.2f GB; adaptive formats:",
              a.name.c_str(), static_cast<long long>(nrows), static_cast<long long>(nblocks),
              storages[0]->value_bytes() / 1e9);
  for (int f = 0; f < kFormatCount; ++f)
    if (stats.blocks_per_format[f])
      std::printf(" %s %.1f%%", format_name(static_cast<Format>(f)), 100.0 * stats.blocks_per_format[f] / nblocks);
  std::printf("\n");
  std::vector<double> x(static_cast<std::size_t>(nrows)), y(x.size()), ref(x.size());
  std::mt19937_64 rng(6);
  for (double &v : x)
    v = need_fp64(rng);
  gpu::DeviceVector dx(x.size()), dy(x.size());
  dx.upload(x.data());
  std::vector<std::unique_ptr<gpu::DeviceBlockJacobi>> devices;
  std::vector<Variant> variants;
  // the fp64 blocks and the adaptive ones, each with one and two rows a thread; the adaptive ones also read by
  // row pairs (16-bit blocks of even size; the default, ApplyRows in device.hpp)
  struct Apply {
    const char *name;
    std::size_t storage;
    ApplyRows how;
  };
  const Apply applies[] = {{"fp64 block-Jacobi", 0, ApplyRows::one},
                           {"fp64 block-Jacobi, 2 rows", 0, ApplyRows::two},
                           {"apbjacobi, a row a thread", 1, ApplyRows::one},
                           {"apbjacobi, 2 rows", 1, ApplyRows::two},
                           {"apbjacobi, row pairs (dflt)", 1, ApplyRows::pairs}};
  for (const BlockJacobiStorage *s : {storages[0].get(), storages[1].get()})
    devices.push_back(std::make_unique<gpu::DeviceBlockJacobi>(*s));
  for (const Apply &a : applies) {
    gpu::DeviceBlockJacobi *d = devices[a.storage].get();
    reference::block_jacobi_apply(*storages[a.storage], x.data(), ref.data(), false);
    gpu::block_jacobi_apply(*d, dx.data(), dy.data(), false, a.how);
    gpu::synchronize();
    dy.download(y.data());
    const bool same = std::memcmp(y.data(), ref.data(), x.size() * sizeof(double)) == 0;
    std::printf("%-26s: %.2f GB of inverses, %s the CPU reference\n", a.name, storages[a.storage]->value_bytes() / 1e9,
                same ? "bitwise equal to" : "DIFFERS FROM");
    if (!same) std::exit(1);
    // values, x and y, and the row's group number the kernel reads (the chunks' 0.25 B a row left out)
    const double bytes = storages[a.storage]->value_bytes() + nrows * (8.0 + 8.0 + 4.0);
    double *px = dx.data(), *py = dy.data();
    const ApplyRows how = a.how;
    variants.push_back({a.name, bytes, {}, [d, px, py, how] { gpu::block_jacobi_apply(*d, px, py, false, how); }});
  }
  time_alternated(variants, reps);
  print_variants(variants, copy_gbs, nullptr, 0.0);
}

} // namespace

int main(int argc, char **argv)
{
  int n27 = 160, fem = 74, reps = 20, long_rows_millions = 2;
  double bj_gb          = 1.0;
  std::string modes_arg = "lossless,fp32,fp16,bf16,split2,split4", bj_sizes = "3,8,32";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    if (opt == "-n27")
      n27 = std::atoi(argv[i + 1]);
    else if (opt == "-fem")
      fem = std::atoi(argv[i + 1]);
    else if (opt == "-reps")
      reps = std::atoi(argv[i + 1]);
    else if (opt == "-modes")
      modes_arg = argv[i + 1];
    else if (opt == "-long")
      long_rows_millions = std::atoi(argv[i + 1]);
    else if (opt == "-bj_gb")
      bj_gb = std::atof(argv[i + 1]);
    else if (opt == "-bj_sizes")
      bj_sizes = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown option %s\n", opt.c_str());
      return 2;
    }
  }
  std::vector<StorageMode> modes;
  for (std::size_t at = 0; at <= modes_arg.size();) {
    const std::size_t end = std::min(modes_arg.find(',', at), modes_arg.size());
    StorageMode m;
    if (!parse_storage_mode(modes_arg.substr(at, end - at).c_str(), &m)) {
      std::fprintf(stderr, "unknown mode %s\n", modes_arg.substr(at, end - at).c_str());
      return 2;
    }
    modes.push_back(m);
    at = end + 1;
  }
  std::string why;
  if (!gpu::device_available(&why)) {
    std::fprintf(stderr, "bench_gpu: no usable GPU: %s\n", why.c_str());
    return 1;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const double copy_gbs = copy_bandwidth(reps);
  std::printf("# petscmp bench_gpu: %s, %.1f GB, device-to-device copy %.0f GB/s (read + write), %d reps, medians\n",
              prop.name, prop.totalGlobalMem / 1e9, copy_gbs, reps);
  if (n27 > 0) bench_matrix(stencil27(n27), modes, reps, copy_gbs);
  if (fem > 0) bench_matrix(fem_blocks(fem), modes, reps, copy_gbs);
  if (long_rows_millions > 0) bench_matrix(long_rows(long_rows_millions * 1000000), modes, reps, copy_gbs);
  if (bj_gb > 0)
    for (std::size_t at = 0; at < bj_sizes.size();) {
      const std::size_t end = std::min(bj_sizes.find(',', at), bj_sizes.size());
      const int bs          = std::atoi(bj_sizes.substr(at, end - at).c_str());
      if (bs < 1 || bs > 32) {
        std::fprintf(stderr, "block size %d: apbjacobi's blocks are 1 to 32 rows\n", bs);
        return 2;
      }
      for (bool mixed : {false, true})
        bench_block_jacobi(bs, bj_gb, mixed, reps, copy_gbs);
      at = end + 1;
    }
  return 0;
}
