// The one registration file: types, root names, log events.
#include "mat/aijmp/aijmpimpl.h"
#include "mat/ellmp/ellmpimpl.h"
#include "ksp/mpjacobi/mpjacobiimpl.h"
#include "ksp/mprelax/mprelaximpl.h"
#include "pc/apbjacobi/apbjacobiimpl.h"

static PetscBool petscmp_package_initialized = PETSC_FALSE;

/*@C
   PetscMPFinalizePackage - Called by `PetscFinalize()`; forgets that the package was initialized

   Level: developer

.seealso: `PetscMPInitializePackage()`
@*/
PetscErrorCode PetscMPFinalizePackage(void)
{
  PetscFunctionBegin;
  petscmp_package_initialized = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
   PetscMPInitializePackage - Registers the petscmp types (`MATAIJMP`, `MATELLMP`, `PCAPBJACOBI`, `KSPMPJACOBI`,
   `KSPMPRELAX`) and
   log events.
Programs that link libpetscmp call it after `PetscInitialize()`; with -dll_append PETSc calls it through
   `PetscDLLibraryRegister_petscmp()`.

   Level: beginner

.seealso: `MATAIJMP`, `PCAPBJACOBI`
@*/
PetscErrorCode PetscMPInitializePackage(void)
{
  PetscFunctionBegin;
  if (petscmp_package_initialized) PetscFunctionReturn(0);
  petscmp_package_initialized = PETSC_TRUE;
  PetscCall(MatRegister(MATSEQAIJMP, MatCreate_SeqAIJMP));
  PetscCall(MatRegister(MATMPIAIJMP, MatCreate_MPIAIJMP));
  PetscCall(MatRegisterRootName(MATAIJMP, MATSEQAIJMP, MATMPIAIJMP));
  PetscCall(PetscLogEventRegister("AIJMPBuild", MAT_CLASSID, &MATAIJMP_Build));
  PetscCall(PetscLogEventRegister("AIJMPMult", MAT_CLASSID, &MATAIJMP_Mult));
  PetscCall(PetscLogEventRegister("AIJMPMultAdd", MAT_CLASSID, &MATAIJMP_MultAdd));
  PetscCall(PetscLogEventRegister("AIJMPMultTr", MAT_CLASSID, &MATAIJMP_MultTranspose));
  PetscCall(MatRegister(MATSEQELLMP, MatCreate_SeqELLMP));
  PetscCall(MatRegister(MATMPIELLMP, MatCreate_MPIELLMP));
  PetscCall(MatRegisterRootName(MATELLMP, MATSEQELLMP, MATMPIELLMP));
  PetscCall(petscmp::ELLMPRegisterFactors());
  PetscCall(PetscLogEventRegister("ELLMPBuild", MAT_CLASSID, &MATELLMP_Build));
  PetscCall(PetscLogEventRegister("ELLMPMult", MAT_CLASSID, &MATELLMP_Mult));
  PetscCall(PCRegister(PCAPBJACOBI, PCCreate_APBJacobi));
  PetscCall(PetscLogEventRegister("APBJDetect", PC_CLASSID, &PCAPBJACOBI_Detect));
  PetscCall(PetscLogEventRegister("APBJBuild", PC_CLASSID, &PCAPBJACOBI_Build));
  PetscCall(PetscLogEventRegister("APBJApply", PC_CLASSID, &PCAPBJACOBI_Apply));
  PetscCall(KSPRegister(KSPMPJACOBI, KSPCreate_MPJacobi));
  PetscCall(KSPRegister(KSPMPRELAX, KSPCreate_MPRelax));
  PetscCall(PetscRegisterFinalize(PetscMPFinalizePackage));
  PetscFunctionReturn(0);
}

/* Called by PETSc when the library is loaded with -dll_append. */
PetscErrorCode PetscDLLibraryRegister_petscmp(void)
{
  PetscFunctionBegin;
  PetscCall(PetscMPInitializePackage());
  PetscFunctionReturn(0);
}

/*@C
   PetscMPCompiledISA - The instruction sets the petscmp kernels were compiled for (benchmarks print it)

   Not Collective

   Level: developer
@*/
const char *PetscMPCompiledISA(void)
{
  return "x86-64"
#if defined(__AVX2__)
         " AVX2"
#endif
#if defined(__FMA__)
         " FMA(unused: -ffp-contract=off)"
#endif
#if defined(__F16C__)
         " F16C"
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
         " AVX-512(F,BW,VL)"
#endif
#if defined(__AVX512BF16__)
         " AVX512-BF16"
#endif
#if defined(__AVX512FP16__)
         " AVX512-FP16"
#endif
#if defined(_OPENMP)
         " OpenMP"
#endif
      ;
}
