// seqellmp: a sequential matrix whose compact values are the only copy.
//
// Life of the values: MatSetValues writes into a temporary SeqAIJ matrix (the
// "assembly matrix", preallocated as the user asks); MatAssemblyEnd builds the
// compact storage from it with the storage builder (self-contained layouts:
// nodes or slices with their own indices) and destroys it. Values set after an
// assembly reopen it: the assembly matrix is refilled from the stored values
// (exact: decoding never rounds), so the pattern and untouched values carry
// over, and a reassembly with the same pattern keeps the layout. Operations that
// change values (scale, shift, zero rows, AXPY, ...) go the same way: AIJ does
// the arithmetic on the stored values, the result is stored anew.
#include <algorithm>
#include <utility>
#include <cstring>

#include <petscdmda.h>
#include <petsc/private/dmimpl.h>

#include "mat/ellmp/ellmpimpl.h"
#include "spmv.hpp"

PetscLogEvent MATELLMP_Build = 0, MATELLMP_Mult = 0;

namespace petscmp {
namespace {

SeqELLMP *data_of(Mat A)
{
  return static_cast<SeqELLMP *>(A->data);
}

// PETSc's PetscObjectQueryFunction implementation (QueryFunction_SeqELLMP, below, filters it).
PetscErrorCode (*petsc_queryfunction)(PetscObject, const char[], void (**)(void)) = nullptr;

// The stored matrix changed: cached row reads, and SOR's rows and diagonal, are stale.
void forget_rows(SeqELLMP *d)
{
  d->row_map    = CompactRowMap();
  d->cached_row = -1;
  d->sor.state  = -1;
}

PetscErrorCode replay_options(Mat A, Mat aij)
{
  PetscFunctionBegin;
  for (const auto &[op, flg] : data_of(A)->options)
    PetscCall(MatSetOption(aij, op, flg));
  PetscFunctionReturn(0);
}

PetscErrorCode new_assembly_matrix(Mat A, Mat *aij)
{
  PetscFunctionBegin;
  PetscCall(PetscLayoutSetUp(A->rmap));
  PetscCall(PetscLayoutSetUp(A->cmap));
  PetscCall(MatCreate(PETSC_COMM_SELF, aij));
  // a prefix of its own: the user's -mat_view and the like are not meant for this internal matrix
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*aij, "petscmp_internal_"));
  PetscCall(MatSetSizes(*aij, A->rmap->n, A->cmap->n, A->rmap->n, A->cmap->n));
  PetscCall(MatSetBlockSizesFromMats(*aij, A, A));
  PetscCall(MatSetType(*aij, MATSEQAIJ));
  PetscFunctionReturn(0);
}

PetscErrorCode ensure_row_map(SeqELLMP *d)
{
  PetscFunctionBegin;
  if (d->row_map.empty() && d->compact && d->compact->nrows > 0)
    PetscCall(guarded([&] { d->row_map = CompactRowMap(*d->compact); }));
  PetscFunctionReturn(0);
}

// Row `row` of the stored matrix into the row buffers.
PetscErrorCode read_row(SeqELLMP *d, PetscInt row, PetscInt *n)
{
  PetscFunctionBegin;
  PetscCall(ensure_row_map(d));
  if (d->cached_row != row) {
    PetscCall(guarded([&] {
      const std::int64_t len =
          d->compact->entry_split() || !d->row_map.empty() ? compact_row_length(*d->compact, d->row_map, row) : 0;
      d->row_cols.resize(static_cast<std::size_t>(len));
      d->row_vals.resize(static_cast<std::size_t>(len));
      if (len) read_compact_row(*d->compact, d->row_map, row, d->row_cols.data(), d->row_vals.data());
    }));
    d->cached_row = row;
  }
  *n = static_cast<PetscInt>(d->row_cols.size());
  PetscFunctionReturn(0);
}

// A SeqAIJ matrix holding the stored values (exactly) in the stored pattern, not assembled.
// last_reads: the stored values are not read again before they are stored anew (given back as they are read).
PetscErrorCode fill_aij_from_compact(Mat A, Mat aij, bool last_reads = false)
{
  SeqELLMP *d = data_of(A);
  std::vector<PetscInt> lengths;

  PetscFunctionBegin;
  PetscCall(guarded([&] {
    lengths.resize(static_cast<std::size_t>(A->rmap->n));
    compact_row_lengths(*d->compact, lengths.data());
  }));
  PetscCall(MatSeqAIJSetPreallocation(aij, 0, lengths.data()));
  // the stored values go back to the system as they are copied (they are written anew when the assembly ends): the
  // assembly matrix grows as the copy's values shrink, instead of both at full size
  // (rows read in order, without a row map of 8 bytes a row on top)
  std::unique_ptr<CompactValuesRelease> give_back;
  std::unique_ptr<CompactRowReader> rows;
  bool zeros = false; // (a pattern assembled without values, as DMs preallocate: its indices go too)
  if (last_reads) PetscCall(SeqELLMPHoldsAPattern(A, &zeros));
  if (zeros)
    PetscCall(PetscInfo(A, "petscmp: the stored values are all zeros (a pattern, as a DM preallocates it): their "
                           "column indices are given back too as the rows are reopened; the next assembly builds the "
                           "storage anew\n"));
  if (last_reads) PetscCall(SeqELLMPLastReads(A, rows, give_back, zeros));
  for (PetscInt i = 0; i < A->rmap->n; ++i) {
    PetscInt n;
    if (rows) {
      PetscCall(guarded([&] { rows->read(i, d->row_cols, d->row_vals); }));
      d->cached_row = -1;
      n             = static_cast<PetscInt>(d->row_cols.size());
    } else
      PetscCall(read_row(d, i, &n));
    if (n) PetscCall(MatSetValues(aij, 1, &i, n, d->row_cols.data(), d->row_vals.data(), INSERT_VALUES));
    if (give_back && (i + 1) % kRowsPerGiveBack == 0) (*give_back)(i + 1);
  }
  if (give_back) (*give_back)(A->rmap->n);
  // a flush: the user's next values may be added (ADD_VALUES after these INSERT_VALUES)
  PetscCall(MatAssemblyBegin(aij, MAT_FLUSH_ASSEMBLY));
  PetscCall(MatAssemblyEnd(aij, MAT_FLUSH_ASSEMBLY));
  PetscFunctionReturn(0);
}

// From here MatSetValues go to the assembly matrix (refilled from the stored values when there are some).
PetscErrorCode open_for_assembly(Mat A)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  if (d->assembly) PetscFunctionReturn(0);
  PetscCall(new_assembly_matrix(A, &d->assembly));
  if (d->compact) {
    PetscCall(fill_aij_from_compact(A, d->assembly, true));
    d->reopened_pattern = d->assembly->nonzerostate;
  } else {
    PetscCall(MatSeqAIJSetPreallocation(d->assembly, PETSC_DEFAULT, nullptr));
    d->reopened_pattern = -1;
  }
  PetscCall(replay_options(A, d->assembly)); // after the refill, which adds every entry anew
  A->preallocated = PETSC_TRUE;
  PetscFunctionReturn(0);
}

// The storage options of a build: the user's, with the indices every ellmp block must own.
StorageOptions build_options(Mat A, const SeqELLMP *d)
{
  StorageOptions opts = d->settings.opts;
  opts.format_group   = AIJMPFormatGroup(A, opts);
  opts.own_indices    = true;
  opts.threads        = AIJMPThreadCount(d->settings);
  return opts;
}

