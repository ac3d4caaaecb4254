/* petscmp: decouple the precision matrix values are stored in from the
   precision they are computed in (always fp64), for PETSc's solver stack.

   Load into an unmodified PETSc program with
       -dll_append /path/libpetscmp.so -mat_type aijmp
   or link libpetscmp and call PetscMPInitializePackage() after PetscInitialize(). */
#ifndef PETSCMP_H
#define PETSCMP_H

#include <petscmat.h>
#include <petscpc.h>

#define MATAIJMP "aijmp"
#define MATSEQAIJMP "seqaijmp"
#define MATMPIAIJMP "mpiaijmp"

/*E
   MatAIJMPStorage - how a `MATAIJMP` matrix stores its values

$  MAT_AIJMP_LOSSLESS   - each row in the narrowest of fp16/bf16/fp32/fp64 that holds all its values exactly (default)
$  MAT_AIJMP_FP32       - uniform fp32; rows that would overflow or underflow stay fp64
$  MAT_AIJMP_FP16       - uniform IEEE binary16; rows that would overflow or underflow go to fp32, then fp64
$  MAT_AIJMP_BF16       - uniform bfloat16; fallback as fp16
$  MAT_AIJMP_FP11_20    - upper 32 bits of each double (truncated); fallback fp64
$  MAT_AIJMP_FP11_4     - upper 16 bits of each double (truncated); fallback fp11_20, then fp64
$  MAT_AIJMP_TOLERANCE  - each row in the narrowest format with relative error <= tolerance for every entry
$  MAT_AIJMP_ROWSPLIT   - row-wise split: fp32 rows when most values are small against the mean, else fp64
$  MAT_AIJMP_ENTRYSPLIT - entry-wise split (|a| < range in fp32, else fp64), the comparison baseline
$  MAT_AIJMP_SPLIT2     - every value exact, cut into a 32-bit head (sign, exponent, 20 significand bits) and a
$                         32-bit tail, each kind in its own array: products read the heads only or both
$                         (`MatAIJMPSetReadLevel()`)
$  MAT_AIJMP_SPLIT4     - every value exact, cut into 4 segments of 16 bits (the first: sign, exponent, 4
$                         significand bits): products read the first 1, 2, 3 or all 4

   Level: beginner
E*/
typedef enum {
  MAT_AIJMP_LOSSLESS,
  MAT_AIJMP_FP32,
  MAT_AIJMP_FP16,
  MAT_AIJMP_BF16,
  MAT_AIJMP_FP11_20,
  MAT_AIJMP_FP11_4,
  MAT_AIJMP_TOLERANCE,
  MAT_AIJMP_ROWSPLIT,
  MAT_AIJMP_ENTRYSPLIT,
  MAT_AIJMP_SPLIT2,
  MAT_AIJMP_SPLIT4
} MatAIJMPStorage;
PETSC_EXTERN const char *const MatAIJMPStorages[];

/*E
   MatAIJMPLayout - how the compact copy of a `MATAIJMP` matrix lays out its rows (the values are the same in all)

$  MAT_AIJMP_LAYOUT_AUTO   - nodes where consecutive rows share their columns (1.5 rows a node or more on average), else
$                            sliced where padding adds at most 50% of a block's nonzeros (where rows in matrix
$                            order would pad more, sorted by length within windows of 256 rows first, if that
$                            pads less, and else with the rows more than 4 times as long as the mean row set apart
$                            in a block of their own) and columns fit 32 bits, else CSR (default)
$  MAT_AIJMP_LAYOUT_CSR    - values in the row order of the AIJ master, whose column indices products read
$  MAT_AIJMP_LAYOUT_SLICED - slices of 8 rows stored column by column (SELL-8) with their own 32-bit columns,
                             read 8 rows per SIMD instruction; rows padded to the longest row of their slice
$  MAT_AIJMP_LAYOUT_NODE   - nodes of up to 8 consecutive rows with the same columns (as PETSc's inodes, or the
                             dofs of a mesh node): one column list per node, as 16-bit offsets from the node's first
                             column where they fit, the node's values side by side, so each x entry is read once
                             per node and all its rows are updated by one SIMD instruction

   Level: advanced

.seealso: `MatAIJMPSetLayout()`, `MATAIJMP`
E*/
typedef enum {
  MAT_AIJMP_LAYOUT_AUTO,
  MAT_AIJMP_LAYOUT_CSR,
  MAT_AIJMP_LAYOUT_SLICED,
  MAT_AIJMP_LAYOUT_NODE
} MatAIJMPLayout;
PETSC_EXTERN const char *const MatAIJMPLayouts[];

