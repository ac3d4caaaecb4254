// Private to the apbjacobi glue: what the registration file needs.
#pragma once

#include <petscpc.h>

PETSC_INTERN PetscErrorCode PCCreate_APBJacobi(PC);