// Makes `c`, built from the assembled SeqAIJ matrix `aij`, the stored matrix.
// value_only: c is the previous copy with its values rewritten; same_pattern: aij has the stored pattern.
PetscErrorCode install_compact(Mat A, Mat aij, std::unique_ptr<CompactCsr> c, bool value_only, bool same_pattern)
{
  SeqELLMP *d = data_of(A);
  CsrView<PetscInt> view;

  PetscFunctionBegin;
  PetscCall(SeqAIJCsrView(aij, view));
  d->compact = std::move(c);
  // the master goes away: the largest change each format made is measured now, for -mat_view
  PetscCall(guarded([&] { measure_relative_errors(view, *d->compact); }));
  ++(value_only ? d->value_builds : d->full_builds);
  // what AIJ's product would read, and the inodes whose summation order the products keep, for the report
  double bytes, columns;
  PetscInt nodes, *sizes = nullptr;
  PetscBool inodes;
  PetscCall(AIJInodeBytes(aij, &bytes, &columns, &nodes, &inodes));
  d->aij_bytes = inodes ? bytes : d->compact->stats.aij_bytes();
  PetscCall(MatInodeGetInodeSizes(aij, &d->inodes, &sizes, &d->inode_limit));
  if (!sizes) d->inodes = 0;
  PetscCall(guarded([&] { d->inode_sizes.assign(sizes, sizes + d->inodes); }));
  // (as SeqAIJ, which has the op where it found inodes: PCEisenstat scales by the inodes' blocks then)
  A->ops->multdiagonalblock = d->inodes ? MatMultDiagonalBlock_SeqELLMP : nullptr;
  if (!same_pattern) A->nonzerostate++;
  // what SeqAIJ would report, reported alike: it keeps its first allocation (the preallocation) and counts its
  // mallocs over the matrix's life; a reopened assembly matrix is allocated exactly, so the largest allocation and
  // the sum of the mallocs seen are SeqAIJ's figures
  MatInfo ai;
  PetscCall(MatGetInfo(aij, MAT_LOCAL, &ai));
  d->aij_allocated = PetscMax(d->aij_allocated, ai.nz_allocated);
  d->aij_mallocs += ai.mallocs;
  forget_rows(d);
  PetscFunctionReturn(0);
}

// Stores the values of the assembled SeqAIJ matrix `aij` as the matrix.
// same_pattern: aij has the pattern of the stored copy (its layout may be kept).
// temporary: aij is an assembly matrix destroyed right after, unread: a new
// layout is built a range of rows at a time, and the memory of aij's stored
// rows is given back as the copy grows (its values then read as zeros).
PetscErrorCode store_from_aij(Mat A, Mat aij, bool same_pattern, bool temporary = false)
{
  SeqELLMP *d = data_of(A);
  CsrView<PetscInt> view;
  bool value_only = false;
  std::unique_ptr<CompactCsr> c;

  PetscFunctionBegin;
  PetscCall(AIJMPReadOptionsLazily(A, d->settings, "ellmp"));
  PetscCall(SeqAIJBuildView(aij, view));
  StorageOptions opts = build_options(A, d);
  PetscCall(SeqAIJMPSumOrder(aij, &opts.order)); // AIJ's summation order: lossless products equal AIJ's bitwise
  PetscCall(PetscLogEventBegin(MATELLMP_Build, A, 0, 0, 0));
  PetscCall(guarded([&] {
    std::unique_ptr<CompactCsr> old = std::move(d->compact);
    bool refilled_by_rows           = false;
    if (same_pattern && old && temporary) { // the values rewritten a range of rows at a time, aij's rows given back
      std::vector<CompactPart<PetscInt>> parts(1);
      parts[0].csr      = view;
      parts[0].opts     = opts;
      parts[0].copy     = std::move(*old);
      parts[0].reusable = true;
      StoredRowsReturn give_back({view});
      refilled_by_rows = refill_compact_parts_by_rows(
          parts, AssemblyStep(d->settings, view.nrows ? view.rowptr[view.nrows] : 0), std::ref(give_back),
          [&](std::size_t i, std::int64_t rows) { give_back.restore(i, parts[i].copy, rows); });
      *old       = std::move(parts[0].copy);
      value_only = refilled_by_rows && parts[0].refilled;
    }
    if (!refilled_by_rows) value_only = same_pattern && old && refill_compact_values(view, opts, *old);
    if (value_only || refilled_by_rows)
      c = std::move(old);
    else if (temporary) { // a range of rows at a time, the assembly matrix's stored rows given back
      old.reset();
      std::vector<CompactPart<PetscInt>> parts(1);
      parts[0].csr  = view;
      parts[0].opts = opts;
      build_compact_parts_by_rows(parts, AssemblyStep(d->settings, view.nrows ? view.rowptr[view.nrows] : 0),
                                  StoredRowsReturn({view}));
      c = std::make_unique<CompactCsr>(std::move(parts[0].copy));
    } else
      c = std::make_unique<CompactCsr>(build_compact_csr(view, opts, old.get()));
  }));
  PetscCall(install_compact(A, aij, std::move(c), value_only, same_pattern));
  PetscCall(PetscLogEventEnd(MATELLMP_Build, A, 0, 0, 0));
  PetscFunctionReturn(0);
}

// Assembles the assembly matrix, stores it and lets it go.
PetscErrorCode close_assembly(Mat A)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  if (!d->assembly->assembled || d->assembly->insertmode != NOT_SET_VALUES) {
    PetscCall(MatAssemblyBegin(d->assembly, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(d->assembly, MAT_FINAL_ASSEMBLY));
  }
  const bool same_pattern = d->reopened_pattern >= 0 && d->assembly->nonzerostate == d->reopened_pattern;
  PetscCall(store_from_aij(A, d->assembly, same_pattern, true));
  PetscCall(MatDestroy(&d->assembly));
  ReleaseFreedMemory();
  PetscFunctionReturn(0);
}

// A change of values done by AIJ on the stored values, stored anew: fn(aij) gets the assembled AIJ matrix.
template <typename Fn> PetscErrorCode change_through_aij(Mat A, Fn &&fn)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  PetscCall(open_for_assembly(A));
  PetscCall(MatAssemblyBegin(d->assembly, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(d->assembly, MAT_FINAL_ASSEMBLY));
  PetscCall(fn(d->assembly));
  PetscCall(close_assembly(A));
  PetscFunctionReturn(0);
}

// ---- assembly ----------------------------------------------------------------

PetscErrorCode MatSetValues_SeqELLMP(Mat A, PetscInt m, const PetscInt rows[], PetscInt n, const PetscInt cols[],
                                     const PetscScalar v[], InsertMode mode)
{
  PetscFunctionBegin;
  PetscCall(open_for_assembly(A));
  PetscCall(MatSetValues(data_of(A)->assembly, m, rows, n, cols, v, mode));
  PetscFunctionReturn(0);
}

PetscErrorCode MatAssemblyBegin_SeqELLMP(Mat A, MatAssemblyType type)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  if (d->assembly) PetscCall(MatAssemblyBegin(d->assembly, type));
  PetscFunctionReturn(0);
}

PetscErrorCode MatAssemblyEnd_SeqELLMP(Mat A, MatAssemblyType type)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  if (!d->assembly) { // nothing was set since the last assembly (or ever: an empty matrix)
    if (!d->compact && type == MAT_FINAL_ASSEMBLY)
      PetscCall(open_for_assembly(A));
    else
      PetscFunctionReturn(0);
  }
  PetscCall(MatAssemblyEnd(d->assembly, type));
  if (type == MAT_FINAL_ASSEMBLY) PetscCall(close_assembly(A));
  PetscFunctionReturn(0);
}

