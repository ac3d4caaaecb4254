// Private to the aijmp glue: the data a seqaijmp/mpiaijmp matrix carries in
// A->spptr, and the functions seq and MPI share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <vector>

#include <petsc/private/matimpl.h>

#include "petscmp.h"
#include "petscmpglue.h"
#include "common/device_backend.h"
#include "spmv.hpp"
#include "common/timed_choice.h"
#include "petscmp/core/compact_rows.hpp"
#include "petscmp/core/compact_csr.hpp"

namespace petscmp {

// Split storage, a read level per local row (MatAIJMPSetRowReadLevels): MatMult and MatMultAdd read row i at least
// at levels[i] segments (the rows stored together, a node or a slice, at the highest level among them).
struct RowReadLevels {
  std::vector<std::uint8_t> levels; // per local row: segments read, 1 .. the storage's segments
  PetscInt max     = 1;             // the highest level of a row
  PetscInt rows[5] = {};            // rows[l]: local rows at level l
};

// Settings of one matrix (for an MPI matrix, the parent's, pushed to its blocks).
struct AIJMPSettings {
  // format_group 0: the matrix's block size (-mat_aijmp_block_formats, on), resolved at each build (AIJMPFormatGroup)
  StorageOptions opts = [] {
    StorageOptions o;
    o.format_group = 0;
    return o;
  }();
  PetscInt nthreads     = 0; // 0: openmp::default_thread_count()
  MatAIJMPKernel kernel = MAT_AIJMP_KERNEL_AUTO;
  // auto, lossless, a copy that saves under 10% of AIJ's inode bytes: AIJ products before the timed trial (< 0: never)
  PetscInt trial_after = 100;
  // how the AVX-512 kernels read the x of gathered slices (auto: timed where they hold enough of the values)
  MatAIJMPGatheredX gathered_x = MAT_AIJMP_GATHERED_X_AUTO;
  // ellmp: nonzeros stored per step of an assembly, the assembly matrix's memory of the stored rows given back
  // after each (0: automatic)
  PetscInt64 assembly_step = 0;
  // ellmp: MatSOR on an AIJ copy of the matrix instead of on the stored rows (-mat_ellmp_sor_aij_copy)
  bool sor_aij_copy = false;
  // split storage: the segments products read, from the most significant (0: all, the exact values)
  PetscInt read_segments = 0;
  // split storage: a read level per local row for MatMult and MatMultAdd (null: read_segments for every row);
  // shared by an MPI matrix's blocks (the same local rows)
  std::shared_ptr<const RowReadLevels> row_levels;
  bool options_read       = false; // -mat_aijmp_* were read (by MatSetFromOptions or lazily)
  unsigned explicitly_set = 0;     // fields set through the C API win over a lazy options read
};
enum : unsigned {
  kSetStorage   = 1,
  kSetTolerance = 2,
  kSetRowSplit  = 4,
  kSetRange     = 8,
  kSetThreads   = 16,
  kSetLayout    = 32,
  kSetKernel    = 64,
  kSetReadLevel = 128,
  kSetGatheredX = 256
};

// The segments products read: the setting, or all of them (0 for storage that is not split).
inline PetscInt AIJMPReadLevel(const AIJMPSettings &s)
{
  const PetscInt segments = storage_mode_segments(s.opts.mode);
  return s.read_segments > 0 && s.read_segments < segments ? s.read_segments : segments;
}
// Whether products read exactly the assembled values (lossless, or split storage read in full): AIJ's kernel then
// gives the same result bit for bit.
inline bool AIJMPReadsExact(const AIJMPSettings &s)
{
  return !storage_mode_is_lossy(s.opts.mode) && AIJMPReadLevel(s) == storage_mode_segments(s.opts.mode);
}

// Everything that identifies the master values a compact copy was built from.
struct BuildKey {
  PetscObjectState state = -1, nonzerostate = -1;
  PetscInt ncols   = -1;
  const void *cols = nullptr, *values = nullptr;
  bool operator==(const BuildKey &o) const
  {
    return state == o.state && nonzerostate == o.nonzerostate && ncols == o.ncols && cols == o.cols &&
           values == o.values;
  }
};

// The Mat operations aijmp replaces: the base type's are kept to call and to
// put back (SeqAIJ's and MPIAIJ's functions are not exported).
struct ReplacedOps {
  PetscErrorCode (*mult)(Mat, Vec, Vec)                                      = nullptr;
  PetscErrorCode (*multadd)(Mat, Vec, Vec, Vec)                              = nullptr;
  PetscErrorCode (*multtranspose)(Mat, Vec, Vec)                             = nullptr;
  PetscErrorCode (*multtransposeadd)(Mat, Vec, Vec, Vec)                     = nullptr;
  PetscErrorCode (*destroy)(Mat)                                             = nullptr;
  PetscErrorCode (*duplicate)(Mat, MatDuplicateOption, Mat *)                = nullptr;
  PetscErrorCode (*view)(Mat, PetscViewer)                                   = nullptr;
  PetscErrorCode (*setfromoptions)(Mat, PetscOptionItems *)                  = nullptr;
  PetscErrorCode (*productsetfromoptions)(Mat)                               = nullptr;
  PetscErrorCode (*creategraph)(Mat, PetscBool, PetscBool, PetscReal, Mat *) = nullptr;
};

// Calls fn(slot in B->ops, slot in saved, slot in ours) for every replaced operation.
template <typename Fn> void ForEachReplacedOp(MatOps o, ReplacedOps &saved, const ReplacedOps &ours, Fn &&fn)
{
  fn(o->mult, saved.mult, ours.mult);
  fn(o->multadd, saved.multadd, ours.multadd);
  fn(o->multtranspose, saved.multtranspose, ours.multtranspose);
  fn(o->multtransposeadd, saved.multtransposeadd, ours.multtransposeadd);
  fn(o->destroy, saved.destroy, ours.destroy);
  fn(o->duplicate, saved.duplicate, ours.duplicate);
  fn(o->view, saved.view, ours.view);
  fn(o->setfromoptions, saved.setfromoptions, ours.setfromoptions);
  fn(o->productsetfromoptions, saved.productsetfromoptions, ours.productsetfromoptions);
  fn(o->creategraph, saved.creategraph, ours.creategraph);
}

// Keeps B's current operations in `saved` and installs `ours`.
inline void InstallOps(Mat B, ReplacedOps &saved, const ReplacedOps &ours)
{
  ForEachReplacedOp(B->ops, saved, ours, [](auto &op, auto &keep, auto mine) {
    keep = op;
    op   = mine;
  });
}

// Puts the base type's operations back where ours are still installed: PETSc
// may have replaced one since (MatCreateSubMatrices installs its own destroy
// and keeps ours to call), and that one must stay.
inline void RestoreOps(Mat A, ReplacedOps &saved, const ReplacedOps &ours)
{
  ForEachReplacedOp(A->ops, saved, ours, [](auto &op, auto &keep, auto mine) {
    if (op == mine) op = keep;
  });
}

// The run-time choice of how the compact kernel reads the x of gathered slices
// (MAT_AIJMP_GATHERED_X_AUTO): scalar loads (candidate 0) or gathers (1), which
// give the same sums bit for bit. Timed only where gathered slices hold at
// least kMinShare of the stored values (elsewhere the two reads differ by less
// than the noise of a product), on the compact kernel's plain products once
// the AIJ-or-compact choice, if any, is made. A full build (another storage
// mode, rows that changed format) may change the layout: the choice restarts.
struct GatheredXSelection {
  static constexpr double kMinShare = 0.1;
  PetscInt64 build                  = -1;  // the full build whose copy the share and the timing belong to
  double share                      = 0.0; // of the stored values, those in gathered slices read by the AVX-512 kernels
  int sampled_kind                  = -1;  // the samples' kind: adds z (1) + 2 * segments read (-1: none yet)
  TimedChoice timing;
  bool timed() const { return share >= kMinShare; }
};
// How the next compact product of a copy `c` reads the x of its gathered
// slices, by the setting; for auto, (*sample) the read it times (-1: none).
// `full_builds` counts the copy's full builds (gx restarts when it moves on);
// may_sample: the product may be a sample (a plain product after any other
// trial); add: it adds z. The samples are all of the first sample's kind:
// MatMult or MatMultAdd (an MPI off-diagonal block's), and the segments of
// split storage read (mpjacobi changes the read level between products), so
// no median mixes products that read different bytes.
openmp::GatheredX AIJMPNextGatheredX(GatheredXSelection &gx, MatAIJMPGatheredX setting, const CompactCsr &c,
                                     PetscInt64 full_builds, bool may_sample, bool add, int *sample);
// Adds one block's read of x in gathered slices to info (gathered_x_parts, gathered_x_ms).
void AIJMPGatheredXInfo(const GatheredXSelection &gx, MatAIJMPGatheredX setting, PetscInt64 full_builds,
                        MatAIJMPInfo &info);

// The run-time choice between PETSc's AIJ kernel and the compact kernel
// (MAT_AIJMP_KERNEL_AUTO, lossless): the first 2 * kSamples products of a
// nonzero pattern alternate between the two, which give the same result bit
// for bit, and the faster by median is kept until the pattern changes.
struct KernelSelection {
  static constexpr int kSamples = TimedChoice::kSamples;
  PetscObjectState nonzerostate = -1;            // the pattern the samples belong to
  TimedChoice timing;                            // candidate 0: AIJ's kernel, 1: the compact one
  MatAIJMPKernel chosen = MAT_AIJMP_KERNEL_AUTO; // AUTO: not decided yet
  bool bytes_checked    = false;                 // choose_by_bytes ran for this pattern
  bool by_bytes         = false;                 // AIJ chosen without timing: the copy would read about AIJ's bytes
  bool deferred         = false; // AIJ's kernel until `aij_products` reaches the trial point, then timing
  PetscInt aij_products = 0;     // products by AIJ's kernel while deferred
  GatheredXSelection gathered_x; // the compact kernel's read of x in gathered slices
};

struct SeqAIJMP : ReplacedOps {
  AIJMPSettings settings;
  std::unique_ptr<CompactCsr> compact;
  BuildKey key;
  bool is_mpi_block = false; // a diagonal/off-diagonal block of an mpiaijmp matrix
  KernelSelection selection;
  bool values_dropped     = false; // `compact` keeps only its statistics (AIJ's kernel was chosen)
  PetscInt64 full_builds  = 0;     // compact copies built from scratch (formats, layout, indices, values)
  PetscInt64 value_builds = 0;     // value-only rebuilds: same pattern and row formats, values rewritten in place
  PetscErrorCode (*retrievevalues)(Mat) = nullptr;
  std::unique_ptr<DeviceMirror> device; // products on device arrays (common/device_backend.h), made at the first
};

struct MPIAIJMP : ReplacedOps {
  AIJMPSettings settings;
  PetscObjectState built_state = -1; // the parent's state when the blocks' copies were built
  PetscErrorCode (*preallocation)(Mat, PetscInt, const PetscInt[], PetscInt, const PetscInt[]) = nullptr;
};

// The master CSR of a SeqAIJ (or seqaijmp) matrix, without a state change.
inline PetscErrorCode SeqAIJCsrView(Mat A, CsrView<PetscInt> &view)
{
  const PetscInt *i, *j;
  PetscScalar *a;
  PetscMemType mtype;

  PetscFunctionBegin;
  PetscCall(MatSeqAIJGetCSRAndMemType(A, &i, &j, &a, &mtype));
  view = CsrView<PetscInt>{A->rmap->n, A->cmap->n, i, j, a};
  PetscFunctionReturn(0);
}

// The view a build reads: SeqAIJCsrView plus PETSc's inodes as runs of rows
// with one pattern (PETSc keeps them current with the nonzero pattern: they are
// recomputed at every assembly that changes it), so that the node layout does
// not compare the columns of rows PETSc has already compared. Sizes that do not
// cover the rows are not passed. An inode shorter than PETSc's limit ended at a
// row with other columns (MatSeqAIJCheckInode).
inline PetscErrorCode SeqAIJBuildView(Mat A, CsrView<PetscInt> &view)
{
  PetscInt nodes = 0, *sizes = nullptr, limit;

  PetscFunctionBegin;
  PetscCall(SeqAIJCsrView(A, view));
  PetscCall(MatInodeGetInodeSizes(A, &nodes, &sizes, &limit));
  if (!sizes || nodes <= 0) PetscFunctionReturn(0);
  PetscInt64 rows = 0;
  for (PetscInt k = 0; k < nodes; ++k) {
    if (sizes[k] < 1) PetscFunctionReturn(0);
    rows += sizes[k];
  }
  if (rows != view.nrows) PetscFunctionReturn(0);
  view.run_sizes = sizes;
  view.runs      = nodes;
  view.run_limit = limit; // PETSc cuts an inode only at this many rows
  PetscFunctionReturn(0);
}

// Options and settings (aijmp_options.cxx in spirit; shared by seq and MPI)
// family: "aijmp" or "ellmp", the options' names -mat_<family>_* (ellmp has no kernel options).
PetscErrorCode AIJMPSetFromOptions(Mat A, AIJMPSettings &s, const char *family = "aijmp");
PetscErrorCode AIJMPReadOptionsLazily(Mat A, AIJMPSettings &s, const char *family = "aijmp");

// seq
PetscErrorCode SeqAIJMPKeyOf(Mat A, BuildKey &key);
PetscErrorCode SeqAIJMPIsCurrent(Mat A, PetscBool *current);
PetscErrorCode SeqAIJMPInvalidate(Mat A);
// Moves A's compact copy (possibly stale) out, for its memory to be reused; A has none afterwards.
// *same_pattern (may be null): whether it was built from A's current nonzero pattern and arrays, so that
// refill_compact_values may rewrite its values in place.
PetscErrorCode SeqAIJMPTakeCompact(Mat A, std::unique_ptr<CompactCsr> &old, bool *same_pattern = nullptr);
PetscErrorCode SeqAIJMPSetSettings(Mat A, const AIJMPSettings &s);
// Installs A's new copy; value_only: it is the previous copy with its values rewritten.
PetscErrorCode SeqAIJMPInstall(Mat A, std::unique_ptr<CompactCsr> compact, bool value_only = false);
PetscErrorCode SeqAIJMPGetCompact(Mat A, const CompactCsr **compact);
PetscErrorCode SeqAIJMPSumOrder(Mat A, SumOrder *order);
// Rows copied between the memory given back while one matrix is copied into another row by row (a reopening, the
// replica of an MPI rank's rows): the copy's peak is the larger matrix plus this many rows (4 MB of FEM rows; every
// 32768 rows let a reassembly of ex2 on 2 ranks peak 30 MB higher).
constexpr PetscInt kRowsPerGiveBack = 4096;

// The rows_done of build_compact_parts_by_rows when the parts are the arrays of assembly matrices that are destroyed
// right after the build: the values and column indices of the rows stored so far are given back to the system, so
// that the memory of an assembly peaks at the assembly matrix's (its copy grows as the matrix shrinks).
class StoredRowsReturn {
public:
  explicit StoredRowsReturn(const std::vector<CsrView<PetscInt>> &views) : views_(views), done_(views.size(), 0) {}
  void operator()(std::int64_t rows)
  {
    for (std::size_t i = 0; i < views_.size(); ++i) {
      const CsrView<PetscInt> &v = views_[i];
      const std::int64_t from = done_[i], to = v.rowptr[rows];
      if (to <= from) continue;
      if (v.values) discard_pages(v.values + from, v.values + to);
      if (v.cols) discard_pages(v.cols + from, v.cols + to);
      // (a page cut by `to` is given back next time, from the page boundary on)
      done_[i] = to;
    }
  }
  // The restore of refill_compact_parts_by_rows: rows [0, rows) of part i's copy, which hold their new values, written
  // back into its arrays, whose rows count as not given back from then on.
  void restore(std::size_t i, const CompactCsr &copy, std::int64_t rows)
  {
    const CsrView<PetscInt> &v = views_[i];
    read_compact_csr(copy, v.rowptr, const_cast<PetscInt *>(v.cols), const_cast<double *>(v.values), rows);
    done_[i] = 0;
  }

private:
  std::vector<CsrView<PetscInt>> views_;
  std::vector<std::int64_t> done_;
};

// The largest range of an assembly stored at a time (settings.assembly_step, else automatic: a quarter of the matrix,
// at least 2^21 nonzeros). The first range holds a 64th of it and each next one a quarter more (build_compact_parts_by
// _rows), so the peak is the assembly matrix's and the first range's copy, in some 20 blocks per format that products
// do not notice.
inline std::int64_t AssemblyStep(const AIJMPSettings &settings, std::int64_t nnz)
{
  if (settings.assembly_step > 0) return settings.assembly_step;
  return std::max<std::int64_t>(nnz / 4, std::int64_t(1) << 21);
}

// The compact copies of an MPI matrix's diagonal (Ad) and off-diagonal (Ao) SeqAIJ blocks, each row's format decided
// over both (rowsplit's range over all ranks of comm: collective then). cd, co: in, the copies being replaced (their
// memory reused; refilled in place when same_d/same_o say they were made from the blocks' current patterns), may be
// null; out, the new copies. own_indices: every block stores its column indices (ellmp).
// temporary (with own_indices): Ad and Ao belong to an assembly matrix destroyed right after, unread: new copies are
// built a range of rows at a time (build_compact_parts_by_rows) and the memory of the stored rows is given back.
// The rows of A that share one storage format (StorageOptions::format_group): A's block size where the
// setting is 0 (-mat_aijmp_block_formats, -mat_ellmp_block_formats), else the setting (1: each row alone).
inline int AIJMPFormatGroup(Mat A, const StorageOptions &o)
{
  return o.format_group == 0 ? static_cast<int>(PetscMax(A->rmap->bs, 1)) : o.format_group; // (bs -1: not set)
}
// format_group: AIJMPFormatGroup of the MPI matrix (the rows of a block are on one rank: PETSc's layouts start every
// rank at a multiple of the block size).
PetscErrorCode AIJMPBuildParts(MPI_Comm comm, Mat Ad, Mat Ao, const AIJMPSettings &settings, int format_group,
                               bool own_indices, bool same_d, bool same_o, std::unique_ptr<CompactCsr> &cd,
                               std::unique_ptr<CompactCsr> &co, bool *refilled_d, bool *refilled_o,
                               bool temporary = false);
// A read level needs split storage of as many segments, and the compact kernel (checked before each product; an MPI
// matrix checks before its halo exchange starts).
PetscErrorCode AIJMPCheckReadLevel(Mat A, const AIJMPSettings &s);
// The OpenMP threads of -mat_aijmp_threads (0: 1, or OMP_NUM_THREADS), for products and builds.
int AIJMPThreadCount(const AIJMPSettings &s);
// Whether A's next products may read its compact copy (false when they use AIJ's kernel).
PetscErrorCode SeqAIJMPUsesCompact(Mat A, PetscBool *uses);
// Adds A's kernel choice to info.kernel_parts (and its timings to kernel_ms).
PetscErrorCode SeqAIJMPKernelInfo(Mat A, MatAIJMPInfo &info);
// read_level: split storage, the segments products read (their share of the value bytes; 0: all).
PetscErrorCode AIJMPAccumulateInfo(const CompactCsr &c, MatAIJMPInfo &info, PetscInt read_level = 0);
// The bytes of a product by SeqAIJ's inode kernel (values, one column list and one row offset per inode) and the
// entries of the column lists; *uses_inodes false when SeqAIJ has no inodes for A.
PetscErrorCode AIJInodeBytes(Mat A, double *bytes, double *node_columns, PetscInt *nodes, PetscBool *uses_inodes);
// aijmp's answers to the names PETSc looks implementations up by (aijmp_typekeyed.cxx)
PetscErrorCode AIJMPComposeTypeKeyed(Mat B, bool seq, bool on);
PetscErrorCode MatProductSetFromOptions_AIJMP(Mat C);
PetscErrorCode MatCreateGraph_AIJMP(Mat A, PetscBool sym, PetscBool scale, PetscReal filter, Mat *graph);
// format_group: AIJMPFormatGroup of the matrix viewed
PetscErrorCode AIJMPViewInfo(PetscViewer viewer, const MatAIJMPInfo &info, const AIJMPSettings &s, int format_group,
                             const char *family = "aijmp");

} // namespace petscmp

PETSC_INTERN PetscErrorCode MatCreate_SeqAIJMP(Mat);
PETSC_INTERN PetscErrorCode MatCreate_MPIAIJMP(Mat);
PETSC_INTERN PetscErrorCode MatConvert_SeqAIJ_SeqAIJMP(Mat, MatType, MatReuse, Mat *);
PETSC_INTERN PetscErrorCode MatConvert_MPIAIJ_MPIAIJMP(Mat, MatType, MatReuse, Mat *);
