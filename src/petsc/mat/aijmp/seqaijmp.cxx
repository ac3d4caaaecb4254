// MATSEQAIJMP: a MATSEQAIJ whose MatMult reads a compact copy of the values.
//
// The fp64 CSR of SeqAIJ stays the master copy: assembly, MatSetValues,
// factorizations, MatGetRow... are SeqAIJ's own. The compact copy holds only
// the values (the indices are SeqAIJ's) and is built lazily at the first
// product after any change, keyed on the object state, the nonzero state, the
// column count and the array addresses. MatRetrieveValues copies values without
// bumping the state, so it is wrapped to drop the copy.
#include <algorithm>
#include <cstring>
#include <new>

#include "mat/aijmp/aijmpimpl.h"
#include "spmv.hpp"

PetscLogEvent MATAIJMP_Build = 0, MATAIJMP_Mult = 0, MATAIJMP_MultAdd = 0, MATAIJMP_MultTranspose = 0;

namespace petscmp {

PetscErrorCode MatConvert_SeqAIJMP_SeqAIJ_Fn(Mat A, MatType, MatReuse reuse, Mat *newmat);

namespace {

SeqAIJMP *data_of(Mat A)
{
  return static_cast<SeqAIJMP *>(A->spptr);
}

// Builds the copy of a standalone seqaijmp matrix (an MPI parent builds its
// blocks jointly instead, see mpiaijmp.cxx).
PetscErrorCode build_compact(Mat A)
{
  SeqAIJMP *d = data_of(A);
  CsrView<PetscInt> view;
  std::unique_ptr<CompactCsr> compact;

  PetscFunctionBegin;
  PetscCall(AIJMPReadOptionsLazily(A, d->settings));
  PetscCall(SeqAIJBuildView(A, view));
  StorageOptions opts = d->settings.opts;
  opts.threads        = AIJMPThreadCount(d->settings);
  opts.format_group   = AIJMPFormatGroup(A, opts);
  PetscCall(SeqAIJMPSumOrder(A, &opts.order));
  std::unique_ptr<CompactCsr> old;
  bool same_pattern = false, value_only = false;
  PetscCall(SeqAIJMPTakeCompact(A, old, &same_pattern)); // its layout or at least its memory is reused
  PetscCall(PetscLogEventBegin(MATAIJMP_Build, A, 0, 0, 0));
  PetscCall(guarded([&] {
    value_only = same_pattern && refill_compact_values(view, opts, *old);
    compact    = value_only ? std::move(old) : std::make_unique<CompactCsr>(build_compact_csr(view, opts, old.get()));
  }));
  PetscCall(PetscLogEventEnd(MATAIJMP_Build, A, 0, 0, 0));
  PetscCall(SeqAIJMPInstall(A, std::move(compact), value_only));
  PetscFunctionReturn(0);
}

PetscErrorCode log_mult_flops(Mat A, const CompactCsr &c)
{
  PetscFunctionBegin;
  PetscCall(PetscLogFlops(2.0 * static_cast<PetscLogDouble>(c.stats.nnz)));
  (void)A;
  PetscFunctionReturn(0);
}

enum class Product { mult, transpose };

// Whether the run-time choice applies: lossless values (both kernels give the
// same result bit for bit) and MAT_AIJMP_KERNEL_AUTO.
// Split storage keeps the compact kernel: timing could choose AIJ's at the full
// read level and free the copy that the other levels read (a rebuild at each
// change of level).
bool kernel_is_measured(const AIJMPSettings &s)
{
  return s.kernel == MAT_AIJMP_KERNEL_AUTO && s.opts.mode == StorageMode::lossless;
}

// The selection for A's current nonzero pattern (restarted when it changed).
KernelSelection &selection_of(Mat A)
{
  KernelSelection &sel = data_of(A)->selection;
  if (sel.nonzerostate != A->nonzerostate) {
    sel              = KernelSelection{};
    sel.nonzerostate = A->nonzerostate;
  }
  return sel;
}

constexpr double kMinByteSaving = 0.9;

// Where the compact copy could save little: it would read at least 90% of the
// bytes of AIJ's inode kernel (one column index per node, 8 + 4/node size
// bytes per nonzero). Typical: FEM matrices whose values need fp64. Such a
// copy still runs 1.3-3.4x faster than AIJ's inode kernel on the machines
// measured (fewer instructions per nonzero), but its first build costs 2-45
// products (mostly the first touch of fresh memory, which some VMs make
// slow), which a short run would not pay back. AIJ's kernel then computes the
// first `trial_after` products, and only a run still going after them times
// both kernels as usual: a trial costs at most about half of the product time
// spent before it, and a short run is AIJ's exactly. With trial_after < 0 AIJ's
// kernel is kept without a trial. The row formats cost one pass at most (a row
// needing fp64 is found at its first such value).
PetscErrorCode choose_by_bytes(Mat A, KernelSelection &sel)
{
  PetscInt nodes = 0;
  PetscBool inodes;
  double aij = 0.0, node_columns = 0.0;
  CsrView<PetscInt> view;
  std::vector<Format> formats;
  const AIJMPSettings &s = data_of(A)->settings;
  StorageOptions opts    = s.opts;
  opts.format_group      = AIJMPFormatGroup(A, opts);

  PetscFunctionBegin;
  sel.bytes_checked = true;
  PetscCall(AIJInodeBytes(A, &aij, &node_columns, &nodes, &inodes));
  if (!inodes) PetscFunctionReturn(0); // no inode kernel: time both
  PetscCall(SeqAIJCsrView(A, view));
  PetscCall(guarded([&] { formats = choose_row_formats(std::vector<CsrView<PetscInt>>{view}, opts); }));
  double compact = 0.0;
  for (PetscInt i = 0; i < view.nrows; ++i)
    compact += static_cast<double>(view.rowptr[i + 1] - view.rowptr[i]) * static_cast<double>(format_bytes(formats[i]));
  // indices: the node layout (estimated from PETSc's inodes) keeps one 16-bit list per node, the others a 32-bit
  // column per value
  const bool node_layout = (opts.layout == Layout::node || opts.layout == Layout::automatic) &&
                           kMinNodeRows * static_cast<double>(nodes) <= static_cast<double>(view.nrows);
  compact += node_layout ? 2.0 * node_columns + static_cast<double>(sizeof(NodeInfo)) * nodes
                         : 4.0 * static_cast<double>(view.rowptr[view.nrows]);
  if (compact < kMinByteSaving * aij) PetscFunctionReturn(0); // time both at once
  if (s.trial_after < 0) {
    sel.chosen   = MAT_AIJMP_KERNEL_AIJ;
    sel.by_bytes = true;
  } else
    sel.deferred = s.trial_after > 0;
  PetscFunctionReturn(0);
}

// The kernel of A's next product: AIJ or COMPACT.
PetscErrorCode next_kernel(Mat A, Product product, MatAIJMPKernel *kernel)
{
  AIJMPSettings &s = data_of(A)->settings;

  PetscFunctionBegin;
  PetscCall(AIJMPReadOptionsLazily(A, s));
  PetscCall(AIJMPCheckReadLevel(A, s));
  if (s.kernel != MAT_AIJMP_KERNEL_AUTO)
    *kernel = s.kernel;
  else if (!kernel_is_measured(s))
    *kernel = MAT_AIJMP_KERNEL_COMPACT;
  else {
    KernelSelection &sel = selection_of(A);
    if (!sel.bytes_checked) PetscCall(choose_by_bytes(A, sel));
    if (sel.chosen != MAT_AIJMP_KERNEL_AUTO) *kernel = sel.chosen;
    // transposes are not timed: AIJ's until mult has decided (no copy needed)
    else if (product == Product::transpose || sel.deferred)
      *kernel = MAT_AIJMP_KERNEL_AIJ;
    else
      *kernel = sel.timing.next() == 0 ? MAT_AIJMP_KERNEL_AIJ : MAT_AIJMP_KERNEL_COMPACT;
  }
  PetscFunctionReturn(0);
}

// The values of the compact copy are freed while AIJ's kernel computes the
// products; its statistics stay for MatAIJMPGetInfo.
void drop_compact_values(SeqAIJMP *d)
{
  if (!d->compact) return;
  d->compact->blocks.clear();
  d->compact->blocks.shrink_to_fit();
  d->compact->split.clear();
  d->compact->split.shrink_to_fit();
  d->values_dropped = true;
}

// Records the time of one timed product; decides once both kernels have
// KernelSelection::kSamples products.
void record_sample(Mat A, MatAIJMPKernel kernel, PetscLogDouble seconds)
{
  KernelSelection &sel = selection_of(A);
  if (sel.chosen != MAT_AIJMP_KERNEL_AUTO) return;
  sel.timing.record(kernel == MAT_AIJMP_KERNEL_AIJ ? 0 : 1, seconds);
  if (!sel.timing.decided()) return;
  sel.chosen = sel.timing.chosen == 0 ? MAT_AIJMP_KERNEL_AIJ : MAT_AIJMP_KERNEL_COMPACT;
  if (sel.chosen == MAT_AIJMP_KERNEL_AIJ) drop_compact_values(data_of(A));
}

// y = op(A) x (+ z) with SeqAIJ's own kernels, on the fp64 master values.
PetscErrorCode apply_aij(Mat A, Product product, Vec xx, Vec zz, Vec yy)
{
  SeqAIJMP *d = data_of(A);

  PetscFunctionBegin;
  if (product == Product::mult)
    PetscCall(zz ? d->multadd(A, xx, zz, yy) : d->mult(A, xx, yy));
  else
    PetscCall(zz ? d->multtransposeadd(A, xx, zz, yy) : d->multtranspose(A, xx, yy));
  PetscFunctionReturn(0);
}

// How the next compact product reads the x of gathered slices (AIJMPNextGatheredX):
// samples are plain products (transposes do not read x by slices, and per-row
// read levels may change between products), taken once the choice between
// AIJ's kernel and the compact one, where it is timed, is made (its compact
// samples read by the processor's rule). (c: the copy of A's latest full build.)
openmp::GatheredX next_gathered_x(Mat A, const CompactCsr &c, Product product, bool add, int *sample)
{
  const AIJMPSettings &s = data_of(A)->settings;
  KernelSelection &sel   = selection_of(A);
  const bool may_sample =
      product == Product::mult && !s.row_levels && (!kernel_is_measured(s) || sel.chosen == MAT_AIJMP_KERNEL_COMPACT);
  return AIJMPNextGatheredX(sel.gathered_x, s.gathered_x, c, data_of(A)->full_builds, may_sample, add, sample);
}

// y = op(A) x (+ z) from the compact copy.
PetscErrorCode apply_compact(Mat A, Product product, Vec xx, Vec zz, Vec yy, PetscLogDouble *seconds)
{
  const CompactCsr *c;
  const PetscScalar *x, *z = nullptr;
  PetscScalar *y;
  CsrView<PetscInt> view;
  PetscLogDouble t0, t1;
  const PetscLogEvent event = product == Product::transpose ? MATAIJMP_MultTranspose
                              : zz                          ? MATAIJMP_MultAdd
                                                            : MATAIJMP_Mult;

  PetscFunctionBegin;
  PetscCall(SeqAIJMPGetCompact(A, &c));
  data_of(A)->compact->read_segments = static_cast<int>(data_of(A)->settings.read_segments); // (no rebuild)
  PetscCall(SeqAIJCsrView(A, view));
  PetscCall(PetscTime(&t0));
  PetscCall(PetscLogEventBegin(event, A, xx, yy, 0));
  PetscCall(VecGetArrayRead(xx, &x));
  if (zz && zz == yy) {
    PetscCall(VecGetArray(yy, &y));
    z = y;
  } else {
    if (zz) PetscCall(VecGetArrayRead(zz, &z));
    PetscCall(VecGetArrayWrite(yy, &y));
  }
  const CsrPattern<PetscInt> pattern{view.rowptr, view.cols};
  const int nt = AIJMPThreadCount(data_of(A)->settings);
  int sample;
  const openmp::GatheredX read = next_gathered_x(A, *c, product, zz != nullptr, &sample);
  // guarded: a threaded transpose allocates one partial sum per thread, which may throw std::bad_alloc
  const RowReadLevels *levels = data_of(A)->settings.row_levels.get();
  PetscCall(guarded([&] {
    if (product == Product::mult && levels) {
      openmp::spmv_row_levels(*c, pattern, levels->levels.data(), x, z, y, nt, read);
    } else if (product == Product::mult)
      openmp::spmv(*c, pattern, x, z, y, nt, read);
    else
      openmp::spmv_transpose(*c, pattern, x, z, y, nt);
  }));
  if (zz && zz == yy)
    PetscCall(VecRestoreArray(yy, &y));
  else {
    if (zz) PetscCall(VecRestoreArrayRead(zz, &z));
    PetscCall(VecRestoreArrayWrite(yy, &y));
  }
  PetscCall(VecRestoreArrayRead(xx, &x));
  PetscCall(log_mult_flops(A, *c));
  PetscCall(PetscLogEventEnd(event, A, xx, yy, 0));
  PetscCall(PetscTime(&t1));
  *seconds = t1 - t0;
  if (sample >= 0) selection_of(A).gathered_x.timing.record(sample, *seconds);
  PetscFunctionReturn(0);
}

// Whether this product runs on the device path (common/device_backend.h):
// every vector in device memory, the matrix not bound to the CPU, and the
// compact copy's kernels asked for (not AIJ's; no per-row read levels, which
// the device kernels do not read; not an entry split).
PetscErrorCode takes_device_path(Mat A, Vec xx, Vec zz, Vec yy, bool *device)
{
  const AIJMPSettings &s = data_of(A)->settings;
  bool bound;

  PetscFunctionBegin;
  *device = false;
  PetscCall(DeviceBoundToCPU(A, &bound));
  if (bound || s.kernel == MAT_AIJMP_KERNEL_AIJ || s.row_levels || s.opts.mode == StorageMode::entrysplit)
    PetscFunctionReturn(0);
  PetscCall(DeviceVectors(xx, zz, yy, device));
  PetscFunctionReturn(0);
}

// y = op(A) x (+ z) by the device kernels, on the vectors' device arrays.
PetscErrorCode apply_device(Mat A, Product product, Vec xx, Vec zz, Vec yy)
{
  SeqAIJMP *d = data_of(A);
  const CompactCsr *c;
  CsrView<PetscInt> view;
  const PetscLogEvent event = product == Product::transpose ? MATAIJMP_MultTranspose
                              : zz                          ? MATAIJMP_MultAdd
                                                            : MATAIJMP_Mult;

  PetscFunctionBegin;
  PetscCall(SeqAIJMPGetCompact(A, &c));
  PetscCall(SeqAIJCsrView(A, view));
  if (!d->device) d->device = std::make_unique<DeviceMirror>();
  PetscCall(PetscLogEventBegin(event, A, xx, yy, 0));
  const int read = static_cast<int>(d->settings.read_segments);
  PetscCall(WithDeviceArrays(xx, zz, yy, [&](const double *x, const double *z, double *y) {
    DeviceMirrorProduct(*d->device, *c, d->full_builds + d->value_builds, view, product == Product::transpose, read, x,
                        z, y, AIJMPThreadCount(d->settings));
  }));
  PetscCall(log_mult_flops(A, *c));
  PetscCall(PetscLogEventEnd(event, A, xx, yy, 0));
  PetscFunctionReturn(0);
}

// y = op(A) x (+ z): the one path all four products take.
PetscErrorCode apply(Mat A, Product product, Vec xx, Vec zz, Vec yy)
{
  MatAIJMPKernel kernel = MAT_AIJMP_KERNEL_COMPACT;
  PetscLogDouble t0, t1, seconds = 0;
  bool device;

  PetscFunctionBegin;
  PetscCheck(A->assembled, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
             "petscmp: the matrix must be assembled before a product");
  PetscCall(takes_device_path(A, xx, zz, yy, &device));
  if (device) {
    PetscCall(apply_device(A, product, xx, zz, yy));
    PetscFunctionReturn(0);
  }
  PetscCall(next_kernel(A, product, &kernel));
  if (kernel == MAT_AIJMP_KERNEL_AIJ) {
    PetscCall(PetscTime(&t0));
    PetscCall(apply_aij(A, product, xx, zz, yy));
    PetscCall(PetscTime(&t1));
    seconds = t1 - t0;
  } else
    PetscCall(apply_compact(A, product, xx, zz, yy, &seconds));
  if (product == Product::mult && kernel_is_measured(data_of(A)->settings)) {
    KernelSelection &sel = selection_of(A);
    if (sel.deferred)
      sel.deferred = ++sel.aij_products < data_of(A)->settings.trial_after;
    else
      record_sample(A, kernel, seconds);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode MatMult_SeqAIJMP(Mat A, Vec x, Vec y)
{
  return apply(A, Product::mult, x, nullptr, y);
}
PetscErrorCode MatMultAdd_SeqAIJMP(Mat A, Vec x, Vec y, Vec z)
{
  return apply(A, Product::mult, x, y, z);
}
PetscErrorCode MatMultTranspose_SeqAIJMP(Mat A, Vec x, Vec y)
{
  return apply(A, Product::transpose, x, nullptr, y);
}
PetscErrorCode MatMultTransposeAdd_SeqAIJMP(Mat A, Vec x, Vec y, Vec z)
{
  return apply(A, Product::transpose, x, y, z);
}

PetscErrorCode MatRetrieveValues_SeqAIJMP(Mat A)
{
  PetscFunctionBegin;
  PetscCall(data_of(A)->retrievevalues(A));
  PetscCall(SeqAIJMPInvalidate(A)); // values changed without a state change
  PetscFunctionReturn(0);
}

PetscErrorCode MatAIJMPGetSettings_SeqAIJMP(Mat A, AIJMPSettings **s)
{
  PetscFunctionBegin;
  *s = &data_of(A)->settings;
  PetscFunctionReturn(0);
}

PetscErrorCode MatAIJMPGetInfo_SeqAIJMP(Mat A, MatAIJMPInfo *info)
{
  SeqAIJMP *d = data_of(A);
  BuildKey key;
  PetscBool uses;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(info, sizeof(*info)));
  PetscCall(SeqAIJMPKeyOf(A, key));
  const bool stats_current = d->compact && d->values_dropped && key == d->key;
  if (!stats_current) { // built for the statistics, dropped again if AIJ's kernel computes the products
    const CompactCsr *c;
    PetscCall(SeqAIJMPGetCompact(A, &c));
    PetscCall(SeqAIJMPUsesCompact(A, &uses));
    if (!uses) drop_compact_values(d);
  }
  if (!d->compact->stats.errors_measured) { // measured on demand: the builds do not track them
    CsrView<PetscInt> view;
    PetscCall(SeqAIJCsrView(A, view));
    PetscCall(guarded([&] { measure_relative_errors(view, *d->compact); }));
  }
  PetscCall(AIJMPAccumulateInfo(*d->compact, *info, AIJMPReadLevel(d->settings)));
  { // AIJ's bytes as its inode kernel reads them, where SeqAIJ uses one
    PetscInt nodes;
    PetscBool inodes;
    double bytes, columns;
    PetscCall(AIJInodeBytes(A, &bytes, &columns, &nodes, &inodes));
    if (inodes) info->aij_bytes = bytes;
  }
  info->lossy        = AIJMPReadsExact(d->settings) ? PETSC_FALSE : PETSC_TRUE;
  info->segments     = storage_mode_segments(d->settings.opts.mode);
  info->read_level   = AIJMPReadLevel(d->settings);
  info->builds       = d->full_builds;
  info->value_builds = d->value_builds;
  if (d->device) {
    info->device_copies = d->device->builds;
    info->device_bytes  = d->device->bytes;
  }
  PetscCall(SeqAIJMPKernelInfo(A, *info));
  PetscFunctionReturn(0);
}

PetscErrorCode MatView_SeqAIJMP(Mat A, PetscViewer viewer)
{
  SeqAIJMP *d = data_of(A);
  PetscBool ascii;
  PetscViewerFormat format;

  PetscFunctionBegin;
  if (d->view) PetscCall(d->view(A, viewer));
  if (d->is_mpi_block) PetscFunctionReturn(0); // the parent reports for the whole matrix
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  PetscCall(PetscViewerGetFormat(viewer, &format));
  if (format != PETSC_VIEWER_ASCII_INFO && format != PETSC_VIEWER_ASCII_INFO_DETAIL) PetscFunctionReturn(0);
  if (!A->assembled) PetscFunctionReturn(0);
  MatAIJMPInfo info;
  PetscCall(MatAIJMPGetInfo_SeqAIJMP(A, &info));
  PetscCall(AIJMPViewInfo(viewer, info, d->settings, AIJMPFormatGroup(A, d->settings.opts)));
  PetscFunctionReturn(0);
}

PetscErrorCode MatSetFromOptions_SeqAIJMP(Mat A, PetscOptionItems *items)
{
  PetscFunctionBegin;
  if (data_of(A)->setfromoptions) PetscCall(data_of(A)->setfromoptions(A, items));
  PetscCall(AIJMPSetFromOptions(A, data_of(A)->settings));
  PetscCall(SeqAIJMPInvalidate(A));
  PetscFunctionReturn(0);
}

PetscErrorCode MatDuplicate_SeqAIJMP(Mat A, MatDuplicateOption op, Mat *B)
{
  PetscFunctionBegin;
  PetscCall(data_of(A)->duplicate(A, op, B)); // creates a seqaijmp through MatSetType
  data_of(*B)->settings = data_of(A)->settings;
  PetscFunctionReturn(0);
}

PetscErrorCode MatDestroy_SeqAIJMP(Mat A);

// SeqAIJ's destroy, the same for every SeqAIJ matrix (recorded at the first conversion).
PetscErrorCode (*seqaij_destroy)(Mat) = nullptr;

ReplacedOps our_ops()
{
  return ReplacedOps{MatMult_SeqAIJMP,
                     MatMultAdd_SeqAIJMP,
                     MatMultTranspose_SeqAIJMP,
                     MatMultTransposeAdd_SeqAIJMP,
                     MatDestroy_SeqAIJMP,
                     MatDuplicate_SeqAIJMP,
                     MatView_SeqAIJMP,
                     MatSetFromOptions_SeqAIJMP,
                     MatProductSetFromOptions_AIJMP,
                     MatCreateGraph_AIJMP};
}

PetscErrorCode compose_functions(Mat A, bool on)
{
  PetscObject o = (PetscObject)A;

  PetscFunctionBegin;
  PetscCall(
      PetscObjectComposeFunction(o, "MatConvert_seqaijmp_seqaij_C", on ? MatConvert_SeqAIJMP_SeqAIJ_Fn : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_seqaijmp_aij_C", on ? MatConvert_SeqAIJMP_SeqAIJ_Fn : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_seqaij_seqaijmp_C", on ? MatConvert_SeqAIJ_SeqAIJMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_seqaij_aijmp_C", on ? MatConvert_SeqAIJ_SeqAIJMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatAIJMPGetSettings_C", on ? MatAIJMPGetSettings_SeqAIJMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatAIJMPGetInfo_C", on ? MatAIJMPGetInfo_SeqAIJMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatRetrieveValues_C",
                                       on ? MatRetrieveValues_SeqAIJMP : data_of(A)->retrievevalues));
  PetscCall(AIJMPComposeTypeKeyed(A, true, on));
  PetscFunctionReturn(0);
}

PetscErrorCode restore_seqaij(Mat A)
{
  SeqAIJMP *d = data_of(A);

  PetscFunctionBegin;
  RestoreOps(A, *d, our_ops());
  PetscCall(compose_functions(A, false));
  delete d;
  A->spptr = nullptr;
  PetscFunctionReturn(0);
}

PetscErrorCode MatDestroy_SeqAIJMP(Mat A)
{
  PetscFunctionBegin;
  // A submatrix from MatCreateSubMatrices calls the destroy it found at its
  // creation (ours) even after an in-place conversion back to SEQAIJ.
  if (!A->spptr) {
    PetscCall((*seqaij_destroy)(A));
    PetscFunctionReturn(0);
  }
  PetscErrorCode (*destroy)(Mat) = data_of(A)->destroy;

  PetscCall(restore_seqaij(A));
  PetscCall((*destroy)(A));
  PetscFunctionReturn(0);
}

} // namespace

// The bytes of A's product by PETSc's inode kernel (values, one column list
// and one row pointer per inode), and the nonzeros of the columns lists; false
// when SeqAIJ does not use inodes.
PetscErrorCode AIJInodeBytes(Mat A, double *bytes, double *node_columns, PetscInt *nodes, PetscBool *uses_inodes)
{
  PetscInt *sizes = nullptr, limit;
  CsrView<PetscInt> view;

  PetscFunctionBegin;
  *uses_inodes = PETSC_FALSE;
  PetscCall(MatInodeGetInodeSizes(A, nodes, &sizes, &limit));
  if (!sizes || *nodes <= 0 || A->rmap->n == 0) PetscFunctionReturn(0);
  PetscCall(SeqAIJCsrView(A, view));
  double columns = 0.0;
  for (PetscInt k = 0, row = 0; k < *nodes && row < view.nrows; row += sizes[k++])
    columns += static_cast<double>(view.rowptr[row + 1] - view.rowptr[row]);
  *node_columns = columns;
  *bytes        = 8.0 * static_cast<double>(view.rowptr[view.nrows]) + sizeof(PetscInt) * (columns + *nodes + 1.0);
  *uses_inodes  = PETSC_TRUE;
  PetscFunctionReturn(0);
}

PetscErrorCode MatConvert_SeqAIJMP_SeqAIJ_Fn(Mat A, MatType, MatReuse reuse, Mat *newmat)
{
  Mat B = *newmat;

  PetscFunctionBegin;
  if (reuse == MAT_INITIAL_MATRIX)
    PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &B));
  else if (reuse == MAT_REUSE_MATRIX)
    PetscCall(MatCopy(A, B, SAME_NONZERO_PATTERN));
  if (B->spptr) PetscCall(restore_seqaij(B));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATSEQAIJ));
  *newmat = B;
  PetscFunctionReturn(0);
}

