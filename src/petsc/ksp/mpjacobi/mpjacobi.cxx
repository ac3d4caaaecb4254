// KSPMPJACOBI: damped Jacobi (Richardson with the preconditioner, x <- x + omega B (b - A x)) that reads only
// the part of each matrix value it needs. On a split-storage aijmp operator (split2, split4) the residual
// products read the first segments of each value (MatAIJMPSetReadLevel); the level steps up as the iteration
// needs more (strategy residual or steps), or row by row (strategy component). Convergence is only ever declared on a
// residual read at the full level: a reduced level's residual that meets the tolerance is checked against the exact one
// first. On any other operator this is KSPRICHARDSON, operation for operation (the same figures).
#include <petsc/private/kspimpl.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "petscmp.h"
#include "ksp/mpjacobi/mpjacobiimpl.h"

const char *const KSPMPJacobiStrategies[] = {"residual",      "steps", "full", "component", "KSPMPJacobiStrategy",
                                             "KSP_MPJACOBI_", nullptr};

namespace {

constexpr int kMaxSegments = 4;
constexpr int kMaxSteps    = kMaxSegments - 1;

struct MPJacobi {
  PetscReal omega              = 1.0;
  KSPMPJacobiStrategy strategy = KSP_MPJACOBI_RESIDUAL;
  PetscInt first_level         = 1;    // the level a solve starts at (residual, steps)
  PetscInt check_every         = 10;   // residual: iterations between full-level checks at a reduced level
  PetscReal attainable         = 10.0; // residual: step up where |r_L| <= attainable * |r - r_L|
  PetscInt nsteps_its = 0, nsteps_rtol = 0;
  PetscInt steps_its[kMaxSteps];   // steps: step up after this many iterations (cumulative)
  PetscReal steps_rtol[kMaxSteps]; // steps: step up where |r| / |r0| <= this
  PetscInt phi        = 10;        // component: iterations between stagnation tests
  PetscReal delta     = 0.9;       // component: a row steps up where |z^{k-phi}/z^k - c^phi| > delta (c^phi - 1)
  PetscReal row_floor = 0.1;       // component: ... and where |r_i| > row_floor * a row's share of |r| or the tolerance
  PetscBool monitor   = PETSC_FALSE;
  // the last solve
  PetscInt segments                     = 0; // of the operator's storage (0: not split)
  PetscInt level_its[kMaxSegments]      = {};
  PetscInt level_products[kMaxSegments] = {};
  PetscInt full_checks                  = 0; // products at the full level made only to check a reduced level
  // component: global rows per level at the end, and the value bytes the products read (in fp64 products)
  PetscInt rows_at_end[kMaxSegments + 1] = {};
  double component_reads                 = 0;
  PetscInt steps_by_test                 = 0; // rows stepped up by the stagnation test
};

MPJacobi *data_of(KSP ksp)
{
  return static_cast<MPJacobi *>(ksp->data);
}

// The segments of A's split storage, 0 when A is not a split-storage aijmp matrix.
PetscErrorCode segments_of(Mat A, PetscInt *segments)
{
  MatAIJMPStorage storage;

  PetscFunctionBegin;
  PetscCall(MatAIJMPGetStorage(A, &storage)); // (other types: lossless)
  *segments = storage == MAT_AIJMP_SPLIT2 ? 2 : storage == MAT_AIJMP_SPLIT4 ? 4 : 0;
  PetscFunctionReturn(0);
}

// One solve's state: the operator, the level in use and the residual at that level.
class Solve {
public:
  Solve(KSP ksp, Mat A) : ksp_(ksp), A_(A), d_(data_of(ksp)) {}

  PetscInt level() const { return level_; }
  PetscInt full() const { return d_->segments; }
  bool reduced() const { return d_->segments > 0 && level_ < d_->segments; }

