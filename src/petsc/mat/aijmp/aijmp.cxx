// The aijmp C API, options and the -mat_view report, shared by seq and MPI.
#include <cmath>

#include "mat/aijmp/aijmpimpl.h"

const char *const MatAIJMPStorages[] = {"lossless",   "fp32",     "fp16",       "bf16",   "fp11_20", "fp11_4",
                                        "tolerance",  "rowsplit", "entrysplit", "split2", "split4",  "MatAIJMPStorage",
                                        "MAT_AIJMP_", nullptr};
const char *const MatAIJMPLayouts[] = {"auto", "csr", "sliced", "node", "MatAIJMPLayout", "MAT_AIJMP_LAYOUT_", nullptr};
const char *const MatAIJMPKernels[] = {"auto", "aij", "compact", "MatAIJMPKernel", "MAT_AIJMP_KERNEL_", nullptr};
const char *const MatAIJMPGatheredXs[] = {"auto", "loads", "gathers", "MatAIJMPGatheredX", "MAT_AIJMP_GATHERED_X_",
                                          nullptr};
const char *const PetscMPFormats[]     = {"fp64",   "fp32",          "fp16",     "bf16", "fp11_20",
                                          "fp11_4", "PetscMPFormat", "PETSCMP_", nullptr};

namespace petscmp {

static_assert(static_cast<int>(StorageMode::entrysplit) == MAT_AIJMP_ENTRYSPLIT, "storage enums must agree");
static_assert(static_cast<int>(StorageMode::split4) == MAT_AIJMP_SPLIT4 && kStorageModeCount == MAT_AIJMP_SPLIT4 + 1,
              "storage enums must agree");
static_assert(static_cast<int>(Format::fp11_4) == PETSCMP_FP11_4, "format enums must agree");
static_assert(static_cast<int>(Layout::sliced) == MAT_AIJMP_LAYOUT_SLICED, "layout enums must agree");
static_assert(static_cast<int>(Layout::node) == MAT_AIJMP_LAYOUT_NODE, "layout enums must agree");
static_assert(kMaxNodeRows + 1 == sizeof(MatAIJMPInfo::nodes_of_size) / sizeof(PetscInt64), "node sizes must agree");

// The option -mat_<family>_<name> (family aijmp or ellmp: the same settings).
struct OptionName {
  char text[64];
  OptionName(const char *family, const char *name)
  {
    (void)PetscSNPrintf(text, sizeof text, "-mat_%s_%s", family, name);
  }
  operator const char *() const { return text; }
};

static bool is_aijmp(const char *family)
{
  return family[0] == 'a';
}

// A block of its own: inside MatSetFromOptions' block, PETSc's -help would not
// show these once SeqAIJ has printed its section.
// -mat_ellmp_sort_window: 1, or a multiple of the slice height.
static PetscErrorCode AIJMPCheckSortWindow(Mat A, PetscInt sigma)
{
  PetscFunctionBegin;
  PetscCheck(sigma == 1 || (sigma > 1 && sigma % kSliceRows == 0 && sigma <= (1 << 30)),
             PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
             "-mat_ellmp_sort_window (sigma) must be 1 (rows in matrix order) or a multiple of the slice height %d, "
             "not %" PetscInt_FMT,
             kSliceRows, sigma);
  PetscFunctionReturn(0);
}

// A read level is a count of segments.
static PetscErrorCode AIJMPCheckSplit(Mat A, const AIJMPSettings &s, const char *family)
{
  PetscFunctionBegin;
  PetscCheck(s.read_segments >= 0 && s.read_segments <= 4, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
             "-mat_%s_read_level is a number of segments, 1 to 4 (0: all), not %" PetscInt_FMT, family,
             s.read_segments);
  PetscFunctionReturn(0);
}

PetscErrorCode AIJMPSetFromOptions(Mat A, AIJMPSettings &s, const char *family)
{
  MatAIJMPStorage mode = static_cast<MatAIJMPStorage>(s.opts.mode);
  PetscBool flg;
  // the manual page -help names: aijmp's setters, ellmp's type page
  auto man = [family](const char *aijmp_page) { return is_aijmp(family) ? aijmp_page : "MATELLMP"; };

  PetscFunctionBegin;
  PetscOptionsBegin(PetscObjectComm((PetscObject)A), ((PetscObject)A)->prefix,
                    is_aijmp(family) ? "AIJMP (compact-precision AIJ) options"
                                     : "ELLMP (sliced ELL, compact values only) options",
                    "Mat");
  PetscCall(PetscOptionsEnum(OptionName(family, "storage"),
                             is_aijmp(family) ? "How values are stored (products always compute in fp64)"
                                              : "How values are stored, the only copy (products compute in fp64)",
                             man("MatAIJMPSetStorage"), MatAIJMPStorages, (PetscEnum)mode, (PetscEnum *)&mode, &flg));
  if (flg) s.opts.mode = static_cast<StorageMode>(mode);
  PetscCall(PetscOptionsReal(OptionName(family, "tolerance"), "Tolerance mode: bound on each entry's relative error",
                             man("MatAIJMPSetTolerance"), s.opts.tolerance, &s.opts.tolerance, nullptr));
  PetscCall(PetscOptionsReal(OptionName(family, "range_factor"), "Rowsplit: range r = factor * mean|a|",
                             man("MatAIJMPSetRowSplit"), s.opts.range_factor, &s.opts.range_factor, nullptr));
  PetscCall(PetscOptionsReal(OptionName(family, "row_fraction"),
                             "Rowsplit: a row is fp32 when this fraction of it lies in (-r,r)",
                             man("MatAIJMPSetRowSplit"), s.opts.row_fraction, &s.opts.row_fraction, nullptr));
  PetscCall(PetscOptionsReal(OptionName(family, "range"), "Entrysplit: entries with |a| < range are stored in fp32",
                             man("MatAIJMPSetEntrySplitRange"), s.opts.range, &s.opts.range, nullptr));
  MatAIJMPLayout layout = static_cast<MatAIJMPLayout>(s.opts.layout);
  PetscCall(PetscOptionsEnum(OptionName(family, "layout"),
                             is_aijmp(family)
                                 ? "Row layout of the compact copy: auto, csr, sliced (SELL-8) or node (rows sharing "
                                   "columns)"
                                 : "Row layout: auto (nodes where rows share columns, else slices), sliced (SELL-8) or "
                                   "node",
                             man("MatAIJMPSetLayout"), MatAIJMPLayouts, (PetscEnum)layout, (PetscEnum *)&layout, &flg));
  if (flg) s.opts.layout = static_cast<Layout>(layout);
  PetscBool block_formats = s.opts.format_group == 0 ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(PetscOptionsBool(OptionName(family, "block_formats"),
                             "The rows of one block (MatSetBlockSize, one column pattern) share one storage format, "
                             "the widest any of them needs, where one of them needs it (nodes stored "
                             "whole, not in pieces per format)",
                             man("MatAIJMPSetStorage"), block_formats, &block_formats, &flg));
  if (flg) s.opts.format_group = block_formats ? 0 : 1;
  if (is_aijmp(family)) {
    PetscCall(
        PetscOptionsEnum("-mat_aijmp_kernel",
                         "Product kernel: auto (lossless: the faster of AIJ's and the compact one, timed on the first "
                         "products), aij (PETSc's, fp64 values) or compact",
                         "MatAIJMPSetKernel", MatAIJMPKernels, (PetscEnum)s.kernel, (PetscEnum *)&s.kernel, nullptr));
    PetscCall(PetscOptionsInt("-mat_aijmp_kernel_trial_after",
                              "Kernel auto, lossless, where the compact copy would read over 90% of AIJ's inode "
                              "bytes: products by AIJ's kernel before both are timed (negative: never, AIJ's kept)",
                              "MatAIJMPSetKernel", s.trial_after, &s.trial_after, nullptr));
  }
  PetscCall(PetscOptionsInt(OptionName(family, "read_level"),
                            "Split storage (split2, split4): the segments of each value products read, most "
                            "significant first (0: all, the exact values)",
                            "MatAIJMPSetReadLevel", s.read_segments, &s.read_segments, nullptr));
  PetscCall(PetscOptionsEnum(OptionName(family, "gathered_x"),
                             "How the AVX-512 kernels read x in gathered slices (bitwise the same sums): auto (both "
                             "timed on the first products where such slices hold 10% of the values), loads or gathers",
                             "MatAIJMPSetGatheredX", MatAIJMPGatheredXs, (PetscEnum)s.gathered_x,
                             (PetscEnum *)&s.gathered_x, nullptr));
  if (!is_aijmp(family)) {
    PetscInt sigma = s.opts.sort_window;
    PetscCall(PetscOptionsInt("-mat_ellmp_sort_window",
                              "SELL-C-sigma's sigma: sliced rows sorted by length within windows of sigma rows where "
                              "that stores less padding (1: matrix order; else a multiple of 8)",
                              "MATELLMP", sigma, &sigma, nullptr));
    PetscCall(AIJMPCheckSortWindow(A, sigma));
    s.opts.sort_window = static_cast<int>(sigma);
    PetscInt step      = static_cast<PetscInt>(s.assembly_step);
    PetscCall(
        PetscOptionsInt("-mat_ellmp_assembly_step",
                        "Most nonzeros stored per step of an assembly (the first steps store fewer): the assembly "
                        "matrix's memory of the rows stored is given back after each (0: automatic, a quarter of the "
                        "matrix, at least 2^21)",
                        "MATELLMP", step, &step, &flg));
    PetscCheck(step >= 0, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
               "-mat_ellmp_assembly_step must be 0 (automatic) or a positive number of nonzeros, not %" PetscInt_FMT,
               step);
    s.assembly_step    = step;
    PetscBool aij_copy = s.sor_aij_copy ? PETSC_TRUE : PETSC_FALSE;
    PetscCall(
        PetscOptionsBool("-mat_ellmp_sor_aij_copy",
                         "MatSOR on an AIJ copy of the matrix (AIJ's memory while the matrix lives) instead of on "
                         "the stored rows (the copy is always used for SOR_APPLY_UPPER with inodes and for "
                         "Eisenstat on several ranks)",
                         "MATELLMP", aij_copy, &aij_copy, nullptr));
    s.sor_aij_copy = aij_copy;
  }
  PetscCall(PetscOptionsInt(
      OptionName(family, "threads"),
      "OpenMP threads per process for products and for writing the compact values (0: 1, or OMP_NUM_THREADS)",
      man("MatAIJMPSetNumThreads"), s.nthreads, &s.nthreads, nullptr));
  PetscOptionsEnd();
  PetscCall(AIJMPCheckSplit(A, s, family));
  s.options_read = true;
  PetscFunctionReturn(0);
}

// For programs that never call MatSetFromOptions on the matrix: the command
// line is read once, at the first product, below what the C API set.
PetscErrorCode AIJMPReadOptionsLazily(Mat A, AIJMPSettings &s, const char *family)
{
  PetscOptions options = ((PetscObject)A)->options;
  const char *prefix   = ((PetscObject)A)->prefix;
  PetscInt mode        = static_cast<PetscInt>(s.opts.mode);
  PetscBool flg;

  PetscFunctionBegin;
  if (s.options_read) PetscFunctionReturn(0);
  s.options_read = true;
  if (!(s.explicitly_set & kSetStorage)) {
    PetscCall(PetscOptionsGetEList(options, prefix, OptionName(family, "storage"), MatAIJMPStorages, kStorageModeCount,
                                   &mode, &flg));
    if (flg) s.opts.mode = static_cast<StorageMode>(mode);
  }
  if (!(s.explicitly_set & kSetTolerance))
    PetscCall(PetscOptionsGetReal(options, prefix, OptionName(family, "tolerance"), &s.opts.tolerance, nullptr));
  if (!(s.explicitly_set & kSetRowSplit)) {
    PetscCall(PetscOptionsGetReal(options, prefix, OptionName(family, "range_factor"), &s.opts.range_factor, nullptr));
    PetscCall(PetscOptionsGetReal(options, prefix, OptionName(family, "row_fraction"), &s.opts.row_fraction, nullptr));
  }
  if (!(s.explicitly_set & kSetRange))
    PetscCall(PetscOptionsGetReal(options, prefix, OptionName(family, "range"), &s.opts.range, nullptr));
  if (!(s.explicitly_set & kSetThreads))
    PetscCall(PetscOptionsGetInt(options, prefix, OptionName(family, "threads"), &s.nthreads, nullptr));
  if (!(s.explicitly_set & kSetLayout)) {
    PetscInt layout = static_cast<PetscInt>(s.opts.layout);
    PetscCall(PetscOptionsGetEList(options, prefix, OptionName(family, "layout"), MatAIJMPLayouts, kLayoutCount,
                                   &layout, &flg));
    if (flg) s.opts.layout = static_cast<Layout>(layout);
  }
  if (!(s.explicitly_set & kSetReadLevel))
    PetscCall(PetscOptionsGetInt(options, prefix, OptionName(family, "read_level"), &s.read_segments, nullptr));
  PetscBool block_formats = s.opts.format_group == 0 ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(PetscOptionsGetBool(options, prefix, OptionName(family, "block_formats"), &block_formats, &flg));
  if (flg) s.opts.format_group = block_formats ? 0 : 1;
  PetscCall(AIJMPCheckSplit(A, s, family));
  if (!(s.explicitly_set & kSetGatheredX)) {
    PetscInt read = static_cast<PetscInt>(s.gathered_x);
    PetscCall(
        PetscOptionsGetEList(options, prefix, OptionName(family, "gathered_x"), MatAIJMPGatheredXs, 3, &read, &flg));
    if (flg) s.gathered_x = static_cast<MatAIJMPGatheredX>(read);
  }
  if (!is_aijmp(family)) {
    PetscInt sigma = s.opts.sort_window;
    PetscCall(PetscOptionsGetInt(options, prefix, "-mat_ellmp_sort_window", &sigma, nullptr));
    PetscCall(AIJMPCheckSortWindow(A, sigma));
    s.opts.sort_window = static_cast<int>(sigma);
    PetscInt step      = static_cast<PetscInt>(s.assembly_step);
    PetscCall(PetscOptionsGetInt(options, prefix, "-mat_ellmp_assembly_step", &step, nullptr));
    PetscCheck(step >= 0, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
               "-mat_ellmp_assembly_step must be 0 (automatic) or a positive number of nonzeros, not %" PetscInt_FMT,
               step);
    s.assembly_step    = step;
    PetscBool aij_copy = s.sor_aij_copy ? PETSC_TRUE : PETSC_FALSE;
    PetscCall(PetscOptionsGetBool(options, prefix, "-mat_ellmp_sor_aij_copy", &aij_copy, nullptr));
    s.sor_aij_copy = aij_copy;
    PetscFunctionReturn(0);
  }
  if (!(s.explicitly_set & kSetKernel)) {
    PetscInt kernel = static_cast<PetscInt>(s.kernel);
    PetscCall(PetscOptionsGetEList(options, prefix, "-mat_aijmp_kernel", MatAIJMPKernels, 3, &kernel, &flg));
    if (flg) s.kernel = static_cast<MatAIJMPKernel>(kernel);
  }
  PetscCall(PetscOptionsGetInt(options, prefix, "-mat_aijmp_kernel_trial_after", &s.trial_after, nullptr));
  PetscFunctionReturn(0);
}

PetscErrorCode AIJMPAccumulateInfo(const CompactCsr &c, MatAIJMPInfo &info, PetscInt read_level)
{
  const int segments      = storage_mode_segments(c.mode);
  const double read_share = segments && read_level > 0 && read_level < segments ? (double)read_level / segments : 1.0;

  PetscFunctionBegin;
  for (int f = 0; f < kFormatCount; ++f) {
    info.rows[f] += c.stats.per_format[f].rows;
    info.nnz[f] += c.stats.per_format[f].nnz;
    info.max_rel_error[f] = PetscMax(info.max_rel_error[f], c.stats.per_format[f].max_relative_error);
  }
  info.stored += c.stats.stored;
  info.sliced_rows += c.stats.sliced_rows;
  info.shifted_rows += c.stats.shifted_rows;
  info.narrow_rows += c.stats.narrow_rows;
  info.patched_rows += c.stats.patched_rows;
  info.node_rows += c.stats.node_rows;
  info.nodes += c.stats.nodes;
  info.wide_nodes += c.stats.wide_nodes;
  info.sorted_windows += c.stats.sorted_windows;
  info.long_rows += c.stats.long_rows;
  for (int n = 0; n <= kMaxNodeRows; ++n)
    info.nodes_of_size[n] += c.stats.nodes_of_size[n];
  info.bytes += static_cast<double>(c.stats.index_bytes) + read_share * static_cast<double>(c.stats.value_bytes);
  info.aij_bytes += c.stats.aij_bytes();
  PetscFunctionReturn(0);
}

// A read level needs split storage of as many segments, and the compact kernel.
PetscErrorCode AIJMPCheckReadLevel(Mat A, const AIJMPSettings &s)
{
  const PetscInt segments = storage_mode_segments(s.opts.mode);

  PetscFunctionBegin;
  if (s.row_levels) {
    PetscCheck(segments > 0, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_INCOMP,
               "Read levels per row (MatAIJMPSetRowReadLevels) need the split2 or split4 storage, not %s",
               storage_mode_name(s.opts.mode));
    PetscCheck(s.row_levels->max <= segments, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
               "A row's read level %" PetscInt_FMT " exceeds the %" PetscInt_FMT " segments of the %s storage",
               s.row_levels->max, segments, storage_mode_name(s.opts.mode));
    PetscCheck(static_cast<PetscInt>(s.row_levels->levels.size()) == A->rmap->n, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
               "The read levels per row were set for %" PetscInt_FMT " local rows; the matrix has %" PetscInt_FMT,
               static_cast<PetscInt>(s.row_levels->levels.size()), A->rmap->n);
    PetscCheck(s.kernel != MAT_AIJMP_KERNEL_AIJ ||
                   s.row_levels->rows[segments] == static_cast<PetscInt>(s.row_levels->levels.size()),
               PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_INCOMP,
               "Read levels per row need the compact kernel: -mat_aijmp_kernel aij reads the fp64 values");
  }
  if (s.read_segments == 0) PetscFunctionReturn(0);
  PetscCheck(segments > 0, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_INCOMP,
             "A read level (MatAIJMPSetReadLevel, -mat_aijmp_read_level %" PetscInt_FMT
             ") needs the split2 or split4 storage, not %s",
             s.read_segments, storage_mode_name(s.opts.mode));
  PetscCheck(s.read_segments <= segments, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
             "Read level %" PetscInt_FMT " exceeds the %" PetscInt_FMT " segments of the %s storage", s.read_segments,
             segments, storage_mode_name(s.opts.mode));
  PetscCheck(s.kernel != MAT_AIJMP_KERNEL_AIJ || AIJMPReadsExact(s), PetscObjectComm((PetscObject)A),
             PETSC_ERR_ARG_INCOMP,
             "Read level %" PetscInt_FMT " of %" PetscInt_FMT
             " segments needs the compact kernel: -mat_aijmp_kernel aij reads the fp64 values",
             s.read_segments, segments);
  PetscFunctionReturn(0);
}

// Split storage: the segment planes and, per read level, the bound on the change of an entry.
static PetscErrorCode AIJMPViewSegments(PetscViewer viewer, const MatAIJMPInfo &info)
{
  const int n = (int)info.segments;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "  split storage: each value cut into %d segments of %d bits, each kind in its own "
                                   "array (the first: sign, exponent, %d significand bits); products read %d of %d\n",
                                   n, 64 / n, 64 / n - 12, (int)info.read_level, n));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  read level: relative change of an entry below"));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
  for (int r = 1; r <= n; ++r) {
    if (r < n)
      PetscCall(PetscViewerASCIIPrintf(viewer, " %d: %.3g%s", r, segment_read_bound(n, r), r == n - 1 ? "," : ";"));
    else
      PetscCall(PetscViewerASCIIPrintf(viewer, " %d: 0 (exact)\n", r));
  }
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  PetscFunctionReturn(0);
}

