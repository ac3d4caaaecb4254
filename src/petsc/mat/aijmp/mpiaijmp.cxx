// MATMPIAIJMP: a MATMPIAIJ whose diagonal and off-diagonal blocks are
// seqaijmp. MatMult_MPIAIJ calls the diagonal block's mult and the
// off-diagonal block's multadd, so the blocks do the work; this layer decides
// the formats of both blocks together (a row's format is chosen over the whole
// row, as in serial), keeps the blocks seqaijmp when MPIAIJ recreates them at
// preallocation, and reports for the whole matrix.
#include <cstddef>
#include "mat/aijmp/aijmpimpl.h"

namespace petscmp {
PetscErrorCode MatConvert_SeqAIJMP_SeqAIJ_Fn(Mat A, MatType, MatReuse reuse, Mat *newmat);

PetscErrorCode AIJMPBuildParts(MPI_Comm comm, Mat Ad, Mat Ao, const AIJMPSettings &settings, int format_group,
                               bool own_indices, bool same_d, bool same_o, std::unique_ptr<CompactCsr> &cd,
                               std::unique_ptr<CompactCsr> &co, bool *refilled_d, bool *refilled_o, bool temporary)
{
  CsrView<PetscInt> vd, vo;
  const StorageOptions &base = settings.opts;

  PetscFunctionBegin;
  PetscCall(SeqAIJBuildView(Ad, vd));
  PetscCall(SeqAIJBuildView(Ao, vo));
  StorageOptions od = base, oo = base;
  od.threads = oo.threads = AIJMPThreadCount(settings);
  od.own_indices = oo.own_indices = own_indices;
  od.format_group = oo.format_group = format_group;
  PetscCall(SeqAIJMPSumOrder(Ad, &od.order));
  PetscCall(SeqAIJMPSumOrder(Ao, &oo.order));
  if (base.mode == StorageMode::rowsplit && base.mean_abs_value < 0) { // the range is a mean over all ranks
    AbsSum sd, so;
    PetscCall(guarded([&] {
      sd = abs_value_sum(vd);
      so = abs_value_sum(vo);
    }));
    double sums[2] = {sd.sum + so.sum, static_cast<double>(sd.count + so.count)};
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, comm));
    od.mean_abs_value = oo.mean_abs_value = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
  }
  *refilled_d = *refilled_o = false;
  PetscCall(guarded([&] {
    if (base.mode == StorageMode::entrysplit) {
      cd = std::make_unique<CompactCsr>(build_entry_split(vd, od));
      co = std::make_unique<CompactCsr>(build_entry_split(vo, oo));
    } else { // a row's format is decided over both blocks, usually in one pass over the values
      std::vector<CompactPart<PetscInt>> parts(2);
      parts[0].csr      = vd;
      parts[1].csr      = vo;
      parts[0].opts     = od;
      parts[1].opts     = oo;
      parts[0].reusable = same_d && cd;
      parts[1].reusable = same_o && co;
      if (cd) parts[0].copy = std::move(*cd);
      if (co) parts[1].copy = std::move(*co);
      const std::int64_t nnz = (vd.nrows ? vd.rowptr[vd.nrows] : 0) + (vo.nrows ? vo.rowptr[vo.nrows] : 0);
      if (temporary && own_indices && !parts[0].reusable && !parts[1].reusable)
        build_compact_parts_by_rows(parts, AssemblyStep(settings, nnz), StoredRowsReturn({vd, vo}));
      else {
        StoredRowsReturn give_back({vd, vo});
        if (!(temporary && own_indices &&
              refill_compact_parts_by_rows(
                  parts, AssemblyStep(settings, nnz), std::ref(give_back),
                  [&](std::size_t i, std::int64_t rows) { give_back.restore(i, parts[i].copy, rows); })))
          update_compact_parts(parts);
      }
      *refilled_d = parts[0].refilled;
      *refilled_o = parts[1].refilled;
      cd          = std::make_unique<CompactCsr>(std::move(parts[0].copy));
      co          = std::make_unique<CompactCsr>(std::move(parts[1].copy));
    }
  }));
  PetscFunctionReturn(0);
}
} // namespace petscmp

using namespace petscmp;

