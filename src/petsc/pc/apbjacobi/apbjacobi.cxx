// PCAPBJACOBI: adaptive-precision block-Jacobi. Thin glue: blocks, inverses,
// formats and storage come from core/block_jacobi; the apply from the kernels.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include <petsc/private/pcimpl.h>

#include "block_jacobi_apply.hpp"
#include "common/device_backend.h"
#include "common/timed_choice.h"
#include "pc/apbjacobi/apbjacobiimpl.h"
#include "petscmp.h"
#include "petscmpglue.h"
#include "spmv.hpp"

const char *const PCAPBJacobiBlocksTypes[]     = {"supervariable",     "matblocksize",         "variable", "auto",
                                                  "PCAPBJacobiBlocks", "PC_APBJACOBI_BLOCKS_", nullptr};
const char *const PCAPBJacobiFormatsTypes[]    = {"all",
                                                  "ieee",
                                                  "range_preserving",
                                                  "fp64",
                                                  "fp32",
                                                  "fp16",
                                                  "bf16",
                                                  "fp11_20",
                                                  "fp11_4",
                                                  "PCAPBJacobiFormats",
                                                  "PC_APBJACOBI_FORMATS_",
                                                  nullptr};
const char *const PCAPBJacobiFp64KernelTypes[] = {
    "auto", "interleaved", "blockwise", "PCAPBJacobiFp64Kernel", "PC_APBJACOBI_FP64_KERNEL_", nullptr};
PetscLogEvent PCAPBJACOBI_Detect = 0, PCAPBJACOBI_Build = 0, PCAPBJACOBI_Apply = 0;

namespace petscmp {
namespace {

struct APBJacobi {
  // settings
  PetscInt max_block_size           = kMaxBlockSize;
  PCAPBJacobiBlocks blocks          = PC_APBJACOBI_BLOCKS_AUTO;
  PetscReal accuracy                = 1e-2;
  PCAPBJacobiFormats formats        = PC_APBJACOBI_FORMATS_ALL;
  PetscInt nthreads                 = 0; // 0: openmp::default_thread_count()
  PCAPBJacobiFp64Kernel fp64_kernel = PC_APBJACOBI_FP64_KERNEL_AUTO;
  // state of the last setup
  BlockPartition partition;
  bool partition_valid = false; // detected for the current nonzero pattern and settings
  bool from_pattern    = false; // the partition came from the pattern (reused while it stays the same)
  char rule[128]       = "";    // how the partition was chosen, for the view
  std::vector<PetscInt> local_sizes;
  std::unique_ptr<BlockJacobiStorage> storage;
  DeviceBlockJacobiMirror device; // the storage for applies on device vectors (common/device_backend.h)
  Mat converted = nullptr;        // the local block as SeqAIJ when it is another type
  bool failed   = false;
  PCAPBJacobiInfo local_info{};
  // fp64_kernel auto: candidate 0 the interleaved kernel, 1 the blockwise one, timed on the applies after a setup;
  // decided at once (interleaved) when the storage has no fp64 blocks of 1 to 8 rows
  TimedChoice fp64_trial;
};

// The two candidates of TimedChoice, in its order.
constexpr PCAPBJacobiFp64Kernel kFp64Candidates[2] = {PC_APBJACOBI_FP64_KERNEL_INTERLEAVED,
                                                      PC_APBJACOBI_FP64_KERNEL_BLOCKWISE};

// Whether the storage has fp64 blocks of 1 to 8 rows (the groups where the two kernels differ).
bool HasSmallFp64Blocks(const BlockJacobiStorage &M)
{
  return std::any_of(M.runs.begin(), M.runs.end(), [&](const GroupRun &r) {
    const BlockGroup &g = M.groups[static_cast<std::size_t>(r.first)];
    return g.format == Format::fp64 && g.block_size <= 8;
  });
}

// Auto starts timing afresh (new inverses, or a new setting); with no fp64 blocks of 1 to 8 rows there is nothing
// to time and the interleaved kernel stays.
void RestartFp64Trial(APBJacobi &j)
{
  j.fp64_trial = TimedChoice{};
  if (j.storage && !HasSmallFp64Blocks(*j.storage)) j.fp64_trial.chosen = 0;
}

// The kernel this rank's applies use: the one set, or auto's choice (AUTO while it is still timing).
PCAPBJacobiFp64Kernel Fp64KernelInUse(const APBJacobi &j)
{
  if (j.fp64_kernel != PC_APBJACOBI_FP64_KERNEL_AUTO) return j.fp64_kernel;
  return j.fp64_trial.decided() ? kFp64Candidates[j.fp64_trial.chosen] : PC_APBJACOBI_FP64_KERNEL_AUTO;
}

APBJacobi *Data(PC pc)
{
  return static_cast<APBJacobi *>(pc->data);
}

FormatSelection SelectionOf(const APBJacobi &j)
{
  FormatSelection s;
  s.accuracy = j.accuracy;
  switch (j.formats) {
  case PC_APBJACOBI_FORMATS_ALL:
    s.policy = FormatPolicy::all;
    break;
  case PC_APBJACOBI_FORMATS_IEEE:
    s.policy = FormatPolicy::ieee;
    break;
  case PC_APBJACOBI_FORMATS_RANGE_PRESERVING:
    s.policy = FormatPolicy::range_preserving;
    break;
  default: // one forced format, in PetscMPFormat order
    s.policy = FormatPolicy::forced;
    s.forced = static_cast<Format>(j.formats - PC_APBJACOBI_FORMATS_FP64);
  }
  return s;
}

// The local diagonal block as a host SeqAIJ (converted once per pattern when it is not one).
PetscErrorCode LocalCsr(PC pc, CsrView<PetscInt> &csr)
{
  APBJacobi *jac = Data(pc);
  Mat Ad;
  PetscBool isaij;
  PetscMPIInt size;
  const PetscInt *ia, *ja;
  PetscScalar *a;
  PetscMemType mtype = PETSC_MEMTYPE_HOST;
  PetscInt m, n;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)pc->pmat), &size));
  if (size == 1)
    Ad = pc->pmat;
  else
    PetscCall(MatGetDiagonalBlock(pc->pmat, &Ad));
  PetscCall(MatGetLocalSize(Ad, &m, &n));
  PetscCheck(m == n, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "PCAPBJACOBI needs a square local diagonal block; this rank has %" PetscInt_FMT " rows and %" PetscInt_FMT
             " columns",
             m, n);
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)Ad, MATSEQAIJ, &isaij));
  if (isaij) {
    PetscCall(MatSeqAIJGetCSRAndMemType(Ad, &ia, &ja, &a, &mtype));
    if (PetscMemTypeHost(mtype)) {
      PetscCall(MatDestroy(&jac->converted));
      csr = CsrView<PetscInt>{m, n, ia, ja, a};
      PetscFunctionReturn(0);
    }
  }
  // BAIJ, SBAIJ, dense, device AIJ, ...: a host SeqAIJ copy (values refreshed each setup)
  if (jac->converted && pc->flag == SAME_NONZERO_PATTERN)
    PetscCall(MatConvert(Ad, MATSEQAIJ, MAT_REUSE_MATRIX, &jac->converted));
  else {
    PetscCall(MatDestroy(&jac->converted));
    PetscCall(MatConvert(Ad, MATSEQAIJ, MAT_INITIAL_MATRIX, &jac->converted));
  }
  PetscCall(MatSeqAIJGetCSRAndMemType(jac->converted, &ia, &ja, &a, &mtype));
  csr = CsrView<PetscInt>{m, n, ia, ja, a};
  PetscFunctionReturn(0);
}