int AIJMPThreadCount(const AIJMPSettings &s)
{
  return s.nthreads > 0 ? static_cast<int>(s.nthreads) : openmp::default_thread_count();
}

PetscErrorCode SeqAIJMPSumOrder(Mat A, SumOrder *order)
{
  PetscInt nodes = 0, *sizes = nullptr, limit;

  PetscFunctionBegin;
  // SeqAIJ multiplies with its inode kernels (pairwise sums) whenever it keeps inode sizes.
  PetscCall(MatInodeGetInodeSizes(A, &nodes, &sizes, &limit));
  *order = (sizes && nodes > 0) ? SumOrder::paired : SumOrder::sequential;
  PetscFunctionReturn(0);
}

PetscErrorCode SeqAIJMPKeyOf(Mat A, BuildKey &key)
{
  CsrView<PetscInt> view;

  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)A, &key.state));
  PetscCall(SeqAIJCsrView(A, view));
  key.nonzerostate = A->nonzerostate;
  key.ncols        = A->cmap->n;
  key.cols         = view.cols;
  key.values       = view.values;
  PetscFunctionReturn(0);
}

PetscErrorCode SeqAIJMPIsCurrent(Mat A, PetscBool *current)
{
  BuildKey key;

  PetscFunctionBegin;
  PetscCall(SeqAIJMPKeyOf(A, key));
  *current = (data_of(A)->compact && !data_of(A)->values_dropped && key == data_of(A)->key) ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode SeqAIJMPTakeCompact(Mat A, std::unique_ptr<CompactCsr> &old, bool *same_pattern)
{
  SeqAIJMP *d = data_of(A);
  BuildKey now;

  PetscFunctionBegin;
  PetscCall(SeqAIJMPKeyOf(A, now));
  // dropped values (AIJ's kernel was chosen) leave no layout to refill
  if (same_pattern)
    *same_pattern = d->compact && !d->values_dropped && d->key.nonzerostate == now.nonzerostate &&
                    d->key.ncols == now.ncols && d->key.cols == now.cols;
  old = std::move(d->compact);
  PetscCall(SeqAIJMPInvalidate(A));
  PetscFunctionReturn(0);
}

PetscErrorCode SeqAIJMPInvalidate(Mat A)
{
  PetscFunctionBegin;
  if (A->spptr) {
    data_of(A)->compact.reset();
    data_of(A)->values_dropped = false;
    data_of(A)->key            = BuildKey{};
  }
  PetscFunctionReturn(0);
}

PetscErrorCode SeqAIJMPSetSettings(Mat A, const AIJMPSettings &s)
{
  PetscFunctionBegin;
  data_of(A)->settings     = s;
  data_of(A)->is_mpi_block = true;
  PetscFunctionReturn(0);
}

PetscErrorCode SeqAIJMPInstall(Mat A, std::unique_ptr<CompactCsr> compact, bool value_only)
{
  PetscFunctionBegin;
  (value_only ? data_of(A)->value_builds : data_of(A)->full_builds) += 1;
  data_of(A)->compact        = std::move(compact);
  data_of(A)->values_dropped = false;
  PetscCall(SeqAIJMPKeyOf(A, data_of(A)->key));
  PetscFunctionReturn(0);
}

PetscErrorCode SeqAIJMPUsesCompact(Mat A, PetscBool *uses)
{
  AIJMPSettings &s = data_of(A)->settings;

  PetscFunctionBegin;
  PetscCall(AIJMPReadOptionsLazily(A, s));
  if (s.kernel == MAT_AIJMP_KERNEL_AIJ)
    *uses = PETSC_FALSE;
  else if (!kernel_is_measured(s))
    *uses = PETSC_TRUE;
  else {
    KernelSelection &sel = selection_of(A);
    if (!sel.bytes_checked) PetscCall(choose_by_bytes(A, sel));
    *uses = sel.chosen == MAT_AIJMP_KERNEL_AIJ || sel.deferred ? PETSC_FALSE : PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

PetscErrorCode SeqAIJMPKernelInfo(Mat A, MatAIJMPInfo &info)
{
  const AIJMPSettings &s = data_of(A)->settings;

  PetscFunctionBegin;
  if (s.kernel != MAT_AIJMP_KERNEL_AUTO)
    info.kernel_parts[s.kernel] += 1;
  else if (!kernel_is_measured(s))
    info.kernel_parts[MAT_AIJMP_KERNEL_COMPACT] += 1;
  else {
    const KernelSelection &sel = selection_of(A);
    info.kernel_parts[sel.chosen] += 1; // AUTO (0): not decided yet
    info.kernel_by_bytes += sel.by_bytes ? 1 : 0;
    if (sel.deferred) {
      info.kernel_deferred += 1;
      info.kernel_trial_in = std::max<PetscInt64>(info.kernel_trial_in, s.trial_after - sel.aij_products);
    }
    for (int k = 0; k < 2; ++k)
      info.kernel_ms[k] = static_cast<PetscReal>(1e3 * sel.timing.median[k]);
  }
  AIJMPGatheredXInfo(selection_of(A).gathered_x, s.gathered_x, data_of(A)->full_builds, info);
  PetscFunctionReturn(0);
}

PetscErrorCode SeqAIJMPGetCompact(Mat A, const CompactCsr **compact)
{
  PetscBool current;

  PetscFunctionBegin;
  PetscCheck(A->assembled, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
             "petscmp: the matrix must be assembled before a product");
  PetscCall(SeqAIJMPIsCurrent(A, &current));
  if (!current) PetscCall(build_compact(A));
  *compact = data_of(A)->compact.get();
  PetscFunctionReturn(0);
}

} // namespace petscmp

using namespace petscmp;

PetscErrorCode MatConvert_SeqAIJ_SeqAIJMP(Mat A, MatType, MatReuse reuse, Mat *newmat)
{
  Mat B = *newmat;

  PetscFunctionBegin;
  if (reuse == MAT_INITIAL_MATRIX)
    PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &B));
  else if (reuse == MAT_REUSE_MATRIX)
    PetscCall(MatCopy(A, B, SAME_NONZERO_PATTERN));
  if (B->spptr) { // already a seqaijmp (MatDuplicate of one, or a repeated convert)
    *newmat = B;
    PetscFunctionReturn(0);
  }
  auto *d = new SeqAIJMP();
  PetscCall(PetscObjectQueryFunction((PetscObject)B, "MatRetrieveValues_C", &d->retrievevalues));
  B->spptr = d;

  InstallOps(B, *d, our_ops());
  if (!seqaij_destroy) seqaij_destroy = d->destroy;
  PetscCall(compose_functions(B, true));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATSEQAIJMP));
  *newmat = B;
  PetscFunctionReturn(0);
}