/*E
   MatAIJMPKernel - which kernel computes the products of a `MATAIJMP` matrix

$  MAT_AIJMP_KERNEL_AUTO    - measured at run time (default): in lossless mode the first products alternate between
$                             PETSc's AIJ kernel and the compact kernel (both give the same result bit for bit) and the
$                             faster by median time is kept for the nonzero pattern; lossy and split modes use the
$                             compact kernel
$  MAT_AIJMP_KERNEL_AIJ     - PETSc's own AIJ kernel on the fp64 master values (no compact copy is built)
$  MAT_AIJMP_KERNEL_COMPACT - the compact copy, in the storage and layout chosen

   Level: intermediate

.seealso: `MatAIJMPSetKernel()`, `MATAIJMP`
E*/
typedef enum {
  MAT_AIJMP_KERNEL_AUTO,
  MAT_AIJMP_KERNEL_AIJ,
  MAT_AIJMP_KERNEL_COMPACT
} MatAIJMPKernel;
PETSC_EXTERN const char *const MatAIJMPKernels[];

/*E
   MatAIJMPGatheredX - how the AVX-512 kernels of a `MATAIJMP` matrix read the vector entries of gathered slices
   (sliced rows whose columns are neither a stencil's shifted ones nor patched: 8 rows, 8 columns per entry)

$  MAT_AIJMP_GATHERED_X_AUTO    - measured at run time (default): where gathered slices hold at least a tenth of the
$                                 stored values, the first compact products alternate between the two reads (both give
$                                 the same result bit for bit) and the faster by median time is kept for the nonzero
$                                 pattern; elsewhere, and until then, gathers on Intel processors and scalar loads on
$                                 others
$  MAT_AIJMP_GATHERED_X_LOADS   - 8 scalar loads per entry
$  MAT_AIJMP_GATHERED_X_GATHERS - one gather instruction per entry

   Level: advanced

.seealso: `MatAIJMPSetGatheredX()`, `MATAIJMP`
E*/
typedef enum {
  MAT_AIJMP_GATHERED_X_AUTO,
  MAT_AIJMP_GATHERED_X_LOADS,
  MAT_AIJMP_GATHERED_X_GATHERS
} MatAIJMPGatheredX;
PETSC_EXTERN const char *const MatAIJMPGatheredXs[];

/* Storage formats, in the order of the per-format arrays of MatAIJMPInfo. */
typedef enum {
  PETSCMP_FP64,
  PETSCMP_FP32,
  PETSCMP_FP16,
  PETSCMP_BF16,
  PETSCMP_FP11_20,
  PETSCMP_FP11_4,
  PETSCMP_NUM_FORMATS
} PetscMPFormat;
PETSC_EXTERN const char *const PetscMPFormats[];

