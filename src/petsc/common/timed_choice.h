// The run-time choice between two kernels that give the same result bit for bit
// (aijmp's AIJ-or-compact products, apbjacobi's two applies of fp64 small
// blocks): the first 2 * kSamples calls alternate between them, and the faster
// by median is kept. Nothing but speed depends on the choice, so each rank may
// choose on its own.
#pragma once

#include <algorithm>

#include <petscsys.h>

namespace petscmp {

// The median of t[0..n) (reorders t).
inline PetscLogDouble median_of(PetscLogDouble *t, int n)
{
  std::sort(t, t + n);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

struct TimedChoice {
  static constexpr int kSamples       = 3;
  int count[2]                        = {0, 0};
  PetscLogDouble seconds[2][kSamples] = {};
  PetscLogDouble median[2]            = {0, 0};
  int chosen                          = -1; // the candidate kept; -1 while timing

  bool decided() const { return chosen >= 0; }
  bool timed() const { return count[0] == kSamples && count[1] == kSamples; }
  // The candidate the next call runs.
  int next() const { return decided() ? chosen : (count[0] <= count[1] ? 0 : 1); }
  // One call of candidate k took `s` seconds: decides once both have kSamples.
  void record(int k, PetscLogDouble s)
  {
    if (decided() || count[k] >= kSamples) return;
    seconds[k][count[k]++] = s;
    if (!timed()) return;
    for (int i = 0; i < 2; ++i)
      median[i] = median_of(seconds[i], kSamples);
    chosen = median[0] <= median[1] ? 0 : 1;
  }
};

} // namespace petscmp