namespace {

MPIAIJMP *data_of(Mat A)
{
  return static_cast<MPIAIJMP *>(A->spptr);
}

PetscErrorCode blocks_of(Mat A, Mat *Ad, Mat *Ao)
{
  const PetscInt *garray;

  PetscFunctionBegin;
  PetscCall(MatMPIAIJGetSeqAIJ(A, Ad, Ao, &garray));
  PetscFunctionReturn(0);
}

// MPIAIJ makes its blocks plain SEQAIJ at every preallocation.
PetscErrorCode convert_blocks(Mat A)
{
  Mat blocks[2];
  PetscBool is_mp;

  PetscFunctionBegin;
  if (!A->preallocated) PetscFunctionReturn(0);
  PetscCall(blocks_of(A, &blocks[0], &blocks[1]));
  for (Mat &b : blocks) {
    if (!b) continue;
    PetscCall(PetscObjectTypeCompare((PetscObject)b, MATSEQAIJMP, &is_mp));
    if (!is_mp) PetscCall(MatConvert_SeqAIJ_SeqAIJMP(b, MATSEQAIJMP, MAT_INPLACE_MATRIX, &b));
    PetscCall(SeqAIJMPSetSettings(b, data_of(A)->settings));
  }
  PetscFunctionReturn(0);
}

// Makes the compact copies of both blocks current, formats decided per whole
// row; nothing to do when both blocks compute with AIJ's kernel, unless the
// statistics are wanted (need_copies).
PetscErrorCode prepare(Mat A, bool need_copies = false)
{
  MPIAIJMP *d = data_of(A);
  Mat Ad, Ao;
  PetscBool current_d, current_o;

  PetscFunctionBegin;
  PetscCall(AIJMPReadOptionsLazily(A, d->settings));
  PetscCall(AIJMPCheckReadLevel(A, d->settings));
  PetscCall(convert_blocks(A));
  PetscCall(blocks_of(A, &Ad, &Ao));
  PetscBool uses_d, uses_o;
  PetscCall(SeqAIJMPUsesCompact(Ad, &uses_d));
  PetscCall(SeqAIJMPUsesCompact(Ao, &uses_o));
  if (!need_copies && !uses_d && !uses_o) PetscFunctionReturn(0);
  PetscCall(SeqAIJMPIsCurrent(Ad, &current_d));
  PetscCall(SeqAIJMPIsCurrent(Ao, &current_o));
  PetscObjectState state;
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  PetscBool stale = (!current_d || !current_o || state != d->built_state) ? PETSC_TRUE : PETSC_FALSE;
  // rowsplit's range is global: every rank must take part in the reduction
  if (d->settings.opts.mode == StorageMode::rowsplit)
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &stale, 1, MPIU_BOOL, MPI_LOR, PetscObjectComm((PetscObject)A)));
  if (!stale) PetscFunctionReturn(0);

  PetscCall(PetscLogEventBegin(MATAIJMP_Build, A, 0, 0, 0));
  std::unique_ptr<CompactCsr> cd, co;
  bool same_d = false, same_o = false, refilled_d = false, refilled_o = false;
  PetscCall(SeqAIJMPTakeCompact(Ad, cd, &same_d)); // their layout or at least their memory is reused
  PetscCall(SeqAIJMPTakeCompact(Ao, co, &same_o));
  PetscCall(AIJMPBuildParts(PetscObjectComm((PetscObject)A), Ad, Ao, d->settings, AIJMPFormatGroup(A, d->settings.opts),
                            false, same_d, same_o, cd, co, &refilled_d, &refilled_o));
  PetscCall(SeqAIJMPSetSettings(Ad, d->settings));
  PetscCall(SeqAIJMPSetSettings(Ao, d->settings));
  PetscCall(SeqAIJMPInstall(Ad, std::move(cd), refilled_d));
  PetscCall(SeqAIJMPInstall(Ao, std::move(co), refilled_o));
  d->built_state = state;
  PetscCall(PetscLogEventEnd(MATAIJMP_Build, A, 0, 0, 0));
  PetscFunctionReturn(0);
}

PetscErrorCode MatMult_MPIAIJMP(Mat A, Vec x, Vec y)
{
  PetscFunctionBegin;
  PetscCall(prepare(A));
  PetscCall(data_of(A)->mult(A, x, y));
  PetscFunctionReturn(0);
}
PetscErrorCode MatMultAdd_MPIAIJMP(Mat A, Vec x, Vec y, Vec z)
{
  PetscFunctionBegin;
  PetscCall(prepare(A));
  PetscCall(data_of(A)->multadd(A, x, y, z));
  PetscFunctionReturn(0);
}
PetscErrorCode MatMultTranspose_MPIAIJMP(Mat A, Vec x, Vec y)
{
  PetscFunctionBegin;
  PetscCall(prepare(A));
  PetscCall(data_of(A)->multtranspose(A, x, y));
  PetscFunctionReturn(0);
}
PetscErrorCode MatMultTransposeAdd_MPIAIJMP(Mat A, Vec x, Vec y, Vec z)
{
  PetscFunctionBegin;
  PetscCall(prepare(A));
  PetscCall(data_of(A)->multtransposeadd(A, x, y, z));
  PetscFunctionReturn(0);
}

