// Helpers every piece of PETSc glue shares.
#pragma once

#include <exception>
#include <new>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <petscsys.h>

namespace petscmp {

// Runs fn, turning a C++ exception from the core into a PETSc error, so no
// exception ever crosses into PETSc's C code.
template <typename Fn> PetscErrorCode guarded(Fn &&fn)
{
  try {
    fn();
  } catch (const std::bad_alloc &) {
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MEM, "petscmp: out of memory");
  } catch (const std::exception &e) {
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "%s", e.what());
  }
  return 0;
}

// Gives the memory freed so far back to the system. A large temporary freed
// (ellmp's assembly matrix) stays in malloc's heap otherwise: glibc raises its
// mmap threshold after freeing a mapped block, so the next one of that size
// comes from the heap, whose free pages remain resident.
inline void ReleaseFreedMemory()
{
#if defined(__GLIBC__)
  (void)malloc_trim(0);
#endif
}

} // namespace petscmp