// Point blocks of the matrix block size bs (MatGetBlockSize); *found false when bs is 1 or, unless required,
// larger than kMaxBlockSize.
PetscErrorCode BlocksFromBlockSize(PC pc, PetscInt nrows, bool required, bool *found)
{
  APBJacobi *jac = Data(pc);
  PetscInt bs;

  PetscFunctionBegin;
  PetscCall(MatGetBlockSize(pc->pmat, &bs));
  PetscCheck(!required || (bs >= 1 && bs <= kMaxBlockSize), PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
             "-pc_apbjacobi_blocks matblocksize: the matrix block size %" PetscInt_FMT " is outside [1, %d]", bs,
             kMaxBlockSize);
  *found = required || (bs > 1 && bs <= kMaxBlockSize);
  if (!*found) PetscFunctionReturn(0);
  PetscCall(guarded([&] { uniform_partition(nrows, static_cast<int>(bs), jac->partition); }));
  PetscCall(PetscSNPrintf(jac->rule, sizeof(jac->rule), "point blocks of the matrix block size %" PetscInt_FMT, bs));
  PetscFunctionReturn(0);
}

// The blocks of MatSetVariableBlockSizes(); *found false when none are set or, unless required, one is larger
// than kMaxBlockSize.
PetscErrorCode BlocksFromVariableSizes(PC pc, PetscInt nrows, bool required, bool *found)
{
  APBJacobi *jac = Data(pc);
  PetscInt nblocks;
  const PetscInt *sizes;

  PetscFunctionBegin;
  PetscCall(MatGetVariableBlockSizes(pc->pmat, &nblocks, &sizes));
  PetscCheck(
      !required || nblocks > 0 || nrows == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
      "-pc_apbjacobi_blocks variable: the matrix has no variable block sizes; call MatSetVariableBlockSizes() first");
  *found = required || (nblocks > 0 && *std::max_element(sizes, sizes + nblocks) <= kMaxBlockSize);
  if (!*found) PetscFunctionReturn(0);
  PetscCall(guarded([&] {
    const std::vector<std::int64_t> s(sizes, sizes + std::max<PetscInt>(nblocks, 0));
    jac->partition = partition_from_sizes(s.data(), nblocks, nrows);
  }));
  PetscCall(PetscSNPrintf(jac->rule, sizeof(jac->rule), "the variable block sizes of the matrix"));
  PetscFunctionReturn(0);
}

// Supervariables agglomerated up to the maximum block size. With a matrix block size bs > 1 the nodes are the
// point blocks, so a block is always whole nodes; else the nodes are the runs of rows with identical patterns.
PetscErrorCode BlocksFromSupervariables(PC pc, const CsrView<PetscInt> &csr)
{
  APBJacobi *jac  = Data(pc);
  const int maxbs = static_cast<int>(jac->max_block_size);
  PetscInt bs;

  PetscFunctionBegin;
  PetscCall(MatGetBlockSize(pc->pmat, &bs));
  if (bs > 1 && bs <= kMaxBlockSize) {
    PetscCall(
        guarded([&] { jac->partition = agglomerate(uniform_partition(csr.nrows, static_cast<int>(bs)), maxbs); }));
    PetscCall(PetscSNPrintf(jac->rule, sizeof(jac->rule),
                            "supervariables: whole point blocks of size %" PetscInt_FMT ", agglomerated up to %d rows",
                            bs, maxbs));
  } else {
    PetscCall(guarded([&] { jac->partition = detect_supervariable_blocks(csr, maxbs); }));
    PetscCall(PetscSNPrintf(jac->rule, sizeof(jac->rule),
                            "supervariables: rows with identical patterns, agglomerated up to %d rows", maxbs));
    jac->from_pattern = true;
  }
  PetscFunctionReturn(0);
}

// The default: the matrix's own nodes, never agglomerated (larger blocks cost more per apply and, on FEM
// matrices, may take more iterations than point-block Jacobi). In order: the point blocks of the block size;
// the variable block sizes; rows with identical patterns (inodes) when there are such nodes; else, for
// scalar problems, supervariable agglomeration.
PetscErrorCode BlocksAuto(PC pc, const CsrView<PetscInt> &csr)
{
  APBJacobi *jac = Data(pc);
  bool found;
  BlockPartition runs;

  PetscFunctionBegin;
  PetscCall(BlocksFromBlockSize(pc, csr.nrows, false, &found));
  if (!found) PetscCall(BlocksFromVariableSizes(pc, csr.nrows, false, &found));
  if (found) {
    const size_t len = std::strlen(jac->rule);
    PetscCall(PetscSNPrintf(jac->rule + len, sizeof(jac->rule) - len, " (auto)"));
    PetscFunctionReturn(0);
  }
  PetscCall(guarded([&] { runs = detect_pattern_runs(csr, kMaxBlockSize); }));
  jac->from_pattern = true;
  if (runs_are_nodes(runs)) {
    jac->partition = std::move(runs);
    PetscCall(PetscSNPrintf(jac->rule, sizeof(jac->rule), "nodes: runs of rows with identical patterns (auto)"));
    PetscFunctionReturn(0);
  }
  PetscCall(BlocksFromSupervariables(pc, csr));
  PetscCall(PetscSNPrintf(jac->rule, sizeof(jac->rule),
                          "supervariables agglomerated up to %d rows (auto: no block size, variable blocks or nodes)",
                          static_cast<int>(jac->max_block_size)));
  PetscFunctionReturn(0);
}