PetscErrorCode MatAIJMPGetInfo_MPIAIJMP(Mat A, MatAIJMPInfo *info)
{
  Mat blocks[2];
  MatAIJMPInfo part;

  PetscFunctionBegin;
  PetscCall(prepare(A, true));
  PetscCall(blocks_of(A, &blocks[0], &blocks[1]));
  PetscCall(PetscMemzero(info, sizeof(*info)));
  for (Mat b : blocks) {
    PetscCall(MatAIJMPGetInfo(b, &part));
    for (int f = 0; f < PETSCMP_NUM_FORMATS; ++f) {
      info->nnz[f] += part.nnz[f];
      info->max_rel_error[f] = PetscMax(info->max_rel_error[f], part.max_rel_error[f]);
    }
    info->stored += part.stored;
    info->sorted_windows += part.sorted_windows;
    info->long_rows += part.long_rows;
    for (int k = 0; k < 3; ++k)
      info->kernel_parts[k] += part.kernel_parts[k];
    info->kernel_by_bytes += part.kernel_by_bytes;
    for (int k = 0; k < 3; ++k)
      info->gathered_x_parts[k] += part.gathered_x_parts[k];
    info->kernel_deferred += part.kernel_deferred;
    info->kernel_trial_in = PetscMax(info->kernel_trial_in, part.kernel_trial_in);
    info->bytes += part.bytes;
    info->aij_bytes += part.aij_bytes;
  }
  // a row counts once, in the diagonal block (both blocks store it in the same format)
  PetscCall(MatAIJMPGetInfo(blocks[0], &part));
  for (int f = 0; f < PETSCMP_NUM_FORMATS; ++f)
    info->rows[f] = part.rows[f];
  info->sliced_rows  = part.sliced_rows;
  info->shifted_rows = part.shifted_rows;
  info->narrow_rows  = part.narrow_rows;
  info->patched_rows = part.patched_rows;
  info->builds       = part.builds; // of the diagonal block; the most of any rank below
  info->value_builds = part.value_builds;
  info->node_rows    = part.node_rows;
  info->nodes        = part.nodes;
  info->wide_nodes   = part.wide_nodes;
  for (int n = 0; n < 9; ++n)
    info->nodes_of_size[n] = part.nodes_of_size[n];
  static_assert(offsetof(MatAIJMPInfo, nodes_of_size) + sizeof(info->nodes_of_size) -
                        offsetof(MatAIJMPInfo, node_rows) ==
                    12 * sizeof(PetscInt64),
                "the node counts of MatAIJMPInfo are 12 consecutive PetscInt64");
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &info->node_rows, 12, MPIU_INT64, MPI_SUM, PetscObjectComm((PetscObject)A)));
  MPI_Comm comm = PetscObjectComm((PetscObject)A);
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, info->rows, PETSCMP_NUM_FORMATS, MPIU_INT64, MPI_SUM, comm));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, info->nnz, PETSCMP_NUM_FORMATS, MPIU_INT64, MPI_SUM, comm));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, info->max_rel_error, PETSCMP_NUM_FORMATS, MPIU_REAL, MPI_MAX, comm));
  PetscInt64 counts[12] = {info->stored,          info->sliced_rows,     info->kernel_parts[0], info->kernel_parts[1],
                           info->kernel_parts[2], info->kernel_by_bytes, info->shifted_rows,    info->kernel_deferred,
                           info->narrow_rows,     info->patched_rows,    info->sorted_windows,  info->long_rows};
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, counts, 12, MPIU_INT64, MPI_SUM, comm));
  info->sorted_windows = counts[10];
  info->long_rows      = counts[11];
  info->narrow_rows    = counts[8];
  info->patched_rows   = counts[9];
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &info->kernel_trial_in, 1, MPIU_INT64, MPI_MAX, comm));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, info->gathered_x_parts, 3, MPIU_INT64, MPI_SUM, comm));
  info->kernel_deferred = counts[7];
  info->kernel_by_bytes = counts[5];
  info->shifted_rows    = counts[6];
  info->stored          = counts[0];
  info->sliced_rows     = counts[1];
  for (int k = 0; k < 3; ++k)
    info->kernel_parts[k] = counts[2 + k];
  static_assert(offsetof(MatAIJMPInfo, value_builds) == offsetof(MatAIJMPInfo, builds) + sizeof(PetscInt64),
                "builds and value_builds are consecutive");
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &info->builds, 2, MPIU_INT64, MPI_MAX, comm));
  PetscReal bytes[2] = {info->bytes, info->aij_bytes};
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, bytes, 2, MPIU_REAL, MPI_SUM, comm));
  info->bytes      = bytes[0];
  info->aij_bytes  = bytes[1];
  info->lossy      = AIJMPReadsExact(data_of(A)->settings) ? PETSC_FALSE : PETSC_TRUE;
  info->segments   = storage_mode_segments(data_of(A)->settings.opts.mode);
  info->read_level = AIJMPReadLevel(data_of(A)->settings);
  PetscFunctionReturn(0);
}

