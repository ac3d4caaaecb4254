// PETSc finds many implementations by *type name*: MatConvert looks up
// "MatConvert_<type of A>_<new type>_C", MatProductSetFromOptions looks up
// "MatProductSetFromOptions_<type A>_<type B>[_<type C>]_C" on A, B and C when
// their productsetfromoptions differ. AIJ registers its answers under the
// names seqaij/mpiaij; an aijmp matrix would miss every one of them and get a
// generic algorithm (different rounding), or a crash (MatSetValues on a MATIS
// without a local-to-global map).
//
// The table below lists every such name that seqaij and mpiaij answer in
// PETSc 3.18, whether AIJ composes it on its own objects or the partner type
// composes it on its objects (dense, hypre, maij), and how aijmp answers it.
// For each entry, aijmp composes every variant of the name in which some
// "seqaij" ("mpiaij") token reads "seqaijmp" ("mpiaijmp"). The audit test
// (tests/petsc/test_typekeyed.c) lists the type-keyed names a PETSc build
// really composes on AIJ and its product partners, and fails on any that an
// aijmp matrix does not answer: moving to a new PETSc starts with that test.
#include <cstring>
#include <string>
#include <vector>

#include "mat/aijmp/aijmpimpl.h"

namespace petscmp {

namespace {

enum class Answer {
  same_function, // AIJ's function, unchanged: it reads the AIJ part of the matrix (bitwise AIJ's result)
  via_aij,       // AIJ's converter would overwrite A->spptr (another AIJ subclass): convert a plain AIJ copy
};

struct TypeKeyedName {
  const char *aij_name;    // the name as AIJ answers it in PETSc 3.18
  const char *composed_on; // the type whose objects carry it; nullptr: AIJ's own objects
  Answer answer;
};

// Result types: conversions give the requested type. Products whose PETSc
// kernel creates C with A's type (AB, AtB, PtAP, RARt, ABC with an aijmp A)
// give an aijmp C; it reads -mat_aijmp_* from the options database like any
// aijmp matrix. Products with a dense or hypre operand give PETSc's type.
const TypeKeyedName kSeqNames[] = {
    {"MatConvert_seqaij_seqdense_C", nullptr, Answer::same_function},
    {"MatConvert_seqaij_seqbaij_C", nullptr, Answer::same_function},
    {"MatConvert_seqaij_seqsbaij_C", nullptr, Answer::same_function},
    {"MatConvert_seqaij_seqsell_C", nullptr, Answer::same_function},
    {"MatConvert_seqaij_is_C", nullptr, Answer::same_function},
    {"MatConvert_seqaij_hypre_C", nullptr, Answer::same_function},
    {"MatConvert_seqaij_elemental_C", nullptr, Answer::same_function},
    {"MatConvert_seqaij_scalapack_C", nullptr, Answer::same_function},
    {"MatConvert_seqaij_seqaijperm_C", nullptr, Answer::via_aij},
    {"MatConvert_seqaij_seqaijsell_C", nullptr, Answer::via_aij},
    {"MatConvert_seqaij_seqaijcrl_C", nullptr, Answer::via_aij},
    {"MatConvert_seqaij_seqaijmkl_C", nullptr, Answer::via_aij},
    {"MatConvert_seqaij_seqaijcusparse_C", nullptr, Answer::via_aij},
    {"MatConvert_seqaij_seqaijkokkos_C", nullptr, Answer::via_aij},
    {"MatProductSetFromOptions_seqaij_seqaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_transpose_seqaij_seqaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_is_seqaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_seqdense_seqaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_seqaij_seqdense_C", MATSEQDENSE, Answer::same_function},
    {"MatProductSetFromOptions_seqaij_hypre_C", MATHYPRE, Answer::same_function},
    {"MatProductSetFromOptions_seqaij_seqmaij_C", MATSEQMAIJ, Answer::same_function},
};

const TypeKeyedName kMPINames[] = {
    {"MatConvert_mpiaij_mpidense_C", nullptr, Answer::same_function},
    {"MatConvert_mpiaij_mpibaij_C", nullptr, Answer::same_function},
    {"MatConvert_mpiaij_mpisbaij_C", nullptr, Answer::same_function},
    {"MatConvert_mpiaij_mpisell_C", nullptr, Answer::same_function},
    {"MatConvert_mpiaij_is_C", nullptr, Answer::same_function},
    {"MatConvert_mpiaij_hypre_C", nullptr, Answer::same_function},
    {"MatConvert_mpiaij_elemental_C", nullptr, Answer::same_function},
    {"MatConvert_mpiaij_scalapack_C", nullptr, Answer::same_function},
    {"MatConvert_mpiaij_mpiaijperm_C", nullptr, Answer::via_aij},
    {"MatConvert_mpiaij_mpiaijsell_C", nullptr, Answer::via_aij},
    {"MatConvert_mpiaij_mpiaijcrl_C", nullptr, Answer::via_aij},
    {"MatConvert_mpiaij_mpiaijmkl_C", nullptr, Answer::via_aij},
    {"MatConvert_mpiaij_mpiaijcusparse_C", nullptr, Answer::via_aij},
    {"MatConvert_mpiaij_mpiaijkokkos_C", nullptr, Answer::via_aij},
    {"MatProductSetFromOptions_mpiaij_mpiaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_transpose_mpiaij_mpiaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_is_mpiaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_mpiaij_mpidense_C", MATMPIDENSE, Answer::same_function},
    {"MatProductSetFromOptions_mpidense_mpiaij_C", MATMPIDENSE, Answer::same_function},
    {"MatProductSetFromOptions_mpiaij_hypre_C", MATHYPRE, Answer::same_function},
    {"MatProductSetFromOptions_mpiaij_mpimaij_C", MATMPIMAIJ, Answer::same_function},
};

// Every variant of `name` in which a nonempty set of its `base` tokens reads `ours`.
std::vector<std::string> aijmp_variants(const char *name, const char *base, const char *ours)
{
  std::vector<std::string> tokens;
  for (const char *p = name;;) {
    const char *end = std::strchr(p, '_');
    tokens.emplace_back(p, end ? end - p : std::strlen(p));
    if (!end) break;
    p = end + 1;
  }
  std::vector<size_t> positions;
  for (size_t i = 1; i + 1 < tokens.size(); ++i)
    if (tokens[i] == base) positions.push_back(i);
  std::vector<std::string> variants;
  for (unsigned mask = 1; mask < (1u << positions.size()); ++mask) {
    std::string v;
    for (size_t i = 0; i < tokens.size(); ++i) {
      bool ours_here = false;
      for (size_t k = 0; k < positions.size(); ++k)
        if (positions[k] == i && (mask >> k & 1u)) ours_here = true;
      v += (i ? "_" : "") + (ours_here ? std::string(ours) : tokens[i]);
    }
    variants.push_back(v);
  }
  return variants;
}

// A 0x0 instance of a partner type. MAIJ is made only by MatCreateMAIJ, which
// composes its product functions.
PetscErrorCode create_probe(const char *type, Mat *probe)
{
  PetscBool seq, mpi;

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(type, MATSEQMAIJ, &seq));
  PetscCall(PetscStrcmp(type, MATMPIMAIJ, &mpi));
  const bool maij = seq || mpi;
  Mat base;
  PetscCall(MatCreate(PETSC_COMM_SELF, maij ? &base : probe));
  Mat created = maij ? base : *probe;
  PetscCall(MatSetSizes(created, 0, 0, 0, 0));
  PetscCall(MatSetType(created, maij ? (seq ? MATSEQAIJ : MATMPIAIJ) : type));
  if (maij) {
    PetscCall(MatSetUp(base));
    PetscCall(MatAssemblyBegin(base, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(base, MAT_FINAL_ASSEMBLY));
    PetscCall(MatCreateMAIJ(base, 2, probe));
    PetscCall(MatDestroy(&base));
  }
  PetscFunctionReturn(0);
}

// The function a partner type composes on its objects, read from a 0x0 instance.
PetscErrorCode partner_function(const char *type, const char *name, PetscVoidFunction *fn)
{
  PetscErrorCode (*create)(Mat) = nullptr;
  Mat probe;

  PetscFunctionBegin;
  *fn = nullptr;
  PetscCall(PetscFunctionListFind(MatList, type, &create));
  if (!create) PetscFunctionReturn(0); // this PETSc was built without that type
  PetscCall(create_probe(type, &probe));
  PetscCall(PetscObjectQueryFunction_Private((PetscObject)probe, name, fn));
  PetscCall(MatDestroy(&probe));
  PetscFunctionReturn(0);
}

struct Resolved {
  std::string aijmp_name;
  PetscVoidFunction fn;
};

// Partner functions do not change during a run: read them once per table.
PetscErrorCode partner_functions(bool seq, std::vector<Resolved> **out)
{
  static std::vector<Resolved> cache[2];
  static bool done[2] = {false, false};
  const int t         = seq ? 0 : 1;

  PetscFunctionBegin;
  if (!done[t]) {
    done[t] = true;
    for (const TypeKeyedName &e : seq ? kSeqNames : kMPINames) {
      if (!e.composed_on) continue;
      PetscVoidFunction fn;
      PetscCall(partner_function(e.composed_on, e.aij_name, &fn));
      if (!fn) continue;
      for (const std::string &v : aijmp_variants(e.aij_name, seq ? MATSEQAIJ : MATMPIAIJ, seq ? MATSEQAIJMP : MATMPIAIJMP))
        cache[t].push_back({v, fn});
    }
  }
  *out = &cache[t];
  PetscFunctionReturn(0);
}

} // namespace

// MatConvert from aijmp to another AIJ subclass: that converter takes over
// A->spptr and A's operations, so it gets a plain AIJ copy to convert.
PetscErrorCode MatConvert_AIJMP_ViaAIJ(Mat A, MatType newtype, MatReuse reuse, Mat *M)
{
  PetscBool seq;
  Mat plain;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATSEQAIJMP, &seq));
  PetscCall(MatConvert(A, seq ? MATSEQAIJ : MATMPIAIJ, MAT_INITIAL_MATRIX, &plain));
  if (reuse == MAT_REUSE_MATRIX) {
    PetscCall(MatConvert(plain, newtype, MAT_REUSE_MATRIX, M));
    PetscCall(MatDestroy(&plain));
  } else {
    PetscCall(MatConvert(plain, newtype, MAT_INPLACE_MATRIX, &plain));
    if (reuse == MAT_INPLACE_MATRIX)
      PetscCall(MatHeaderReplace(A, &plain));
    else
      *M = plain;
  }
  PetscFunctionReturn(0);
}