  // Component strategy: every row starts at `level` (set_level then keeps the rows' own levels, none below it).
  PetscErrorCode start_components(PetscInt level)
  {
    PetscInt n;

    PetscFunctionBegin;
    PetscCall(MatGetLocalSize(A_, &n, nullptr));
    row_level_.assign(static_cast<std::size_t>(n), level);
    component_ = true;
    PetscCall(set_level(level));
    PetscFunctionReturn(0);
  }
  bool component() const { return component_; }
  std::vector<PetscInt> &row_levels() { return row_level_; }
  const PetscInt *rows_at() const { return rows_at_; }
  // The operator reads `level` (the full level: every segment of every row); with per-row levels below the full
  // level, each row reads its own and `level` is their least (collective: the counts are summed over the ranks).
  PetscErrorCode set_level(PetscInt level)
  {
    PetscFunctionBegin;
    level_ = level;
    if (!d_->segments) PetscFunctionReturn(0);
    if (!component_ || level >= full()) {
      PetscCall(MatAIJMPSetReadLevel(A_, level));
      PetscFunctionReturn(0);
    }
    for (PetscInt &l : row_level_)
      l = std::max(l, level);
    PetscCall(MatAIJMPSetRowReadLevels(A_, row_level_.data()));
    PetscCall(MatAIJMPGetRowReadLevelCounts(A_, rows_at_));
    PetscCallMPI(
        MPI_Allreduce(MPI_IN_PLACE, rows_at_, kMaxSegments + 1, MPIU_INT, MPI_SUM, PetscObjectComm((PetscObject)ksp_)));
    PetscInt total = 0;
    double read    = 0;
    for (PetscInt l = 1; l <= full(); ++l) {
      total += rows_at_[l];
      read += (double)rows_at_[l] * (double)l;
    }
    for (level_ = 1; level_ < full() && rows_at_[level_] == 0; ++level_) {
    }
    row_share_ = total ? read / ((double)total * (double)full()) : 1.0;
    PetscFunctionReturn(0);
  }
  // r <- b - A x at the current level
  PetscErrorCode residual(Vec x, Vec b, Vec r)
  {
    PetscFunctionBegin;
    PetscCall(KSP_MatMult(ksp_, A_, x, r));
    PetscCall(VecAYPX(r, -1.0, b));
    d_->level_products[d_->segments ? level_ - 1 : 0]++;
    d_->component_reads += component_ && reduced() ? row_share_ : 1.0;
    known_norm_ = -1;
    PetscFunctionReturn(0);
  }
  // r_full <- b - A x read at the full level (the current level is kept)
  PetscErrorCode full_residual(Vec x, Vec b, Vec r_full)
  {
    const PetscInt keep = level_;

    PetscFunctionBegin;
    const PetscReal known = known_norm_; // (r itself is unchanged)
    PetscCall(set_level(full()));
    PetscCall(residual(x, b, r_full));
    d_->full_checks++;
    PetscCall(set_level(keep));
    known_norm_ = known;
    PetscFunctionReturn(0);
  }
  // Steps up one level, before the residual is computed (r == nullptr) or recomputing r there (r_full: the
  // full-level residual when already known).
  PetscErrorCode step_up(PetscInt its, const char *why, Vec x = nullptr, Vec b = nullptr, Vec r = nullptr,
                         Vec r_full = nullptr)
  {
    PetscFunctionBegin;
    if (d_->monitor)
      PetscCall(PetscPrintf(PetscObjectComm((PetscObject)ksp_),
                            "  mpjacobi iteration %" PetscInt_FMT ": read level %" PetscInt_FMT " -> %" PetscInt_FMT
                            " of %" PetscInt_FMT " (%s)\n",
                            its, level_, level_ + 1, full(), why));
    PetscCall(set_level(level_ + 1));
    if (r && r_full && level_ == full()) {
      PetscCall(VecCopy(r_full, r));
      known_norm_ = -1;
    } else if (r)
      PetscCall(residual(x, b, r));
    since_step_ = 0;
    rn_prev_ = window_rn_ = rate_ = -1;
    next_check_                   = 8 * d_->check_every; // (the levels' parts are estimated: no check at once)
    PetscFunctionReturn(0);
  }
  // Residual strategy: the part |(A - A_L) x| of the residual that reading L segments causes, measured at `level`
  // and estimated at the others (each further segment divides it by 2^(64 / segments), the bits it adds).
  void set_level_parts(PetscInt level, PetscReal delta)
  {
    const double per_segment = std::ldexp(1.0, -(int)(64 / full()));
    for (PetscInt l = 1; l <= full(); ++l)
      part_[l - 1] = (PetscReal)(delta * std::pow(per_segment, (double)(l - level)));
  }
  PetscReal part() const { return level_ >= 1 ? part_[level_ - 1] : -1; }
  // Counts an iteration at the current level.
  void count_iteration()
  {
    d_->level_its[d_->segments ? level_ - 1 : 0]++;
    since_step_++;
  }
  PetscInt since_step() const { return since_step_; }
  // |r|, where the strategy computed it for the residual r holds now (< 0: not known): the next convergence test
  // reuses it instead of a second VecNorm of the same vector
  PetscReal &known_norm() { return known_norm_; }
  PetscReal &rn_prev() { return rn_prev_; }
  PetscReal &window_rn() { return window_rn_; }
  double &rate() { return rate_; }
  PetscInt &next_check() { return next_check_; }

private:
  KSP ksp_;
  Mat A_;
  MPJacobi *d_;
  bool component_ = false;
  std::vector<PetscInt> row_level_;          // component: each local row's level
  PetscInt rows_at_[kMaxSegments + 1] = {};  // component: global rows per level
  double row_share_                   = 1.0; // component: the share of the value bytes a product reads
  PetscInt level_                     = 0;
  PetscInt since_step_                = 0;
  PetscReal known_norm_               = -1;
  // residual strategy
  PetscReal part_[kMaxSegments] = {-1, -1, -1, -1}; // |(A - A_L) x| per level, measured or estimated (< 0: unknown)
  PetscReal rn_prev_            = -1;               // |r_L| after the previous iteration at this level
  PetscReal window_rn_          = -1;               // |r_L| check_every iterations ago (stagnation)
  double rate_                  = -1;               // the last reduction per iteration of |r_L|
  PetscInt next_check_          = 1;                // since_step_ of the next measurement of the level's part
};

// The norm the convergence test sees (as KSPRICHARDSON computes it).
PetscErrorCode residual_norm(KSP ksp, Vec r, Vec z, PetscReal *rnorm)
{
  PetscFunctionBegin;
  if (ksp->normtype == KSP_NORM_UNPRECONDITIONED) {
    PetscCall(VecNorm(r, NORM_2, rnorm));
  } else if (ksp->normtype == KSP_NORM_PRECONDITIONED) {
    PetscCall(KSP_PCApply(ksp, r, z));
    PetscCall(VecNorm(z, NORM_2, rnorm));
  } else
    *rnorm = 0.0;
  PetscFunctionReturn(0);
}

// At a reduced level the convergence test passed: the full-level residual decides. Converged there: the reason
// stays; else the level steps up and the iteration goes on.
PetscErrorCode confirm_at_full_level(KSP ksp, Solve &solve, PetscInt i, Vec x, Vec b, Vec r, Vec z, Vec w)
{
  PetscReal rnorm;

  PetscFunctionBegin;
  PetscCall(solve.full_residual(x, b, w));
  PetscCall(residual_norm(ksp, w, z, &rnorm));
  ksp->reason = KSP_CONVERGED_ITERATING;
  ksp->rnorm  = rnorm;
  PetscCall((*ksp->converged)(ksp, i, rnorm, &ksp->reason, ksp->cnvP));
  if (ksp->reason) {
    PetscCall(solve.set_level(solve.full()));
    PetscCall(VecCopy(w, r));
    solve.known_norm() = -1;
    PetscFunctionReturn(0);
  }
  PetscCall(solve.step_up(i, "its residual met the tolerance; the exact residual did not", x, b, r, w));
  PetscFunctionReturn(0);
}

// Strategy residual. The part of the residual that reading L segments causes, |(A - A_L) x| = |r - r_L|, is
// measured with one full-level product after the first iteration at a reduced level and every 8 check_every
// iterations at a level (x changes), and estimated for the other levels from it. The level steps up where |r_L| is
// within `attainable` times that part (more iterations at this level would converge to the truncated operator's
// solution, not to A's) or where |r_L| did not decrease over check_every iterations.
// Before the residual of an iteration is computed: step up already where the last rate predicts it (the residual is
// then read once, at the new level).
PetscErrorCode residual_strategy_predict(KSP ksp, Solve &solve)
{
  MPJacobi *d = data_of(ksp);

  PetscFunctionBegin;
  if (!solve.reduced() || solve.part() < 0 || solve.rn_prev() < 0 || !(solve.rate() > 0 && solve.rate() < 1))
    PetscFunctionReturn(0);
  const double predicted = solve.rn_prev() * solve.rate();
  if (predicted <= d->attainable * solve.part()) {
    char why[128];
    PetscCall(PetscSNPrintf(why, sizeof why, "residual predicted %.3e, within %g x the level's part %.3e", predicted,
                            (double)d->attainable, (double)solve.part()));
    PetscCall(solve.step_up(ksp->its, why));
  }
  PetscFunctionReturn(0);
}

// After the residual r_L of an iteration is computed.
PetscErrorCode residual_strategy_check(KSP ksp, Solve &solve, Vec x, Vec b, Vec r, Vec z, Vec w)
{
  MPJacobi *d = data_of(ksp);
  PetscReal rn, delta = -1;

  PetscFunctionBegin;
  if (!solve.reduced()) PetscFunctionReturn(0);
  PetscCall(VecNorm(r, NORM_2, &rn));
  solve.known_norm() = rn;
  if (solve.rn_prev() > 0) solve.rate() = (double)(rn / solve.rn_prev());
  solve.rn_prev()    = rn;
  const bool measure = solve.part() < 0 || solve.since_step() >= solve.next_check();
  if (measure) {
    PetscCall(solve.full_residual(x, b, w));
    PetscCall(VecWAXPY(z, -1.0, w, r)); // z = r_L - r (z is free until the next iteration's PCApply)
    PetscCall(VecNorm(z, NORM_2, &delta));
    solve.set_level_parts(solve.level(), delta);
    solve.next_check() = solve.since_step() + 8 * d->check_every;
  }
  bool stagnated = false;
  if (solve.since_step() % d->check_every == 0) {
    stagnated         = solve.window_rn() >= 0 && rn >= solve.window_rn();
    solve.window_rn() = rn;
  }
  if (rn <= d->attainable * solve.part()) {
    char why[128];
    PetscCall(PetscSNPrintf(why, sizeof why, "residual %.3e within %g x the level's part %.3e%s", (double)rn,
                            (double)d->attainable, (double)solve.part(), measure ? "" : " (estimated)"));
    PetscCall(solve.step_up(ksp->its, why, x, b, r, measure ? w : nullptr));
  } else if (stagnated)
    PetscCall(solve.step_up(ksp->its, "the residual stopped decreasing", x, b, r, measure ? w : nullptr));
  PetscFunctionReturn(0);
}

// Strategy steps: step up after the given iteration counts or relative residuals.
PetscErrorCode steps_strategy_check(KSP ksp, Solve &solve, PetscReal rnorm0, Vec x, Vec b, Vec r)
{
  MPJacobi *d = data_of(ksp);

  PetscFunctionBegin;
  while (solve.reduced()) {
    const PetscInt step = solve.level() - d->first_level; // the switch point of this level
    bool due            = step < d->nsteps_its && ksp->its >= d->steps_its[step];
    if (!due && step < d->nsteps_rtol && rnorm0 > 0) {
      PetscReal rn;
      PetscCall(VecNorm(r, NORM_2, &rn));
      due = rn <= d->steps_rtol[step] * rnorm0;
    }
    if (!due) break;
    PetscCall(solve.step_up(ksp->its, "scheduled step", x, b, r));
  }
  PetscFunctionReturn(0);
}

// Strategy component (the CPMS paper's adaptive Jacobi, per row). Every phi iterations the exact residual r is
// computed (one product reading every segment) next to the residual r_L of the rows' levels. While the truncation
// of a row's values is small against its residual, both shrink alike over the phi iterations: |r_i| by the factor
// c^phi = |r_L,i^{k-phi}| / |r_L,i^k| that the row's level shows. Where |r_i| stopped shrinking so (it reached the
// part the truncation causes, which r_L does not see), the paper's test |z^{k-phi}/z^k - c^phi| > delta (c^phi - 1)
// with z = |r_i| flags the row, and it reads one more segment. (The paper tests the update |x^k - x^{k-1}|: with an
// fp64 iterate the update decays geometrically at any read level and never stagnates, so the exact residual is the
// quantity that shows the truncation here.) The next update uses the exact residual; z_old and zl_old keep |r| and
// |r_L| of this test for the next.
PetscErrorCode component_strategy_check(KSP ksp, Solve &solve, Vec x, Vec b, Vec r, Vec w, Vec z_old, Vec zl_old,
                                        PetscReal floor)
{
  MPJacobi *d = data_of(ksp);
  PetscScalar *rr, *zo, *zlo;
  const PetscScalar *ww;
  PetscInt n, stepped = 0;

  PetscFunctionBegin;
  if (!solve.reduced() || ksp->its % d->phi) PetscFunctionReturn(0);
  PetscReal rn;
  PetscCall(VecNorm(r, NORM_2, &rn)); // the residual at the rows' levels: stagnation of the whole iteration
  const bool stagnated = solve.window_rn() >= 0 && rn >= solve.window_rn();
  solve.window_rn()    = rn;
  PetscCall(solve.full_residual(x, b, w));
  { // a row that stagnates below its share of the current exact residual (or of the tolerance) does not hold the
    // iteration back yet: it keeps its level until the residual comes down to it
    PetscReal wn;
    PetscInt N;
    PetscCall(VecNorm(w, NORM_2, &wn));
    PetscCall(VecGetSize(w, &N));
    floor = PetscMax(floor, d->row_floor * wn / PetscSqrtReal((PetscReal)PetscMax(N, 1)));
  }
  PetscCall(VecGetLocalSize(r, &n));
  PetscCall(VecGetArray(r, &rr));
  PetscCall(VecGetArrayRead(w, &ww));
  PetscCall(VecGetArray(z_old, &zo));
  PetscCall(VecGetArray(zl_old, &zlo));
  std::vector<PetscInt> &level = solve.row_levels();
  for (PetscInt i = 0; i < n; ++i) {
    const double z = std::fabs((double)PetscRealPart(ww[i])), zl = std::fabs((double)PetscRealPart(rr[i]));
    const double z0 = (double)PetscRealPart(zo[i]), zl0 = (double)PetscRealPart(zlo[i]);
    bool step = false;
    if (level[i] < solve.full() && z > floor && z0 > 0 && zl0 > 0) {
      if (zl == 0)
        step = true; // the row's level residual vanished, the exact one did not
      else {
        const double c_phi = zl0 / zl; // the reduction over phi iterations the row's level shows
        step               = std::fabs(z0 / z - c_phi) > (double)d->delta * (c_phi - 1.0);
      }
    }
    if (step) {
      level[i]++;
      stepped++;
    }
    zo[i] = z;
    if (step) { // its residual at the next level is near the exact one: the next update uses that
      zlo[i] = z;
      rr[i]  = ww[i];
    } else
      zlo[i] = zl;
  }
  PetscCall(VecRestoreArray(zl_old, &zlo));
  PetscCall(VecRestoreArray(z_old, &zo));
  PetscCall(VecRestoreArrayRead(w, &ww));
  PetscCall(VecRestoreArray(r, &rr));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &stepped, 1, MPIU_INT, MPI_SUM, PetscObjectComm((PetscObject)ksp)));
  d->steps_by_test += stepped;
  PetscCall(solve.set_level(solve.level())); // the rows' new levels (and their least)
  solve.known_norm() = stepped ? -1 : rn;    // (rows that stepped up hold their exact residual; else r is unchanged and
                                             // the next convergence test reuses its norm)
  if (stagnated) { // the residual at the rows' levels did not decrease over phi iterations: every row at the
                   // least level steps up (the rows' test may miss a level whose iteration does not converge)
    PetscCall(solve.step_up(ksp->its, "the residual at the rows' levels stopped decreasing", x, b, r, w));
    solve.window_rn() = -1;
  }
  if (d->monitor) {
    PetscCall(PetscPrintf(PetscObjectComm((PetscObject)ksp),
                          "  mpjacobi iteration %" PetscInt_FMT ": %" PetscInt_FMT " rows stepped up; rows per level",
                          ksp->its, stepped));
    for (PetscInt l = 1; l <= solve.full(); ++l)
      PetscCall(
          PetscPrintf(PetscObjectComm((PetscObject)ksp), " %" PetscInt_FMT ": %" PetscInt_FMT, l, solve.rows_at()[l]));
    PetscCall(PetscPrintf(PetscObjectComm((PetscObject)ksp), "\n"));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode KSPSetUp_MPJacobi(KSP ksp)
{
  PC pc = ksp->pc;

  PetscFunctionBegin;
  if (!((PetscObject)pc)->type_name) PetscCall(PCSetType(pc, PCJACOBI)); // Jacobi by default
  PetscCall(KSPSetWorkVecs(ksp, data_of(ksp)->strategy == KSP_MPJACOBI_COMPONENT ? 5 : 3));
  PetscFunctionReturn(0);
}

PetscErrorCode KSPSolve_MPJacobi(KSP ksp)
{
  MPJacobi *d = data_of(ksp);
  Mat A, P;
  PetscBool diagonalscale;
  PetscInt i, user_level = 0;
  PetscReal rnorm = 0.0, rnorm0 = 0.0;

  PetscFunctionBegin;
  PetscCall(PCGetDiagonalScale(ksp->pc, &diagonalscale));
  PetscCheck(!diagonalscale, PetscObjectComm((PetscObject)ksp), PETSC_ERR_SUP,
             "Krylov method %s does not support diagonal scaling", ((PetscObject)ksp)->type_name);
  PetscCall(PCGetOperators(ksp->pc, &A, &P));
  PetscCall(segments_of(A, &d->segments));
  if (d->strategy == KSP_MPJACOBI_COMPONENT && ksp->nwork < 5) PetscCall(KSPSetWorkVecs(ksp, 5)); // (set after setup)
  std::fill(d->level_its, d->level_its + kMaxSegments, 0);
  std::fill(d->level_products, d->level_products + kMaxSegments, 0);
  std::fill(d->rows_at_end, d->rows_at_end + kMaxSegments + 1, 0);
  d->full_checks     = 0;
  d->component_reads = 0;
  d->steps_by_test   = 0;
  if (d->segments) PetscCall(MatAIJMPGetReadLevel(A, &user_level));
  PetscCheck(!d->segments || d->first_level <= d->segments, PetscObjectComm((PetscObject)ksp), PETSC_ERR_ARG_OUTOFRANGE,
             "-ksp_mpjacobi_first_level %" PetscInt_FMT " exceeds the %" PetscInt_FMT " segments of the operator",
             d->first_level, d->segments);

  Solve solve(ksp, A);
  Vec x = ksp->vec_sol, b = ksp->vec_rhs, r = ksp->work[0], z = ksp->work[1], w = ksp->work[2];
  // the initial residual is read exactly (the tolerance is relative to it)
  PetscCall(solve.set_level(d->segments));
  ksp->its = 0;
  if (!ksp->guess_zero)
    PetscCall(solve.residual(x, b, r));
  else
    PetscCall(VecCopy(b, r));
  // a strategy needs norms to judge by; without them (KSP_NORM_NONE) the full level is read
  const bool adaptive = d->segments && d->strategy != KSP_MPJACOBI_FULL &&
                        (ksp->normtype != KSP_NORM_NONE || d->strategy == KSP_MPJACOBI_STEPS);
  const bool component = adaptive && d->strategy == KSP_MPJACOBI_COMPONENT;
  Vec z_old = component ? ksp->work[3] : nullptr, zl_old = component ? ksp->work[4] : nullptr;
  if (component) PetscCall(VecCopy(r, z_old)); // |r| of the exact initial residual
  if (adaptive && d->first_level < d->segments) {
    PetscCall(VecNorm(r, NORM_2, &rnorm0));
    if (component)
      PetscCall(solve.start_components(d->first_level));
    else
      PetscCall(solve.set_level(d->first_level));
    if (!ksp->guess_zero) PetscCall(solve.residual(x, b, r));
  }
  PetscReal row_floor = 0; // component: the tolerance's share of one row, times row_floor
  if (component) {
    PetscInt N;
    PetscCall(VecGetSize(r, &N));
    row_floor = d->row_floor * PetscMax(ksp->rtol * rnorm0, ksp->abstol) / PetscSqrtReal((PetscReal)PetscMax(N, 1));
    PetscCall(VecCopy(r, zl_old));
    PetscCall(VecAbs(z_old));
    PetscCall(VecAbs(zl_old));
  }

  for (i = 0; i < ksp->max_it; i++) {
    if (ksp->normtype == KSP_NORM_UNPRECONDITIONED && solve.known_norm() >= 0)
      rnorm = solve.known_norm();
    else
      PetscCall(residual_norm(ksp, r, z, &rnorm));
    KSPCheckNorm(ksp, rnorm);
    ksp->rnorm = rnorm;
    PetscCall(KSPMonitor(ksp, i, rnorm));
    PetscCall(KSPLogResidualHistory(ksp, rnorm));
    PetscCall((*ksp->converged)(ksp, i, rnorm, &ksp->reason, ksp->cnvP));
    bool r_changed = false; // since its norm (and z = B r for the preconditioned norm) was computed
    if (ksp->reason > 0 && solve.reduced()) {
      PetscCall(confirm_at_full_level(ksp, solve, i, x, b, r, z, w));
      r_changed = true;
    }
    if (ksp->reason) break;
    if (ksp->normtype != KSP_NORM_PRECONDITIONED || r_changed) PetscCall(KSP_PCApply(ksp, r, z));
    PetscCall(VecAXPY(x, d->omega, z));
    ksp->its++;
    solve.count_iteration();
    if (i + 1 < ksp->max_it || ksp->normtype != KSP_NORM_NONE) {
      if (adaptive && d->strategy == KSP_MPJACOBI_RESIDUAL) PetscCall(residual_strategy_predict(ksp, solve));
      PetscCall(solve.residual(x, b, r));
      if (adaptive && d->strategy == KSP_MPJACOBI_RESIDUAL)
        PetscCall(residual_strategy_check(ksp, solve, x, b, r, z, w));
      if (adaptive && d->strategy == KSP_MPJACOBI_STEPS) PetscCall(steps_strategy_check(ksp, solve, rnorm0, x, b, r));
      if (component) PetscCall(component_strategy_check(ksp, solve, x, b, r, w, z_old, zl_old, row_floor));
    }
  }
  if (component) std::copy(solve.rows_at(), solve.rows_at() + kMaxSegments + 1, d->rows_at_end);
  if (!ksp->reason) {
    if (solve.reduced() && ksp->normtype != KSP_NORM_NONE) { // the last figures are exact ones
      PetscCall(solve.set_level(d->segments));
      PetscCall(solve.residual(x, b, r));
    }
    PetscCall(residual_norm(ksp, r, z, &rnorm));
    KSPCheckNorm(ksp, rnorm);
    ksp->rnorm = rnorm;
    PetscCall(KSPLogResidualHistory(ksp, rnorm));
    PetscCall(KSPMonitor(ksp, i, rnorm));
    if (ksp->its >= ksp->max_it) {
      if (ksp->normtype != KSP_NORM_NONE) {
        PetscCall((*ksp->converged)(ksp, i, rnorm, &ksp->reason, ksp->cnvP));
        if (!ksp->reason) ksp->reason = KSP_DIVERGED_ITS;
      } else
        ksp->reason = KSP_CONVERGED_ITS;
    }
  }
  if (d->segments) PetscCall(MatAIJMPSetReadLevel(A, user_level)); // the operator as the user left it
  PetscFunctionReturn(0);
}

PetscErrorCode KSPView_MPJacobi(KSP ksp, PetscViewer viewer)
{
  MPJacobi *d = data_of(ksp);
  PetscBool ascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(viewer, "  damping factor omega %g; read-level strategy %s", (double)d->omega,
                                   KSPMPJacobiStrategies[d->strategy]));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
  if (d->strategy == KSP_MPJACOBI_RESIDUAL)
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     " (from level %" PetscInt_FMT "; a full-level check every %" PetscInt_FMT
                                     " iterations; step up where the residual is within %g x the level's part)",
                                     d->first_level, d->check_every, (double)d->attainable));
  if (d->strategy == KSP_MPJACOBI_COMPONENT)
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     " (a level per row, from level %" PetscInt_FMT
                                     "; stagnation test every %" PetscInt_FMT " iterations, delta %g)",
                                     d->first_level, d->phi, (double)d->delta));
  if (d->strategy == KSP_MPJACOBI_STEPS) {
    PetscCall(PetscViewerASCIIPrintf(viewer, " (from level %" PetscInt_FMT "; after iterations", d->first_level));
    for (PetscInt k = 0; k < d->nsteps_its; k++)
      PetscCall(PetscViewerASCIIPrintf(viewer, " %" PetscInt_FMT, d->steps_its[k]));
    PetscCall(PetscViewerASCIIPrintf(viewer, "; at relative residuals"));
    for (PetscInt k = 0; k < d->nsteps_rtol; k++)
      PetscCall(PetscViewerASCIIPrintf(viewer, " %g", (double)d->steps_rtol[k]));
    PetscCall(PetscViewerASCIIPrintf(viewer, ")"));
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  if (!d->segments) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  last solve: the operator is not split storage: every value read whole "
                                             "(as KSPRICHARDSON)\n"));
    PetscFunctionReturn(0);
  }
  PetscInt rows = 0;
  for (PetscInt l = 1; l <= d->segments; l++)
    rows += d->rows_at_end[l];
  if (rows) {
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  last solve, split storage of %" PetscInt_FMT " segments: rows per read "
                                     "level at the end",
                                     d->segments));
    PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
    for (PetscInt l = 1; l <= d->segments; l++)
      PetscCall(PetscViewerASCIIPrintf(viewer, " %" PetscInt_FMT ": %.1f%%", l,
                                       100.0 * (double)d->rows_at_end[l] / (double)rows));
    PetscCall(
        PetscViewerASCIIPrintf(viewer, " (%" PetscInt_FMT " steps up by the stagnation test)\n", d->steps_by_test));
    PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
    PetscInt products = 0;
    for (PetscInt l = 0; l < d->segments; l++)
      products += d->level_products[l];
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  %" PetscInt_FMT " products (%" PetscInt_FMT
                                     " of them at the full level for the tests and checks) asked for %.1f%% of the "
                                     "value bytes of as many fp64 reads, %.1f%% of those of one fp64 product per "
                                     "iteration (rows stored together read the highest level among them: at least "
                                     "this)\n",
                                     products, d->full_checks,
                                     products ? 100.0 * d->component_reads / (double)products : 0.0,
                                     100.0 * d->component_reads / (double)(ksp->its + 1)));
    PetscFunctionReturn(0);
  }
  PetscInt products = 0;
  double share      = 0;
  for (PetscInt l = 0; l < d->segments; l++) {
    products += d->level_products[l];
    share += (double)d->level_products[l] * (double)(l + 1) / (double)d->segments;
  }
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "  last solve, split storage of %" PetscInt_FMT " segments: iterations per read level", d->segments));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
  for (PetscInt l = 0; l < d->segments; l++)
    PetscCall(PetscViewerASCIIPrintf(viewer, " %" PetscInt_FMT ": %" PetscInt_FMT, l + 1, d->level_its[l]));
  PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "  %" PetscInt_FMT " products (%" PetscInt_FMT
                                   " of them full-level checks) read %.1f%% of the value bytes of as many fp64 "
                                   "reads, %.1f%% of those of one fp64 product per iteration\n",
                                   products, d->full_checks, products ? 100.0 * share / (double)products : 0.0,
                                   100.0 * share / (double)(ksp->its + 1)));
  PetscFunctionReturn(0);
}

