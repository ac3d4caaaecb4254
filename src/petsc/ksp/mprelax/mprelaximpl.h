// Private to the petscmp glue: what the registration file needs of KSPMPRELAX.
#pragma once

#include <petscksp.h>

PETSC_INTERN PetscErrorCode KSPCreate_MPRelax(KSP);