PetscErrorCode MatSeqAIJSetPreallocation_SeqELLMP(Mat A, PetscInt nz, const PetscInt nnz[])
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  PetscCall(MatDestroy(&d->assembly)); // a new preallocation starts the matrix anew
  d->compact.reset();
  d->aij_allocated = d->aij_mallocs = 0;
  forget_rows(d);
  PetscCall(new_assembly_matrix(A, &d->assembly));
  PetscCall(MatSeqAIJSetPreallocation(d->assembly, nz, nnz));
  PetscCall(replay_options(A, d->assembly));
  d->reopened_pattern = -1;
  A->preallocated     = PETSC_TRUE;
  PetscFunctionReturn(0);
}

PetscErrorCode MatSeqAIJSetPreallocationCSR_SeqELLMP(Mat A, const PetscInt i[], const PetscInt j[],
                                                     const PetscScalar v[])
{
  PetscFunctionBegin;
  PetscCall(MatSeqAIJSetPreallocation_SeqELLMP(A, 0, nullptr));
  PetscCall(MatSeqAIJSetPreallocationCSR(data_of(A)->assembly, i, j, v));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY)); // as SeqAIJ's: the matrix is assembled with these values
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

// The DMDA attached to A when it is the one DMDA's one-process routine would write SeqAIJ's arrays for (one
// dimension, one process, not periodic), else null.
PetscErrorCode dmda_1d_of(Mat A, DM *da)
{
  PetscObject dm  = nullptr;
  PetscBool is_da = PETSC_FALSE;
  PetscInt dim;
  DMBoundaryType bx;
  PetscMPIInt size;

  PetscFunctionBegin;
  *da = nullptr;
  PetscCall(PetscObjectQuery((PetscObject)A, "__PETSc_dm", &dm));
  if (dm) PetscCall(PetscObjectTypeCompare(dm, DMDA, &is_da));
  if (!is_da) PetscFunctionReturn(0);
  PetscCall(DMGetDimension((DM)dm, &dim));
  if (dim != 1) PetscFunctionReturn(0);
  PetscCall(DMDAGetInfo((DM)dm, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &bx,
                        nullptr, nullptr, nullptr));
  PetscCallMPI(MPI_Comm_size(PetscObjectComm(dm), &size));
  if (size == 1 && bx == DM_BOUNDARY_NONE) *da = (DM)dm;
  PetscFunctionReturn(0);
}

