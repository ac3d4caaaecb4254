/* petscmp: decouple the precision matrix values are stored in from the
   precision they are computed in (always fp64), for PETSc's solver stack.

   Load into an unmodified PETSc program with
       -dll_append /path/libpetscmp.so -mat_type aijmp
   or link libpetscmp and call PetscMPInitializePackage() after PetscInitialize(). */
#ifndef PETSCMP_H
#define PETSCMP_H

#include <petscmat.h>

#define MATAIJMP    "aijmp"
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
  MAT_AIJMP_ENTRYSPLIT
} MatAIJMPStorage;
PETSC_EXTERN const char *const MatAIJMPStorages[];

/* Storage formats, in the order of the per-format arrays of MatAIJMPInfo. */
typedef enum { PETSCMP_FP64, PETSCMP_FP32, PETSCMP_FP16, PETSCMP_BF16, PETSCMP_FP11_20, PETSCMP_FP11_4, PETSCMP_NUM_FORMATS } PetscMPFormat;
PETSC_EXTERN const char *const PetscMPFormats[];

/*S
   MatAIJMPInfo - what the compact copy of a `MATAIJMP` matrix holds (summed over ranks)

   Fields:
+  rows[f], nnz[f]     - nonempty rows and nonzeros stored in format f
.  max_rel_error[f]    - largest relative change |stored - a|/|a| of an entry stored in format f
.  bytes               - bytes a MatMult reads from the matrix (values and indices)
.  aij_bytes           - the same for `MATAIJ`
-  lossy               - whether the stored operator may differ from the assembled one

   Level: intermediate
S*/
typedef struct {
  PetscInt64 rows[PETSCMP_NUM_FORMATS];
  PetscInt64 nnz[PETSCMP_NUM_FORMATS];
  PetscReal  max_rel_error[PETSCMP_NUM_FORMATS];
  PetscReal  bytes;
  PetscReal  aij_bytes;
  PetscBool  lossy;
} MatAIJMPInfo;

PETSC_EXTERN PetscErrorCode PetscMPInitializePackage(void);
PETSC_EXTERN PetscErrorCode PetscMPFinalizePackage(void);
PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_petscmp(void);

PETSC_EXTERN PetscErrorCode MatAIJMPSetStorage(Mat, MatAIJMPStorage);
PETSC_EXTERN PetscErrorCode MatAIJMPGetStorage(Mat, MatAIJMPStorage *);
PETSC_EXTERN PetscErrorCode MatAIJMPSetTolerance(Mat, PetscReal);
PETSC_EXTERN PetscErrorCode MatAIJMPSetRowSplit(Mat, PetscReal, PetscReal);
PETSC_EXTERN PetscErrorCode MatAIJMPSetEntrySplitRange(Mat, PetscReal);
PETSC_EXTERN PetscErrorCode MatAIJMPSetNumThreads(Mat, PetscInt);
PETSC_EXTERN PetscErrorCode MatAIJMPGetInfo(Mat, MatAIJMPInfo *);

PETSC_EXTERN PetscLogEvent MATAIJMP_Build, MATAIJMP_Mult, MATAIJMP_MultAdd, MATAIJMP_MultTranspose;

#endif