// One line: the kernel setting and, for auto, what the timed products chose.
static PetscErrorCode AIJMPViewKernel(PetscViewer viewer, const MatAIJMPInfo &info, const AIJMPSettings &s)
{
  PetscFunctionBegin;
  const PetscInt64 parts = info.kernel_parts[0] + info.kernel_parts[1] + info.kernel_parts[2];
  if (s.kernel != MAT_AIJMP_KERNEL_AUTO) {
    PetscCall(
        PetscViewerASCIIPrintf(viewer, "  kernel %s (set)%s\n", MatAIJMPKernels[s.kernel],
                               s.kernel == MAT_AIJMP_KERNEL_AIJ ? ": PETSc's AIJ kernel on the fp64 values" : ""));
  } else if (storage_mode_is_lossy(s.opts.mode)) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  kernel auto: compact (lossy storage)\n"));
  } else if (storage_mode_segments(s.opts.mode)) {
    PetscCall(
        PetscViewerASCIIPrintf(viewer, "  kernel auto: compact (split storage: the copy serves every read level)\n"));
  } else if (parts == 1 && info.kernel_by_bytes) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  kernel auto: aij (this copy would read over 90%% of the bytes of AIJ's "
                                             "inode kernel, and -mat_aijmp_kernel_trial_after is negative: not "
                                             "built, not timed)\n"));
  } else if (parts == 1 && info.kernel_deferred) {
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  kernel auto: aij for %" PetscInt64_FMT
                                     " more products, then both timed (this copy would read over 90%% of the bytes "
                                     "of AIJ's inode kernel: its build is tried only in longer runs)\n",
                                     info.kernel_trial_in));
  } else if (parts == 1 && info.kernel_parts[0] == 0) {
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  kernel auto: %s (median of %d timed products: AIJ %.4g ms, compact %.4g ms)\n",
                                     info.kernel_parts[1] ? "aij" : "compact", KernelSelection::kSamples,
                                     (double)info.kernel_ms[0], (double)info.kernel_ms[1]));
  } else {
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "  kernel auto (the faster of AIJ's and the compact one, bitwise the same): of %" PetscInt64_FMT
        " local blocks, %" PetscInt64_FMT " use AIJ's, %" PetscInt64_FMT " the compact one, %" PetscInt64_FMT
        " not decided yet (%" PetscInt64_FMT " chose AIJ's by bytes, untimed; %" PetscInt64_FMT
        " use AIJ's for up to %" PetscInt64_FMT " more products before their trial)\n",
        parts, info.kernel_parts[1], info.kernel_parts[2], info.kernel_parts[0], info.kernel_by_bytes,
        info.kernel_deferred, info.kernel_trial_in));
  }
  PetscFunctionReturn(0);
}

