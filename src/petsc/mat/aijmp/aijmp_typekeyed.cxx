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
  keep_settings, // AIJ's product, and an aijmp result takes the storage settings of the aijmp operand
  to_aijmp,      // the partner's conversion to AIJ (found on the partner matrix), then AIJ -> aijmp in place
};

struct TypeKeyedName {
  const char *aij_name;    // the name as AIJ answers it in PETSc 3.18
  const char *composed_on; // the type whose objects carry it; nullptr: AIJ's own objects
  Answer answer;
};

// Result types: conversions give the requested type. AIJ's product kernels
// give C the type of A (AB, AtB, ABt, PtAP, RARt, ABC), so with an aijmp A, C
// is aijmp, and it takes the storage settings of the first aijmp operand
// (multigrid coarse operators keep the compact storage of the fine one).
// Products with a dense, hypre or MAIJ operand give PETSc's type for them.
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
    {"MatProductSetFromOptions_seqaij_seqaij_C", nullptr, Answer::keep_settings},
    {"MatProductSetFromOptions_transpose_seqaij_seqaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_is_seqaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_seqdense_seqaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_seqaij_seqdense_C", MATSEQDENSE, Answer::same_function},
    {"MatConvert_seqdense_seqaij_C", MATSEQDENSE, Answer::to_aijmp},
    {"MatConvert_seqbaij_seqaij_C", MATSEQBAIJ, Answer::to_aijmp},
    {"MatConvert_seqsbaij_seqaij_C", MATSEQSBAIJ, Answer::to_aijmp},
    {"MatConvert_seqsell_seqaij_C", MATSEQSELL, Answer::to_aijmp},
    {"MatConvert_seqmaij_seqaij_C", MATSEQMAIJ, Answer::to_aijmp},
    {"MatConvert_is_seqaij_C", MATIS, Answer::to_aijmp},
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
    {"MatProductSetFromOptions_mpiaij_mpiaij_C", nullptr, Answer::keep_settings},
    {"MatProductSetFromOptions_transpose_mpiaij_mpiaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_is_mpiaij_C", nullptr, Answer::same_function},
    {"MatProductSetFromOptions_mpiaij_mpidense_C", MATMPIDENSE, Answer::same_function},
    {"MatConvert_mpidense_mpiaij_C", MATMPIDENSE, Answer::to_aijmp},
    {"MatConvert_mpibaij_mpiaij_C", MATMPIBAIJ, Answer::to_aijmp},
    {"MatConvert_mpisbaij_mpiaij_C", MATMPISBAIJ, Answer::to_aijmp},
    {"MatConvert_mpisell_mpiaij_C", MATMPISELL, Answer::to_aijmp},
    {"MatConvert_mpimaij_mpiaij_C", MATMPIMAIJ, Answer::to_aijmp},
    {"MatConvert_is_mpiaij_C", MATIS, Answer::to_aijmp},
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
  // a prefix no option uses: the probe must not react to -mat_view, -mat_type, ...
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)created, "petscmp_probe_"));
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
      if (!e.composed_on || e.answer == Answer::to_aijmp) continue;
      PetscVoidFunction fn;
      PetscCall(partner_function(e.composed_on, e.aij_name, &fn));
      if (!fn) continue;
      PetscCall(guarded([&] {
        for (const std::string &v :
             aijmp_variants(e.aij_name, seq ? MATSEQAIJ : MATMPIAIJ, seq ? MATSEQAIJMP : MATMPIAIJMP))
          cache[t].push_back({v, fn});
      }));
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

namespace {

PetscErrorCode is_aijmp(Mat m, PetscBool *seq, PetscBool *mpi)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)m, MATSEQAIJMP, seq));
  PetscCall(PetscObjectTypeCompare((PetscObject)m, MATMPIAIJMP, mpi));
  PetscFunctionReturn(0);
}