PetscErrorCode DetectBlocks(PC pc, const CsrView<PetscInt> &csr)
{
  APBJacobi *jac = Data(pc);
  bool found;

  PetscFunctionBegin;
  // a partition read from the pattern stays while the pattern does; the others are cheap to redo
  if (!(jac->partition_valid && jac->from_pattern && pc->flag == SAME_NONZERO_PATTERN)) {
    jac->from_pattern = false;
    switch (jac->blocks) {
    case PC_APBJACOBI_BLOCKS_SUPERVARIABLE:
      PetscCall(BlocksFromSupervariables(pc, csr));
      break;
    case PC_APBJACOBI_BLOCKS_MATBLOCKSIZE:
      PetscCall(BlocksFromBlockSize(pc, csr.nrows, true, &found));
      break;
    case PC_APBJACOBI_BLOCKS_VARIABLE:
      PetscCall(BlocksFromVariableSizes(pc, csr.nrows, true, &found));
      break;
    case PC_APBJACOBI_BLOCKS_AUTO:
      PetscCall(BlocksAuto(pc, csr));
      break;
    }
  }
  jac->partition_valid = true;
  jac->local_sizes.resize(static_cast<std::size_t>(jac->partition.block_count()));
  for (std::int64_t b = 0; b < jac->partition.block_count(); ++b)
    jac->local_sizes[b] = jac->partition.block_size(b);
  PetscFunctionReturn(0);
}

// Records the outcome of a failed block: a PETSc error when the user asked for
// errors on failure, else a PC failure reason that makes the KSP stop.
PetscErrorCode ReportFailure(PC pc, const BlockJacobiSetup &setup)
{
  APBJacobi *jac            = Data(pc);
  const std::int64_t b      = setup.first_failed_block;
  const InversionStatus why = setup.first_failure;
  const PetscInt row0       = static_cast<PetscInt>(jac->partition.offsets[b]),
                 row1       = static_cast<PetscInt>(jac->partition.offsets[b + 1]);

  PetscFunctionBegin;
  jac->failed = true;
  PetscCheck(!pc->erroriffailure, PETSC_COMM_SELF, PETSC_ERR_MAT_LU_ZRPVT,
             "PCAPBJACOBI: %" PetscInt64_FMT
             " diagonal block(s) cannot be inverted; the first is the %s block of local rows %" PetscInt_FMT
             " to %" PetscInt_FMT,
             static_cast<PetscInt64>(setup.failed_blocks), inversion_status_name(why), row0, row1 - 1);
  // positive reasons: PCReduceFailedReason() takes the maximum over ranks, and PC_SETUP_ERROR is negative
  pc->failedreason = why == InversionStatus::singular ? PC_FACTOR_NUMERIC_ZEROPIVOT : PC_FACTOR_OTHER;
  PetscCall(PetscInfo(pc,
                      "%" PetscInt64_FMT
                      " diagonal block(s) cannot be inverted; the first is the %s block of local rows %" PetscInt_FMT
                      " to %" PetscInt_FMT "\n",
                      static_cast<PetscInt64>(setup.failed_blocks), inversion_status_name(why), row0, row1 - 1));
  PetscFunctionReturn(0);
}

PetscErrorCode FillLocalInfo(APBJacobi *jac, const BlockJacobiSetup &setup)
{
  PCAPBJacobiInfo &info     = jac->local_info;
  const SelectionStats &sel = setup.selection;

  PetscFunctionBegin;
  info.blocks = jac->partition.block_count();
  std::fill(info.blocks_of_size, info.blocks_of_size + 33, 0);
  for (std::int64_t b = 0; b < info.blocks; ++b)
    ++info.blocks_of_size[jac->partition.block_size(b)];
  for (int f = 0; f < PETSCMP_NUM_FORMATS; ++f)
    info.blocks_per_format[f] = sel.blocks_per_format[f];
  info.failed_blocks    = setup.failed_blocks;
  info.range_rejections = sel.range_rejections;
  info.forced_fallbacks = sel.forced_fallbacks;
  info.bytes            = static_cast<PetscReal>(jac->storage ? jac->storage->value_bytes() : 0);
  info.fp64_bytes       = static_cast<PetscReal>(jac->storage ? jac->storage->fp64_bytes() : 0);
  info.kappa_min        = setup.kappa_min;
  info.kappa_max        = setup.kappa_max;
  PetscFunctionReturn(0);
}

PetscErrorCode PCSetUp_APBJacobi(PC pc)
{
  APBJacobi *jac = Data(pc);
  CsrView<PetscInt> csr;
  BlockJacobiSetup setup;
  PetscLogDouble t0, t1;

  PetscFunctionBegin;
  jac->failed      = false;
  pc->failedreason = PC_NOERROR;
  // a new setup of the same PC (new values, a Newton step): the new inverses are packed into the old ones' memory
  std::unique_ptr<BlockJacobiStorage> old_storage = std::move(jac->storage);
  jac->device.clear();
  PetscCall(PetscTime(&t0));
  PetscCall(PetscLogEventBegin(PCAPBJACOBI_Detect, pc, 0, 0, 0));
  PetscCall(LocalCsr(pc, csr));
  PetscCall(DetectBlocks(pc, csr));
  PetscCall(PetscLogEventEnd(PCAPBJACOBI_Detect, pc, 0, 0, 0));
  PetscCall(PetscTime(&t1));

  // inversion, selection and packing a chunk of blocks at a time (no fp64 copy of all inverses): one event
  PetscCall(PetscLogEventBegin(PCAPBJACOBI_Build, pc, 0, 0, 0));
  PetscCall(guarded([&] {
    setup = build_block_jacobi(csr, jac->partition, SelectionOf(*jac), kDefaultGroupBlocks, old_storage.get());
    old_storage.reset();
    jac->storage = std::make_unique<BlockJacobiStorage>(std::move(setup.storage));
  }));
  PetscCall(PetscLogFlops(2.0 * static_cast<PetscLogDouble>(jac->storage->fp64_bytes() / 8) *
                          jac->partition.max_block_size()));
  PetscCall(PetscLogEventEnd(PCAPBJACOBI_Build, pc, 0, 0, 0));

  PetscCall(FillLocalInfo(jac, setup));
  RestartFp64Trial(*jac); // new inverses (perhaps new formats)
  jac->local_info.seconds_detection = t1 - t0;
  jac->local_info.seconds_inversion = setup.seconds_inversion;
  jac->local_info.seconds_selection = setup.seconds_selection;
  if (setup.failed_blocks) PetscCall(ReportFailure(pc, setup));
  PetscFunctionReturn(0);
}

