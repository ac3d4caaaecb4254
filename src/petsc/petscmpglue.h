// Helpers every piece of PETSc glue shares.
#pragma once

#include <exception>
#include <new>

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

} // namespace petscmp