// What DMDA's one-process 1D routine makes of an AIJ matrix (QueryFunction_SeqELLMP sends DMDA here instead): each
// node's rows coupled to every component of the nodes within the stencil width, as explicit zeros, assembled, new
// nonzero locations then refused.
PetscErrorCode fill_dmda_1d_pattern(Mat A, DM da)
{
  PetscInt m, nc, s, xs, nx;
  DMBoundaryType bx;

  PetscFunctionBegin;
  PetscCall(DMDAGetInfo(da, nullptr, &m, nullptr, nullptr, nullptr, nullptr, nullptr, &nc, &s, &bx, nullptr, nullptr,
                        nullptr));
  PetscCall(DMDAGetCorners(da, &xs, nullptr, nullptr, &nx, nullptr, nullptr));
  PetscCall(MatSeqAIJSetPreallocation(data_of(A)->assembly, nc * (2 * s + 1), nullptr));
  if (da->prealloc_only) PetscFunctionReturn(0);
  std::vector<PetscInt> rows(static_cast<std::size_t>(nc)), cols;
  std::vector<PetscScalar> zeros(static_cast<std::size_t>(nc * nc * (2 * s + 1)), 0.0);
  for (PetscInt i = xs; i < xs + nx; ++i) {
    cols.clear();
    for (PetscInt j = PetscMax(-s, -i); j <= PetscMin(s, m - i - 1); ++j)
      for (PetscInt l = 0; l < nc; ++l)
        cols.push_back(nc * (i + j) + l);
    for (PetscInt l = 0; l < nc; ++l)
      rows[l] = nc * i + l;
    PetscCall(
        MatSetValues(A, nc, rows.data(), static_cast<PetscInt>(cols.size()), cols.data(), zeros.data(), INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatSetOption(A, MAT_NEW_NONZERO_LOCATION_ERR, PETSC_TRUE));
  PetscFunctionReturn(0);
}

PetscErrorCode MatSetUp_SeqELLMP(Mat A)
{
  DM da;

  PetscFunctionBegin;
  if (data_of(A)->assembly || data_of(A)->compact) PetscFunctionReturn(0);
  PetscCall(open_for_assembly(A));
  PetscCall(dmda_1d_of(A, &da));
  if (da) PetscCall(fill_dmda_1d_pattern(A, da));
  PetscFunctionReturn(0);
}

PetscErrorCode MatSetOption_SeqELLMP(Mat A, MatOption op, PetscBool flg)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  d->options.emplace_back(op, flg);
  if (d->assembly) PetscCall(MatSetOption(d->assembly, op, flg));
  PetscFunctionReturn(0);
}

// ---- products ----------------------------------------------------------------

// y = op(A) x (+ z) by the device kernels on the vectors' device arrays, over
// a device mirror of the stored matrix, made again whenever the matrix's state
// changed (ellmp changes its values in place: MatScale, MatShift, ...).
PetscErrorCode product_on_device(Mat A, bool transpose, Vec xx, Vec zz, Vec yy)
{
  SeqELLMP *d         = data_of(A);
  const CompactCsr *c = d->compact.get();
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  if (!d->device) d->device = std::make_unique<DeviceMirror>();
  const CsrView<PetscInt> no_master{}; // every block holds its own indices
  PetscCall(WithDeviceArrays(xx, zz, yy, [&](const double *x, const double *z, double *y) {
    DeviceMirrorProduct(*d->device, *c, static_cast<PetscInt64>(state), no_master, transpose, c->read_segments, x, z, y,
                        AIJMPThreadCount(d->settings));
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode product(Mat A, bool transpose, Vec xx, Vec zz, Vec yy)
{
  CompactCsr *c = data_of(A)->compact.get();
  const PetscScalar *x, *z = nullptr;
  PetscScalar *y;
  bool device = false, bound;

  PetscFunctionBegin;
  PetscCheck(c, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
             "petscmp: the ellmp matrix must be assembled before a product");
  PetscCall(AIJMPCheckReadLevel(A, data_of(A)->settings));
  c->read_segments = static_cast<int>(data_of(A)->settings.read_segments); // split storage: segments read (no rebuild)
  PetscCall(DeviceBoundToCPU(A, &bound));
  if (!bound && !data_of(A)->settings.row_levels && DeviceMirrorServes(*c))
    PetscCall(DeviceVectors(xx, zz, yy, &device));
  if (device) {
    PetscCall(PetscLogEventBegin(MATELLMP_Mult, A, xx, yy, 0));
    PetscCall(product_on_device(A, transpose, xx, zz, yy));
    PetscCall(PetscLogFlops(2.0 * static_cast<PetscLogDouble>(c->stats.nnz)));
    PetscCall(PetscLogEventEnd(MATELLMP_Mult, A, xx, yy, 0));
    PetscFunctionReturn(0);
  }
  PetscLogDouble t0, t1;
  PetscCall(PetscTime(&t0));
  PetscCall(PetscLogEventBegin(MATELLMP_Mult, A, xx, yy, 0));
  PetscCall(VecGetArrayRead(xx, &x));
  if (zz && zz == yy) {
    PetscCall(VecGetArray(yy, &y));
    z = y;
  } else {
    if (zz) PetscCall(VecGetArrayRead(zz, &z));
    PetscCall(VecGetArrayWrite(yy, &y));
  }
  const int nt = AIJMPThreadCount(data_of(A)->settings);
  // no master pattern: every block holds its own indices
  const RowReadLevels *levels = data_of(A)->settings.row_levels.get();
  // the read of x in gathered slices: plain products may time it (as aijmp's, AIJMPNextGatheredX)
  int sample;
  const openmp::GatheredX read =
      AIJMPNextGatheredX(data_of(A)->gathered_x, data_of(A)->settings.gathered_x, *c, data_of(A)->full_builds,
                         !transpose && !levels, zz != nullptr, &sample);
  PetscCall(guarded([&] {
    if (transpose)
      openmp::spmv_transpose(*c, CsrPattern<PetscInt>{}, x, z, y, nt);
    else if (levels) {
      openmp::spmv_row_levels(*c, CsrPattern<PetscInt>{}, levels->levels.data(), x, z, y, nt, read);
    } else
      openmp::spmv(*c, CsrPattern<PetscInt>{}, x, z, y, nt, read);
  }));
  if (zz && zz == yy)
    PetscCall(VecRestoreArray(yy, &y));
  else {
    if (zz) PetscCall(VecRestoreArrayRead(zz, &z));
    PetscCall(VecRestoreArrayWrite(yy, &y));
  }
  PetscCall(VecRestoreArrayRead(xx, &x));
  PetscCall(PetscLogFlops(2.0 * static_cast<PetscLogDouble>(c->stats.nnz)));
  PetscCall(PetscLogEventEnd(MATELLMP_Mult, A, xx, yy, 0));
  PetscCall(PetscTime(&t1));
  if (sample >= 0) data_of(A)->gathered_x.timing.record(sample, t1 - t0);
  PetscFunctionReturn(0);
}

PetscErrorCode MatMult_SeqELLMP(Mat A, Vec x, Vec y)
{
  return product(A, false, x, nullptr, y);
}
PetscErrorCode MatMultAdd_SeqELLMP(Mat A, Vec x, Vec z, Vec y)
{
  return product(A, false, x, z, y);
}
PetscErrorCode MatMultTranspose_SeqELLMP(Mat A, Vec x, Vec y)
{
  return product(A, true, x, nullptr, y);
}
PetscErrorCode MatMultTransposeAdd_SeqELLMP(Mat A, Vec x, Vec z, Vec y)
{
  return product(A, true, x, z, y);
}

// ---- reads -------------------------------------------------------------------

PetscErrorCode MatGetRow_SeqELLMP(Mat A, PetscInt row, PetscInt *nz, PetscInt **idx, PetscScalar **v)
{
  SeqELLMP *d = data_of(A);
  PetscInt n;

  PetscFunctionBegin;
  PetscCheck(row >= 0 && row < A->rmap->n, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "petscmp: row %" PetscInt_FMT " is not a row of this matrix (0..%" PetscInt_FMT ")", row, A->rmap->n - 1);
  PetscCall(read_row(d, row, &n));
  if (nz) *nz = n;
  if (idx) *idx = n ? d->row_cols.data() : nullptr;
  if (v) *v = n ? d->row_vals.data() : nullptr;
  PetscFunctionReturn(0);
}

PetscErrorCode MatRestoreRow_SeqELLMP(Mat, PetscInt, PetscInt *nz, PetscInt **idx, PetscScalar **v)
{
  PetscFunctionBegin;
  if (nz) *nz = 0;
  if (idx) *idx = nullptr;
  if (v) *v = nullptr;
  PetscFunctionReturn(0);
}

PetscErrorCode MatGetValues_SeqELLMP(Mat A, PetscInt m, const PetscInt rows[], PetscInt n, const PetscInt cols[],
                                     PetscScalar v[])
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  for (PetscInt i = 0; i < m; ++i) {
    if (rows[i] < 0) continue; // negative indices are skipped, as in every PETSc type
    PetscCheck(rows[i] < A->rmap->n, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
               "petscmp: row %" PetscInt_FMT " is not a row of this matrix", rows[i]);
    PetscInt len;
    PetscCall(read_row(d, rows[i], &len));
    for (PetscInt j = 0; j < n; ++j) {
      if (cols[j] < 0) continue;
      PetscCheck(cols[j] < A->cmap->n, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
                 "petscmp: column %" PetscInt_FMT " is not a column of this matrix", cols[j]);
      const auto at = std::lower_bound(d->row_cols.begin(), d->row_cols.end(), cols[j]);
      v[i * n + j]  = (at != d->row_cols.end() && *at == cols[j]) ? d->row_vals[at - d->row_cols.begin()] : 0.0;
    }
  }
  PetscFunctionReturn(0);
}

PetscErrorCode MatGetDiagonal_SeqELLMP(Mat A, Vec diag)
{
  PetscScalar *d;
  PetscInt n;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(diag, &n));
  PetscCheck(n == A->rmap->n, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "petscmp: the vector does not match the rows");
  PetscCall(VecGetArrayWrite(diag, &d));
  PetscCall(guarded([&] { compact_diagonal(*data_of(A)->compact, 0, d); }));
  PetscCall(VecRestoreArrayWrite(diag, &d));
  PetscFunctionReturn(0);
}

PetscErrorCode MatGetInfo_SeqELLMP(Mat A, MatInfoType, MatInfo *info)
{
  const CompactCsr *c = data_of(A)->compact.get();

  PetscFunctionBegin;
  PetscCall(PetscMemzero(info, sizeof(*info)));
  info->block_size = 1.0;
  if (c) {
    info->nz_used = static_cast<PetscLogDouble>(c->stats.nnz);
    // as SeqAIJ reported for the assembled values (the padding of slices is in -mat_view ::ascii_info)
    info->nz_allocated = PetscMax(data_of(A)->aij_allocated, info->nz_used);
    info->mallocs      = data_of(A)->aij_mallocs;
    info->memory       = static_cast<PetscLogDouble>(compact_memory_bytes(*c));
  }
  info->assemblies = static_cast<PetscLogDouble>(data_of(A)->full_builds + data_of(A)->value_builds);
  PetscFunctionReturn(0);
}

// ---- block diagonal (PCPBJACOBI, PCVPBJACOBI) -----------------------------------

// A SeqAIJ matrix holding only the entries of the diagonal blocks [starts[b], starts[b+1]), so that PETSc's own
// inversion (the bits PCPBJACOBI/PCVPBJACOBI get from AIJ) computes the inverses.
PetscErrorCode block_diagonal_aij(Mat A, const std::vector<PetscInt> &starts, Mat *aij)
{
  SeqELLMP *d = data_of(A);
  std::vector<PetscInt> lengths(static_cast<std::size_t>(A->rmap->n)), cols;
  std::vector<PetscScalar> vals;

  PetscFunctionBegin;
  PetscCall(new_assembly_matrix(A, aij));
  for (std::size_t b = 0; b + 1 < starts.size(); ++b)
    for (PetscInt i = starts[b]; i < starts[b + 1]; ++i)
      lengths[i] = starts[b + 1] - starts[b];
  PetscCall(MatSeqAIJSetPreallocation(*aij, 0, lengths.data()));
  for (std::size_t b = 0; b + 1 < starts.size(); ++b)
    for (PetscInt i = starts[b]; i < starts[b + 1]; ++i) {
      PetscInt n;
      PetscCall(read_row(d, i, &n));
      cols.clear();
      vals.clear();
      for (PetscInt k = 0; k < n; ++k)
        if (d->row_cols[k] >= starts[b] && d->row_cols[k] < starts[b + 1]) {
          cols.push_back(d->row_cols[k]);
          vals.push_back(d->row_vals[k]);
        }
      if (!cols.empty())
        PetscCall(
            MatSetValues(*aij, 1, &i, static_cast<PetscInt>(cols.size()), cols.data(), vals.data(), INSERT_VALUES));
    }
  PetscCall(MatAssemblyBegin(*aij, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*aij, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

PetscErrorCode MatInvertBlockDiagonal_SeqELLMP(Mat A, const PetscScalar **values)
{
  SeqELLMP *d = data_of(A);
  PetscInt bs;
  const PetscScalar *inverse;
  Mat aij;

  PetscFunctionBegin;
  PetscCall(MatGetBlockSize(A, &bs));
  PetscCheck(A->rmap->n % bs == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "petscmp: %" PetscInt_FMT " rows are not a whole number of blocks of %" PetscInt_FMT, A->rmap->n, bs);
  std::vector<PetscInt> starts;
  for (PetscInt i = 0; i <= A->rmap->n; i += bs)
    starts.push_back(i);
  PetscCall(block_diagonal_aij(A, starts, &aij));
  PetscCall(MatInvertBlockDiagonal(aij, &inverse));
  d->block_inverse.assign(inverse, inverse + A->rmap->n * bs);
  A->factorerrortype = aij->factorerrortype;
  PetscCall(MatDestroy(&aij));
  *values = d->block_inverse.data();
  PetscFunctionReturn(0);
}

PetscErrorCode MatInvertVariableBlockDiagonal_SeqELLMP(Mat A, PetscInt nblocks, const PetscInt *bsizes,
                                                       PetscScalar *diag)
{
  std::vector<PetscInt> starts{0};
  Mat aij;

  PetscFunctionBegin;
  for (PetscInt b = 0; b < nblocks; ++b)
    starts.push_back(starts.back() + bsizes[b]);
  PetscCheck(starts.back() == A->rmap->n, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "petscmp: the block sizes add up to %" PetscInt_FMT " rows, not %" PetscInt_FMT, starts.back(),
             A->rmap->n);
  PetscCall(block_diagonal_aij(A, starts, &aij));
  PetscCall(MatInvertVariableBlockDiagonal(aij, nblocks, bsizes, diag));
  A->factorerrortype = aij->factorerrortype;
  PetscCall(MatDestroy(&aij));
  PetscFunctionReturn(0);
}

// ---- conversions -------------------------------------------------------------

// A new SeqAIJ matrix holding the stored values, with what PETSc may ask of A (ELLMPCarryIdentity).
PetscErrorCode to_aij(Mat A, Mat *aij)
{
  PetscFunctionBegin;
  PetscCall(new_assembly_matrix(A, aij));
  PetscCall(fill_aij_from_compact(A, *aij));
  PetscCall(MatAssemblyBegin(*aij, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*aij, MAT_FINAL_ASSEMBLY));
  PetscCall(ELLMPCarryIdentity(A, *aij));
  PetscFunctionReturn(0);
}

PetscErrorCode MatConvert_SeqELLMP_SeqAIJ(Mat A, MatType, MatReuse reuse, Mat *newmat)
{
  Mat B;

  PetscFunctionBegin;
  PetscCall(to_aij(A, &B));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)B, ((PetscObject)A)->prefix));
  if (reuse == MAT_INPLACE_MATRIX) {
    PetscCall(MatHeaderReplace(A, &B));
  } else if (reuse == MAT_REUSE_MATRIX) {
    PetscCall(MatCopy(B, *newmat, DIFFERENT_NONZERO_PATTERN));
    PetscCall(MatDestroy(&B));
  } else
    *newmat = B;
  PetscFunctionReturn(0);
}

PetscErrorCode new_ellmp_like(Mat A, Mat *B)
{
  PetscFunctionBegin;
  PetscCall(MatCreate(PetscObjectComm((PetscObject)A), B));
  PetscCall(MatSetSizes(*B, A->rmap->n, A->cmap->n, A->rmap->N, A->cmap->N));
  PetscCall(MatSetBlockSizesFromMats(*B, A, A));
  PetscCall(MatSetType(*B, MATSEQELLMP));
  PetscCall(PetscLayoutSetUp((*B)->rmap));
  PetscCall(PetscLayoutSetUp((*B)->cmap));
  PetscFunctionReturn(0);
}

// SeqAIJ -> seqellmp: the values are stored straight from AIJ's arrays.
PetscErrorCode MatConvert_SeqAIJ_SeqELLMP(Mat A, MatType, MatReuse reuse, Mat *newmat)
{
  Mat B;

  PetscFunctionBegin;
  if (reuse == MAT_REUSE_MATRIX) {
    B = *newmat;
    PetscCall(MatDestroy(&data_of(B)->assembly));
  } else
    PetscCall(new_ellmp_like(A, &B));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)B, ((PetscObject)A)->prefix));
  PetscCall(store_from_aij(B, A, false));
  B->preallocated = PETSC_TRUE;
  PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
  if (reuse == MAT_INPLACE_MATRIX)
    PetscCall(MatHeaderReplace(A, &B));
  else
    *newmat = B;
  PetscFunctionReturn(0);
}