openmp::GatheredX AIJMPNextGatheredX(GatheredXSelection &gx, MatAIJMPGatheredX setting, const CompactCsr &c,
                                     PetscInt64 full_builds, bool may_sample, bool add, int *sample)
{
  *sample = -1;
  if (setting == MAT_AIJMP_GATHERED_X_LOADS) return openmp::GatheredX::scalar_loads;
  if (setting == MAT_AIJMP_GATHERED_X_GATHERS) return openmp::GatheredX::gathers;
  if (gx.build != full_builds) {
    gx       = GatheredXSelection{};
    gx.build = full_builds;
    gx.share = openmp::gathered_x_share(c);
  }
  if (!gx.timed()) return openmp::GatheredX::automatic;
  const int candidate = gx.timing.next();
  if (!gx.timing.decided()) {
    const int kind = static_cast<int>(add) + 2 * c.read_segments;
    if (!may_sample || (gx.sampled_kind >= 0 && gx.sampled_kind != kind)) return openmp::GatheredX::automatic;
    *sample         = candidate;
    gx.sampled_kind = kind;
  }
  return candidate == 0 ? openmp::GatheredX::scalar_loads : openmp::GatheredX::gathers;
}

void AIJMPGatheredXInfo(const GatheredXSelection &gx, MatAIJMPGatheredX setting, PetscInt64 full_builds,
                        MatAIJMPInfo &info)
{
  if (setting != MAT_AIJMP_GATHERED_X_AUTO)
    info.gathered_x_parts[setting] += 1;
  else
    info.gathered_x_parts[gx.build == full_builds && gx.timing.decided() ? 1 + gx.timing.chosen : 0] += 1;
  for (int k = 0; k < 2; ++k)
    info.gathered_x_ms[k] = static_cast<PetscReal>(1e3 * gx.timing.median[k]);
}

