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
  PetscInt nthreads       = 0;     // 0: openmp::default_thread_count()
  bool options_read       = false; // -mat_aijmp_* were read (by MatSetFromOptions or lazily)
  unsigned explicitly_set = 0;     // fields set through the C API win over a lazy options read
};
enum : unsigned { kSetStorage = 1, kSetTolerance = 2, kSetRowSplit = 4, kSetRange = 8, kSetThreads = 16, kSetLayout = 32 };

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
  PetscErrorCode (*mult)(Mat, Vec, Vec)                       = nullptr;
  PetscErrorCode (*multadd)(Mat, Vec, Vec, Vec)               = nullptr;
  PetscErrorCode (*multtranspose)(Mat, Vec, Vec)              = nullptr;
  PetscErrorCode (*multtransposeadd)(Mat, Vec, Vec, Vec)      = nullptr;
  PetscErrorCode (*destroy)(Mat)                              = nullptr;
  PetscErrorCode (*duplicate)(Mat, MatDuplicateOption, Mat *) = nullptr;
  PetscErrorCode (*view)(Mat, PetscViewer)                    = nullptr;
  PetscErrorCode (*setfromoptions)(Mat, PetscOptionItems *)   = nullptr;
};

// Keeps B's current operations in `saved` and installs `ours`.
inline void InstallOps(Mat B, ReplacedOps &saved, const ReplacedOps &ours)
{
  MatOps o               = B->ops;
  saved.mult             = o->mult;
  saved.multadd          = o->multadd;
  saved.multtranspose    = o->multtranspose;
  saved.multtransposeadd = o->multtransposeadd;
  saved.destroy          = o->destroy;
  saved.duplicate        = o->duplicate;
  saved.view             = o->view;
  saved.setfromoptions   = o->setfromoptions;
  o->mult                = ours.mult;
  o->multadd             = ours.multadd;
  o->multtranspose       = ours.multtranspose;
  o->multtransposeadd    = ours.multtransposeadd;
  o->destroy             = ours.destroy;
  o->duplicate           = ours.duplicate;
  o->view                = ours.view;
  o->setfromoptions      = ours.setfromoptions;
}

// Puts the base type's operations back.
inline void RestoreOps(Mat A, const ReplacedOps &saved)
{
  ReplacedOps ignored;
  InstallOps(A, ignored, saved);
}

struct SeqAIJMP : ReplacedOps {
  AIJMPSettings settings;
  std::unique_ptr<CompactCsr> compact;
  BuildKey key;
  bool is_mpi_block                     = false; // a diagonal/off-diagonal block of an mpiaijmp matrix
  PetscErrorCode (*retrievevalues)(Mat) = nullptr;
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