// ---- operations through a temporary AIJ copy (orderings, submatrices for bjacobi/asm) --

// AIJ's graph of the matrix (inode-compressed when asked, as AIJ's): an ordering of the compressed graph is then
// expanded by MatInodeAdjustForInodes (below), so orderings and factors are AIJ's.
PetscErrorCode MatGetRowIJ_SeqELLMP(Mat A, PetscInt shift, PetscBool symmetric, PetscBool inodecompressed, PetscInt *n,
                                    const PetscInt *ia[], const PetscInt *ja[], PetscBool *done)
{
  SeqELLMP *d = data_of(A);
  Mat aij;
  const PetscInt *i, *j;
  PetscInt rows;

  PetscFunctionBegin;
  PetscCall(to_aij(A, &aij));
  PetscCall(MatGetRowIJ(aij, shift, symmetric, inodecompressed, &rows, &i, &j, done));
  PetscCheck(*done, PETSC_COMM_SELF, PETSC_ERR_PLIB, "petscmp: AIJ gave no graph");
  d->rowij_i.assign(i, i + rows + 1);
  d->rowij_j.assign(j, j + (i[rows] - shift));
  PetscCall(MatRestoreRowIJ(aij, shift, symmetric, inodecompressed, &rows, &i, &j, done));
  PetscCall(MatDestroy(&aij));
  *n = static_cast<PetscInt>(d->rowij_i.size()) - 1;
  if (ia) *ia = d->rowij_i.data();
  if (ja) *ja = d->rowij_j.data();
  *done = PETSC_TRUE;
  PetscFunctionReturn(0);
}

PetscErrorCode MatInodeAdjustForInodes_SeqELLMP(Mat A, IS *rperm, IS *cperm)
{
  return WithAIJCopy(A, to_aij, [&](Mat M) { return MatInodeAdjustForInodes(M, rperm, cperm); });
}

PetscErrorCode MatInodeGetInodeSizes_SeqELLMP(Mat A, PetscInt *count, PetscInt *sizes[], PetscInt *limit)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  if (count) *count = d->inodes;
  if (sizes) *sizes = d->inodes ? d->inode_sizes.data() : nullptr;
  if (limit) *limit = d->inode_limit;
  PetscFunctionReturn(0);
}

PetscErrorCode MatRestoreRowIJ_SeqELLMP(Mat A, PetscInt, PetscBool, PetscBool, PetscInt *, const PetscInt *ia[],
                                        const PetscInt *ja[], PetscBool *done)
{
  PetscFunctionBegin;
  data_of(A)->rowij_i = std::vector<PetscInt>();
  data_of(A)->rowij_j = std::vector<PetscInt>();
  if (ia) *ia = nullptr;
  if (ja) *ja = nullptr;
  if (done) *done = PETSC_TRUE;
  PetscFunctionReturn(0);
}

