// Private to the ellmp glue: the data a seqellmp matrix carries in A->data.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "mat/aijmp/aijmpimpl.h"
#include "petscmp/core/compact_rows.hpp"

namespace petscmp {

struct SeqELLMP {
  AIJMPSettings settings; // storage options (-mat_ellmp_*); the kernel fields are not used
  // Receives MatSetValues (and the preallocation) until MatAssemblyEnd turns it
  // into `compact`; null while the matrix is assembled.
  Mat assembly = nullptr;
  // The nonzero state of `assembly` right after it was filled from `compact`:
  // unchanged at MatAssemblyEnd means the same pattern (the layout is kept).
  PetscObjectState reopened_pattern = -1;
  std::unique_ptr<CompactCsr> compact; // the matrix (null before the first assembly)
  CompactRowMap row_map;               // made at the first MatGetRow/MatGetValues of a copy
  std::vector<PetscInt> row_cols;      // MatGetRow's buffers
  std::vector<PetscScalar> row_vals;
  PetscInt cached_row = -1;                             // the row the buffers hold (MatGetValues)
  std::vector<std::pair<MatOption, PetscBool>> options; // MatSetOption calls, given to each assembly matrix
  PetscInt64 full_builds = 0, value_builds = 0;
  std::vector<PetscScalar> block_inverse; // MatInvertBlockDiagonal's result, owned by the matrix
  PetscInt inodes = 0, inode_limit = 0;   // SeqAIJ's inodes at the last build (its summation order, kept)
  double aij_bytes = 0; // bytes SeqAIJ's product would read (its inode kernel where it finds inodes), at the last build
};

} // namespace petscmp

PETSC_INTERN PetscErrorCode MatCreate_SeqELLMP(Mat);
PETSC_INTERN PetscErrorCode MatCreate_MPIELLMP(Mat);