PetscErrorCode MatAIJMPGetSettings_MPIAIJMP(Mat A, AIJMPSettings **s)
{
  PetscFunctionBegin;
  *s = &data_of(A)->settings;
  PetscFunctionReturn(0);
}

PetscErrorCode MatView_MPIAIJMP(Mat A, PetscViewer viewer)
{
  PetscBool ascii;
  PetscViewerFormat format;

  PetscFunctionBegin;
  if (data_of(A)->view) PetscCall(data_of(A)->view(A, viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii || !A->assembled) PetscFunctionReturn(0);
  PetscCall(PetscViewerGetFormat(viewer, &format));
  if (format != PETSC_VIEWER_ASCII_INFO && format != PETSC_VIEWER_ASCII_INFO_DETAIL) PetscFunctionReturn(0);
  MatAIJMPInfo info;
  PetscCall(MatAIJMPGetInfo_MPIAIJMP(A, &info));
  PetscCall(AIJMPViewInfo(viewer, info, data_of(A)->settings, AIJMPFormatGroup(A, data_of(A)->settings.opts)));
  PetscFunctionReturn(0);
}

PetscErrorCode MatSetFromOptions_MPIAIJMP(Mat A, PetscOptionItems *items)
{
  PetscFunctionBegin;
  if (data_of(A)->setfromoptions) PetscCall(data_of(A)->setfromoptions(A, items));
  PetscCall(AIJMPSetFromOptions(A, data_of(A)->settings));
  PetscCall(PetscObjectStateIncrease((PetscObject)A));
  PetscFunctionReturn(0);
}

PetscErrorCode MatDuplicate_MPIAIJMP(Mat A, MatDuplicateOption op, Mat *B)
{
  PetscFunctionBegin;
  PetscCall(data_of(A)->duplicate(A, op, B));
  data_of(*B)->settings = data_of(A)->settings;
  PetscCall(convert_blocks(*B));
  PetscFunctionReturn(0);
}

PetscErrorCode MatMPIAIJSetPreallocation_MPIAIJMP(Mat B, PetscInt d_nz, const PetscInt d_nnz[], PetscInt o_nz,
                                                  const PetscInt o_nnz[])
{
  PetscFunctionBegin;
  PetscCall(data_of(B)->preallocation(B, d_nz, d_nnz, o_nz, o_nnz));
  PetscCall(convert_blocks(B));
  PetscFunctionReturn(0);
}

PetscErrorCode MatConvert_MPIAIJMP_MPIAIJ(Mat A, MatType, MatReuse reuse, Mat *newmat);

PetscErrorCode MatDestroy_MPIAIJMP(Mat A);

ReplacedOps our_ops()
{
  return ReplacedOps{MatMult_MPIAIJMP,
                     MatMultAdd_MPIAIJMP,
                     MatMultTranspose_MPIAIJMP,
                     MatMultTransposeAdd_MPIAIJMP,
                     MatDestroy_MPIAIJMP,
                     MatDuplicate_MPIAIJMP,
                     MatView_MPIAIJMP,
                     MatSetFromOptions_MPIAIJMP,
                     MatProductSetFromOptions_AIJMP,
                     MatCreateGraph_AIJMP};
}

PetscErrorCode compose_functions(Mat A, bool on)
{
  PetscObject o = (PetscObject)A;

  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaijmp_mpiaij_C", on ? MatConvert_MPIAIJMP_MPIAIJ : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaijmp_aij_C", on ? MatConvert_MPIAIJMP_MPIAIJ : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaij_mpiaijmp_C", on ? MatConvert_MPIAIJ_MPIAIJMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaij_aijmp_C", on ? MatConvert_MPIAIJ_MPIAIJMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatAIJMPGetSettings_C", on ? MatAIJMPGetSettings_MPIAIJMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatAIJMPGetInfo_C", on ? MatAIJMPGetInfo_MPIAIJMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatMPIAIJSetPreallocation_C",
                                       on ? MatMPIAIJSetPreallocation_MPIAIJMP : data_of(A)->preallocation));
  PetscCall(AIJMPComposeTypeKeyed(A, false, on));
  PetscFunctionReturn(0);
}