// The base type's operations an aijmp matrix replaced (nullptr if m is not aijmp).
PetscErrorCode replaced_ops_of(Mat m, ReplacedOps **base)
{
  PetscBool seq, mpi;

  PetscFunctionBegin;
  *base = nullptr;
  PetscCall(is_aijmp(m, &seq, &mpi));
  if (!m->spptr || !(seq || mpi)) PetscFunctionReturn(0);
  *base = seq ? static_cast<ReplacedOps *>(static_cast<SeqAIJMP *>(m->spptr))
              : static_cast<ReplacedOps *>(static_cast<MPIAIJMP *>(m->spptr));
  PetscFunctionReturn(0);
}

// The first aijmp operand of the product C (nullptr if none) and the operations it replaced.
PetscErrorCode aijmp_operand(Mat C, Mat *X, ReplacedOps **base)
{
  Mat_Product *p = C->product;

  PetscFunctionBegin;
  *X    = nullptr;
  *base = nullptr;
  for (Mat m : {p->A, p->B, p->C}) {
    if (!m) continue;
    PetscCall(replaced_ops_of(m, base));
    if (!*base) continue;
    *X = m;
    break;
  }
  PetscFunctionReturn(0);
}

PetscErrorCode settings_of(Mat A, AIJMPSettings **s)
{
  PetscErrorCode (*get)(Mat, AIJMPSettings **) = nullptr;

  PetscFunctionBegin;
  *s = nullptr;
  PetscCall(PetscObjectQueryFunction((PetscObject)A, "MatAIJMPGetSettings_C", &get));
  if (get) PetscCall((*get)(A, s));
  PetscFunctionReturn(0);
}

const char kSymbolicName[] = "PetscMPProductSymbolic_C";

// AIJ's symbolic product, then an aijmp C takes the settings of the aijmp operand.
//
// AIJ's kernels give helper matrices the type of an operand and then retype
// them to A's type (ABt: Bt = B^T gets B's type, then MatSetType(Bt, type of
// A)); MatSetType from a subclass to its base type destroys the helper's
// data. So while the symbolic phase runs, an aijmp B or C of a product whose A
// is not aijmp carries AIJ's type name: the kernel then sees one type, as in
// a product of plain AIJ matrices.
PetscErrorCode MatProductSymbolic_AIJMP(Mat C)
{
  PetscErrorCode (*symbolic)(Mat) = nullptr;
  Mat_Product *p                  = C->product;
  Mat X, renamed[2] = {nullptr, nullptr};
  const char *renamed_to[2] = {nullptr, nullptr};
  ReplacedOps *base;
  AIJMPSettings *from, *to;
  PetscBool seq, mpi;

  PetscFunctionBegin;
  PetscCall(PetscObjectQueryFunction((PetscObject)C, kSymbolicName, &symbolic));
  PetscCheck(symbolic, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "petscmp: the product lost its symbolic phase");
  PetscCall(is_aijmp(p->A, &seq, &mpi));
  if (!seq && !mpi) {
    int k = 0;
    for (Mat m : {p->B, p->C}) {
      if (!m || m == p->A) continue;
      PetscCall(is_aijmp(m, &seq, &mpi));
      if (!seq && !mpi) continue;
      renamed[k]      = m;
      renamed_to[k++] = seq ? MATSEQAIJMP : MATMPIAIJMP;
      PetscCall(PetscObjectChangeTypeName((PetscObject)m, seq ? MATSEQAIJ : MATMPIAIJ));
    }
  }
  PetscErrorCode ierr = (*symbolic)(C);
  for (int k = 0; k < 2; ++k)
    if (renamed[k]) PetscCall(PetscObjectChangeTypeName((PetscObject)renamed[k], renamed_to[k]));
  PetscCall(ierr);
  PetscCall(aijmp_operand(C, &X, &base));
  if (!X) PetscFunctionReturn(0);
  PetscCall(settings_of(X, &from));
  PetscCall(settings_of(C, &to));
  if (from && to && from != to) {
    *to = *from;
    PetscCall(PetscObjectStateIncrease((PetscObject)C)); // a compact copy built before is stale
  }
  PetscFunctionReturn(0);
}

} // namespace

/* The productsetfromoptions of aijmp: AIJ's, whose symbolic phase is then
   followed by the settings inheritance above. */