// The submatrices are AIJ (the sub-solvers of bjacobi/asm factor them).
// ---- changes of values ---------------------------------------------------------

PetscErrorCode MatZeroEntries_SeqELLMP(Mat A)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  if (d->assembly) PetscCall(MatZeroEntries(d->assembly));
  if (d->compact) PetscCall(guarded([&] { zero_compact_values(*d->compact); }));
  forget_rows(d);
  PetscFunctionReturn(0);
}

// ValueChangesThroughAIJ's way of running a change on this type
struct Change {
  template <typename Fn> static PetscErrorCode run(Mat A, Fn &&fn)
  {
    return change_through_aij(A, std::forward<Fn>(fn));
  }
};

PetscErrorCode MatCopy_SeqELLMP(Mat A, Mat B, MatStructure str)
{
  PetscBool b_ellmp;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)B, MATSEQELLMP, &b_ellmp));
  SeqELLMP *a = data_of(A);
  if (b_ellmp && a->compact && !data_of(B)->assembly && data_of(B)->settings.opts.mode == a->settings.opts.mode &&
      data_of(B)->settings.opts.layout == a->settings.opts.layout) {
    // the same storage: the stored values as they are (re-rounding them could change a lossy copy)
    SeqELLMP *b = data_of(B);
    PetscCall(guarded([&] { b->compact = std::make_unique<CompactCsr>(*a->compact); }));
    B->nonzerostate++;
    forget_rows(b);
    PetscFunctionReturn(0);
  }
  Mat aij;
  PetscCall(to_aij(A, &aij));
  PetscCall(MatCopy(aij, B, str));
  PetscCall(MatDestroy(&aij));
  PetscFunctionReturn(0);
}

PetscErrorCode MatDuplicate_SeqELLMP(Mat A, MatDuplicateOption op, Mat *B)
{
  SeqELLMP *a = data_of(A);

  PetscFunctionBegin;
  PetscCall(new_ellmp_like(A, B));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*B, ((PetscObject)A)->prefix));
  SeqELLMP *b = data_of(*B);
  b->settings = a->settings;
  b->options  = a->options;
  if (a->compact) {
    PetscCall(guarded([&] { b->compact = std::make_unique<CompactCsr>(*a->compact); }));
    if (op == MAT_DO_NOT_COPY_VALUES) PetscCall(guarded([&] { zero_compact_values(*b->compact); }));
    // AIJ's inodes, as SeqAIJ's duplicate keeps them: its SOR, MatMultDiagonalBlock, view and summation order
    b->inodes      = a->inodes;
    b->inode_limit = a->inode_limit;
    PetscCall(guarded([&] { b->inode_sizes = a->inode_sizes; }));
    b->aij_bytes                 = a->aij_bytes;
    (*B)->ops->multdiagonalblock = A->ops->multdiagonalblock;
    PetscCall(ELLMPMarkAssembled(*B));
  }
  PetscFunctionReturn(0);
}

// ---- options, view, load, destroy ---------------------------------------------

// An assembled matrix (not open for assembly): settings that change stored values store it anew.
bool holds_stored(const SeqELLMP *d)
{
  return d->compact && !d->assembly;
}
using Settings = SettingsOf<SeqELLMP, data_of, holds_stored, Change>;

PetscErrorCode MatView_SeqELLMP(Mat A, PetscViewer viewer)
{
  SeqELLMP *d = data_of(A);
  PetscBool ascii;
  PetscViewerFormat format;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  PetscCall(PetscViewerGetFormat(viewer, &format));
  if (ascii && (format == PETSC_VIEWER_ASCII_INFO || format == PETSC_VIEWER_ASCII_INFO_DETAIL)) {
    if (!d->compact) PetscFunctionReturn(0);
    // SeqAIJ's line: the products sum in the order of AIJ's inode routines where AIJ found inodes
    if (d->inodes)
      PetscCall(PetscViewerASCIIPrintf(
          viewer, "using I-node routines: found %" PetscInt_FMT " nodes, limit used is %" PetscInt_FMT "\n", d->inodes,
          d->inode_limit));
    else
      PetscCall(PetscViewerASCIIPrintf(viewer, "not using I-node routines\n"));
    MatAIJMPInfo info;
    PetscCall(PetscMemzero(&info, sizeof info));
    PetscCall(SeqELLMPReport(A, info, nullptr, nullptr));
    PetscCall(ELLMPViewReport(viewer, info, d->settings, AIJMPFormatGroup(A, d->settings.opts),
                              static_cast<double>(compact_memory_bytes(*d->compact)), A->rmap->N));
    PetscFunctionReturn(0);
  }
  // every other viewer sees the stored values through AIJ's viewer (binary files load as any AIJ type)
  Mat aij;
  PetscCall(to_aij(A, &aij));
  PetscCall((*aij->ops->view)(aij, viewer));
  PetscCall(MatDestroy(&aij));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLoad_SeqELLMP(Mat A, PetscViewer viewer)
{
  SeqELLMP *d = data_of(A);
  Mat aij;

  PetscFunctionBegin;
  PetscCall(ELLMPNewLoadMatrix(A, MATSEQAIJ, &aij));
  if (A->rmap->n >= 0 || A->cmap->n >= 0) PetscCall(MatSetSizes(aij, A->rmap->n, A->cmap->n, A->rmap->N, A->cmap->N));
  PetscCall(MatLoad(aij, viewer));
  if (A->rmap->n < 0 || A->cmap->n < 0)
    PetscCall(MatSetSizes(A, aij->rmap->n, aij->cmap->n, aij->rmap->N, aij->cmap->N));
  PetscCall(MatSetBlockSizesFromMats(A, aij, aij)); // the file's or -matload_block_size
  PetscCall(PetscLayoutSetUp(A->rmap));
  PetscCall(PetscLayoutSetUp(A->cmap));
  PetscCall(MatDestroy(&d->assembly));
  d->compact.reset();
  d->assembly         = aij;
  d->reopened_pattern = -1;
  A->preallocated     = PETSC_TRUE;
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

PetscErrorCode get_settings(Mat A, AIJMPSettings **s)
{
  PetscFunctionBegin;
  *s = &data_of(A)->settings;
  PetscFunctionReturn(0);
}

PetscErrorCode compose_functions(Mat A, bool on)
{
  PetscObject o = (PetscObject)A;

  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)A, "MatELLMPSetStorage_C", on ? Settings::setstorage : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatELLMPGetSettings_C", on ? get_settings : nullptr));
  PetscCall(ELLMPComposeProducts(A, true, SeqELLMPTwin, on));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_seqellmp_seqaij_C", on ? MatConvert_SeqELLMP_SeqAIJ : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_seqellmp_aij_C", on ? MatConvert_SeqELLMP_SeqAIJ : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_seqaij_seqellmp_C", on ? MatConvert_SeqAIJ_SeqELLMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_seqaij_ellmp_C", on ? MatConvert_SeqAIJ_SeqELLMP : nullptr));
  PetscCall(
      PetscObjectComposeFunction(o, "MatSeqAIJSetPreallocation_C", on ? MatSeqAIJSetPreallocation_SeqELLMP : nullptr));
  PetscCall(
      PetscObjectComposeFunction(o, "MatInodeAdjustForInodes_C", on ? MatInodeAdjustForInodes_SeqELLMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatInodeGetInodeSizes_C", on ? MatInodeGetInodeSizes_SeqELLMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatSeqAIJSetPreallocationCSR_C",
                                       on ? MatSeqAIJSetPreallocationCSR_SeqELLMP : nullptr));
  PetscFunctionReturn(0);
}