PetscErrorCode KSPSetFromOptions_MPJacobi(KSP ksp, PetscOptionItems *PetscOptionsObject)
{
  MPJacobi *d = data_of(ksp);
  PetscInt n;
  PetscBool flg;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "KSP multi-precision Jacobi options");
  PetscCall(PetscOptionsReal("-ksp_mpjacobi_omega", "Damping factor omega of x <- x + omega B (b - A x)",
                             "KSPMPJacobiSetOmega", d->omega, &d->omega, nullptr));
  PetscCall(PetscOptionsEnum("-ksp_mpjacobi_strategy", "How the read level of a split-storage operator is chosen",
                             "KSPMPJacobiSetStrategy", KSPMPJacobiStrategies, (PetscEnum)d->strategy,
                             (PetscEnum *)&d->strategy, nullptr));
  PetscCall(PetscOptionsInt("-ksp_mpjacobi_first_level", "Read level a solve starts at (segments of each value)",
                            "KSPMPJACOBI", d->first_level, &d->first_level, nullptr));
  PetscCall(PetscOptionsInt("-ksp_mpjacobi_check_every",
                            "Strategy residual: iterations between full-level checks of a reduced level", "KSPMPJACOBI",
                            d->check_every, &d->check_every, nullptr));
  PetscCall(PetscOptionsReal("-ksp_mpjacobi_attainable_factor",
                             "Strategy residual: step up where |r_L| <= factor * |(A - A_L) x| (0: only on stagnation "
                             "or at the tolerance)",
                             "KSPMPJACOBI", d->attainable, &d->attainable, nullptr));
  PetscCall(PetscOptionsInt("-ksp_mpjacobi_phi", "Strategy component: iterations between stagnation tests",
                            "KSPMPJACOBI", d->phi, &d->phi, nullptr));
  PetscCall(PetscOptionsReal("-ksp_mpjacobi_delta",
                             "Strategy component: a row steps up where |z_old/z - c^phi| > delta (c^phi - 1)",
                             "KSPMPJACOBI", d->delta, &d->delta, nullptr));
  PetscCall(
      PetscOptionsReal("-ksp_mpjacobi_row_floor",
                       "Strategy component: ... and where its exact residual exceeds this times one row's share of "
                       "the exact residual or of the tolerance, max(|r|, rtol |r0|, abstol) / sqrt(N) (0: every "
                       "row the test flags)",
                       "KSPMPJACOBI", d->row_floor, &d->row_floor, nullptr));
  n = kMaxSteps;
  PetscCall(PetscOptionsIntArray("-ksp_mpjacobi_steps_its",
                                 "Strategy steps: step up one level after these iteration counts (cumulative)",
                                 "KSPMPJACOBI", d->steps_its, &n, &flg));
  if (flg) d->nsteps_its = n;
  n = kMaxSteps;
  PetscCall(PetscOptionsRealArray("-ksp_mpjacobi_steps_rtol",
                                  "Strategy steps: step up one level where |r| / |r0| falls to these values",
                                  "KSPMPJACOBI", d->steps_rtol, &n, &flg));
  if (flg) d->nsteps_rtol = n;
  PetscCall(PetscOptionsBool("-ksp_mpjacobi_monitor", "Print each change of read level and why", "KSPMPJACOBI",
                             d->monitor, &d->monitor, nullptr));
  PetscOptionsHeadEnd();
  MPI_Comm comm = PetscObjectComm((PetscObject)ksp);
  PetscCheck(d->omega > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-ksp_mpjacobi_omega must be positive, not %g",
             (double)d->omega);
  PetscCheck(d->first_level >= 1 && d->first_level <= kMaxSegments, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ksp_mpjacobi_first_level is a number of segments, 1 to 4, not %" PetscInt_FMT, d->first_level);
  PetscCheck(d->check_every >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ksp_mpjacobi_check_every must be at least 1, not %" PetscInt_FMT, d->check_every);
  PetscCheck(d->phi >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-ksp_mpjacobi_phi must be at least 1, not %" PetscInt_FMT,
             d->phi);
  PetscCheck(d->delta > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-ksp_mpjacobi_delta must be positive, not %g",
             (double)d->delta);
  PetscCheck(d->row_floor >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-ksp_mpjacobi_row_floor must be nonnegative, not %g",
             (double)d->row_floor);
  PetscCheck(d->attainable >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-ksp_mpjacobi_attainable_factor must be nonnegative, not %g", (double)d->attainable);
  for (PetscInt k = 0; k < d->nsteps_its; k++)
    PetscCheck(d->steps_its[k] >= 0 && (k == 0 || d->steps_its[k] >= d->steps_its[k - 1]), comm,
               PETSC_ERR_ARG_OUTOFRANGE, "-ksp_mpjacobi_steps_its must be nondecreasing iteration counts");
  for (PetscInt k = 0; k < d->nsteps_rtol; k++)
    PetscCheck(d->steps_rtol[k] >= 0 && d->steps_rtol[k] < 1, comm, PETSC_ERR_ARG_OUTOFRANGE,
               "-ksp_mpjacobi_steps_rtol values are relative residuals in [0, 1), not %g", (double)d->steps_rtol[k]);
  PetscFunctionReturn(0);
}

PetscErrorCode KSPDestroy_MPJacobi(KSP ksp)
{
  PetscFunctionBegin;
  delete data_of(ksp);
  ksp->data = nullptr;
  PetscCall(KSPDestroyDefault(ksp));
  PetscFunctionReturn(0);
}

} // namespace

/*MC
   KSPMPJACOBI - "mpjacobi": damped Jacobi (Richardson) iteration x <- x + omega B (b - A x) whose products read only
   the precision they need from a split-storage operator

   Options Database Keys:
+  -ksp_mpjacobi_omega <1> - the damping factor
.  -ksp_mpjacobi_strategy <residual,steps,full,component> - how the read level is chosen (`KSPMPJacobiStrategy`)
.  -ksp_mpjacobi_first_level <1> - the level a solve starts at
.  -ksp_mpjacobi_check_every <10> - residual: iterations between full-level checks
.  -ksp_mpjacobi_attainable_factor <10> - residual: step up where |r_L| <= factor |(A - A_L) x|
.  -ksp_mpjacobi_steps_its <i1,i2,i3> - steps: step up after these iteration counts
.  -ksp_mpjacobi_steps_rtol <t1,t2,t3> - steps: step up where |r|/|r0| falls to these
.  -ksp_mpjacobi_phi <10> - component: iterations between stagnation tests
.  -ksp_mpjacobi_delta <0.9> - component: the test's threshold factor
.  -ksp_mpjacobi_row_floor <0.1> - component: a flagged row keeps its level while its exact residual is below this
   times max(|r|, rtol |r0|, abstol) / sqrt(N)
-  -ksp_mpjacobi_monitor - print each change of level and its reason

   Notes:
   B is the preconditioner: `PCJACOBI` (the default here) gives Jacobi's D^-1 from the exact diagonal, `PCAPBJACOBI`
   block Jacobi. The operator should be `MATAIJMP` with storage `MAT_AIJMP_SPLIT2` or `MAT_AIJMP_SPLIT4`: its products
   then read the first L segments of each value (a relative change below 2^-(64 L / n - 12)), and L rises as the
   strategy decides (component: a level per row, `MatAIJMPSetRowReadLevels()`). Reading at level L the iteration
converges toward the solution of the truncated operator A_L; the true residual stalls near |(A - A_L) x|, which the
residual strategy measures (one product at the full level every check_every iterations) to step up in time. Convergence
is declared only on a residual read at the full level: where a reduced level's residual meets the tolerance, the
full-level residual is computed and decides. The initial residual and the last one are read at the full level. With
`KSP_NORM_NONE` (a multigrid smoother) the residual strategy has no norms to judge by and reads every segment. The
operator's own read level is restored after each solve. On other operators the iteration is `KSPRICHARDSON`'s with scale
omega, operation for operation. Norm types: unpreconditioned (default), preconditioned, none.

   Level: intermediate

.seealso: `KSPMPJacobiSetStrategy()`, `MatAIJMPSetReadLevel()`, `MATAIJMP`, `KSPRICHARDSON`
M*/
PETSC_INTERN PetscErrorCode KSPCreate_MPJacobi(KSP ksp)
{
  PetscFunctionBegin;
  ksp->data = new MPJacobi();
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_UNPRECONDITIONED, PC_LEFT, 3));
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_PRECONDITIONED, PC_LEFT, 2));
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_NONE, PC_LEFT, 1));
  ksp->ops->setup          = KSPSetUp_MPJacobi;
  ksp->ops->solve          = KSPSolve_MPJacobi;
  ksp->ops->destroy        = KSPDestroy_MPJacobi;
  ksp->ops->view           = KSPView_MPJacobi;
  ksp->ops->setfromoptions = KSPSetFromOptions_MPJacobi;
  ksp->ops->buildsolution  = KSPBuildSolutionDefault;
  ksp->ops->buildresidual  = KSPBuildResidualDefault;
  PetscFunctionReturn(0);
}