PetscErrorCode MatProductSetFromOptions_AIJMP(Mat C)
{
  Mat X;
  ReplacedOps *base;

  PetscFunctionBegin;
  PetscCall(aijmp_operand(C, &X, &base));
  PetscCheck(X && base->productsetfromoptions, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB,
             "petscmp: product without an aijmp operand");
  PetscCall((*base->productsetfromoptions)(C));
  if (C->ops->productsymbolic && C->ops->productsymbolic != MatProductSymbolic_AIJMP) {
    PetscCall(PetscObjectComposeFunction((PetscObject)C, kSymbolicName, C->ops->productsymbolic));
    C->ops->productsymbolic = MatProductSymbolic_AIJMP;
  }
  PetscFunctionReturn(0);
}

// MatConvert from a partner type to aijmp: PETSc finds this on the new aijmp
// matrix (MatConvert's second lookup). The partner converts to AIJ with its
// own converter (found on the partner matrix), then AIJ becomes aijmp in place.
PetscErrorCode MatConvert_ToAIJMP_ViaAIJ(Mat A, MatType newtype, MatReuse reuse, Mat *M)
{
  PetscFunctionBegin;
  if (reuse == MAT_REUSE_MATRIX) { // *M is aijmp already, and an AIJ to the partner's converter
    PetscCall(MatConvert(A, MATAIJ, MAT_REUSE_MATRIX, M));
    PetscFunctionReturn(0);
  }
  Mat B = reuse == MAT_INPLACE_MATRIX ? A : nullptr;
  PetscCall(MatConvert(A, MATAIJ, reuse, &B));
  PetscCall(MatConvert(B, newtype, MAT_INPLACE_MATRIX, &B));
  *M = B;
  PetscFunctionReturn(0);
}

/* MatCreateGraph (PCGAMG's coarsening graph): AIJ's graph, as plain AIJ. AIJ
   gives the graph the type of A, and PETSc's coarseners and colorings (HEM,
   JP, greedy) compare it with MATSEQAIJ/MATMPIAIJ exactly: an aijmp graph
   would be taken for a sequential matrix. */
PetscErrorCode MatCreateGraph_AIJMP(Mat A, PetscBool sym, PetscBool scale, PetscReal filter, Mat *graph)
{
  PetscBool seq, mpi;
  ReplacedOps *base;

  PetscFunctionBegin;
  PetscCall(replaced_ops_of(A, &base));
  PetscCheck(base, PetscObjectComm((PetscObject)A), PETSC_ERR_PLIB, "petscmp: not an aijmp matrix");
  PetscCheck(base->creategraph, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP,
             "MatCreateGraph is not supported by this PETSc's AIJ");
  PetscCall((*base->creategraph)(A, sym, scale, filter, graph));
  PetscCall(is_aijmp(*graph, &seq, &mpi));
  if (seq || mpi) PetscCall(MatConvert(*graph, seq ? MATSEQAIJ : MATMPIAIJ, MAT_INPLACE_MATRIX, graph));
  PetscFunctionReturn(0);
}

PetscErrorCode AIJMPComposeTypeKeyed(Mat B, bool seq, bool on)
{
  const char *base = seq ? MATSEQAIJ : MATMPIAIJ, *ours = seq ? MATSEQAIJMP : MATMPIAIJMP;
  PetscObject o = (PetscObject)B;

  PetscFunctionBegin;
  for (const TypeKeyedName &e : seq ? kSeqNames : kMPINames) {
    if (e.composed_on && e.answer != Answer::to_aijmp) continue;
    PetscVoidFunction fn = nullptr;
    if (on && e.answer == Answer::to_aijmp) {
      fn = (PetscVoidFunction)MatConvert_ToAIJMP_ViaAIJ;
    } else if (on) {
      PetscCall(PetscObjectQueryFunction_Private(o, e.aij_name, &fn)); // composed by MatCreate_SeqAIJ/MPIAIJ
      if (!fn) continue;                                               // not in this PETSc build
      if (e.answer == Answer::via_aij) fn = (PetscVoidFunction)MatConvert_AIJMP_ViaAIJ;
      if (e.answer == Answer::keep_settings) fn = (PetscVoidFunction)MatProductSetFromOptions_AIJMP;
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