/*S
   MatAIJMPInfo - what the compact copy of a `MATAIJMP` matrix holds (summed over ranks)

   Fields:
+  rows[f], nnz[f]     - nonempty rows and nonzeros stored in format f (entrysplit: rows with an entry in format f)
.  max_rel_error[f]    - largest relative change |stored - a|/|a| of an entry stored in format f
.  stored              - values stored, including the explicit zeros that pad the rows of sliced blocks
.  sliced_rows         - rows in the sliced layout (`MatAIJMPSetLayout()`)
.  shifted_rows        - of those, the rows of shifted slices: 8 rows of one length whose columns are the first row's
                         shifted by one per row (stencil rows), stored with one column index per 8 values and read
                         without gathers
.  node_rows           - rows in the node layout; the rows neither sliced nor in nodes are in CSR order
.  nodes               - nodes of the node layout
.  wide_nodes          - of those, the nodes whose columns span too much for 16-bit offsets (32-bit columns)
.  nodes_of_size[s]    - nodes of s rows, s = 1..8 (node counts, with MPI, are those of the diagonal blocks)
.  bytes               - bytes a MatMult reads from the matrix (values and indices)
.  aij_bytes           - the same for `MATAIJ`: with PETSc's inode kernel (one column index per inode) where SeqAIJ
                         uses it, else one column index per nonzero
.  lossy               - whether the stored operator may differ from the assembled one
.  kernel_parts[k]     - local blocks (one per rank serial, two with MPI) whose products are not decided yet (k = 0),
                         use PETSc's AIJ kernel (1) or the compact kernel (2); see `MatAIJMPSetKernel()`
.  kernel_by_bytes     - of kernel_parts[1], the blocks that chose AIJ's kernel without timing (with
                         `-mat_aijmp_kernel_trial_after -1`): AIJ runs its inode kernel and the compact copy would read
                         more than 90% of AIJ's bytes (it is then never built)
.  kernel_deferred     - of kernel_parts[0], the blocks of that kind whose products use AIJ's kernel until their trial:
                         after `-mat_aijmp_kernel_trial_after` products both kernels are timed as usual
.  kernel_trial_in     - the most products any such block still computes with AIJ's kernel before its trial
.  kernel_ms[k]        - serial, `MAT_AIJMP_KERNEL_AUTO` once decided: median time in ms of the timed AIJ (0) and
                         compact (1) products
.  gathered_x_parts[k] - local blocks whose gathered slices read x by the rule of the processor (k = 0: auto, where
                         the copy has few gathered slices or the build no AVX-512 kernels, or before the trial), by
                         scalar loads (1) or by gathers (2), as set or as their timed products chose; see
                         `MatAIJMPSetGatheredX()`
.  gathered_x_ms[k]    - serial, once decided: median time in ms of the products timed with scalar loads (0) and with
                         gathers (1)
.  builds              - compact copies built from scratch since the matrix was created: row formats, layout, indices
                         and values (with MPI: of the diagonal block, the most of any process)
-  value_builds        - value-only rebuilds: after a change of values with the same nonzero pattern, when every row
                         keeps its format, the layout and indices are kept and only the values are rewritten
.  sorted_windows      - windows of rows stored sorted by length (fewer padding entries in their slices): ellmp with
                         -mat_ellmp_sort_window sigma > 1 (windows of sigma rows); aijmp's automatic layout, where
                         slices of rows in matrix order would pad a block by more than half its nonzeros and sorting
                         within windows of 256 rows brings that under (else the block is read in CSR order)
.  narrow_rows         - rows of sliced blocks in narrow slices: not shifted, columns within 2^16 of the slice's
                         smallest one, stored as that column and a 16-bit offset per entry (half the index bytes)
.  patched_rows        - rows of sliced blocks in patched slices: shifted but for fewer than 2 entries per column of
                         the slice (a stencil's slice holding a grid line's first or last point), stored as a shifted
                         slice's columns plus those few and read with masked plain loads, without gathers
.  long_rows           - rows aijmp's automatic layout set apart in a block of their own (read in CSR order, or
                         sliced among themselves) because they are more than 4 times as long as the mean row of their
                         block, where sorting alone left the slices padded by more than half (a constraint's dense
                         row, a hub of a graph); the other rows are then sliced. With MPI, rows of the diagonal and
                         off-diagonal blocks are counted apart
.  segments            - split storage: the segments each value is cut into (2 or 4; 0 for the other modes)
.  read_level          - split storage: the segments products read, 1..segments (segments: the exact values)
.  device_copies       - serial: copies made for products on vectors in device memory (SELL copies of 32-row slices of
                         the compact copy, and of its transpose per read level), since the matrix was created; they are
                         made again when the compact copy is
-  device_bytes        - serial: bytes those copies hold now

   Level: intermediate
S*/
typedef struct {
  PetscInt64 rows[PETSCMP_NUM_FORMATS];
  PetscInt64 nnz[PETSCMP_NUM_FORMATS];
  PetscReal max_rel_error[PETSCMP_NUM_FORMATS];
  PetscInt64 stored;
  PetscInt64 sliced_rows;
  PetscInt64 shifted_rows;
  PetscInt64 node_rows;
  PetscInt64 nodes;
  PetscInt64 wide_nodes;
  PetscInt64 nodes_of_size[9];
  PetscReal bytes;
  PetscReal aij_bytes;
  PetscBool lossy;
  PetscInt64 kernel_parts[3];
  PetscInt64 kernel_by_bytes;
  PetscInt64 kernel_deferred;
  PetscInt64 kernel_trial_in;
  PetscReal kernel_ms[2];
  PetscInt64 gathered_x_parts[3];
  PetscReal gathered_x_ms[2];
  PetscInt64 builds;
  PetscInt64 value_builds;
  PetscInt64 sorted_windows;
  PetscInt64 narrow_rows;
  PetscInt64 patched_rows;
  PetscInt64 long_rows;
  PetscInt segments;
  PetscInt read_level;
  PetscInt64 device_copies;
  PetscReal device_bytes;
} MatAIJMPInfo;