static PetscErrorCode KSPMPJacobiData(KSP ksp, MPJacobi **d)
{
  PetscBool same;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)ksp, KSPMPJACOBI, &same));
  *d = same ? data_of(ksp) : nullptr;
  PetscFunctionReturn(0);
}

// The data of a KSPMPJACOBI, for a getter (`caller`) that has nothing to say about other types.
static PetscErrorCode KSPMPJacobiRequire(KSP ksp, const char *caller, MPJacobi **d)
{
  PetscFunctionBegin;
  PetscCall(KSPMPJacobiData(ksp, d));
  PetscCheck(*d, PetscObjectComm((PetscObject)ksp), PETSC_ERR_ARG_WRONG, "%s() needs a KSP of type mpjacobi", caller);
  PetscFunctionReturn(0);
}

/*@
   KSPMPJacobiSetStrategy - Sets how `KSPMPJACOBI` chooses the read level of a split-storage operator

   Logically Collective

   Input Parameters:
+  ksp - the solver
-  strategy - see `KSPMPJacobiStrategy`

   Options Database Key:
.  -ksp_mpjacobi_strategy <residual,steps,full,component> - the strategy

   Notes:
   Solvers of other types ignore this call.

   Level: intermediate

.seealso: `KSPMPJACOBI`, `KSPMPJacobiStrategy`
@*/
PetscErrorCode KSPMPJacobiSetStrategy(KSP ksp, KSPMPJacobiStrategy strategy)
{
  MPJacobi *d = nullptr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscCheck(strategy >= KSP_MPJACOBI_RESIDUAL && strategy <= KSP_MPJACOBI_COMPONENT, PetscObjectComm((PetscObject)ksp),
             PETSC_ERR_ARG_OUTOFRANGE, "Unknown mpjacobi strategy %d", (int)strategy);
  PetscCall(KSPMPJacobiData(ksp, &d));
  if (d) d->strategy = strategy;
  PetscFunctionReturn(0);
}

