// Private to the petscmp glue: what the registration file needs of KSPMPJACOBI.
#pragma once

#include <petscksp.h>

PETSC_INTERN PetscErrorCode KSPCreate_MPJacobi(KSP);