// The apply on host arrays; under fp64_kernel auto, the first applies after a setup time the two kernels for fp64
// small blocks in turn (the transpose has one kernel: it is not timed).
PetscErrorCode HostApply(APBJacobi *jac, const PetscScalar *x, PetscScalar *y, bool transpose)
{
  openmp::ApplyOptions options;
  PetscLogDouble t0, t1;

  PetscFunctionBegin;
  options.nthreads    = static_cast<int>(jac->nthreads > 0 ? jac->nthreads : openmp::default_thread_count());
  const bool timing   = jac->fp64_kernel == PC_APBJACOBI_FP64_KERNEL_AUTO && !transpose && !jac->fp64_trial.decided();
  const int candidate = jac->fp64_trial.next();
  const PCAPBJacobiFp64Kernel kernel =
      jac->fp64_kernel == PC_APBJACOBI_FP64_KERNEL_AUTO ? kFp64Candidates[candidate] : jac->fp64_kernel;
  options.fp64_small = kernel == PC_APBJACOBI_FP64_KERNEL_BLOCKWISE ? openmp::Fp64SmallBlocks::blockwise
                                                                    : openmp::Fp64SmallBlocks::interleaved;
  if (timing) PetscCall(PetscTime(&t0)); // (the clock only in the trial: on small problems it costs a few percent)
  openmp::block_jacobi_apply(*jac->storage, x, y, transpose, options);
  if (timing) {
    PetscCall(PetscTime(&t1));
    jac->fp64_trial.record(candidate, t1 - t0);
  }
  PetscFunctionReturn(0);
}

PetscErrorCode Apply(PC pc, Vec x, Vec y, bool transpose)
{
  APBJacobi *jac = Data(pc);
  const PetscScalar *xx;
  PetscScalar *yy;

  PetscFunctionBegin;
  if (jac->failed) { // the KSP sees Inf and stops with KSP_DIVERGED_PC_FAILED on every rank
    PetscCall(VecSetInf(y));
    PetscFunctionReturn(0);
  }
  PetscMemType xm, ym;
  PetscCall(PetscLogEventBegin(PCAPBJACOBI_Apply, pc, x, y, 0));
  PetscCall(VecGetArrayReadAndMemType(x, &xx, &xm));
  PetscCall(VecGetArrayWriteAndMemType(y, &yy, &ym));
  if (PetscMemTypeDevice(xm) && PetscMemTypeDevice(ym)) // both on the device: the device kernel
    PetscCall(guarded([&] { DeviceBlockJacobiApply(jac->device, *jac->storage, xx, yy, transpose); }));
  else if (PetscMemTypeHost(xm) && PetscMemTypeHost(ym))
    PetscCall(HostApply(jac, xx, yy, transpose));
  else
    SETERRQ(PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_INCOMP,
            "petscmp: PCAPBJACOBI needs x and y in the same memory (both host or both device vectors)");
  PetscCall(VecRestoreArrayWriteAndMemType(y, &yy));
  PetscCall(VecRestoreArrayReadAndMemType(x, &xx));
  PetscCall(PetscLogFlops(2.0 * jac->local_info.fp64_bytes / 8.0));
  PetscCall(PetscLogEventEnd(PCAPBJACOBI_Apply, pc, x, y, 0));
  PetscFunctionReturn(0);
}

PetscErrorCode PCApply_APBJacobi(PC pc, Vec x, Vec y)
{
  return Apply(pc, x, y, false);
}
PetscErrorCode PCApplyTranspose_APBJacobi(PC pc, Vec x, Vec y)
{
  return Apply(pc, x, y, true);
}

PetscErrorCode PCReset_APBJacobi(PC pc)
{
  APBJacobi *jac = Data(pc);

  PetscFunctionBegin;
  jac->storage.reset();
  jac->device.clear();
  jac->partition       = BlockPartition{};
  jac->partition_valid = false;
  jac->local_sizes.clear();
  jac->failed     = false;
  jac->local_info = PCAPBJacobiInfo{};
  PetscCall(MatDestroy(&jac->converted));
  PetscFunctionReturn(0);
}

PetscErrorCode PCDestroy_APBJacobi(PC pc)
{
  PetscFunctionBegin;
  PetscCall(PCReset_APBJacobi(pc));
  delete Data(pc);
  pc->data = nullptr;
  PetscFunctionReturn(0);
}

