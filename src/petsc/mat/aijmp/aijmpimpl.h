// Private to the aijmp glue: the data a seqaijmp/mpiaijmp matrix carries in
// A->spptr, and the functions seq and MPI share.
#pragma once

#include <exception>
#include <memory>
#include <new>

#include <petsc/private/matimpl.h>

#include "petscmp.h"
#include "petscmpglue.h"
#include "petscmp/core/compact_csr.hpp"

namespace petscmp {

// Settings of one matrix (for an MPI matrix, the parent's, pushed to its blocks).
struct AIJMPSettings {
  StorageOptions opts;
  PetscInt nthreads = 0;  // 0: openmp::default_thread_count()
  bool options_read  = false; // -mat_aijmp_* were read (by MatSetFromOptions or lazily)
  unsigned explicitly_set = 0; // fields set through the C API win over a lazy options read
};
enum : unsigned { kSetStorage = 1, kSetTolerance = 2, kSetRowSplit = 4, kSetRange = 8, kSetThreads = 16 };

// Everything that identifies the master values a compact copy was built from.
struct BuildKey {
  PetscObjectState state = -1, nonzerostate = -1;
  PetscInt ncols = -1;
  const void *cols = nullptr, *values = nullptr;
  bool operator==(const BuildKey &o) const
  {
    return state == o.state && nonzerostate == o.nonzerostate && ncols == o.ncols && cols == o.cols && values == o.values;
  }
};

struct SeqAIJMP {
  AIJMPSettings settings;
  std::unique_ptr<CompactCsr> compact;
  BuildKey key;
  bool is_mpi_block = false; // a diagonal/off-diagonal block of an mpiaijmp matrix
  // SeqAIJ's operations this type replaces (SeqAIJ's functions are not exported)
  PetscErrorCode (*mult)(Mat, Vec, Vec)                     = nullptr;
  PetscErrorCode (*multadd)(Mat, Vec, Vec, Vec)             = nullptr;
  PetscErrorCode (*multtranspose)(Mat, Vec, Vec)            = nullptr;
  PetscErrorCode (*multtransposeadd)(Mat, Vec, Vec, Vec)    = nullptr;
  PetscErrorCode (*destroy)(Mat)                            = nullptr;
  PetscErrorCode (*duplicate)(Mat, MatDuplicateOption, Mat *) = nullptr;
  PetscErrorCode (*view)(Mat, PetscViewer)                  = nullptr;
  PetscErrorCode (*setfromoptions)(Mat, PetscOptionItems *) = nullptr;
  PetscErrorCode (*retrievevalues)(Mat)                     = nullptr;
};

struct MPIAIJMP {
  AIJMPSettings settings;
  PetscObjectState built_state = -1; // the parent's state when the blocks' copies were built
  PetscErrorCode (*mult)(Mat, Vec, Vec)                       = nullptr;
  PetscErrorCode (*multadd)(Mat, Vec, Vec, Vec)               = nullptr;
  PetscErrorCode (*multtranspose)(Mat, Vec, Vec)              = nullptr;
  PetscErrorCode (*multtransposeadd)(Mat, Vec, Vec, Vec)      = nullptr;
  PetscErrorCode (*destroy)(Mat)                              = nullptr;
  PetscErrorCode (*duplicate)(Mat, MatDuplicateOption, Mat *) = nullptr;
  PetscErrorCode (*view)(Mat, PetscViewer)                    = nullptr;
  PetscErrorCode (*setfromoptions)(Mat, PetscOptionItems *)   = nullptr;
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

// Options and settings (aijmp_options.cxx in spirit; shared by seq and MPI)
PetscErrorCode AIJMPSetFromOptions(Mat A, AIJMPSettings &s);
PetscErrorCode AIJMPReadOptionsLazily(Mat A, AIJMPSettings &s);

// seq
PetscErrorCode SeqAIJMPKeyOf(Mat A, BuildKey &key);
PetscErrorCode SeqAIJMPIsCurrent(Mat A, PetscBool *current);
PetscErrorCode SeqAIJMPInvalidate(Mat A);
PetscErrorCode SeqAIJMPSetSettings(Mat A, const AIJMPSettings &s);
PetscErrorCode SeqAIJMPInstall(Mat A, std::unique_ptr<CompactCsr> compact);
PetscErrorCode SeqAIJMPGetCompact(Mat A, const CompactCsr **compact);
PetscErrorCode SeqAIJMPSumOrder(Mat A, SumOrder *order);
PetscErrorCode AIJMPAccumulateInfo(const CompactCsr &c, MatAIJMPInfo &info);
PetscErrorCode AIJMPViewInfo(PetscViewer viewer, const MatAIJMPInfo &info, const AIJMPSettings &s);

} // namespace petscmp

PETSC_INTERN PetscErrorCode MatCreate_SeqAIJMP(Mat);
PETSC_INTERN PetscErrorCode MatCreate_MPIAIJMP(Mat);
PETSC_INTERN PetscErrorCode MatConvert_SeqAIJ_SeqAIJMP(Mat, MatType, MatReuse, Mat *);
PETSC_INTERN PetscErrorCode MatConvert_MPIAIJ_MPIAIJMP(Mat, MatType, MatReuse, Mat *);