PETSC_EXTERN PetscErrorCode PetscMPInitializePackage(void);
PETSC_EXTERN PetscErrorCode PetscMPFinalizePackage(void);
PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_petscmp(void);
PETSC_EXTERN const char    *PetscMPCompiledISA(void);

PETSC_EXTERN PetscErrorCode MatAIJMPSetStorage(Mat, MatAIJMPStorage);
PETSC_EXTERN PetscErrorCode MatAIJMPGetStorage(Mat, MatAIJMPStorage *);
PETSC_EXTERN PetscErrorCode MatAIJMPSetTolerance(Mat, PetscReal);
PETSC_EXTERN PetscErrorCode MatAIJMPSetRowSplit(Mat, PetscReal, PetscReal);
PETSC_EXTERN PetscErrorCode MatAIJMPSetEntrySplitRange(Mat, PetscReal);
PETSC_EXTERN PetscErrorCode MatAIJMPSetNumThreads(Mat, PetscInt);
PETSC_EXTERN PetscErrorCode MatAIJMPSetLayout(Mat, MatAIJMPLayout);
PETSC_EXTERN PetscErrorCode MatAIJMPGetLayout(Mat, MatAIJMPLayout *);
PETSC_EXTERN PetscErrorCode MatAIJMPSetKernel(Mat, MatAIJMPKernel);
PETSC_EXTERN PetscErrorCode MatAIJMPGetKernel(Mat, MatAIJMPKernel *);
PETSC_EXTERN PetscErrorCode MatAIJMPSetGatheredX(Mat, MatAIJMPGatheredX);
PETSC_EXTERN PetscErrorCode MatAIJMPGetGatheredX(Mat, MatAIJMPGatheredX *);
PETSC_EXTERN PetscErrorCode MatAIJMPGetInfo(Mat, MatAIJMPInfo *);
PETSC_EXTERN PetscErrorCode MatAIJMPSetReadLevel(Mat, PetscInt);
PETSC_EXTERN PetscErrorCode MatAIJMPGetReadLevel(Mat, PetscInt *);
PETSC_EXTERN PetscErrorCode MatAIJMPSetRowReadLevels(Mat, const PetscInt[]);
PETSC_EXTERN PetscErrorCode MatAIJMPGetRowReadLevelCounts(Mat, PetscInt[5]);

PETSC_EXTERN PetscLogEvent MATAIJMP_Build, MATAIJMP_Mult, MATAIJMP_MultAdd, MATAIJMP_MultTranspose;

/* ---- MATELLMP: sliced ELL whose compact values are the only copy ---- */