/*@
   KSPMPJacobiGetStrategy - Gets the read-level strategy of a `KSPMPJACOBI`

   Not Collective

   Input Parameter:
.  ksp - the solver

   Output Parameter:
.  strategy - the strategy (`KSP_MPJACOBI_FULL` for solvers of other types)

   Level: intermediate

.seealso: `KSPMPJacobiSetStrategy()`
@*/
PetscErrorCode KSPMPJacobiGetStrategy(KSP ksp, KSPMPJacobiStrategy *strategy)
{
  MPJacobi *d = nullptr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscCall(KSPMPJacobiData(ksp, &d));
  *strategy = d ? d->strategy : KSP_MPJACOBI_FULL;
  PetscFunctionReturn(0);
}

/*@
   KSPMPJacobiSetOmega - Sets the damping factor omega of `KSPMPJACOBI`'s update x <- x + omega B (b - A x)

   Logically Collective

   Input Parameters:
+  ksp - the solver
-  omega - the factor (positive; default 1)

   Options Database Key:
.  -ksp_mpjacobi_omega <omega> - the factor

   Level: intermediate

.seealso: `KSPMPJACOBI`
@*/
PetscErrorCode KSPMPJacobiSetOmega(KSP ksp, PetscReal omega)
{
  MPJacobi *d = nullptr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscCheck(omega > 0, PetscObjectComm((PetscObject)ksp), PETSC_ERR_ARG_OUTOFRANGE,
             "The mpjacobi damping factor must be positive, not %g", (double)omega);
  PetscCall(KSPMPJacobiData(ksp, &d));
  if (d) d->omega = omega;
  PetscFunctionReturn(0);
}