PetscErrorCode PCSetFromOptions_APBJacobi(PC pc, PetscOptionItems *PetscOptionsObject)
{
  APBJacobi *jac          = Data(pc);
  PetscInt max_block_size = jac->max_block_size;
  PetscBool flg;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Adaptive-precision block-Jacobi options");
  PetscCall(PetscOptionsInt("-pc_apbjacobi_max_block_size",
                            "Largest diagonal block found by supervariable detection (1 to 32)",
                            "PCAPBJacobiSetMaxBlockSize", max_block_size, &max_block_size, &flg));
  if (flg) PetscCall(PCAPBJacobiSetMaxBlockSize(pc, max_block_size));
  PetscCall(PetscOptionsEnum(
      "-pc_apbjacobi_blocks",
      "How the diagonal blocks are found (auto: the matrix's point blocks or nodes, not agglomerated)",
      "PCAPBJacobiSetBlocks", PCAPBJacobiBlocksTypes, (PetscEnum)jac->blocks, (PetscEnum *)&jac->blocks, &flg));
  if (flg) jac->partition_valid = false;
  PetscCall(PetscOptionsReal("-pc_apbjacobi_accuracy",
                             "Bound on ||I - E D||_1 each stored inverse block keeps (1e-2: two digits)",
                             "PCAPBJacobiSetAccuracy", jac->accuracy, &jac->accuracy, &flg));
  PetscCheck(jac->accuracy > 0, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_OUTOFRANGE,
             "-pc_apbjacobi_accuracy must be positive, not %g", (double)jac->accuracy);
  PetscCall(PetscOptionsEnum(
      "-pc_apbjacobi_formats", "Storage formats a block may use: all, ieee, range_preserving, or one format",
      "PCAPBJacobiSetFormats", PCAPBJacobiFormatsTypes, (PetscEnum)jac->formats, (PetscEnum *)&jac->formats, nullptr));
  PetscCall(PetscOptionsInt("-pc_apbjacobi_threads",
                            "OpenMP threads per process for the apply (0: 1, or OMP_NUM_THREADS)",
                            "PCAPBJacobiSetNumThreads", jac->nthreads, &jac->nthreads, nullptr));
  PetscCheck(jac->nthreads >= 0, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_OUTOFRANGE,
             "-pc_apbjacobi_threads must be >= 0");
  PetscCall(PetscOptionsEnum("-pc_apbjacobi_fp64_kernel",
                             "Kernel for fp64 blocks of 1 to 8 rows: auto (time both after each setup, keep the "
                             "faster), interleaved (8 blocks per SIMD register), blockwise (PCPBJACOBI's loop)",
                             "PCAPBJacobiSetFp64Kernel", PCAPBJacobiFp64KernelTypes, (PetscEnum)jac->fp64_kernel,
                             (PetscEnum *)&jac->fp64_kernel, nullptr));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

// "fp64 blocks of 1-8 rows (rank 0): ..." the kernel and, under auto, what the timing found.
PetscErrorCode ViewFp64Kernel(const APBJacobi &j, PetscViewer viewer)
{
  const TimedChoice &t = j.fp64_trial;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "  fp64 blocks of 1-8 rows (rank 0): "));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
  if (j.fp64_kernel != PC_APBJACOBI_FP64_KERNEL_AUTO)
    PetscCall(PetscViewerASCIIPrintf(viewer, "%s kernel (set)\n", PCAPBJacobiFp64KernelTypes[j.fp64_kernel]));
  else if (!j.storage || !HasSmallFp64Blocks(*j.storage))
    PetscCall(PetscViewerASCIIPrintf(viewer, "none stored\n"));
  else if (t.decided())
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "%s kernel (auto: medians of %d applies, interleaved %.3g ms, blockwise %.3g ms)\n",
        PCAPBJacobiFp64KernelTypes[kFp64Candidates[t.chosen]], TimedChoice::kSamples, t.median[0] * 1e3,
        t.median[1] * 1e3));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "auto, timing the kernels (%d of %d applies done)\n",
                                     t.count[0] + t.count[1], 2 * TimedChoice::kSamples));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  PetscFunctionReturn(0);
}

PetscErrorCode PCView_APBJacobi(PC pc, PetscViewer viewer)
{
  APBJacobi *jac = Data(pc);
  PetscBool ascii;
  PCAPBJacobiInfo info;
  const FormatSelection sel = SelectionOf(*jac);

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "  adaptive-precision block-Jacobi: blocks %s, max block size %" PetscInt_FMT ", accuracy %g, formats %s",
      PCAPBJacobiBlocksTypes[jac->blocks], jac->max_block_size, (double)jac->accuracy,
      PCAPBJacobiFormatsTypes[jac->formats]));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
  PetscCall(PetscViewerASCIIPrintf(viewer, " ("));
  for (Format f : candidate_formats(sel))
    PetscCall(PetscViewerASCIIPrintf(viewer, " %s", format_name(f)));
  PetscCall(PetscViewerASCIIPrintf(viewer, " )\n"));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  if (!pc->setupcalled) PetscFunctionReturn(0);
  PetscCall(PCAPBJacobiGetInfo(pc, &info));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  partition (rank 0): %s\n", jac->rule));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  %" PetscInt64_FMT " diagonal blocks; size: count", info.blocks));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
  for (int s = 1; s <= 32; ++s)
    if (info.blocks_of_size[s])
      PetscCall(PetscViewerASCIIPrintf(viewer, "  %d: %" PetscInt64_FMT, s, info.blocks_of_size[s]));
  PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  blocks per format:"));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
  for (int f = 0; f < PETSCMP_NUM_FORMATS; ++f)
    PetscCall(PetscViewerASCIIPrintf(viewer, " %s %" PetscInt64_FMT, PetscMPFormats[f], info.blocks_per_format[f]));
  PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  if (info.range_rejections || info.forced_fallbacks)
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  over/underflow check rejected %" PetscInt64_FMT
                                     " format choices; %" PetscInt64_FMT
                                     " blocks could not use the forced format (fp64)\n",
                                     info.range_rejections, info.forced_fallbacks));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  stored inverses: %.4g MB, %.4g MB in fp64 (%.3f of fp64)\n",
                                   info.bytes / 1e6, info.fp64_bytes / 1e6,
                                   info.fp64_bytes > 0 ? info.bytes / info.fp64_bytes : 1.0));
  if (info.blocks > info.failed_blocks)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  condition numbers kappa_1: min %.4g, max %.4g\n", info.kappa_min,
                                     info.kappa_max));
  if (info.failed_blocks)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  SETUP FAILED: %" PetscInt64_FMT " singular or non-finite blocks\n",
                                     info.failed_blocks));
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "  setup seconds (max over ranks): detection %.3g, inversion %.3g, selection %.3g\n",
                                   info.seconds_detection, info.seconds_inversion, info.seconds_selection));
  PetscCall(ViewFp64Kernel(*jac, viewer));
  PetscFunctionReturn(0);
}

// The PC's data when it is a PCAPBJACOBI, else nullptr (setters ignore other types, like PetscTryMethod).
PetscErrorCode Lookup(PC pc, APBJacobi **jac)
{
  PetscBool is;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCAPBJACOBI, &is));
  *jac = is ? Data(pc) : nullptr;
  PetscFunctionReturn(0);
}

PetscErrorCode LookupRequired(PC pc, APBJacobi **jac)
{
  PetscFunctionBegin;
  PetscCall(Lookup(pc, jac));
  PetscCheck(*jac, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_WRONG, "This function needs a PC of type %s",
             PCAPBJACOBI);
  PetscFunctionReturn(0);
}

// Settings that change the blocks or formats force a new setup.
void Changed(PC pc, bool blocks)
{
  if (blocks) Data(pc)->partition_valid = false;
  pc->setupcalled = 0;
}

} // namespace
} // namespace petscmp

using namespace petscmp;