/*MC
   MATELLMP - MATELLMP = "ellmp" - A sparse matrix stored in sliced ELL (SELL-8, or nodes of rows sharing their
   columns) whose values exist only in compact formats: unlike `MATAIJMP`, no fp64 copy is kept, so the matrix takes
   about half of `MATAIJ`'s memory in fp32 and a third in fp16. `-mat_type ellmp` resolves to `MATSEQELLMP` ("seqellmp")
   on one process and `MATMPIELLMP` ("mpiellmp") on several; products compute in fp64.

   The matrix is what is stored: in a lossy storage mode every operation (MatMult, MatGetRow, MatGetValues,
   MatGetDiagonal, MatConvert, MatView) sees the rounded values, so the residuals a KSP computes are those of the stored
   operator. In lossless mode (default) every value is kept exactly and products equal `MATAIJ`'s bit for bit.

   Assembly goes through MatSetValues with the usual AIJ preallocation (MatSeqAIJSetPreallocation(),
   MatXAIJSetPreallocation()) into a temporary AIJ matrix that MatAssemblyEnd() turns into the compact storage; values
   set after an assembly reopen it from the stored values, and a reassembly with the same pattern keeps the layout.

   Options Database Keys:
+  -mat_type ellmp - selects this type
.  -mat_ellmp_storage <lossless,fp32,fp16,bf16,fp11_20,fp11_4,tolerance,rowsplit,entrysplit,split2,split4> - as `MatAIJMPStorage`
.  -mat_ellmp_tolerance <tol> - tolerance mode: bound on each entry's relative change
.  -mat_ellmp_range_factor, -mat_ellmp_row_fraction, -mat_ellmp_range - rowsplit and entrysplit parameters
.  -mat_ellmp_layout <auto,sliced,node> - nodes where rows share columns, else slices of 8 rows (csr is refused)
.  -mat_ellmp_block_formats <true,false> - the rows of one block share the widest format one of them needs
-  -mat_ellmp_threads <n> - OpenMP threads for products and builds

   Level: beginner

.seealso: `MATAIJMP`, `MatAIJMPStorage`
M*/
#define MATELLMP    "ellmp"
#define MATSEQELLMP "seqellmp"
#define MATMPIELLMP "mpiellmp"
PETSC_EXTERN PetscLogEvent MATELLMP_Build, MATELLMP_Mult;
PETSC_EXTERN PetscErrorCode MatELLMPSetStorage(Mat, MatAIJMPStorage);

/* ---- PCAPBJACOBI: adaptive-precision block-Jacobi ---- */
#define PCAPBJACOBI "apbjacobi"

/*E
   PCAPBJacobiBlocks - how `PCAPBJACOBI` finds its diagonal blocks

$  PC_APBJACOBI_BLOCKS_SUPERVARIABLE - adjacent nodes (point blocks, else rows with identical patterns) agglomerated
$                                      up to the maximum block size
$  PC_APBJACOBI_BLOCKS_MATBLOCKSIZE  - blocks of `MatGetBlockSize()`
$  PC_APBJACOBI_BLOCKS_VARIABLE      - the blocks given with `MatSetVariableBlockSizes()`
$  PC_APBJACOBI_BLOCKS_AUTO          - (default) the matrix's nodes, never agglomerated: the point blocks when the
$                                      block size is larger than 1, else the variable block sizes, else runs of rows
$                                      with identical patterns (inodes) when there are any, else supervariables

   Note:
   `PC_APBJACOBI_BLOCKS_AUTO` is last so that the values of the other three stay those of earlier releases.

   Level: beginner
E*/
typedef enum {
  PC_APBJACOBI_BLOCKS_SUPERVARIABLE,
  PC_APBJACOBI_BLOCKS_MATBLOCKSIZE,
  PC_APBJACOBI_BLOCKS_VARIABLE,
  PC_APBJACOBI_BLOCKS_AUTO
} PCAPBJacobiBlocks;
PETSC_EXTERN const char *const PCAPBJacobiBlocksTypes[];