/*@
   KSPMPJacobiGetLevelIterations - Gets how many iterations the last `KSPMPJACOBI` solve did at each read level

   Not Collective

   Input Parameter:
.  ksp - the solver

   Output Parameters:
+  segments - the segments of the operator's split storage (0: not split; its[0] then counts every iteration)
-  its - its[l - 1] is the number of iterations whose residual was read at level l, l = 1..segments (room for 4)

   Level: advanced

.seealso: `KSPMPJACOBI`
@*/
PetscErrorCode KSPMPJacobiGetLevelIterations(KSP ksp, PetscInt *segments, PetscInt its[])
{
  MPJacobi *d = nullptr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscCall(KSPMPJacobiRequire(ksp, "KSPMPJacobiGetLevelIterations", &d));
  *segments = d->segments;
  for (int l = 0; l < kMaxSegments; l++)
    its[l] = d->level_its[l];
  PetscFunctionReturn(0);
}

/*@
   KSPMPJacobiGetReadShare - Gets the share of the value bytes the products of the last `KSPMPJACOBI` solve read,
   against as many products reading every segment

   Not Collective

   Input Parameter:
.  ksp - the solver

   Output Parameter:
.  share - in (0, 1]; 1 when the operator is not split storage or every product read every segment

   Notes:
   Levels per row (strategy component) count each row's share as its level over the segments: rows stand for their
   values (the rows of one operator have similar lengths), and the share is what the levels ask for: rows stored
   together (a node, a slice of 8 rows) read the highest level among them, so the products read at least this.

   Level: advanced

.seealso: `KSPMPJACOBI`, `KSPMPJacobiGetRowLevelCounts()`
@*/
PetscErrorCode KSPMPJacobiGetReadShare(KSP ksp, PetscReal *share)
{
  MPJacobi *d = nullptr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscCall(KSPMPJacobiRequire(ksp, "KSPMPJacobiGetReadShare", &d));
  PetscInt products = 0;
  for (int l = 0; l < kMaxSegments; l++)
    products += d->level_products[l];
  *share = products && d->segments ? (PetscReal)(d->component_reads / (double)products) : 1.0;
  PetscFunctionReturn(0);
}

/*@
   KSPMPJacobiGetRowLevelCounts - Gets, for the last `KSPMPJACOBI` solve with the component strategy, how many rows
   read each level at its end, and how many steps up the stagnation test made

   Not Collective

   Input Parameter:
.  ksp - the solver

   Output Parameters:
+  rows - rows[l] for l = 1 .. 4: the rows (of all processes) at level l when the iteration ended (all 0 for the other
          strategies)
-  stepped - the steps up the stagnation test made (a row may step several times), or NULL

   Level: advanced

.seealso: `KSPMPJACOBI`, `KSPMPJacobiGetReadShare()`, `MatAIJMPSetRowReadLevels()`
@*/
PetscErrorCode KSPMPJacobiGetRowLevelCounts(KSP ksp, PetscInt rows[5], PetscInt *stepped)
{
  MPJacobi *d = nullptr;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscCall(KSPMPJacobiRequire(ksp, "KSPMPJacobiGetRowLevelCounts", &d));
  for (int l = 0; l <= kMaxSegments; l++)
    rows[l] = d->rows_at_end[l];
  if (stepped) *stepped = d->steps_by_test;
  PetscFunctionReturn(0);
}