// One line, where the copy has sliced rows: how the compact kernel reads the x of its gathered slices.
static PetscErrorCode AIJMPViewGatheredX(PetscViewer viewer, const MatAIJMPInfo &info, const AIJMPSettings &s)
{
  static const char *const read[] = {"the automatic rule", "scalar loads", "gathers"};
#if defined(PETSCMP_HAVE_AVX512_DECODE)
  const char *const rule = openmp::gathered_x_by_gathers() ? "gathers" : "scalar loads";
#else
  const char *const rule = "scalar loads (this build has no AVX-512 kernels)";
#endif

  PetscFunctionBegin;
  const PetscInt64 parts = info.gathered_x_parts[0] + info.gathered_x_parts[1] + info.gathered_x_parts[2];
  if (info.sliced_rows == 0 || parts == 0) PetscFunctionReturn(0);
  if (s.gathered_x != MAT_AIJMP_GATHERED_X_AUTO)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  x of gathered slices: %s (set)\n", read[s.gathered_x]));
  else if (info.gathered_x_parts[0] == parts)
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  x of gathered slices, auto: %s, the rule of this processor (not timed: "
                                     "gathered slices hold under %d%% of the values, or the trial has not run yet)\n",
                                     rule, (int)(100 * GatheredXSelection::kMinShare)));
  else if (parts == 1 && info.gathered_x_parts[0] == 0)
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  x of gathered slices, auto: %s (median of %d timed products: scalar loads "
                                     "%.4g ms, gathers %.4g ms)\n",
                                     read[info.gathered_x_parts[1] ? 1 : 2], TimedChoice::kSamples,
                                     (double)info.gathered_x_ms[0], (double)info.gathered_x_ms[1]));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  x of gathered slices, auto (the faster of scalar loads and gathers, bitwise "
                                     "the same, where such slices hold %d%% of a block's values): of %" PetscInt64_FMT
                                     " local blocks, %" PetscInt64_FMT " chose scalar loads, %" PetscInt64_FMT
                                     " gathers, %" PetscInt64_FMT " read by the rule of this processor (%s)\n",
                                     (int)(100 * GatheredXSelection::kMinShare), parts, info.gathered_x_parts[1],
                                     info.gathered_x_parts[2], info.gathered_x_parts[0], rule));
  PetscFunctionReturn(0);
}