/*E
   PCAPBJacobiFormats - the storage formats `PCAPBJACOBI` may choose from for an inverted block

$  PC_APBJACOBI_FORMATS_ALL              - (default) fp16, bf16, fp11_4, fp32, fp11_20, fp64: the narrowest
$                                          admissible one
$  PC_APBJACOBI_FORMATS_IEEE             - fp16, fp32, fp64
$  PC_APBJACOBI_FORMATS_RANGE_PRESERVING - fp11_4, fp11_20, fp64 (double's exponent range: no over/underflow check,
$                                          cheaper setup)
$  PC_APBJACOBI_FORMATS_FP64 ... _FP11_4 - every block in that one format (fp64 for a block the format cannot hold)

   Level: beginner
E*/
typedef enum {
  PC_APBJACOBI_FORMATS_ALL,
  PC_APBJACOBI_FORMATS_IEEE,
  PC_APBJACOBI_FORMATS_RANGE_PRESERVING,
  PC_APBJACOBI_FORMATS_FP64,
  PC_APBJACOBI_FORMATS_FP32,
  PC_APBJACOBI_FORMATS_FP16,
  PC_APBJACOBI_FORMATS_BF16,
  PC_APBJACOBI_FORMATS_FP11_20,
  PC_APBJACOBI_FORMATS_FP11_4
} PCAPBJacobiFormats;
PETSC_EXTERN const char *const PCAPBJacobiFormatsTypes[];

/*E
   PCAPBJacobiFp64Kernel - the kernel `PCAPBJACOBI` applies its fp64 blocks of 1 to 8 rows with

$  PC_APBJACOBI_FP64_KERNEL_AUTO        - (default) both, alternated over the first applies after each setup; the
$                                         faster by median is kept until the next setup
$  PC_APBJACOBI_FP64_KERNEL_INTERLEAVED - eight blocks at a time in SIMD registers
$  PC_APBJACOBI_FP64_KERNEL_BLOCKWISE   - block after block, the loop `PCPBJACOBI` runs over its inverses

   Note:
   Both give the same result bit for bit and read the same bytes. Which is faster depends on the processor and on
   what ran before the apply (on AMD Zen 5 the interleaved kernel was 1.1-1.3x faster alone, and 0.63-1.16x as fast
   inside a CG solve), hence the timing. Blocks stored in other formats always use the interleaved kernel, which
   decodes eight blocks at once.

   Level: advanced
E*/
typedef enum {
  PC_APBJACOBI_FP64_KERNEL_AUTO,
  PC_APBJACOBI_FP64_KERNEL_INTERLEAVED,
  PC_APBJACOBI_FP64_KERNEL_BLOCKWISE
} PCAPBJacobiFp64Kernel;
PETSC_EXTERN const char *const PCAPBJacobiFp64KernelTypes[];

/*S
   PCAPBJacobiInfo - what a set-up `PCAPBJACOBI` holds (summed over ranks; times are the maximum over ranks)

   Fields:
+  blocks                 - number of diagonal blocks
.  blocks_of_size[s]      - blocks of size s (1 <= s <= 32)
.  blocks_per_format[f]   - blocks stored in format f (`PetscMPFormat` order)
.  failed_blocks          - singular or non-finite blocks (the setup failed when nonzero)
.  range_rejections       - formats admitted by the condition number but rejected by the over/underflow check
.  forced_fallbacks       - blocks stored in fp64 because the forced format cannot hold them
.  bytes, fp64_bytes      - bytes of the stored inverses, and of the same inverses in fp64
.  kappa_min, kappa_max   - smallest and largest condition number kappa_1 of a block
.  seconds_detection, seconds_inversion, seconds_selection - setup time per phase
-  device_copies          - copies of the blocks made for applies on vectors in device memory (since the last setup;
                            the most of any rank)

   Level: intermediate
S*/
typedef struct {
  PetscInt64 blocks;
  PetscInt64 blocks_of_size[33];
  PetscInt64 blocks_per_format[PETSCMP_NUM_FORMATS];
  PetscInt64 failed_blocks;
  PetscInt64 range_rejections;
  PetscInt64 forced_fallbacks;
  PetscReal bytes, fp64_bytes;
  PetscReal kappa_min, kappa_max;
  PetscReal seconds_detection, seconds_inversion, seconds_selection;
  PetscInt64 device_copies;
} PCAPBJacobiInfo;