PetscErrorCode MatDestroy_SeqELLMP(Mat A)
{
  SeqELLMP *d = data_of(A);

  PetscFunctionBegin;
  PetscCall(MatDestroy(&d->assembly));
  PetscCall(MatDestroy(&d->twin.aij));
  delete d;
  A->data                               = nullptr;
  ((PetscObject)A)->bops->queryfunction = petsc_queryfunction;
  PetscCall(compose_functions(A, false));
  PetscCall(PetscObjectChangeTypeName((PetscObject)A, nullptr));
  PetscFunctionReturn(0);
}

// DMDA picks its matrix-making routine by the preallocation functions a matrix answers to, and on one process in
// one dimension it then writes SeqAIJ's private arrays directly (DMCreateMatrix_DA_1d_SeqAIJ_NoPreallocation), which
// this type does not have: there, the AIJ preallocation functions are not shown, and DMDA makes the matrix by its
// generic route (MatSetUp, the local-to-global mapping), through which ellmp works.

PetscErrorCode QueryFunction_SeqELLMP(PetscObject obj, const char name[], void (**f)(void))
{
  PetscFunctionBegin;
  PetscCall((*petsc_queryfunction)(obj, name, f));
  if (!*f || (std::strcmp(name, "MatSeqAIJSetPreallocation_C") && std::strcmp(name, "MatMPIAIJSetPreallocation_C")))
    PetscFunctionReturn(0);
  DM da;
  PetscCall(dmda_1d_of((Mat)obj, &da));
  if (da) *f = nullptr; // DMDA then calls MatSetUp, which makes its pattern (fill_dmda_1d_pattern)
  PetscFunctionReturn(0);
}

void set_operations(MatOps o)
{
  o->setvalues                   = MatSetValues_SeqELLMP;
  o->assemblybegin               = MatAssemblyBegin_SeqELLMP;
  o->assemblyend                 = MatAssemblyEnd_SeqELLMP;
  o->setup                       = MatSetUp_SeqELLMP;
  o->setoption                   = MatSetOption_SeqELLMP;
  o->mult                        = MatMult_SeqELLMP;
  o->multadd                     = MatMultAdd_SeqELLMP;
  o->multtranspose               = MatMultTranspose_SeqELLMP;
  o->multtransposeadd            = MatMultTransposeAdd_SeqELLMP;
  o->getrow                      = MatGetRow_SeqELLMP;
  o->restorerow                  = MatRestoreRow_SeqELLMP;
  o->getvalues                   = MatGetValues_SeqELLMP;
  o->getdiagonal                 = MatGetDiagonal_SeqELLMP;
  o->getinfo                     = MatGetInfo_SeqELLMP;
  o->invertblockdiagonal         = MatInvertBlockDiagonal_SeqELLMP;
  o->invertvariableblockdiagonal = MatInvertVariableBlockDiagonal_SeqELLMP;
  o->zeroentries                 = MatZeroEntries_SeqELLMP;
  o->copy                        = MatCopy_SeqELLMP;
  o->duplicate                   = MatDuplicate_SeqELLMP;
  o->setfromoptions              = Settings::setfromoptions;
  o->view                        = MatView_SeqELLMP;
  o->load                        = MatLoad_SeqELLMP;
  o->destroy                     = MatDestroy_SeqELLMP;
  o->getrowij                    = MatGetRowIJ_SeqELLMP;
  o->restorerowij                = MatRestoreRowIJ_SeqELLMP;
  OpsThroughAIJ<to_aij>::install(o);
  ValueChangesThroughAIJ<Change, to_aij>::install(o);
  OpsThroughTwin<SeqELLMPTwin, SeqELLMPStoreValues>::install(o);
  o->sor                   = MatSOR_SeqELLMP; // on the stored rows (the twin where AIJ would use its inode SOR)
  o->productsetfromoptions = MatProductSetFromOptions_ELLMP;
}

} // namespace

PetscErrorCode SeqELLMPCreateBlock(PetscInt m, PetscInt n, PetscInt rbs, PetscInt cbs, const AIJMPSettings &settings,
                                   Mat *B)
{
  PetscFunctionBegin;
  PetscCall(MatCreate(PETSC_COMM_SELF, B));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*B, "petscmp_internal_"));
  PetscCall(MatSetSizes(*B, m, n, m, n));
  PetscCall(MatSetBlockSizes(*B, rbs, cbs));
  PetscCall(MatSetType(*B, MATSEQELLMP));
  PetscCall(PetscLayoutSetUp((*B)->rmap));
  PetscCall(PetscLayoutSetUp((*B)->cmap));
  data_of(*B)->settings              = settings;
  data_of(*B)->settings.options_read = true; // the parent's settings, not this block's options
  PetscFunctionReturn(0);
}

PetscErrorCode ELLMPViewReport(PetscViewer viewer, const MatAIJMPInfo &info, const AIJMPSettings &settings,
                               int format_group, double memory, PetscInt64 rows)
{
  PetscInt64 nnz = 0;

  PetscFunctionBegin;
  PetscCall(AIJMPViewInfo(viewer, info, settings, format_group, "ellmp"));
  for (int f = 0; f < kFormatCount; ++f)
    nnz += info.nnz[f];
  // AIJ: values and columns per nonzero, row offsets and lengths per row
  const double per = nnz ? 1.0 / (double)nnz : 0.0, aij = 12.0 * (double)nnz + 12.0 * (double)rows;
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "  memory: %.3g bytes per nonzero, the only copy (MATAIJ: %.3g, %.2fx more)\n",
                                   memory * per, aij * per, memory > 0 ? aij / memory : 1.0));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

PetscErrorCode SeqELLMPTakeCompact(Mat B, std::unique_ptr<CompactCsr> &c)
{
  PetscFunctionBegin;
  c = std::move(data_of(B)->compact);
  forget_rows(data_of(B));
  PetscFunctionReturn(0);
}

PetscErrorCode SeqELLMPLastReads(Mat B, std::unique_ptr<CompactRowReader> &rows,
                                 std::unique_ptr<CompactValuesRelease> &release, bool with_indices)
{
  SeqELLMP *d = data_of(B);

  PetscFunctionBegin;
  PetscCheck(d->compact, PETSC_COMM_SELF, PETSC_ERR_PLIB, "petscmp: ellmp has no stored rows to read");
  PetscCall(guarded([&] {
    rows    = std::make_unique<CompactRowReader>(*d->compact);
    release = std::make_unique<CompactValuesRelease>(*d->compact, with_indices);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode SeqELLMPHoldsAPattern(Mat B, bool *zeros)
{
  SeqELLMP *d = data_of(B);

  PetscFunctionBegin;
  *zeros = false;
  if (d->compact) PetscCall(guarded([&] { *zeros = compact_holds_a_pattern(*d->compact); }));
  PetscFunctionReturn(0);
}

PetscErrorCode SeqELLMPStore(Mat B, Mat aij, std::unique_ptr<CompactCsr> c, bool value_only, bool same_pattern)
{
  PetscFunctionBegin;
  PetscCall(install_compact(B, aij, std::move(c), value_only, same_pattern));
  B->preallocated = PETSC_TRUE;
  PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY)); // nothing to assemble: marks it assembled
  PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

PetscErrorCode SeqELLMPToAIJ(Mat A, Mat *aij)
{
  return to_aij(A, aij);
}

PetscErrorCode ELLMPCarryIdentity(Mat A, Mat M)
{
  DM dm;

  PetscFunctionBegin;
  if (A->rmap->mapping || A->cmap->mapping)
    PetscCall(MatSetLocalToGlobalMapping(M, A->rmap->mapping, A->cmap->mapping));
  PetscCall(MatGetDM(A, &dm));
  if (dm) PetscCall(MatSetDM(M, dm));
  PetscCall(MatPropagateSymmetryOptions(A, M));
  PetscFunctionReturn(0);
}

PetscErrorCode ELLMPNewLoadMatrix(Mat A, MatType type, Mat *M)
{
  PetscInt bs   = A->rmap->bs;
  PetscBool set = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetInt(((PetscObject)A)->options, ((PetscObject)A)->prefix, "-matload_block_size", &bs, &set));
  PetscCall(MatCreate(PetscObjectComm((PetscObject)A), M));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*M, "petscmp_internal_"));
  // an HDF5 file holds a matrix under its name: the name A was given (PETSc's tutorials load "A")
  if (((PetscObject)A)->name) PetscCall(PetscObjectSetName((PetscObject)*M, ((PetscObject)A)->name));
  PetscCall(MatSetType(*M, type));
  if (bs > 1) PetscCall(MatSetBlockSize(*M, bs));
  PetscFunctionReturn(0);
}