PetscErrorCode AIJMPViewInfo(PetscViewer viewer, const MatAIJMPInfo &info, const AIJMPSettings &s, int format_group,
                             const char *family)
{
  PetscInt64 nnz = 0;

  PetscFunctionBegin;
  for (int f = 0; f < kFormatCount; ++f)
    nnz += info.nnz[f];
  PetscCall(PetscViewerASCIIPushTab(viewer));
  char params[128] = "";
  if (s.opts.mode == StorageMode::tolerance)
    PetscCall(PetscSNPrintf(params, sizeof params, " (tolerance %g)", (double)s.opts.tolerance));
  if (s.opts.mode == StorageMode::rowsplit)
    PetscCall(PetscSNPrintf(params, sizeof params, " (range factor %g, row fraction %g)", (double)s.opts.range_factor,
                            (double)s.opts.row_fraction));
  if (s.opts.mode == StorageMode::entrysplit)
    PetscCall(PetscSNPrintf(params, sizeof params, " (range %g)", (double)s.opts.range));
  PetscCall(PetscViewerASCIIPrintf(viewer, "%s storage: %s%s; products compute in fp64\n", family,
                                   storage_mode_name(s.opts.mode), params));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  format    rows         nonzeros       max rel. perturbation\n"));
  if (s.opts.mode == StorageMode::entrysplit)
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "  (entrysplit splits rows: a row counts in every format that holds one of its entries)\n"));
  double worst = 0.0;
  for (int f = 0; f < kFormatCount; ++f) {
    if (!info.nnz[f] && !info.rows[f]) continue;
    worst = PetscMax(worst, (double)info.max_rel_error[f]);
    PetscCall(PetscViewerASCIIPrintf(viewer, "  %-8s  %-11" PetscInt64_FMT "  %-13" PetscInt64_FMT "  %.3e\n",
                                     PetscMPFormats[f], info.rows[f], info.nnz[f], (double)info.max_rel_error[f]));
  }
  const double per_nnz = nnz ? info.bytes / (double)nnz : 0.0, aij_per_nnz = nnz ? info.aij_bytes / (double)nnz : 0.0;
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "  bytes per nonzero read by MatMult (values + indices): %.3g, AIJ %.3g (%.2fx less)\n", per_nnz,
      aij_per_nnz, per_nnz > 0 ? aij_per_nnz / per_nnz : 1.0));
  PetscInt64 rows = 0;
  for (int f = 0; f < kFormatCount; ++f)
    rows += info.rows[f];
  PetscCall(PetscViewerASCIIPrintf(
      viewer,
      "  layout %s: %" PetscInt64_FMT " of %" PetscInt64_FMT " nonempty rows sliced (SELL-8, %" PetscInt64_FMT
      " in shifted slices: one column per 8 values, no gathers; %" PetscInt64_FMT
      " in patched slices: shifted but for a few entries, no gathers; %" PetscInt64_FMT
      " in slices with 16-bit column offsets); %" PetscInt64_FMT " values stored, %.1f%% of them padding\n",
      layout_name(s.opts.layout), PetscMin(info.sliced_rows, rows), rows, PetscMin(info.shifted_rows, rows),
      PetscMin(info.patched_rows, rows), PetscMin(info.narrow_rows, rows), info.stored,
      info.stored > 0 ? 100.0 * (double)(info.stored - nnz) / (double)info.stored : 0.0));
  if (is_aijmp(family) && info.sorted_windows > 0)
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  rows sorted by length in %" PetscInt64_FMT
                                     " windows of %d rows: in matrix order their slices padded more than %.0f%% "
                                     "(products write y through a row list)\n",
                                     info.sorted_windows, kAutoSortWindow, 100.0 * (kMaxSlicePadding - 1.0)));
  if (is_aijmp(family) && info.long_rows > 0)
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  long rows set apart in blocks of their own: %" PetscInt64_FMT
                                     " (more than %.0f times their block's mean row), so that the others are sliced\n",
                                     info.long_rows, kLongRowFactor));
  if (format_group > 1 && s.opts.mode != StorageMode::rowsplit && s.opts.mode != StorageMode::entrysplit)
    PetscCall(
        PetscViewerASCIIPrintf(viewer,
                               "  block formats: the rows of a block of %d with one column pattern share a format "
                               "where one of them needs it (-mat_%s_block_formats)\n",
                               format_group, family));
  if (!is_aijmp(family))
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "  sigma %d: %s (%" PetscInt64_FMT " windows sorted)\n", s.opts.sort_window,
        s.opts.sort_window > 1 ? "sliced rows sorted by length within windows of sigma rows where that "
                                 "stores less padding"
                               : "rows in matrix order",
        info.sorted_windows));
  if (info.nodes > 0) {
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  %" PetscInt64_FMT " rows in %" PetscInt64_FMT " nodes (%" PetscInt64_FMT
                                     " with 32-bit columns, the others 16-bit offsets); rows per node: count",
                                     info.node_rows, info.nodes, info.wide_nodes));
    PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
    for (int n = 1; n <= kMaxNodeRows; ++n)
      if (info.nodes_of_size[n])
        PetscCall(PetscViewerASCIIPrintf(viewer, " %d: %" PetscInt64_FMT, n, info.nodes_of_size[n]));
    PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
    PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  }
  if (info.segments > 0) PetscCall(AIJMPViewSegments(viewer, info));
  if (is_aijmp(family)) PetscCall(AIJMPViewKernel(viewer, info, s));
  PetscCall(AIJMPViewGatheredX(viewer, info, s));
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "  builds: %" PetscInt64_FMT " full, %" PetscInt64_FMT
                                   " value-only (same pattern and row formats: layout and indices kept)\n",
                                   info.builds, info.value_builds));
  if (info.device_copies > 0)
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  device products (%s backend, SELL copies of %d-row slices): %" PetscInt64_FMT
                                     " copies made, %.3g MB held\n",
                                     DeviceBackendName(), kGpuSliceRows, info.device_copies, info.device_bytes / 1e6));
  if (s.opts.mode == StorageMode::lossless || (info.segments > 0 && info.read_level == info.segments)) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "  lossless: the stored operator is the assembled one; products equal AIJ's bit for bit\n"));
  } else if (info.segments > 0) {
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  LOSSY reads: products use A+E with |E_ij| < %.3g |A_ij| (each value truncated "
                                     "to the segments read); the stored values stay exact\n",
                                     segment_read_bound((int)info.segments, (int)info.read_level)));
  } else if (!is_aijmp(family)) {
    PetscCall(
        PetscViewerASCIIPrintf(viewer,
                               "  LOSSY: the matrix holds the rounded values, largest relative change %.3g; every "
                               "operation (products, MatGetRow, MatConvert) sees them\n",
                               worst));
  } else if (worst == 0.0) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "  lossy mode, but every value of this matrix was stored exactly: the operator is unchanged\n"));
  } else {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "  LOSSY: products use a perturbed operator A+E with |E_ij| <= %.3g |A_ij| (largest change made);\n",
        worst));
    PetscCall(
        PetscViewerASCIIPrintf(viewer, "  residuals a KSP reports are measured against A+E, not the assembled A\n"));
  }
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

} // namespace petscmp

using namespace petscmp;

// The settings of an aijmp matrix; with ellmp_too, also of an ellmp one (the getters and the read level: ellmp's
// other settings change its stored values and go through MatELLMPSetStorage()).
static PetscErrorCode AIJMPGetSettings(Mat A, AIJMPSettings **s, bool ellmp_too = false, bool *ellmp = nullptr)
{
  PetscErrorCode (*f)(Mat, AIJMPSettings **) = nullptr;

  PetscFunctionBegin;
  *s = nullptr;
  if (ellmp) *ellmp = false;
  PetscCall(PetscObjectQueryFunction((PetscObject)A, "MatAIJMPGetSettings_C", &f));
  if (!f && ellmp_too) {
    PetscCall(PetscObjectQueryFunction((PetscObject)A, "MatELLMPGetSettings_C", &f));
    if (f && ellmp) *ellmp = true;
  }
  if (f) PetscCall((*f)(A, s));
  PetscFunctionReturn(0);
}

// The settings a getter reports (with ellmp_too, an ellmp matrix's as well), the command line read first as the next
// product would read it; null for matrices of other types.
static PetscErrorCode AIJMPQuerySettings(Mat A, AIJMPSettings **s, bool ellmp_too = false)
{
  bool ellmp;

  PetscFunctionBegin;
  PetscCall(AIJMPGetSettings(A, s, ellmp_too, &ellmp));
  if (*s) PetscCall(AIJMPReadOptionsLazily(A, **s, ellmp ? "ellmp" : "aijmp"));
  PetscFunctionReturn(0);
}