/*MC
   PCAPBJACOBI - Adaptive-precision block-Jacobi. Each diagonal block D of the local diagonal part of the
   matrix is inverted in double precision by Gauss-Jordan elimination with pivoting; the inverse E is then
   stored in the narrowest format that keeps the preconditioner accurate: the first of fp16, bf16, fp11_4,
   fp32, fp11_20, fp64 with kappa_1(D) u <= accuracy, where kappa_1 = ||D||_1 ||E||_1 and u is the format's unit
   roundoff. For fp16, bf16 and fp32, whose exponent range is narrower than fp64's, the rounded inverse E~ must
   also pass kappa_1 ||E - E~||_1 / ||E||_1 <= accuracy (it catches overflow and underflow). The apply reads E
   through the memory accessor and computes in fp64, so the preconditioner is a fixed linear operator: CG and
   GMRES need no flexible variant. Symmetric blocks get exactly symmetric inverses.

   Options Database Keys:
+  -pc_apbjacobi_max_block_size <32> - largest block found by supervariable detection (at most 32)
.  -pc_apbjacobi_blocks <auto,supervariable,matblocksize,variable> - how blocks are found (see Notes)
.  -pc_apbjacobi_accuracy <1e-2> - bound on ||I - E~ D||_1 per block; 1e-2 keeps two digits, the choice of Anzt et al.
.  -pc_apbjacobi_formats <all,ieee,range_preserving,fp64,fp32,fp16,bf16,fp11_20,fp11_4> - formats a block may use
.  -pc_apbjacobi_threads <0> - OpenMP threads per process for the apply (0: one, or OMP_NUM_THREADS)
-  -pc_apbjacobi_fp64_kernel <auto,interleaved,blockwise> - kernel for fp64 blocks of 1 to 8 rows (see
   `PCAPBJacobiSetFp64Kernel()`)

   Notes:
   The default partition, auto, takes the matrix's own nodes and never agglomerates them, so it has the
   iterations of `PCPBJACOBI`/`PCVPBJACOBI` (up to the storage formats): the point blocks of `MatGetBlockSize()`
   when it is larger than 1 (and at most 32); else the blocks of `MatSetVariableBlockSizes()`; else, when the
   local matrix has nodes (runs of rows with identical column patterns, PETSc's inodes, here up to 32 rows),
   those; else (scalar problems) supervariable agglomeration. Agglomerated blocks cost several times more per
   apply and, on FEM matrices, did not pay for themselves in iterations; they are an opt-in with supervariable.
   Supervariable detection merges adjacent nodes (the point blocks when the block size is larger than 1, else
   rows with identical column patterns) while the block stays within the maximum size, so with a block size it
   never splits a node. It is greedy and order based: the unknowns of one node must be numbered
   consecutively, and it looks at the pattern only. -pc_view says which rule chose the partition. A singular or
non-finite block makes the setup fail
   (`KSP_DIVERGED_PC_FAILED`), or raises an error with -ksp_error_if_not_converged / `PCSetErrorIfFailure()`.
   In parallel each process preconditions its local diagonal block. Matrices whose local block is not AIJ
   (BAIJ, SBAIJ, dense) are converted to AIJ at setup.

   Level: intermediate

.seealso: `PCVPBJACOBI`, `PCPBJACOBI`, `PCAPBJacobiSetAccuracy()`, `PCAPBJacobiSetFormats()`, `PCAPBJacobiGetInfo()`
M*/
PetscErrorCode PCCreate_APBJacobi(PC pc)
{
  PetscFunctionBegin;
  PetscCall(guarded([&] { pc->data = new APBJacobi(); }));
  pc->ops->setup               = PCSetUp_APBJacobi;
  pc->ops->apply               = PCApply_APBJacobi;
  pc->ops->applytranspose      = PCApplyTranspose_APBJacobi;
  pc->ops->applysymmetricleft  = nullptr;
  pc->ops->applysymmetricright = nullptr;
  pc->ops->reset               = PCReset_APBJacobi;
  pc->ops->destroy             = PCDestroy_APBJacobi;
  pc->ops->setfromoptions      = PCSetFromOptions_APBJacobi;
  pc->ops->view                = PCView_APBJacobi;
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiSetMaxBlockSize - Sets the largest diagonal block supervariable detection may form

   Logically Collective

   Input Parameters:
+  pc - the `PCAPBJACOBI` preconditioner
-  size - 1 to 32 (default 32)

   Options Database Key:
.  -pc_apbjacobi_max_block_size <size> - the size

   Level: intermediate

.seealso: `PCAPBJACOBI`, `PCAPBJacobiSetBlocks()`
@*/
PetscErrorCode PCAPBJacobiSetMaxBlockSize(PC pc, PetscInt size)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(Lookup(pc, &jac));
  PetscValidLogicalCollectiveInt(pc, size, 2);
  PetscCheck(size >= 1 && size <= kMaxBlockSize, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_OUTOFRANGE,
             "The maximum block size of PCAPBJACOBI must be between 1 and %d, not %" PetscInt_FMT, kMaxBlockSize, size);
  if (!jac || jac->max_block_size == size) PetscFunctionReturn(0);
  jac->max_block_size = size;
  Changed(pc, true);
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiGetMaxBlockSize - Gets the largest diagonal block supervariable detection may form

   Not Collective

   Input Parameter:
.  pc - the `PCAPBJACOBI` preconditioner

   Output Parameter:
.  size - the size

   Level: intermediate

.seealso: `PCAPBJACOBI`, `PCAPBJacobiSetMaxBlockSize()`
@*/
PetscErrorCode PCAPBJacobiGetMaxBlockSize(PC pc, PetscInt *size)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(LookupRequired(pc, &jac));
  *size = jac->max_block_size;
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiSetBlocks - Sets how `PCAPBJACOBI` finds its diagonal blocks

   Logically Collective

   Input Parameters:
+  pc - the `PCAPBJACOBI` preconditioner
-  blocks - `PC_APBJACOBI_BLOCKS_AUTO` (default), `PC_APBJACOBI_BLOCKS_SUPERVARIABLE`,
`PC_APBJACOBI_BLOCKS_MATBLOCKSIZE` or `PC_APBJACOBI_BLOCKS_VARIABLE`

   Options Database Key:
.  -pc_apbjacobi_blocks <auto,supervariable,matblocksize,variable> - the method

   Level: intermediate

.seealso: `PCAPBJACOBI`, `PCAPBJacobiBlocks`, `MatSetVariableBlockSizes()`, `MatSetBlockSize()`
@*/
PetscErrorCode PCAPBJacobiSetBlocks(PC pc, PCAPBJacobiBlocks blocks)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(Lookup(pc, &jac));
  PetscValidLogicalCollectiveEnum(pc, blocks, 2);
  PetscCheck(blocks >= PC_APBJACOBI_BLOCKS_SUPERVARIABLE && blocks <= PC_APBJACOBI_BLOCKS_AUTO,
             PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_OUTOFRANGE, "Unknown PCAPBJacobiBlocks %d", (int)blocks);
  if (!jac || jac->blocks == blocks) PetscFunctionReturn(0);
  jac->blocks = blocks;
  Changed(pc, true);
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiGetBlocks - Gets how `PCAPBJACOBI` finds its diagonal blocks

   Not Collective

   Input Parameter:
.  pc - the `PCAPBJACOBI` preconditioner

   Output Parameter:
.  blocks - the method

   Level: intermediate

.seealso: `PCAPBJACOBI`, `PCAPBJacobiSetBlocks()`
@*/
PetscErrorCode PCAPBJacobiGetBlocks(PC pc, PCAPBJacobiBlocks *blocks)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(LookupRequired(pc, &jac));
  *blocks = jac->blocks;
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiSetAccuracy - Sets the accuracy every stored inverse block keeps: a format with unit roundoff u is
   admissible for a block D when kappa_1(D) u <= accuracy (and, for fp16, bf16 and fp32, the rounded inverse E~
   satisfies kappa_1(D) ||E - E~||_1 / ||E||_1 <= accuracy), which bounds ||I - E~ D||_1 by the accuracy

   Logically Collective

   Input Parameters:
+  pc - the `PCAPBJACOBI` preconditioner
-  accuracy - positive; default 1e-2 ("keep two digits", the recommendation of Anzt et al.)

   Options Database Key:
.  -pc_apbjacobi_accuracy <accuracy> - the accuracy

   Level: intermediate

.seealso: `PCAPBJACOBI`, `PCAPBJacobiSetFormats()`
@*/
PetscErrorCode PCAPBJacobiSetAccuracy(PC pc, PetscReal accuracy)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(Lookup(pc, &jac));
  PetscValidLogicalCollectiveReal(pc, accuracy, 2);
  PetscCheck(accuracy > 0, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_OUTOFRANGE,
             "The accuracy of PCAPBJACOBI must be positive, not %g", (double)accuracy);
  if (!jac || jac->accuracy == accuracy) PetscFunctionReturn(0);
  jac->accuracy = accuracy;
  Changed(pc, false);
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiGetAccuracy - Gets the accuracy every stored inverse block keeps

   Not Collective

   Input Parameter:
.  pc - the `PCAPBJACOBI` preconditioner

   Output Parameter:
.  accuracy - the accuracy

   Level: intermediate

.seealso: `PCAPBJACOBI`, `PCAPBJacobiSetAccuracy()`
@*/
PetscErrorCode PCAPBJacobiGetAccuracy(PC pc, PetscReal *accuracy)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(LookupRequired(pc, &jac));
  *accuracy = jac->accuracy;
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiSetFormats - Sets the storage formats `PCAPBJACOBI` may choose from

   Logically Collective

   Input Parameters:
+  pc - the `PCAPBJACOBI` preconditioner
-  formats - `PC_APBJACOBI_FORMATS_ALL` (default), `PC_APBJACOBI_FORMATS_IEEE`, `PC_APBJACOBI_FORMATS_RANGE_PRESERVING`,
             or one format for every block (`PC_APBJACOBI_FORMATS_FP64`, ..., `PC_APBJACOBI_FORMATS_FP11_4`)

   Options Database Key:
.  -pc_apbjacobi_formats <all,ieee,range_preserving,fp64,fp32,fp16,bf16,fp11_20,fp11_4> - the formats

   Note:
   A forced format is used for every block it can hold; a block whose rounded inverse would overflow or be
   singular stays in fp64, and `-pc_view` counts such blocks.

   Level: intermediate

.seealso: `PCAPBJACOBI`, `PCAPBJacobiFormats`, `PCAPBJacobiSetAccuracy()`
@*/
PetscErrorCode PCAPBJacobiSetFormats(PC pc, PCAPBJacobiFormats formats)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(Lookup(pc, &jac));
  PetscValidLogicalCollectiveEnum(pc, formats, 2);
  PetscCheck(formats >= PC_APBJACOBI_FORMATS_ALL && formats <= PC_APBJACOBI_FORMATS_FP11_4,
             PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_OUTOFRANGE, "Unknown PCAPBJacobiFormats %d", (int)formats);
  if (!jac || jac->formats == formats) PetscFunctionReturn(0);
  jac->formats = formats;
  Changed(pc, false);
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiGetFormats - Gets the storage formats `PCAPBJACOBI` may choose from

   Not Collective

   Input Parameter:
.  pc - the `PCAPBJACOBI` preconditioner

   Output Parameter:
.  formats - the formats

   Level: intermediate

.seealso: `PCAPBJACOBI`, `PCAPBJacobiSetFormats()`
@*/
PetscErrorCode PCAPBJacobiGetFormats(PC pc, PCAPBJacobiFormats *formats)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(LookupRequired(pc, &jac));
  *formats = jac->formats;
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiSetNumThreads - Sets the OpenMP threads per process the apply uses

   Logically Collective

   Input Parameters:
+  pc - the `PCAPBJACOBI` preconditioner
-  nthreads - 0 (default: one thread, or OMP_NUM_THREADS when set) or a positive count

   Options Database Key:
.  -pc_apbjacobi_threads <n> - the count

   Level: advanced

.seealso: `PCAPBJACOBI`, `MatAIJMPSetNumThreads()`
@*/
PetscErrorCode PCAPBJacobiSetNumThreads(PC pc, PetscInt nthreads)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(Lookup(pc, &jac));
  PetscCheck(nthreads >= 0, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_OUTOFRANGE,
             "The thread count must be >= 0, not %" PetscInt_FMT, nthreads);
  if (jac) jac->nthreads = nthreads;
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiSetFp64Kernel - Sets the kernel `PCAPBJACOBI` applies its fp64 blocks of 1 to 8 rows with

   Logically Collective

   Input Parameters:
+  pc - the `PCAPBJACOBI` preconditioner
-  kernel - `PC_APBJACOBI_FP64_KERNEL_AUTO` (default), `PC_APBJACOBI_FP64_KERNEL_INTERLEAVED` or
            `PC_APBJACOBI_FP64_KERNEL_BLOCKWISE`

   Options Database Key:
.  -pc_apbjacobi_fp64_kernel <auto,interleaved,blockwise> - the kernel

   Notes:
   Every kernel gives the same result bit for bit; only the speed differs. Under auto, the first
   2 x 3 applies after each setup alternate between the two kernels and each process keeps the faster by median
   (`PCView()` shows the medians). Transposed applies always use the interleaved kernel and are not timed.

   Level: advanced

.seealso: `PCAPBJACOBI`, `PCAPBJacobiFp64Kernel`, `PCAPBJacobiGetFp64Kernel()`
@*/
PetscErrorCode PCAPBJacobiSetFp64Kernel(PC pc, PCAPBJacobiFp64Kernel kernel)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(Lookup(pc, &jac));
  PetscValidLogicalCollectiveEnum(pc, kernel, 2);
  PetscCheck(kernel >= PC_APBJACOBI_FP64_KERNEL_AUTO && kernel <= PC_APBJACOBI_FP64_KERNEL_BLOCKWISE,
             PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_OUTOFRANGE,
             "Unknown PCAPBJacobiFp64Kernel %d: use auto, interleaved or blockwise", (int)kernel);
  if (!jac || jac->fp64_kernel == kernel) PetscFunctionReturn(0);
  jac->fp64_kernel = kernel;
  RestartFp64Trial(*jac);
  PetscFunctionReturn(0);
}