// blocks_back: also make the blocks plain SEQAIJ again (not when destroying:
// MatHeaderMerge destroys with the type name already cleared).
PetscErrorCode restore_mpiaij(Mat A, bool blocks_back)
{
  MPIAIJMP *d = data_of(A);
  Mat blocks[2];

  PetscFunctionBegin;
  RestoreOps(A, *d, our_ops());
  PetscCall(compose_functions(A, false));
  delete d;
  A->spptr = nullptr;
  if (blocks_back && A->preallocated) {
    PetscCall(blocks_of(A, &blocks[0], &blocks[1]));
    for (Mat &b : blocks)
      if (b && b->spptr) PetscCall(MatConvert_SeqAIJMP_SeqAIJ_Fn(b, MATSEQAIJ, MAT_INPLACE_MATRIX, &b));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode MatDestroy_MPIAIJMP(Mat A)
{
  PetscErrorCode (*destroy)(Mat) = data_of(A)->destroy;

  PetscFunctionBegin;
  PetscCall(restore_mpiaij(A, false));
  PetscCall((*destroy)(A));
  PetscFunctionReturn(0);
}

PetscErrorCode MatConvert_MPIAIJMP_MPIAIJ(Mat A, MatType, MatReuse reuse, Mat *newmat)
{
  Mat B = *newmat;

  PetscFunctionBegin;
  if (reuse == MAT_INITIAL_MATRIX)
    PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &B));
  else if (reuse == MAT_REUSE_MATRIX)
    PetscCall(MatCopy(A, B, SAME_NONZERO_PATTERN));
  if (B->spptr) PetscCall(restore_mpiaij(B, true));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATMPIAIJ));
  *newmat = B;
  PetscFunctionReturn(0);
}

} // namespace

PetscErrorCode MatConvert_MPIAIJ_MPIAIJMP(Mat A, MatType, MatReuse reuse, Mat *newmat)
{
  Mat B = *newmat;

  PetscFunctionBegin;
  if (reuse == MAT_INITIAL_MATRIX)
    PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &B));
  else if (reuse == MAT_REUSE_MATRIX)
    PetscCall(MatCopy(A, B, SAME_NONZERO_PATTERN));
  if (B->spptr) {
    *newmat = B;
    PetscFunctionReturn(0);
  }
  auto *d = new MPIAIJMP();
  PetscCall(PetscObjectQueryFunction((PetscObject)B, "MatMPIAIJSetPreallocation_C", &d->preallocation));
  B->spptr = d;

  InstallOps(B, *d, our_ops());
  PetscCall(compose_functions(B, true));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATMPIAIJMP));
  PetscCall(convert_blocks(B));
  *newmat = B;
  PetscFunctionReturn(0);
}

/*MC
   MATMPIAIJMP - MATMPIAIJMP = "mpiaijmp" - a `MATMPIAIJ` matrix whose diagonal and off-diagonal blocks are
   `MATSEQAIJMP`: products read compact-precision values and compute in fp64. Each row's format is chosen over
   the whole row, so 1, 2 or 3 processes store the same values as one.

   Options Database Keys: as `MATSEQAIJMP`

   Level: beginner

.seealso: `MATAIJMP`, `MATSEQAIJMP`, `MatAIJMPSetStorage()`
M*/
PetscErrorCode MatCreate_MPIAIJMP(Mat A)
{
  PetscFunctionBegin;
  PetscCall(MatSetType(A, MATMPIAIJ));
  PetscCall(MatConvert_MPIAIJ_MPIAIJMP(A, MATMPIAIJMP, MAT_INPLACE_MATRIX, &A));
  PetscFunctionReturn(0);
}