PETSC_EXTERN PetscErrorCode PCAPBJacobiSetMaxBlockSize(PC, PetscInt);
PETSC_EXTERN PetscErrorCode PCAPBJacobiGetMaxBlockSize(PC, PetscInt *);
PETSC_EXTERN PetscErrorCode PCAPBJacobiSetBlocks(PC, PCAPBJacobiBlocks);
PETSC_EXTERN PetscErrorCode PCAPBJacobiGetBlocks(PC, PCAPBJacobiBlocks *);
PETSC_EXTERN PetscErrorCode PCAPBJacobiSetAccuracy(PC, PetscReal);
PETSC_EXTERN PetscErrorCode PCAPBJacobiGetAccuracy(PC, PetscReal *);
PETSC_EXTERN PetscErrorCode PCAPBJacobiSetFormats(PC, PCAPBJacobiFormats);
PETSC_EXTERN PetscErrorCode PCAPBJacobiGetFormats(PC, PCAPBJacobiFormats *);
PETSC_EXTERN PetscErrorCode PCAPBJacobiSetNumThreads(PC, PetscInt);
PETSC_EXTERN PetscErrorCode PCAPBJacobiSetFp64Kernel(PC, PCAPBJacobiFp64Kernel);
PETSC_EXTERN PetscErrorCode PCAPBJacobiGetFp64Kernel(PC, PCAPBJacobiFp64Kernel *);
PETSC_EXTERN PetscErrorCode PCAPBJacobiGetLocalBlockSizes(PC, PetscInt *, const PetscInt *[]);
PETSC_EXTERN PetscErrorCode PCAPBJacobiGetInfo(PC, PCAPBJacobiInfo *);

PETSC_EXTERN PetscLogEvent PCAPBJACOBI_Detect, PCAPBJACOBI_Build, PCAPBJACOBI_Apply;

/* ---- KSPMPJACOBI: multi-precision Jacobi (Richardson) that reads only the precision it needs ---- */
#include <petscksp.h>
#define KSPMPJACOBI "mpjacobi"

/*E
   KSPMPJacobiStrategy - how `KSPMPJACOBI` chooses the read level (segments of each value, `MatAIJMPSetReadLevel()`)
   of a split-storage operator

$  KSP_MPJACOBI_RESIDUAL - start at the first level; compare the residual with the part of it the level's truncation
$                          causes (measured by one product reading every segment, estimated for the other levels),
$                          and step up one level where the residual is within a factor of it (predicted from the
$                          observed rate), where it stopped decreasing, or where it meets the tolerance (default)
$  KSP_MPJACOBI_STEPS    - step up after given iteration counts or relative residuals (a thesis-style schedule)
$  KSP_MPJACOBI_FULL     - always read every segment: plain damped Jacobi (KSPRICHARDSON) on the exact values
$  KSP_MPJACOBI_COMPONENT - a read level per row (`MatAIJMPSetRowReadLevels()`), the CPMS adaptive Jacobi: every phi
$                          iterations a row steps up one level where its exact residual stopped shrinking at the
$                          rate its residual at the row's level shows (the stagnation test with threshold delta)

   Level: intermediate

.seealso: `KSPMPJACOBI`, `KSPMPJacobiSetStrategy()`
E*/
typedef enum { KSP_MPJACOBI_RESIDUAL, KSP_MPJACOBI_STEPS, KSP_MPJACOBI_FULL, KSP_MPJACOBI_COMPONENT } KSPMPJacobiStrategy;
PETSC_EXTERN const char *const KSPMPJacobiStrategies[];

PETSC_EXTERN PetscErrorCode KSPMPJacobiSetStrategy(KSP, KSPMPJacobiStrategy);
PETSC_EXTERN PetscErrorCode KSPMPJacobiGetStrategy(KSP, KSPMPJacobiStrategy *);
PETSC_EXTERN PetscErrorCode KSPMPJacobiGetReadShare(KSP, PetscReal *);
PETSC_EXTERN PetscErrorCode KSPMPJacobiGetRowLevelCounts(KSP, PetscInt[5], PetscInt *);
PETSC_EXTERN PetscErrorCode KSPMPJacobiSetOmega(KSP, PetscReal);
PETSC_EXTERN PetscErrorCode KSPMPJacobiGetLevelIterations(KSP, PetscInt *, PetscInt[]);

/* ---- KSPMPRELAX: relaxed-precision Krylov (an inner KSP whose products read fewer segments as it converges) ---- */
#define KSPMPRELAX "mprelax"

#endif