/*@
   PCAPBJacobiGetFp64Kernel - Gets the kernel this process applies its fp64 blocks of 1 to 8 rows with

   Not Collective

   Input Parameter:
.  pc - the `PCAPBJACOBI` preconditioner

   Output Parameter:
.  kernel - the kernel set; under auto, the one chosen once the timing has decided, `PC_APBJACOBI_FP64_KERNEL_AUTO`
            while it has not (before the setup and during the first applies)

   Level: advanced

.seealso: `PCAPBJACOBI`, `PCAPBJacobiSetFp64Kernel()`
@*/
PetscErrorCode PCAPBJacobiGetFp64Kernel(PC pc, PCAPBJacobiFp64Kernel *kernel)
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(LookupRequired(pc, &jac));
  PetscValidPointer(kernel, 2);
  *kernel = Fp64KernelInUse(*jac);
  PetscFunctionReturn(0);
}

/*@C
   PCAPBJacobiGetLocalBlockSizes - Gets the sizes of this process's diagonal blocks after `PCSetUp()`; pass them to
   `MatSetVariableBlockSizes()` to run `PCVPBJACOBI` on the same partition

   Not Collective

   Input Parameter:
.  pc - the `PCAPBJACOBI` preconditioner

   Output Parameters:
+  nblocks - the number of local blocks
-  sizes - their sizes (owned by the PC; valid until the next setup)

   Level: advanced

.seealso: `PCAPBJACOBI`, `MatSetVariableBlockSizes()`
@*/
PetscErrorCode PCAPBJacobiGetLocalBlockSizes(PC pc, PetscInt *nblocks, const PetscInt *sizes[])
{
  APBJacobi *jac = nullptr;

  PetscFunctionBegin;
  PetscCall(LookupRequired(pc, &jac));
  PetscCheck(pc->setupcalled, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
             "Call PCSetUp() before PCAPBJacobiGetLocalBlockSizes()");
  *nblocks = static_cast<PetscInt>(jac->local_sizes.size());
  *sizes   = jac->local_sizes.data();
  PetscFunctionReturn(0);
}