/*MC
   MATSEQAIJMP - MATSEQAIJMP = "seqaijmp" - a `MATSEQAIJ` matrix whose products read the values in a compact
   precision (fp32, fp16, bf16, truncated doubles, or per row the narrowest exact format) and compute in fp64.

   Options Database Keys:
+  -mat_type aijmp - the type, resolved to seqaijmp or mpiaijmp by communicator size
.  -mat_aijmp_storage <lossless,fp32,fp16,bf16,fp11_20,fp11_4,tolerance,rowsplit,entrysplit> - see `MatAIJMPStorage`
.  -mat_aijmp_tolerance <eps> - relative error bound per entry for the tolerance mode
.  -mat_aijmp_range_factor <f> - rowsplit range r = f * mean|a|
.  -mat_aijmp_row_fraction <p> - rowsplit: a row is fp32 when at least this fraction of its values lie in (-r, r)
.  -mat_aijmp_range <r> - entrysplit: |a| < r is stored in fp32
.  -mat_aijmp_layout <auto,csr,sliced,node> - row layout of the compact copy (sliced: SELL-8, 8 rows per SIMD
                                             instruction; node: rows sharing columns, one 16-bit column list per node)
.  -mat_aijmp_kernel <auto,aij,compact> - product kernel; auto keeps the faster of AIJ's and the compact one (lossless)
-  -mat_aijmp_threads <n> - OpenMP threads per process for the products and for writing the compact values (default 1,
or OMP_NUM_THREADS)

   Level: beginner

.seealso: `MATAIJMP`, `MATMPIAIJMP`, `MatAIJMPSetStorage()`, `MatAIJMPGetInfo()`
M*/
PetscErrorCode MatCreate_SeqAIJMP(Mat A)
{
  PetscFunctionBegin;
  PetscCall(MatSetType(A, MATSEQAIJ));
  PetscCall(MatConvert_SeqAIJ_SeqAIJMP(A, MATSEQAIJMP, MAT_INPLACE_MATRIX, &A));
  PetscFunctionReturn(0);
}