PetscErrorCode AIJMPComposeTypeKeyed(Mat B, bool seq, bool on)
{
  const char *base = seq ? MATSEQAIJ : MATMPIAIJ, *ours = seq ? MATSEQAIJMP : MATMPIAIJMP;
  PetscObject o    = (PetscObject)B;

  PetscFunctionBegin;
  for (const TypeKeyedName &e : seq ? kSeqNames : kMPINames) {
    if (e.composed_on) continue;
    PetscVoidFunction fn = nullptr;
    if (on) {
      PetscCall(PetscObjectQueryFunction_Private(o, e.aij_name, &fn)); // composed by MatCreate_SeqAIJ/MPIAIJ
      if (!fn) continue;                                                // not in this PETSc build
      if (e.answer == Answer::via_aij) fn = (PetscVoidFunction)MatConvert_AIJMP_ViaAIJ;
    }
    PetscErrorCode ierr = 0;
    PetscCall(guarded([&] {
      for (const std::string &v : aijmp_variants(e.aij_name, base, ours))
        if (!ierr) ierr = PetscObjectComposeFunction_Private(o, v.c_str(), fn);
    }));
    PetscCall(ierr);
  }
  std::vector<Resolved> *partners = nullptr;
  PetscCall(partner_functions(seq, &partners));
  for (const Resolved &r : *partners)
    PetscCall(PetscObjectComposeFunction_Private(o, r.aijmp_name.c_str(), on ? r.fn : nullptr));
  PetscFunctionReturn(0);
}

} // namespace petscmp