/*@C
   PCAPBJacobiGetInfo - Gets what a set-up `PCAPBJACOBI` holds: blocks per size and format, bytes, condition numbers,
   setup times (collective: sums over the processes, times and the largest kappa are maxima)

   Collective

   Input Parameter:
.  pc - the `PCAPBJACOBI` preconditioner, after `PCSetUp()`

   Output Parameter:
.  info - the summary

   Level: intermediate

.seealso: `PCAPBJACOBI`, `PCAPBJacobiInfo`
@*/
PetscErrorCode PCAPBJacobiGetInfo(PC pc, PCAPBJacobiInfo *info)
{
  APBJacobi *jac = nullptr;
  MPI_Comm comm;

  PetscFunctionBegin;
  PetscCall(LookupRequired(pc, &jac));
  PetscCheck(pc->setupcalled, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_WRONGSTATE,
             "Call PCSetUp() before PCAPBJacobiGetInfo()");
  comm                     = PetscObjectComm((PetscObject)pc);
  const PCAPBJacobiInfo &l = jac->local_info;
  *info                    = l;
  // counts: one reduction over a packed array
  std::vector<PetscInt64> counts;
  counts.push_back(l.blocks);
  counts.insert(counts.end(), l.blocks_of_size, l.blocks_of_size + 33);
  counts.insert(counts.end(), l.blocks_per_format, l.blocks_per_format + PETSCMP_NUM_FORMATS);
  counts.push_back(l.failed_blocks);
  counts.push_back(l.range_rejections);
  counts.push_back(l.forced_fallbacks);
  PetscCall(
      MPIU_Allreduce(MPI_IN_PLACE, counts.data(), static_cast<PetscMPIInt>(counts.size()), MPIU_INT64, MPI_SUM, comm));
  std::size_t k = 0;
  info->blocks  = counts[k++];
  for (int s = 0; s < 33; ++s)
    info->blocks_of_size[s] = counts[k++];
  for (int f = 0; f < PETSCMP_NUM_FORMATS; ++f)
    info->blocks_per_format[f] = counts[k++];
  info->failed_blocks    = counts[k++];
  info->range_rejections = counts[k++];
  info->forced_fallbacks = counts[k++];
  info->device_copies    = jac->device.builds;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &info->device_copies, 1, MPIU_INT64, MPI_MAX, comm));
  PetscReal sums[2] = {l.bytes, l.fp64_bytes};
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, 2, MPIU_REAL, MPI_SUM, comm));
  info->bytes      = sums[0];
  info->fp64_bytes = sums[1];
  // maxima (kappa_min as -min)
  PetscReal maxima[5] = {-l.kappa_min, l.kappa_max, l.seconds_detection, l.seconds_inversion, l.seconds_selection};
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, maxima, 5, MPIU_REAL, MPI_MAX, comm));
  info->kappa_min         = -maxima[0];
  info->kappa_max         = maxima[1];
  info->seconds_detection = maxima[2];
  info->seconds_inversion = maxima[3];
  info->seconds_selection = maxima[4];
  PetscFunctionReturn(0);
}
