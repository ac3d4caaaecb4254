// OpenMP directives that vanish (without a warning) in builds without OpenMP.
#pragma once

#if defined(_OPENMP)
#define PETSCMP_OMP(directive) _Pragma(#directive)
#else
#define PETSCMP_OMP(directive)
#endif