PetscErrorCode SeqELLMPTwin(Mat A, Mat *aij)
{
  AIJTwin &t = data_of(A)->twin;
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  if (t.aij && t.pattern != A->nonzerostate) PetscCall(MatDestroy(&t.aij));
  if (!t.aij) {
    PetscCall(to_aij(A, &t.aij));
    t.pattern = A->nonzerostate;
  } else if (t.synced != state) {
    PetscCall(SeqELLMPRefreshAIJ(A, t.aij));
  }
  // what A's flags say now (MatSetOption changes no state, so a twin made earlier would keep the old flags)
  PetscCall(MatPropagateSymmetryOptions(A, t.aij));
  t.synced = state;
  *aij     = t.aij;
  PetscFunctionReturn(0);
}

PetscErrorCode SeqELLMPStoreValues(Mat A, Mat aij)
{
  PetscFunctionBegin;
  PetscCall(store_from_aij(A, aij, true));
  PetscCall(PetscObjectStateIncrease((PetscObject)A)); // new values: preconditioners must see them
  if (data_of(A)->twin.aij == aij) PetscCall(PetscObjectStateGet((PetscObject)A, &data_of(A)->twin.synced));
  PetscFunctionReturn(0);
}

PetscErrorCode SeqELLMPRefreshAIJ(Mat A, Mat aij)
{
  const PetscInt *i, *j;
  PetscScalar *a;
  PetscMemType mtype;
  const CompactCsr *c = data_of(A)->compact.get();

  PetscFunctionBegin;
  PetscCall(MatSeqAIJGetCSRAndMemType(aij, &i, &j, &a, &mtype));
  PetscCheck(c && c->nrows == aij->rmap->n && c->stats.nnz == i[aij->rmap->n], PETSC_COMM_SELF, PETSC_ERR_ARG_INCOMP,
             "petscmp: the AIJ copy no longer has the matrix's pattern");
  PetscCall(MatSeqAIJGetArrayWrite(aij, &a));
  PetscCall(guarded([&] { read_compact_csr<PetscInt>(*c, i, nullptr, a); }));
  PetscCall(MatSeqAIJRestoreArrayWrite(aij, &a));
  PetscFunctionReturn(0);
}

const CompactCsr *SeqELLMPCompact(Mat B)
{
  return data_of(B)->compact.get();
}

PetscErrorCode SeqELLMPReport(Mat B, MatAIJMPInfo &info, PetscInt *inodes, PetscInt *inode_limit)
{
  SeqELLMP *d = data_of(B);

  PetscFunctionBegin;
  if (d->compact) PetscCall(AIJMPAccumulateInfo(*d->compact, info, AIJMPReadLevel(d->settings)));
  info.segments     = storage_mode_segments(d->settings.opts.mode);
  info.read_level   = AIJMPReadLevel(d->settings);
  info.lossy        = AIJMPReadsExact(d->settings) ? PETSC_FALSE : PETSC_TRUE;
  info.builds       = PetscMax(info.builds, d->full_builds);
  info.value_builds = PetscMax(info.value_builds, d->value_builds);
  if (d->compact) AIJMPGatheredXInfo(d->gathered_x, d->settings.gathered_x, d->full_builds, info);
  if (d->device) { // (serial; an MPI matrix sums its blocks')
    info.device_copies += d->device->builds;
    info.device_bytes += d->device->bytes;
  }
  info.aij_bytes += d->aij_bytes - (d->compact ? d->compact->stats.aij_bytes() : 0.0);
  if (inodes) *inodes = d->inodes;
  if (inode_limit) *inode_limit = d->inode_limit;
  PetscFunctionReturn(0);
}
} // namespace petscmp

using namespace petscmp;

/*MC
   MATSEQELLMP - MATSEQELLMP = "seqellmp" - the sequential `MATELLMP`: sliced ELL (or nodes) whose compact values are
the only copy

   Level: beginner

.seealso: `MATELLMP`, `MATSEQAIJ`
M*/
PetscErrorCode MatCreate_SeqELLMP(Mat A)
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCall(ELLMPCheckNotLinearSolverServer(A));
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)A), &size));
  PetscCheck(size == 1, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG,
             "petscmp: seqellmp is a one-process type; use -mat_type ellmp, which picks seqellmp or mpiellmp");
  A->data = new (std::nothrow) SeqELLMP();
  PetscCheck(A->data, PETSC_COMM_SELF, PETSC_ERR_MEM, "petscmp: out of memory");
  PetscCall(PetscMemzero(A->ops, sizeof(*A->ops)));
  set_operations(A->ops);
  if (!petsc_queryfunction) petsc_queryfunction = ((PetscObject)A)->bops->queryfunction;
  ((PetscObject)A)->bops->queryfunction = QueryFunction_SeqELLMP;
  PetscCall(compose_functions(A, true));
  PetscCall(PetscObjectChangeTypeName((PetscObject)A, MATSEQELLMP));
  PetscFunctionReturn(0);
}

/*@
   MatELLMPSetStorage - Sets how a `MATELLMP` matrix stores its values (the only copy); products compute in fp64.

   Logically Collective

   Input Parameters:
+  A - the matrix
-  storage - see `MatAIJMPStorage`

   Options Database Key:
.  -mat_ellmp_storage <lossless,fp32,fp16,bf16,fp11_20,fp11_4,tolerance,rowsplit,entrysplit,split2,split4> - the storage

   Notes:
   Set before assembly, it decides how the assembled values are stored. On an assembled matrix the stored values
   are stored anew in the new storage: a lossy storage rounds them, and a wider one later does not bring back what
   was rounded away (the matrix is what it stores). Other matrix types ignore the call.

   Level: beginner

.seealso: `MATELLMP`, `MatAIJMPStorage`, `MatAIJMPSetStorage()`
@*/
PetscErrorCode MatELLMPSetStorage(Mat A, MatAIJMPStorage storage)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCheck(storage >= MAT_AIJMP_LOSSLESS && storage <= MAT_AIJMP_SPLIT4, PetscObjectComm((PetscObject)A),
             PETSC_ERR_ARG_OUTOFRANGE, "Unknown ellmp storage %d", (int)storage);
  PetscTryMethod(A, "MatELLMPSetStorage_C", (Mat, MatAIJMPStorage), (A, storage));
  PetscFunctionReturn(0);
}

namespace petscmp {
PetscErrorCode SeqELLMPGetSettings(Mat A, AIJMPSettings **s)
{
  PetscFunctionBegin;
  PetscCall(get_settings(A, s));
  PetscFunctionReturn(0);
}
} // namespace petscmp