// The one path of every setter: applies `change` to A's settings (matrices of
// other types have none and ignore the call), records that the C API set them
// (a later lazy options read must not override it), and bumps the object state
// so the compact copies are rebuilt at the next product.
template <typename Change>
static PetscErrorCode AIJMPChangeSettings(Mat A, unsigned which, Change &&change, bool values_change = true)
{
  AIJMPSettings *s;

  PetscFunctionBegin;
  // (ellmp: only the read level and the read of gathered slices change here: neither changes the stored values)
  PetscCall(AIJMPGetSettings(A, &s, which == kSetReadLevel || which == kSetGatheredX));
  if (!s) PetscFunctionReturn(0);
  change(*s);
  s->explicitly_set |= which;
  if (values_change) PetscCall(PetscObjectStateIncrease((PetscObject)A));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPSetStorage - Sets how a `MATAIJMP` matrix stores its values; products always compute in fp64.

   Logically Collective

   Input Parameters:
+  A - the matrix
-  storage - see `MatAIJMPStorage`

   Options Database Keys:
+  -mat_aijmp_storage <lossless,fp32,fp16,bf16,fp11_20,fp11_4,tolerance,rowsplit,entrysplit,split2,split4> - the storage
-  -mat_aijmp_block_formats <true,false> - the rows of one block (block size > 1, one column pattern) share the widest
   format any of them needs, where one of them needs it (default true; not in rowsplit)

   Notes:
   Every mode but `MAT_AIJMP_LOSSLESS`, `MAT_AIJMP_SPLIT2` and `MAT_AIJMP_SPLIT4` may change the operator a Krylov
   method iterates with; `MatView()` with `PETSC_VIEWER_ASCII_INFO` reports the largest relative change. The split
   modes store every value exactly and let products read fewer bits of each (`MatAIJMPSetReadLevel()`). Matrices of
   other types ignore this call.

   Level: beginner

.seealso: `MATAIJMP`, `MatAIJMPGetStorage()`, `MatAIJMPGetInfo()`
@*/
PetscErrorCode MatAIJMPSetStorage(Mat A, MatAIJMPStorage storage)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCheck(storage >= MAT_AIJMP_LOSSLESS && storage <= MAT_AIJMP_SPLIT4, PetscObjectComm((PetscObject)A),
             PETSC_ERR_ARG_OUTOFRANGE, "Unknown aijmp storage %d", (int)storage);
  PetscCall(
      AIJMPChangeSettings(A, kSetStorage, [&](AIJMPSettings &s) { s.opts.mode = static_cast<StorageMode>(storage); }));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPGetStorage - Gets the storage mode of a `MATAIJMP` matrix

   Not Collective

   Input Parameter:
.  A - the matrix

   Output Parameter:
.  storage - the mode (a `MATELLMP` matrix's too; `MAT_AIJMP_LOSSLESS` for matrices of other types, which store fp64
             exactly)

   Level: beginner

.seealso: `MatAIJMPSetStorage()`
@*/
PetscErrorCode MatAIJMPGetStorage(Mat A, MatAIJMPStorage *storage)
{
  AIJMPSettings *s;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(AIJMPQuerySettings(A, &s, true));
  *storage = s ? static_cast<MatAIJMPStorage>(s->opts.mode) : MAT_AIJMP_LOSSLESS;
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPSetLayout - Sets how the compact copy of a `MATAIJMP` matrix lays out its rows

   Logically Collective

   Input Parameters:
+  A - the matrix
-  layout - see `MatAIJMPLayout`

   Options Database Key:
.  -mat_aijmp_layout <auto,csr,sliced,node> - the layout

   Notes:
   The layout changes how values are read, never which values are stored nor the order in which a row is summed:
   products are bitwise the same in every layout. The sliced layout (SELL-8) lets one SIMD instruction convert the
   entries of 8 rows; it stores 32-bit column indices of its own (4 more bytes per stored value, padding included).
   Matrices of other types ignore this call.

   Level: advanced

.seealso: `MATAIJMP`, `MatAIJMPLayout`, `MatAIJMPGetLayout()`, `MatAIJMPGetInfo()`
@*/
PetscErrorCode MatAIJMPSetLayout(Mat A, MatAIJMPLayout layout)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCheck(layout >= MAT_AIJMP_LAYOUT_AUTO && layout <= MAT_AIJMP_LAYOUT_NODE, PetscObjectComm((PetscObject)A),
             PETSC_ERR_ARG_OUTOFRANGE, "Unknown aijmp layout %d", (int)layout);
  PetscCall(AIJMPChangeSettings(A, kSetLayout, [&](AIJMPSettings &s) { s.opts.layout = static_cast<Layout>(layout); }));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPGetLayout - Gets the row layout of a `MATAIJMP` matrix's compact copy

   Not Collective

   Input Parameter:
.  A - the matrix

   Output Parameter:
.  layout - the layout (`MAT_AIJMP_LAYOUT_AUTO` for matrices of other types)

   Level: advanced

.seealso: `MatAIJMPSetLayout()`
@*/
PetscErrorCode MatAIJMPGetLayout(Mat A, MatAIJMPLayout *layout)
{
  AIJMPSettings *s;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(AIJMPQuerySettings(A, &s));
  *layout = s ? static_cast<MatAIJMPLayout>(s->opts.layout) : MAT_AIJMP_LAYOUT_AUTO;
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPSetKernel - Sets which kernel computes the products of a `MATAIJMP` matrix

   Logically Collective

   Input Parameters:
+  A - the matrix
-  kernel - see `MatAIJMPKernel`

   Options Database Keys:
+  -mat_aijmp_kernel <auto,aij,compact> - the kernel
-  -mat_aijmp_kernel_trial_after <n> - auto, copies saving under 10% of AIJ's inode bytes: AIJ products before the trial

   Notes:
   With `MAT_AIJMP_KERNEL_AUTO` (the default) and lossless storage, the first six products of each nonzero pattern
   alternate between PETSc's AIJ kernel and the compact kernel, timed one by one; the faster by median time is kept
   until the nonzero pattern changes, and the compact values are freed when AIJ's kernel wins. Where PETSc runs its
   inode kernel and the compact copy would read over 90% of its bytes (FEM matrices whose values need fp64), the copy's
   first build may cost more products than a short run saves: AIJ's kernel computes the first
   `-mat_aijmp_kernel_trial_after` products (default 100) and the six timed ones follow; a negative value keeps AIJ's
   kernel without a trial. Both kernels give the
   same result bit for bit, so the choice never changes a result: lossless aijmp is never slower than AIJ beyond
   the timing noise of those six products. With MPI each rank chooses for its diagonal and off-diagonal blocks
   alone. Lossy storage modes always use the compact kernel (AIJ's would use other values), and so do the split modes
   (their copy serves every read level, `MatAIJMPSetReadLevel()`); `MAT_AIJMP_KERNEL_AIJ`
   computes with AIJ's kernel on the fp64 values whatever the storage mode, which turns the compression off.
   Transposed products use the chosen kernel, and AIJ's while none is chosen. Matrices of other types ignore this
   call. `-mat_view ::ascii_info` and `MatAIJMPGetInfo()` report the choice.

   Level: intermediate

.seealso: `MATAIJMP`, `MatAIJMPKernel`, `MatAIJMPGetKernel()`, `MatAIJMPGetInfo()`
@*/
PetscErrorCode MatAIJMPSetKernel(Mat A, MatAIJMPKernel kernel)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCheck(kernel >= MAT_AIJMP_KERNEL_AUTO && kernel <= MAT_AIJMP_KERNEL_COMPACT, PetscObjectComm((PetscObject)A),
             PETSC_ERR_ARG_OUTOFRANGE, "Unknown aijmp kernel %d: use auto, aij or compact", (int)kernel);
  PetscCall(AIJMPChangeSettings(
      A, kSetKernel, [&](AIJMPSettings &s) { s.kernel = kernel; }, false));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPGetKernel - Gets the kernel setting of a `MATAIJMP` matrix (what `auto` chose: `MatAIJMPGetInfo()`)

   Not Collective

   Input Parameter:
.  A - the matrix

   Output Parameter:
.  kernel - the setting (`MAT_AIJMP_KERNEL_AUTO` for matrices of other types)

   Level: intermediate

.seealso: `MatAIJMPSetKernel()`
@*/
PetscErrorCode MatAIJMPGetKernel(Mat A, MatAIJMPKernel *kernel)
{
  AIJMPSettings *s;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(AIJMPQuerySettings(A, &s));
  *kernel = s ? s->kernel : MAT_AIJMP_KERNEL_AUTO;
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPSetGatheredX - Sets how the AVX-512 kernels of a `MATAIJMP` or `MATELLMP` matrix read the vector entries of
   gathered slices

   Logically Collective

   Input Parameters:
+  A - the matrix
-  read - see `MatAIJMPGatheredX`

   Options Database Key:
.  -mat_aijmp_gathered_x <auto,loads,gathers> - the read (`MATELLMP`: -mat_ellmp_gathered_x)

   Notes:
   A gathered slice is 8 sliced rows whose columns are neither a stencil's (shifted by one per row) nor patched ones:
   each of its entries needs 8 vector entries from 8 places, read by one gather instruction or by 8 scalar loads. The
   sums are bitwise the same either way; only the speed differs, and by processor: gathers ran 1.09-1.29x faster on
   an Intel Xeon with AVX512-FP16, scalar loads faster on AMD Zen 4 and Zen 5, and processors whose gathers carry a
   microcode mitigation may differ again. With `MAT_AIJMP_GATHERED_X_AUTO` (the default), where gathered slices hold
   at least a tenth of a copy's stored values, the first six compact products of each nonzero pattern (after the
   choice of `MatAIJMPSetKernel()`, where one is timed) alternate between the two reads, timed one by one, and the
   faster by median time is kept (`MATELLMP`: its first six products, none being timed otherwise); elsewhere, and
   before that, the rule of the processor applies (gathers on Intel, scalar loads on others). With MPI each rank
   chooses for its diagonal and off-diagonal blocks alone. Builds without
   the AVX-512 kernels, and matrices of other types, ignore this setting. `-mat_view ::ascii_info` and (aijmp)
   `MatAIJMPGetInfo()` report the choice.

   Level: advanced

.seealso: `MATAIJMP`, `MatAIJMPGatheredX`, `MatAIJMPGetGatheredX()`, `MatAIJMPSetKernel()`, `MatAIJMPGetInfo()`
@*/
PetscErrorCode MatAIJMPSetGatheredX(Mat A, MatAIJMPGatheredX read)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCheck(read >= MAT_AIJMP_GATHERED_X_AUTO && read <= MAT_AIJMP_GATHERED_X_GATHERS, PetscObjectComm((PetscObject)A),
             PETSC_ERR_ARG_OUTOFRANGE, "Unknown read of x in gathered slices %d: use auto, loads or gathers",
             (int)read);
  PetscCall(AIJMPChangeSettings(
      A, kSetGatheredX, [&](AIJMPSettings &s) { s.gathered_x = read; }, false));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPGetGatheredX - Gets how a `MATAIJMP` or `MATELLMP` matrix is set to read x in gathered slices (what `auto`
   chose: `MatAIJMPGetInfo()`, or the view)

   Not Collective

   Input Parameter:
.  A - the matrix

   Output Parameter:
.  read - the setting (`MAT_AIJMP_GATHERED_X_AUTO` for matrices of other types)

   Level: advanced

.seealso: `MatAIJMPSetGatheredX()`
@*/
PetscErrorCode MatAIJMPGetGatheredX(Mat A, MatAIJMPGatheredX *read)
{
  AIJMPSettings *s;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(AIJMPQuerySettings(A, &s, true));
  *read = s ? s->gathered_x : MAT_AIJMP_GATHERED_X_AUTO;
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPSetTolerance - Sets the relative error bound per entry of the `MAT_AIJMP_TOLERANCE` storage

   Logically Collective

   Input Parameters:
+  A - the matrix
-  tol - each row is stored in the narrowest format whose relative error is at most tol for every entry of the row

   Options Database Key:
.  -mat_aijmp_tolerance <tol> - the bound (default 1e-3)

   Level: intermediate

.seealso: `MatAIJMPSetStorage()`
@*/
PetscErrorCode MatAIJMPSetTolerance(Mat A, PetscReal tol)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCheck(tol >= 0, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
             "The aijmp tolerance must be nonnegative, not %g", (double)tol);
  PetscCall(AIJMPChangeSettings(A, kSetTolerance, [&](AIJMPSettings &s) { s.opts.tolerance = tol; }));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPSetRowSplit - Sets the parameters of the `MAT_AIJMP_ROWSPLIT` storage (row-wise fp32/fp64 split)

   Logically Collective

   Input Parameters:
+  A - the matrix
.  range_factor - the range is r = range_factor * mean|a| over all nonzeros of the matrix (default 0.1)
-  row_fraction - a row is stored in fp32 when at least this fraction of its values lie in (-r, r) and all fit fp32
(default 0.99)

   Options Database Keys:
+  -mat_aijmp_range_factor <f> - the range factor
-  -mat_aijmp_row_fraction <p> - the row fraction

   Level: advanced

.seealso: `MatAIJMPSetStorage()`
@*/
PetscErrorCode MatAIJMPSetRowSplit(Mat A, PetscReal range_factor, PetscReal row_fraction)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCheck(range_factor > 0, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
             "The rowsplit range factor must be positive, not %g", (double)range_factor);
  PetscCheck(row_fraction >= 0 && row_fraction <= 1, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
             "The rowsplit row fraction must lie in [0, 1], not %g", (double)row_fraction);
  PetscCall(AIJMPChangeSettings(A, kSetRowSplit, [&](AIJMPSettings &s) {
    s.opts.range_factor = range_factor;
    s.opts.row_fraction = row_fraction;
  }));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPSetEntrySplitRange - Sets the range of the `MAT_AIJMP_ENTRYSPLIT` storage: entries with |a| < range go to
fp32

   Logically Collective

   Input Parameters:
+  A - the matrix
-  range - the range (default 1)

   Options Database Key:
.  -mat_aijmp_range <r> - the range

   Level: advanced

.seealso: `MatAIJMPSetStorage()`
@*/
PetscErrorCode MatAIJMPSetEntrySplitRange(Mat A, PetscReal range)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCheck(range >= 0, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
             "The entrysplit range must be nonnegative, not %g", (double)range);
  PetscCall(AIJMPChangeSettings(A, kSetRange, [&](AIJMPSettings &s) { s.opts.range = range; }));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPSetNumThreads - Sets the OpenMP threads each process uses for `MATAIJMP` products

   Logically Collective

   Input Parameters:
+  A - the matrix
-  nthreads - threads per process; 0 means 1 unless OMP_NUM_THREADS is set (one MPI rank per core never oversubscribes)

   Options Database Key:
.  -mat_aijmp_threads <n> - the thread count

   Level: intermediate

.seealso: `MATAIJMP`
@*/
PetscErrorCode MatAIJMPSetNumThreads(Mat A, PetscInt nthreads)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCheck(nthreads >= 0, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
             "The thread count must be nonnegative, not %" PetscInt_FMT, nthreads);
  PetscCall(AIJMPChangeSettings(A, kSetThreads, [&](AIJMPSettings &s) { s.nthreads = nthreads; }));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPGetInfo - Reports what the compact copy of a `MATAIJMP` matrix holds, summed over all processes

   Collective

   Input Parameter:
.  A - an assembled `MATAIJMP` matrix

   Output Parameter:
.  info - rows and nonzeros per format, largest relative change per format, bytes read per product

   Notes:
   Builds (or refills) the compact copy when it is stale, as the next product would.
   The largest relative change of each format is not tracked while the copy is written: the first call after a
   build or a value change measures it, in one pass over the matrix values.

   Level: intermediate

.seealso: `MatAIJMPInfo`, `MatAIJMPSetStorage()`
@*/
PetscErrorCode MatAIJMPGetInfo(Mat A, MatAIJMPInfo *info)
{
  PetscErrorCode (*f)(Mat, MatAIJMPInfo *) = nullptr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(PetscObjectQueryFunction((PetscObject)A, "MatAIJMPGetInfo_C", &f));
  PetscCheck(f, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG,
             "MatAIJMPGetInfo() needs a matrix of type aijmp, not %s",
             ((PetscObject)A)->type_name ? ((PetscObject)A)->type_name : "(no type)");
  PetscCall((*f)(A, info));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPSetReadLevel - Sets how many segments of each value the products of a split-storage `MATAIJMP` or
   `MATELLMP` matrix read

   Logically Collective

   Input Parameters:
+  A - the matrix, with storage `MAT_AIJMP_SPLIT2` or `MAT_AIJMP_SPLIT4`
-  level - the segments read, most significant first: 1 reads the heads only; 2 (split2) or 4 (split4) reads every
           segment, the exact values; 0 means all

   Options Database Key:
.  -mat_aijmp_read_level <level> - the level (`MATELLMP`: -mat_ellmp_read_level)

   Notes:
   The values stay stored exactly; only what a product reads changes, so the level may go up and down between
   products at no cost (no rebuild, no state change). Reading r of n segments uses each value truncated toward
   zero to 64 r / n - 12 significand bits: a relative change below 2^-(64 r / n - 12) per entry (2^-20 for the
   heads of split2, 2^-4, 2^-20, 2^-36 for split4), and moves r / n of the value bytes. Reading every segment gives
   AIJ's products bit for bit. Only the compact kernel reads part of the values: with `MAT_AIJMP_KERNEL_AIJ` a level
   below all is an error at the next product. Matrices of other types ignore this call.

   Level: intermediate

.seealso: `MATAIJMP`, `MatAIJMPGetReadLevel()`, `MatAIJMPSetStorage()`, `MatAIJMPGetInfo()`
@*/
PetscErrorCode MatAIJMPSetReadLevel(Mat A, PetscInt level)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCheck(level >= 0 && level <= 4, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE,
             "The read level is a number of segments, 1 to 4 (0: all), not %" PetscInt_FMT, level);
  PetscCall(AIJMPChangeSettings(
      A, kSetReadLevel,
      [&](AIJMPSettings &s) {
        s.read_segments = level;
        s.row_levels.reset(); // (one level for every row again)
      },
      false));
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPSetRowReadLevels - Sets, for each local row of a split-storage `MATAIJMP` or `MATELLMP` matrix, how many
   segments of its values `MatMult()` and `MatMultAdd()` read

   Not Collective

   Input Parameters:
+  A - the matrix, with storage `MAT_AIJMP_SPLIT2` or `MAT_AIJMP_SPLIT4`
-  levels - one level per local row, 1 (the heads) to the number of segments (the exact values); NULL returns to
            one level for every row (`MatAIJMPSetReadLevel()`)

   Notes:
   A row is read at least at its level: the rows the kernels read together (a node of rows with one column list, a
   slice of 8 rows) read the highest level among them, once. Each row's result is bit for bit what a product at that
   level (`MatAIJMPSetReadLevel()`) gives for the row. A component-wise method (`KSPMPJACOBI` with the `component`
   strategy) so reads the tails only of the rows (and their neighbors in storage) that need them. The levels are
   copied. Transposed products read the matrix-wide level. Setting a
   matrix-wide level with `MatAIJMPSetReadLevel()` drops the levels per row. Matrices of other types ignore this
   call.

   Level: advanced

.seealso: `MatAIJMPSetReadLevel()`, `MatAIJMPGetRowReadLevelCounts()`, `KSPMPJACOBI`
@*/
PetscErrorCode MatAIJMPSetRowReadLevels(Mat A, const PetscInt levels[])
{
  AIJMPSettings *s;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(AIJMPQuerySettings(A, &s, true));
  if (!s) PetscFunctionReturn(0);
  if (!levels) {
    s->row_levels.reset();
    PetscFunctionReturn(0);
  }
  const PetscInt segments = storage_mode_segments(s->opts.mode), n = A->rmap->n;
  PetscCheck(segments > 0, PETSC_COMM_SELF, PETSC_ERR_ARG_INCOMP,
             "Read levels per row need the split2 or split4 storage, not %s", storage_mode_name(s->opts.mode));
  auto rl = std::make_shared<RowReadLevels>();
  rl->levels.resize(static_cast<std::size_t>(n));
  for (PetscInt i = 0; i < n; ++i) {
    PetscCheck(levels[i] >= 1 && levels[i] <= segments, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
               "The read level of local row %" PetscInt_FMT " is %" PetscInt_FMT
               ": a number of segments from 1 to %" PetscInt_FMT " is needed",
               i, levels[i], segments);
    rl->levels[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(levels[i]);
    rl->rows[levels[i]]++;
    rl->max = PetscMax(rl->max, levels[i]);
  }
  s->row_levels = std::move(rl);
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPGetRowReadLevelCounts - Gets how many local rows `MatMult()` reads at each level

   Not Collective

   Input Parameter:
.  A - the matrix

   Output Parameter:
.  rows - rows[l] for l = 1 .. 4: the local rows read at l segments (rows[0] is 0); with no levels per row set,
          every row counts at the matrix-wide level (all zeros for storage that is not split and for matrices of
          other types)

   Level: advanced

.seealso: `MatAIJMPSetRowReadLevels()`, `MatAIJMPGetReadLevel()`
@*/
PetscErrorCode MatAIJMPGetRowReadLevelCounts(Mat A, PetscInt rows[5])
{
  AIJMPSettings *s;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(AIJMPQuerySettings(A, &s, true));
  for (int l = 0; l < 5; ++l)
    rows[l] = s && s->row_levels ? s->row_levels->rows[l] : 0;
  if (s && !s->row_levels && AIJMPReadLevel(*s) > 0) rows[AIJMPReadLevel(*s)] = A->rmap->n;
  PetscFunctionReturn(0);
}

/*@
   MatAIJMPGetReadLevel - Gets how many segments of each value the products of a `MATAIJMP` matrix read

   Not Collective

   Input Parameter:
.  A - the matrix

   Output Parameter:
.  level - the segments read (all of them: 2 for split2, 4 for split4, unless set lower); 0 for storage that is not
           split and for matrices of other types

   Level: intermediate

.seealso: `MatAIJMPSetReadLevel()`
@*/
PetscErrorCode MatAIJMPGetReadLevel(Mat A, PetscInt *level)
{
  AIJMPSettings *s;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(AIJMPQuerySettings(A, &s, true));
  *level = s ? AIJMPReadLevel(*s) : 0;
  PetscFunctionReturn(0);
}
