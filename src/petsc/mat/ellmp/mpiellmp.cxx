// mpiellmp: the MPI ellmp. Each rank stores its rows as MPIAIJ lays them out,
// a diagonal and an off-diagonal seqellmp block (compact values, the only
// copy), the off-diagonal block's columns numbered through `garray`, and
// scatters the ghost values of x itself; a row's format is decided over the
// whole row (both blocks), as in aijmp, so any number of ranks stores the same
// values.
//
// Assembly. PETSc's MPIAIJ does the assembly (its stash sends other ranks'
// rows, with the order and the compression of duplicate entries that make
// lossless results bitwise AIJ's): a temporary MPIAIJ matrix receives the
// values and MatAssemblyEnd stores its blocks. An MPI matrix can only be made
// where every rank takes part, so values set on an assembled matrix (which
// need not be set on every rank) go first into a per-rank SeqAIJ replica of the
// rank's rows (global columns), refilled from the stored values, and values
// for other ranks' rows are kept in call order; MatAssemblyBegin, collective,
// moves both into the temporary MPIAIJ matrix.
#include <algorithm>
#include <utility>

#include "mat/ellmp/ellmpimpl.h"

namespace petscmp {
namespace {

// Values set for other ranks' rows while the matrix was reopened, in the order they were set, until the collective
// assembly hands them to the MPIAIJ's stash. Three flat arrays, not a pair of vectors per row (those took 1.4 times
// the stash's bytes on ex2's element assembly and stayed in the heap after the replay); their pages are given back
// as they are replayed, so the stash grows as they shrink.
class PendingRows {
public:
  void add(PetscInt row, InsertMode mode, PetscInt n, const PetscInt cols[], const PetscScalar values[])
  {
    heads_.insert(heads_.end(), {row, n, static_cast<PetscInt>(mode)});
    cols_.insert(cols_.end(), cols, cols + n);
    values_.insert(values_.end(), values, values + n);
  }
  bool empty() const { return heads_.empty(); }
  void clear()
  {
    std::vector<PetscInt>().swap(heads_);
    std::vector<PetscInt>().swap(cols_);
    std::vector<PetscScalar>().swap(values_);
  }
  // set(row, n, cols, values, mode) for each row in order; then empty.
  template <typename Set> PetscErrorCode replay(Set &&set)
  {
    std::size_t entry = 0, given_back = 0;

    PetscFunctionBegin;
    for (std::size_t h = 0; h < heads_.size(); h += 3) {
      const PetscInt n = heads_[h + 1];
      PetscCall(
          set(heads_[h], n, cols_.data() + entry, values_.data() + entry, static_cast<InsertMode>(heads_[h + 2])));
      entry += static_cast<std::size_t>(n);
      if (entry - given_back >= (std::size_t(1) << 16)) {
        discard_pages(cols_.data() + given_back, cols_.data() + entry);
        discard_pages(values_.data() + given_back, values_.data() + entry);
        given_back = entry;
      }
    }
    clear();
    PetscFunctionReturn(0);
  }

private:
  std::vector<PetscInt> heads_; // per row: row, number of values, insert mode
  std::vector<PetscInt> cols_;
  std::vector<PetscScalar> values_;
};

struct MPIELLMP {
  AIJMPSettings settings;
  Mat assembly   = nullptr; // MPIAIJ receiving values (made only where all ranks are: preallocation, assembly)
  Mat local_rows = nullptr; // reopened: this rank's rows in a SeqAIJ (global columns)
  PendingRows pending;
  Mat diag = nullptr, off = nullptr; // the stored matrix
  std::vector<PetscInt> garray;      // global column of each column of `off`
  Vec lvec           = nullptr;      // ghost values of x
  VecScatter scatter = nullptr;
  std::vector<std::pair<MatOption, PetscBool>> options;
  bool roworiented = true, ignore_off_process = false;
  AIJTwin twin;                   // an MPIAIJ copy for SOR and coloring
  std::vector<PetscInt> row_cols; // MatGetRow's buffers
  std::vector<PetscScalar> row_vals;
};

MPIELLMP *data_of(Mat A)
{
  return static_cast<MPIELLMP *>(A->data);
}

MPI_Comm comm_of(Mat A)
{
  return PetscObjectComm((PetscObject)A);
}

PetscErrorCode replay_options(Mat A, Mat M)
{
  PetscFunctionBegin;
  for (const auto &[op, flg] : data_of(A)->options)
    PetscCall(MatSetOption(M, op, flg));
  PetscFunctionReturn(0);
}

// A new MPIAIJ matrix with A's layout (collective).
PetscErrorCode new_mpiaij(Mat A, Mat *M)
{
  PetscFunctionBegin;
  PetscCall(PetscLayoutSetUp(A->rmap));
  PetscCall(PetscLayoutSetUp(A->cmap));
  PetscCall(MatCreate(comm_of(A), M));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*M, "petscmp_internal_"));
  PetscCall(MatSetSizes(*M, A->rmap->n, A->cmap->n, A->rmap->N, A->cmap->N));
  PetscCall(MatSetBlockSizesFromMats(*M, A, A));
  PetscCall(MatSetType(*M, MATMPIAIJ));
  PetscFunctionReturn(0);
}

// Local row i's entries in global columns, ascending, into the row buffers (MPIAIJ's MatGetRow order).
// Local row i in global columns from its diagonal-block part (nd entries, local columns) and its off-diagonal part
// (no entries, columns of garray), merged in column order into the row buffers.
template <typename Col>
void merge_local_row(Mat A, PetscInt nd, const Col *cd, const PetscScalar *vd, PetscInt no, const Col *co,
                     const PetscScalar *vo)
{
  MPIELLMP *d = data_of(A);
  d->row_cols.resize(static_cast<std::size_t>(nd + no));
  d->row_vals.resize(static_cast<std::size_t>(nd + no));
  const PetscInt cstart = A->cmap->rstart;
  PetscInt k = 0, e = 0;
  for (; e < no && d->garray[co[e]] < cstart; ++e, ++k) {
    d->row_cols[k] = d->garray[co[e]];
    d->row_vals[k] = vo[e];
  }
  for (PetscInt j = 0; j < nd; ++j, ++k) {
    d->row_cols[k] = static_cast<PetscInt>(cd[j]) + cstart;
    d->row_vals[k] = vd[j];
  }
  for (; e < no; ++e, ++k) {
    d->row_cols[k] = d->garray[co[e]];
    d->row_vals[k] = vo[e];
  }
}

PetscErrorCode read_local_row(Mat A, PetscInt i, PetscInt *n)
{
  MPIELLMP *d = data_of(A);
  PetscInt nd, no;
  const PetscInt *cd, *co;
  const PetscScalar *vd, *vo;

  PetscFunctionBegin;
  PetscCall(MatGetRow(d->diag, i, &nd, &cd, &vd));
  PetscCall(MatGetRow(d->off, i, &no, &co, &vo));
  merge_local_row(A, nd, cd, vd, no, co, vo);
  *n = nd + no;
  PetscCall(MatRestoreRow(d->off, i, nullptr, &co, &vo));
  PetscCall(MatRestoreRow(d->diag, i, nullptr, &cd, &vd));
  PetscFunctionReturn(0);
}

// Reads of this rank's stored rows for the last time before they are stored anew (a reassembly): the blocks'
// values go back to the system as the rows are read (the matrix receiving them grows as the blocks shrink), and the
// blocks count as not assembled until they are stored (their values are undefined).
class LastReads {
public:
  PetscErrorCode start(Mat A)
  {
    PetscFunctionBegin;
    diag_ = data_of(A)->diag;
    off_  = data_of(A)->off;
    // a pattern without values (as DMs preallocate): both blocks' indices go too, as the layouts of a copy of zeros
    // are not kept (a block kept alone would make the next build a whole one, on top of the assembly matrix)
    bool zeros_diag, zeros_off;
    PetscCall(SeqELLMPHoldsAPattern(diag_, &zeros_diag));
    PetscCall(SeqELLMPHoldsAPattern(off_, &zeros_off));
    if (zeros_diag && zeros_off)
      PetscCall(PetscInfo(A, "petscmp: the stored values are all zeros (a pattern, as a DM preallocates it): their "
                             "column indices are given back too as the rows are reopened; the next assembly builds "
                             "the storage anew\n"));
    PetscCall(SeqELLMPLastReads(diag_, rows_diag_, release_diag_, zeros_diag && zeros_off));
    PetscCall(SeqELLMPLastReads(off_, rows_off_, release_off_, zeros_diag && zeros_off));
    PetscFunctionReturn(0);
  }
  // Local row i into A's row buffers (rows in ascending order; through MatGetRow when not started)
  PetscErrorCode read(Mat A, PetscInt i, PetscInt *n)
  {
    PetscFunctionBegin;
    if (!rows_diag_) {
      PetscCall(read_local_row(A, i, n));
      PetscFunctionReturn(0);
    }
    PetscCall(guarded([&] {
      rows_diag_->read(i, cols_diag_, vals_diag_);
      rows_off_->read(i, cols_off_, vals_off_);
    }));
    const auto nd = static_cast<PetscInt>(cols_diag_.size()), no = static_cast<PetscInt>(cols_off_.size());
    merge_local_row(A, nd, cols_diag_.data(), vals_diag_.data(), no, cols_off_.data(), vals_off_.data());
    *n = nd + no;
    PetscFunctionReturn(0);
  }
  void rows_read(PetscInt rows) // rows [0, rows) read
  {
    if (!release_diag_) return;
    (*release_diag_)(rows);
    (*release_off_)(rows);
  }
  void end(PetscInt rows)
  {
    if (!release_diag_) return;
    rows_read(rows);
    diag_->assembled = off_->assembled = PETSC_FALSE;
  }

private:
  Mat diag_ = nullptr, off_ = nullptr;
  std::unique_ptr<CompactValuesRelease> release_diag_, release_off_;
  std::unique_ptr<CompactRowReader> rows_diag_, rows_off_; // (no row maps: 8 bytes a row each)
  std::vector<PetscInt> cols_diag_, cols_off_;
  std::vector<double> vals_diag_, vals_off_;
};

// Fills the new MPIAIJ matrix M (not preallocated) with the stored values, not assembled.
// last_reads: the stored values are not read again before they are stored anew (given back as they are read).
PetscErrorCode fill_mpiaij_from_stored(Mat A, Mat M, bool last_reads = false)
{
  MPIELLMP *d      = data_of(A);
  const PetscInt m = A->rmap->n;
  std::vector<PetscInt> dn(static_cast<std::size_t>(m)), on(static_cast<std::size_t>(m));

  PetscFunctionBegin;
  PetscCall(guarded([&] {
    compact_row_lengths(*SeqELLMPCompact(d->diag), dn.data());
    compact_row_lengths(*SeqELLMPCompact(d->off), on.data());
  }));
  PetscCall(MatMPIAIJSetPreallocation(M, 0, dn.data(), 0, on.data()));
  LastReads reads;
  if (last_reads) PetscCall(reads.start(A));
  for (PetscInt i = 0; i < m; ++i) {
    PetscInt n, row = i + A->rmap->rstart;
    PetscCall(reads.read(A, i, &n));
    if (n) PetscCall(MatSetValues(M, 1, &row, n, d->row_cols.data(), d->row_vals.data(), INSERT_VALUES));
    if ((i + 1) % kRowsPerGiveBack == 0) reads.rows_read(i + 1);
  }
  reads.end(m);
  PetscFunctionReturn(0);
}

// A new assembled MPIAIJ matrix holding the stored values, with what PETSc may ask of A (collective).
PetscErrorCode to_mpiaij(Mat A, Mat *M)
{
  PetscFunctionBegin;
  PetscCall(new_mpiaij(A, M));
  PetscCall(fill_mpiaij_from_stored(A, *M));
  PetscCall(MatAssemblyBegin(*M, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*M, MAT_FINAL_ASSEMBLY));
  PetscCall(ELLMPCarryIdentity(A, *M));
  PetscFunctionReturn(0);
}

// The ghost scatter for the off-diagonal columns `garray` (collective).
PetscErrorCode make_scatter(Mat A)
{
  MPIELLMP *d = data_of(A);
  IS is;
  Vec x;

  PetscFunctionBegin;
  PetscCall(VecScatterDestroy(&d->scatter));
  PetscCall(VecDestroy(&d->lvec));
  const PetscInt n = static_cast<PetscInt>(d->garray.size());
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, n, &d->lvec));
  PetscCall(ISCreateGeneral(PETSC_COMM_SELF, n, d->garray.data(), PETSC_USE_POINTER, &is));
  PetscCall(VecCreateMPIWithArray(comm_of(A), 1, A->cmap->n, A->cmap->N, nullptr, &x));
  PetscCall(VecScatterCreate(x, is, d->lvec, nullptr, &d->scatter));
  PetscCall(VecDestroy(&x));
  PetscCall(ISDestroy(&is));
  PetscFunctionReturn(0);
}

// Stores the blocks of the assembled MPIAIJ matrix M as the matrix (collective). temporary: M is destroyed right
// after, unread (the memory of its stored rows is given back during the build).
PetscErrorCode store_from_mpiaij(Mat A, Mat M, bool temporary = false)
{
  MPIELLMP *d = data_of(A);
  Mat Ad, Ao;
  const PetscInt *colmap;

  PetscFunctionBegin;
  PetscCall(AIJMPReadOptionsLazily(A, d->settings, "ellmp"));
  PetscCall(MatMPIAIJGetSeqAIJ(M, &Ad, &Ao, &colmap));
  const PetscInt noff = Ao->cmap->n;
  const bool same_columns =
      d->off && static_cast<PetscInt>(d->garray.size()) == noff && std::equal(colmap, colmap + noff, d->garray.begin());
  std::unique_ptr<CompactCsr> cd, co;
  if (d->diag) PetscCall(SeqELLMPTakeCompact(d->diag, cd));
  if (d->off) PetscCall(SeqELLMPTakeCompact(d->off, co));
  bool same_d = false, same_o = false;
  { // the layouts are kept where the patterns did not change (checked on the column indices)
    CsrView<PetscInt> vd, vo;
    PetscCall(SeqAIJCsrView(Ad, vd));
    PetscCall(SeqAIJCsrView(Ao, vo));
    PetscCall(guarded([&] {
      same_d = cd && compact_has_pattern(*cd, vd);
      same_o = same_columns && co && compact_has_pattern(*co, vo);
    }));
  }
  bool refilled_d, refilled_o;
  PetscCall(PetscLogEventBegin(MATELLMP_Build, A, 0, 0, 0));
  PetscCall(AIJMPBuildParts(comm_of(A), Ad, Ao, d->settings, AIJMPFormatGroup(A, d->settings.opts), true, same_d,
                            same_o, cd, co, &refilled_d, &refilled_o, temporary));
  if (!d->diag) PetscCall(SeqELLMPCreateBlock(A->rmap->n, A->cmap->n, A->rmap->bs, A->cmap->bs, d->settings, &d->diag));
  if (!same_columns) {
    PetscCall(MatDestroy(&d->off));
    PetscCall(SeqELLMPCreateBlock(A->rmap->n, noff, A->rmap->bs, 1, d->settings, &d->off));
  }
  PetscCall(SeqELLMPStore(d->diag, Ad, std::move(cd), refilled_d, same_d));
  PetscCall(SeqELLMPStore(d->off, Ao, std::move(co), refilled_o, same_o));
  PetscCall(PetscLogEventEnd(MATELLMP_Build, A, 0, 0, 0));
  // a new ghost scatter where any rank's columns changed; the pattern's state changes everywhere when it changed
  // anywhere (preconditioners redo their symbolic setup collectively)
  PetscBool flags[2] = {same_columns && d->scatter ? PETSC_TRUE : PETSC_FALSE,
                        same_d && same_o ? PETSC_TRUE : PETSC_FALSE};
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, flags, 2, MPIU_BOOL, MPI_LAND, comm_of(A)));
  if (!flags[0]) {
    d->garray.assign(colmap, colmap + noff);
    PetscCall(make_scatter(A));
  }
  if (!flags[1]) A->nonzerostate++;
  PetscFunctionReturn(0);
}

// A's MPIAIJ twin with A's values (collective when it is made; a refresh rewrites the blocks' values locally).
PetscErrorCode twin_of(Mat A, Mat *M)
{
  MPIELLMP *d = data_of(A);
  AIJTwin &t  = d->twin;
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  if (t.aij && t.pattern != A->nonzerostate) PetscCall(MatDestroy(&t.aij));
  if (!t.aij) {
    PetscCall(to_mpiaij(A, &t.aij));
    t.pattern = A->nonzerostate;
  } else if (t.synced != state) {
    Mat Td, To;
    const PetscInt *colmap;
    PetscCall(MatMPIAIJGetSeqAIJ(t.aij, &Td, &To, &colmap));
    PetscCall(SeqELLMPRefreshAIJ(d->diag, Td));
    PetscCall(SeqELLMPRefreshAIJ(d->off, To));
    PetscCall(PetscObjectStateIncrease((PetscObject)t.aij));
  }
  // what A's flags say now (MatSetOption changes no state, so a twin made earlier would keep the old flags)
  PetscCall(MatPropagateSymmetryOptions(A, t.aij));
  t.synced = state;
  *M       = t.aij;
  PetscFunctionReturn(0);
}

PetscErrorCode store_twin_values(Mat A, Mat M)
{
  PetscFunctionBegin;
  PetscCall(store_from_mpiaij(A, M));
  PetscCall(PetscObjectStateIncrease((PetscObject)A)); // new values: preconditioners must see them
  if (data_of(A)->twin.aij == M) PetscCall(PetscObjectStateGet((PetscObject)A, &data_of(A)->twin.synced));
  PetscFunctionReturn(0);
}

// The temporary MPIAIJ matrix, filled with the values set so far (collective: preallocation, setup, assembly).
PetscErrorCode open_collectively(Mat A)
{
  MPIELLMP *d      = data_of(A);
  const PetscInt m = A->rmap->n, cstart = A->cmap->rstart, cend = A->cmap->rend;

  PetscFunctionBegin;
  if (d->assembly) PetscFunctionReturn(0);
  PetscCall(new_mpiaij(A, &d->assembly));
  if (d->local_rows) { // the reopened rows, already holding this rank's new values
    PetscCall(MatAssemblyBegin(d->local_rows, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(d->local_rows, MAT_FINAL_ASSEMBLY));
    std::vector<PetscInt> dn(static_cast<std::size_t>(m), 0), on(static_cast<std::size_t>(m), 0);
    for (PetscInt i = 0; i < m; ++i) {
      PetscInt n;
      const PetscInt *cols;
      PetscCall(MatGetRow(d->local_rows, i, &n, &cols, nullptr));
      for (PetscInt k = 0; k < n; ++k)
        ++((cols[k] >= cstart && cols[k] < cend) ? dn : on)[i];
      PetscCall(MatRestoreRow(d->local_rows, i, &n, &cols, nullptr));
    }
    PetscCall(MatMPIAIJSetPreallocation(d->assembly, 0, dn.data(), 0, on.data()));
    // the replica's rows are given back as they are copied (it is destroyed right after): the temporary MPIAIJ grows
    // as the replica shrinks, instead of both at full size
    CsrView<PetscInt> replica;
    PetscCall(SeqAIJCsrView(d->local_rows, replica));
    StoredRowsReturn give_back({replica});
    for (PetscInt i = 0; i < m; ++i) {
      PetscInt n, row = i + A->rmap->rstart;
      const PetscInt *cols;
      const PetscScalar *vals;
      PetscCall(MatGetRow(d->local_rows, i, &n, &cols, &vals));
      if (n) PetscCall(MatSetValues(d->assembly, 1, &row, n, cols, vals, INSERT_VALUES));
      PetscCall(MatRestoreRow(d->local_rows, i, &n, &cols, &vals));
      if ((i + 1) % kRowsPerGiveBack == 0) give_back(i + 1);
    }
    give_back(m); // (the last rows too: the stash of other ranks' values comes next)
    PetscCall(MatDestroy(&d->local_rows));
  } else if (d->diag) {
    PetscCall(fill_mpiaij_from_stored(A, d->assembly, true));
  } else {
    PetscCall(MatMPIAIJSetPreallocation(d->assembly, PETSC_DEFAULT, nullptr, PETSC_DEFAULT, nullptr));
  }
  // the values for other ranks' rows after a flush (they may be added to what was inserted)
  PetscCall(MatAssemblyBegin(d->assembly, MAT_FLUSH_ASSEMBLY));
  PetscCall(MatAssemblyEnd(d->assembly, MAT_FLUSH_ASSEMBLY));
  PetscCall(replay_options(A, d->assembly));
  PetscCall(
      d->pending.replay([&](PetscInt row, PetscInt n, const PetscInt *cols, const PetscScalar *values,
                            InsertMode mode) { return MatSetValues(d->assembly, 1, &row, n, cols, values, mode); }));
  A->preallocated = PETSC_TRUE;
  PetscFunctionReturn(0);
}

// This rank's rows reopened for MatSetValues (not collective).
PetscErrorCode open_locally(Mat A)
{
  MPIELLMP *d      = data_of(A);
  const PetscInt m = A->rmap->n;

  PetscFunctionBegin;
  if (d->local_rows) PetscFunctionReturn(0);
  std::vector<PetscInt> dn(static_cast<std::size_t>(m)), on(static_cast<std::size_t>(m));
  PetscCall(guarded([&] {
    compact_row_lengths(*SeqELLMPCompact(d->diag), dn.data());
    compact_row_lengths(*SeqELLMPCompact(d->off), on.data());
    for (PetscInt i = 0; i < m; ++i)
      dn[i] += on[i];
  }));
  PetscCall(MatCreate(PETSC_COMM_SELF, &d->local_rows));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)d->local_rows, "petscmp_internal_"));
  PetscCall(MatSetSizes(d->local_rows, m, A->cmap->N, m, A->cmap->N));
  PetscCall(MatSetType(d->local_rows, MATSEQAIJ));
  PetscCall(MatSeqAIJSetPreallocation(d->local_rows, 0, dn.data()));
  LastReads reads;
  PetscCall(reads.start(A));
  for (PetscInt i = 0; i < m; ++i) {
    PetscInt n;
    PetscCall(reads.read(A, i, &n));
    if (n) PetscCall(MatSetValues(d->local_rows, 1, &i, n, d->row_cols.data(), d->row_vals.data(), INSERT_VALUES));
    if ((i + 1) % kRowsPerGiveBack == 0) reads.rows_read(i + 1);
  }
  reads.end(m);
  PetscCall(MatAssemblyBegin(d->local_rows, MAT_FLUSH_ASSEMBLY));
  PetscCall(MatAssemblyEnd(d->local_rows, MAT_FLUSH_ASSEMBLY));
  for (const auto &[op, flg] : d->options) // the options a SeqAIJ knows (new nonzeros, zero entries, ...)
    if (op != MAT_NO_OFF_PROC_ENTRIES && op != MAT_IGNORE_OFF_PROC_ENTRIES)
      PetscCall(MatSetOption(d->local_rows, op, flg));
  PetscFunctionReturn(0);
}

// A change of values done by MPIAIJ on the stored values, stored anew (collective).
template <typename Fn> PetscErrorCode change_through_aij(Mat A, Fn &&fn)
{
  Mat M;

  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  // the assembly matrix holds the values from here (the stored ones are given back as they are read): if fn fails,
  // the matrix is left open with them, and the next assembly stores them
  PetscCall(new_mpiaij(A, &d->assembly));
  M = d->assembly;
  PetscCall(fill_mpiaij_from_stored(A, M, true));
  PetscCall(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY));
  PetscCall(replay_options(A, M));
  PetscCall(fn(M));
  if (!M->assembled) {
    PetscCall(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY));
  }
  PetscCall(store_from_mpiaij(A, M, true));
  PetscCall(MatDestroy(&d->assembly));
  ReleaseFreedMemory();
  PetscFunctionReturn(0);
}

// ---- assembly ----------------------------------------------------------------

PetscErrorCode MatSetValues_MPIELLMP(Mat A, PetscInt m, const PetscInt rows[], PetscInt n, const PetscInt cols[],
                                     const PetscScalar v[], InsertMode mode)
{
  MPIELLMP *d = data_of(A);
  std::vector<PetscScalar> column_major_row;

  PetscFunctionBegin;
  if (d->assembly) {
    PetscCall(MatSetValues(d->assembly, m, rows, n, cols, v, mode));
    PetscFunctionReturn(0);
  }
  PetscCheck(d->diag, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
             "petscmp: preallocate the ellmp matrix (or MatSetUp) first");
  PetscCall(open_locally(A));
  for (PetscInt i = 0; i < m; ++i) {
    if (rows[i] < 0) continue;
    const PetscScalar *row_values = v + i * n;
    if (!d->roworiented) {
      column_major_row.resize(static_cast<std::size_t>(n));
      for (PetscInt j = 0; j < n; ++j)
        column_major_row[j] = v[i + j * m];
      row_values = column_major_row.data();
    }
    if (rows[i] >= A->rmap->rstart && rows[i] < A->rmap->rend) {
      const PetscInt local = rows[i] - A->rmap->rstart;
      PetscCall(MatSetValues(d->local_rows, 1, &local, n, cols, row_values, mode));
    } else if (!d->ignore_off_process) {
      PetscCall(guarded([&] { d->pending.add(rows[i], mode, n, cols, row_values); }));
    }
  }
  PetscFunctionReturn(0);
}

PetscErrorCode MatAssemblyBegin_MPIELLMP(Mat A, MatAssemblyType type)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  PetscBool open = (d->assembly || d->local_rows || !d->pending.empty() || !d->diag) ? PETSC_TRUE : PETSC_FALSE;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &open, 1, MPIU_BOOL, MPI_LOR, comm_of(A)));
  if (!open) PetscFunctionReturn(0); // nothing was set on any rank: the stored matrix stands
  PetscCall(open_collectively(A));
  PetscCall(MatAssemblyBegin(d->assembly, type));
  PetscFunctionReturn(0);
}

PetscErrorCode MatAssemblyEnd_MPIELLMP(Mat A, MatAssemblyType type)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  if (!d->assembly) PetscFunctionReturn(0);
  PetscCall(MatAssemblyEnd(d->assembly, type));
  if (type == MAT_FLUSH_ASSEMBLY) PetscFunctionReturn(0);
  PetscCall(store_from_mpiaij(A, d->assembly, true));
  PetscCall(MatDestroy(&d->assembly));
  ReleaseFreedMemory();
  PetscFunctionReturn(0);
}

PetscErrorCode MatMPIAIJSetPreallocation_MPIELLMP(Mat A, PetscInt dnz, const PetscInt dnnz[], PetscInt onz,
                                                  const PetscInt onnz[])
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  PetscCall(MatDestroy(&d->assembly)); // a new preallocation starts the matrix anew
  PetscCall(MatDestroy(&d->local_rows));
  d->pending.clear();
  PetscCall(new_mpiaij(A, &d->assembly));
  PetscCall(MatMPIAIJSetPreallocation(d->assembly, dnz, dnnz, onz, onnz));
  PetscCall(replay_options(A, d->assembly));
  A->preallocated = PETSC_TRUE;
  PetscFunctionReturn(0);
}

PetscErrorCode MatSetUp_MPIELLMP(Mat A)
{
  PetscFunctionBegin;
  if (!data_of(A)->assembly && !data_of(A)->diag) PetscCall(open_collectively(A));
  PetscFunctionReturn(0);
}

PetscErrorCode MatSetOption_MPIELLMP(Mat A, MatOption op, PetscBool flg)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  d->options.emplace_back(op, flg);
  if (op == MAT_ROW_ORIENTED) d->roworiented = flg;
  if (op == MAT_IGNORE_OFF_PROC_ENTRIES) d->ignore_off_process = flg;
  if (d->assembly) PetscCall(MatSetOption(d->assembly, op, flg));
  if (d->local_rows && op != MAT_NO_OFF_PROC_ENTRIES && op != MAT_IGNORE_OFF_PROC_ENTRIES)
    PetscCall(MatSetOption(d->local_rows, op, flg));
  PetscFunctionReturn(0);
}

// ---- products (MPIAIJ's sequence of block products and scatters) -------------------

// The blocks take the matrix's settings (MatELLMPSetStorage changes the parent's; the read level of split storage
// changes between products).
PetscErrorCode push_settings(Mat A)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  for (Mat block : {d->diag, d->off}) {
    AIJMPSettings *s;
    if (!block) continue;
    PetscCall(SeqELLMPGetSettings(block, &s));
    *s = d->settings;
  }
  PetscFunctionReturn(0);
}

// Before a product (and its halo exchange): the matrix is stored, and the blocks read the segments asked for.
PetscErrorCode check_stored(Mat A)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  PetscCheck(d->diag, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
             "petscmp: the ellmp matrix must be assembled before a product");
  PetscCall(AIJMPCheckReadLevel(A, d->settings));
  PetscCall(push_settings(A));
  PetscFunctionReturn(0);
}

PetscErrorCode MatELLMPGetSettings_MPIELLMP(Mat A, AIJMPSettings **s)
{
  PetscFunctionBegin;
  *s = &data_of(A)->settings;
  PetscFunctionReturn(0);
}

// MPIAIJ's: the diagonal block's (which has it where its last build found inodes; an error names the type otherwise)
PetscErrorCode MatMultDiagonalBlock_MPIELLMP(Mat A, Vec bb, Vec xx)
{
  PetscFunctionBegin;
  PetscCall(MatMultDiagonalBlock(data_of(A)->diag, bb, xx));
  PetscFunctionReturn(0);
}

// MatSOR_MPIAIJ's local sweeps (PETSc 3.18), step for step, on the stored blocks: the diagonal block sweeps its own
// rows (MatSOR_SeqELLMP: the stored rows, AIJ's inode SOR replayed where AIJ would take it), the off-diagonal
// block's product updates the right-hand side. No MPIAIJ copy is made. Eisenstat runs on the MPIAIJ twin (MPIAIJ's
// Eisenstat is not replayed yet). With -mat_ellmp_sor_aij_copy, everything runs on the twin.
PetscErrorCode MatSOR_MPIELLMP(Mat A, Vec bb, PetscReal omega, MatSORType flag, PetscReal fshift, PetscInt its,
                               PetscInt lits, Vec xx)
{
  MPIELLMP *d = data_of(A);
  Vec bb1     = nullptr;

  PetscFunctionBegin;
  PetscCall(check_stored(A));
  if ((flag & SOR_EISENSTAT) || d->settings.sor_aij_copy) {
    if (!d->twin.aij)
      PetscCall(PetscInfo(A, "petscmp: SOR on an MPIAIJ copy of the matrix (AIJ's memory while it lives): %s\n",
                          d->settings.sor_aij_copy ? "-mat_ellmp_sor_aij_copy" : "Eisenstat"));
    PetscCall((OpsThroughTwin<twin_of, store_twin_values>::sor(A, bb, omega, flag, fshift, its, lits, xx)));
    PetscFunctionReturn(0);
  }
  PetscErrorCode (*local_sor)(Mat, Vec, PetscReal, MatSORType, PetscReal, PetscInt, PetscInt, Vec) = d->diag->ops->sor;
  if (flag == SOR_APPLY_UPPER) {
    PetscCall(local_sor(d->diag, bb, omega, flag, fshift, lits, 1, xx));
    PetscFunctionReturn(0);
  }
  // the sweep after each halo update: MPIAIJ's choice among the local flags, in its order
  MatSORType sweep;
  if ((flag & SOR_LOCAL_SYMMETRIC_SWEEP) == SOR_LOCAL_SYMMETRIC_SWEEP)
    sweep = SOR_SYMMETRIC_SWEEP;
  else if (flag & SOR_LOCAL_FORWARD_SWEEP)
    sweep = SOR_FORWARD_SWEEP;
  else if (flag & SOR_LOCAL_BACKWARD_SWEEP)
    sweep = SOR_BACKWARD_SWEEP;
  else
    SETERRQ(PetscObjectComm((PetscObject)A), PETSC_ERR_SUP, "Parallel SOR not supported");
  if (its > 1 || ~flag & SOR_ZERO_INITIAL_GUESS) PetscCall(VecDuplicate(bb, &bb1));
  if (flag & SOR_ZERO_INITIAL_GUESS) {
    PetscCall(local_sor(d->diag, bb, omega, flag, fshift, lits, 1, xx));
    its--;
  }
  while (its--) {
    PetscCall(VecScatterBegin(d->scatter, xx, d->lvec, INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecScatterEnd(d->scatter, xx, d->lvec, INSERT_VALUES, SCATTER_FORWARD));
    // bb1 = bb - B x
    PetscCall(VecScale(d->lvec, -1.0));
    PetscCall((*d->off->ops->multadd)(d->off, d->lvec, bb, bb1));
    PetscCall(local_sor(d->diag, bb1, omega, sweep, fshift, lits, 1, xx));
  }
  PetscCall(VecDestroy(&bb1));
  A->factorerrortype = d->diag->factorerrortype;
  PetscFunctionReturn(0);
}

PetscErrorCode MatMult_MPIELLMP(Mat A, Vec x, Vec y)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  PetscCall(check_stored(A));
  PetscCall(VecScatterBegin(d->scatter, x, d->lvec, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall((*d->diag->ops->mult)(d->diag, x, y));
  PetscCall(VecScatterEnd(d->scatter, x, d->lvec, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall((*d->off->ops->multadd)(d->off, d->lvec, y, y));
  PetscFunctionReturn(0);
}

PetscErrorCode MatMultAdd_MPIELLMP(Mat A, Vec x, Vec z, Vec y)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  PetscCall(check_stored(A));
  PetscCall(VecScatterBegin(d->scatter, x, d->lvec, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall((*d->diag->ops->multadd)(d->diag, x, z, y));
  PetscCall(VecScatterEnd(d->scatter, x, d->lvec, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall((*d->off->ops->multadd)(d->off, d->lvec, y, y));
  PetscFunctionReturn(0);
}

PetscErrorCode MatMultTranspose_MPIELLMP(Mat A, Vec x, Vec y)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  PetscCall(check_stored(A));
  PetscCall((*d->off->ops->multtranspose)(d->off, x, d->lvec));
  PetscCall((*d->diag->ops->multtranspose)(d->diag, x, y));
  PetscCall(VecScatterBegin(d->scatter, d->lvec, y, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(VecScatterEnd(d->scatter, d->lvec, y, ADD_VALUES, SCATTER_REVERSE));
  PetscFunctionReturn(0);
}

PetscErrorCode MatMultTransposeAdd_MPIELLMP(Mat A, Vec x, Vec z, Vec y)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  PetscCall(check_stored(A));
  PetscCall((*d->off->ops->multtranspose)(d->off, x, d->lvec));
  PetscCall((*d->diag->ops->multtransposeadd)(d->diag, x, z, y));
  PetscCall(VecScatterBegin(d->scatter, d->lvec, y, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(VecScatterEnd(d->scatter, d->lvec, y, ADD_VALUES, SCATTER_REVERSE));
  PetscFunctionReturn(0);
}

// ---- reads -------------------------------------------------------------------

PetscErrorCode MatGetRow_MPIELLMP(Mat A, PetscInt row, PetscInt *nz, PetscInt **idx, PetscScalar **v)
{
  MPIELLMP *d = data_of(A);
  PetscInt n;

  PetscFunctionBegin;
  PetscCheck(row >= A->rmap->rstart && row < A->rmap->rend, PETSC_COMM_SELF, PETSC_ERR_SUP,
             "petscmp: only this process's rows can be read (row %" PetscInt_FMT ")", row);
  PetscCall(read_local_row(A, row - A->rmap->rstart, &n));
  if (nz) *nz = n;
  if (idx) *idx = n ? d->row_cols.data() : nullptr;
  if (v) *v = n ? d->row_vals.data() : nullptr;
  PetscFunctionReturn(0);
}

PetscErrorCode MatRestoreRow_MPIELLMP(Mat, PetscInt, PetscInt *nz, PetscInt **idx, PetscScalar **v)
{
  PetscFunctionBegin;
  if (nz) *nz = 0;
  if (idx) *idx = nullptr;
  if (v) *v = nullptr;
  PetscFunctionReturn(0);
}

PetscErrorCode MatGetValues_MPIELLMP(Mat A, PetscInt m, const PetscInt rows[], PetscInt n, const PetscInt cols[],
                                     PetscScalar v[])
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  for (PetscInt i = 0; i < m; ++i) {
    if (rows[i] < 0) continue;
    PetscCheck(rows[i] >= A->rmap->rstart && rows[i] < A->rmap->rend, PETSC_COMM_SELF, PETSC_ERR_SUP,
               "petscmp: only this process's rows can be read (row %" PetscInt_FMT ")", rows[i]);
    PetscInt len;
    PetscCall(read_local_row(A, rows[i] - A->rmap->rstart, &len));
    for (PetscInt j = 0; j < n; ++j) {
      if (cols[j] < 0) continue;
      PetscCheck(cols[j] < A->cmap->N, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE,
                 "petscmp: column %" PetscInt_FMT " is not a column of this matrix", cols[j]);
      const auto at = std::lower_bound(d->row_cols.begin(), d->row_cols.end(), cols[j]);
      v[i * n + j]  = (at != d->row_cols.end() && *at == cols[j]) ? d->row_vals[at - d->row_cols.begin()] : 0.0;
    }
  }
  PetscFunctionReturn(0);
}

PetscErrorCode MatGetDiagonal_MPIELLMP(Mat A, Vec v)
{
  PetscFunctionBegin;
  PetscCheck(A->rmap->rstart == A->cmap->rstart && A->rmap->n == A->cmap->n, PETSC_COMM_SELF, PETSC_ERR_SUP,
             "petscmp: the diagonal needs the same row and column layout");
  PetscCall((*data_of(A)->diag->ops->getdiagonal)(data_of(A)->diag, v));
  PetscFunctionReturn(0);
}

PetscErrorCode MatGetDiagonalBlock_MPIELLMP(Mat A, Mat *a)
{
  PetscFunctionBegin;
  *a = data_of(A)->diag;
  PetscFunctionReturn(0);
}

PetscErrorCode MatInvertBlockDiagonal_MPIELLMP(Mat A, const PetscScalar **values)
{
  PetscFunctionBegin;
  PetscCall(MatInvertBlockDiagonal(data_of(A)->diag, values));
  A->factorerrortype = data_of(A)->diag->factorerrortype;
  PetscFunctionReturn(0);
}

PetscErrorCode MatInvertVariableBlockDiagonal_MPIELLMP(Mat A, PetscInt nblocks, const PetscInt *bsizes,
                                                       PetscScalar *diag)
{
  PetscFunctionBegin;
  PetscCall(MatInvertVariableBlockDiagonal(data_of(A)->diag, nblocks, bsizes, diag));
  A->factorerrortype = data_of(A)->diag->factorerrortype;
  PetscFunctionReturn(0);
}

PetscErrorCode MatGetInfo_MPIELLMP(Mat A, MatInfoType type, MatInfo *info)
{
  MatInfo bi;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(info, sizeof(*info)));
  info->block_size = 1.0;
  if (!data_of(A)->diag) PetscFunctionReturn(0);
  PetscLogDouble sums[5] = {0, 0, 0, 0, 0};
  for (Mat b : {data_of(A)->diag, data_of(A)->off}) {
    PetscCall(MatGetInfo(b, MAT_LOCAL, &bi));
    sums[0] += bi.nz_used;
    sums[1] += bi.nz_allocated;
    sums[2] += bi.nz_unneeded;
    sums[3] += bi.memory;
    sums[4] = PetscMax(sums[4], bi.assemblies);
  }
  if (type == MAT_GLOBAL_SUM)
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, 4, MPIU_PETSCLOGDOUBLE, MPI_SUM, comm_of(A)));
  if (type == MAT_GLOBAL_MAX)
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, 4, MPIU_PETSCLOGDOUBLE, MPI_MAX, comm_of(A)));
  info->nz_used      = sums[0];
  info->nz_allocated = sums[1];
  info->nz_unneeded  = sums[2];
  info->memory       = sums[3];
  info->assemblies   = sums[4];
  PetscFunctionReturn(0);
}

// ---- conversions, copies -------------------------------------------------------

PetscErrorCode MatConvert_MPIELLMP_MPIAIJ(Mat A, MatType, MatReuse reuse, Mat *newmat)
{
  Mat M;

  PetscFunctionBegin;
  PetscCall(to_mpiaij(A, &M));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)M, ((PetscObject)A)->prefix));
  if (reuse == MAT_INPLACE_MATRIX) {
    PetscCall(MatHeaderReplace(A, &M));
  } else if (reuse == MAT_REUSE_MATRIX) {
    PetscCall(MatCopy(M, *newmat, DIFFERENT_NONZERO_PATTERN));
    PetscCall(MatDestroy(&M));
  } else
    *newmat = M;
  PetscFunctionReturn(0);
}

PetscErrorCode new_mpiellmp_like(Mat A, Mat *B)
{
  PetscFunctionBegin;
  PetscCall(MatCreate(comm_of(A), B));
  PetscCall(MatSetSizes(*B, A->rmap->n, A->cmap->n, A->rmap->N, A->cmap->N));
  PetscCall(MatSetBlockSizesFromMats(*B, A, A));
  PetscCall(MatSetType(*B, MATELLMP));
  PetscCall(PetscLayoutSetUp((*B)->rmap));
  PetscCall(PetscLayoutSetUp((*B)->cmap));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*B, ((PetscObject)A)->prefix));
  PetscFunctionReturn(0);
}

// MPIAIJ -> mpiellmp: the blocks are stored straight from AIJ's.
PetscErrorCode MatConvert_MPIAIJ_MPIELLMP(Mat A, MatType, MatReuse reuse, Mat *newmat)
{
  Mat B;

  PetscFunctionBegin;
  if (reuse == MAT_REUSE_MATRIX)
    B = *newmat;
  else
    PetscCall(new_mpiellmp_like(A, &B));
  PetscCall(MatDestroy(&data_of(B)->assembly));
  PetscCall(store_from_mpiaij(B, A));
  B->preallocated = PETSC_TRUE;
  PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
  if (reuse == MAT_INPLACE_MATRIX)
    PetscCall(MatHeaderReplace(A, &B));
  else
    *newmat = B;
  PetscFunctionReturn(0);
}

PetscErrorCode MatDuplicate_MPIELLMP(Mat A, MatDuplicateOption op, Mat *B)
{
  MPIELLMP *a = data_of(A);

  PetscFunctionBegin;
  PetscCall(new_mpiellmp_like(A, B));
  MPIELLMP *b           = data_of(*B);
  b->settings           = a->settings;
  b->options            = a->options;
  b->roworiented        = a->roworiented;
  b->ignore_off_process = a->ignore_off_process;
  if (a->diag) {
    PetscCall(MatDuplicate(a->diag, op, &b->diag));
    PetscCall(MatDuplicate(a->off, op, &b->off));
    b->garray = a->garray;
    PetscCall(make_scatter(*B));
    PetscCall(ELLMPMarkAssembled(*B));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode MatCopy_MPIELLMP(Mat A, Mat B, MatStructure str)
{
  PetscBool b_ellmp;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)B, MATMPIELLMP, &b_ellmp));
  PetscBool same = (b_ellmp && data_of(B)->diag && data_of(A)->garray == data_of(B)->garray) ? PETSC_TRUE : PETSC_FALSE;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPIU_BOOL, MPI_LAND, comm_of(A)));
  if (same) { // block by block (the same storage is cloned, not re-rounded)
    PetscCall(MatCopy(data_of(A)->diag, data_of(B)->diag, str));
    PetscCall(MatCopy(data_of(A)->off, data_of(B)->off, str));
    PetscFunctionReturn(0);
  }
  Mat M;
  PetscCall(to_mpiaij(A, &M));
  PetscCall(MatCopy(M, B, str));
  PetscCall(MatDestroy(&M));
  PetscFunctionReturn(0);
}

// ---- operations through a temporary MPIAIJ copy (asm, fieldsplit, redistribution) ----

// The submatrices are AIJ (the sub-solvers of asm factor them).
// ---- changes of values ---------------------------------------------------------

PetscErrorCode MatZeroEntries_MPIELLMP(Mat A)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  if (d->assembly) PetscCall(MatZeroEntries(d->assembly));
  if (d->local_rows) PetscCall(MatZeroEntries(d->local_rows));
  if (d->diag) {
    PetscCall(MatZeroEntries(d->diag));
    PetscCall(MatZeroEntries(d->off));
  }
  PetscFunctionReturn(0);
}

// ValueChangesThroughAIJ's way of running a change on this type
struct Change {
  template <typename Fn> static PetscErrorCode run(Mat A, Fn &&fn)
  {
    return change_through_aij(A, std::forward<Fn>(fn));
  }
};

// ---- options, view, load, destroy ---------------------------------------------

// An assembled matrix (not open for assembly): settings that change stored values store it anew.
bool holds_stored(const MPIELLMP *d)
{
  return d->diag && !d->assembly && !d->local_rows;
}
using Settings = SettingsOf<MPIELLMP, data_of, holds_stored, Change>;

PetscErrorCode MatView_MPIELLMP(Mat A, PetscViewer viewer)
{
  MPIELLMP *d = data_of(A);
  PetscBool ascii;
  PetscViewerFormat format;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  PetscCall(PetscViewerGetFormat(viewer, &format));
  if (ascii && (format == PETSC_VIEWER_ASCII_INFO || format == PETSC_VIEWER_ASCII_INFO_DETAIL)) {
    if (!d->diag) PetscFunctionReturn(0);
    MatAIJMPInfo info;
    PetscInt inodes = 0, limit = 0;
    PetscCall(PetscMemzero(&info, sizeof info));
    PetscCall(push_settings(A));
    PetscCall(SeqELLMPReport(d->diag, info, &inodes, &limit));
    PetscCall(SeqELLMPReport(d->off, info, nullptr, nullptr));
    // MPIAIJ's line (the diagonal blocks sum in the order of AIJ's inode routines where AIJ found inodes)
    if (inodes)
      PetscCall(PetscViewerASCIIPrintf(viewer,
                                       "using I-node (on process 0) routines: found %" PetscInt_FMT
                                       " nodes, limit used is %" PetscInt_FMT "\n",
                                       inodes, limit));
    else
      PetscCall(PetscViewerASCIIPrintf(viewer, "not using I-node (on process 0) routines\n"));
    PetscInt64 counts[2 * kFormatCount + 11];
    int k = 0;
    for (int f = 0; f < kFormatCount; ++f) {
      counts[k++] = info.rows[f];
      counts[k++] = info.nnz[f];
    }
    for (PetscInt64 v : {info.stored, info.sliced_rows, info.shifted_rows, info.narrow_rows, info.patched_rows,
                         info.node_rows, info.nodes, info.wide_nodes, info.sorted_windows})
      counts[k++] = v;
    counts[k++] = info.builds;
    counts[k++] = info.value_builds;
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, counts, 2 * kFormatCount + 9, MPIU_INT64, MPI_SUM, comm_of(A)));
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, counts + 2 * kFormatCount + 9, 2, MPIU_INT64, MPI_MAX, comm_of(A)));
    k = 0;
    for (int f = 0; f < kFormatCount; ++f) {
      info.rows[f] = counts[k++];
      info.nnz[f]  = counts[k++];
    }
    info.stored         = counts[k++];
    info.sliced_rows    = counts[k++];
    info.shifted_rows   = counts[k++];
    info.narrow_rows    = counts[k++];
    info.patched_rows   = counts[k++];
    info.node_rows      = counts[k++];
    info.nodes          = counts[k++];
    info.wide_nodes     = counts[k++];
    info.sorted_windows = counts[k++];
    info.builds         = counts[k++];
    info.value_builds   = counts[k++];
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, info.nodes_of_size, kMaxNodeRows + 1, MPIU_INT64, MPI_SUM, comm_of(A)));
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, info.gathered_x_parts, 3, MPIU_INT64, MPI_SUM, comm_of(A)));
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, info.max_rel_error, kFormatCount, MPIU_REAL, MPI_MAX, comm_of(A)));
    double bytes[3] = {info.bytes, info.aij_bytes, 0.0};
    MatInfo mi;
    PetscCall(MatGetInfo(A, MAT_LOCAL, &mi));
    bytes[2] = mi.memory;
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, bytes, 3, MPI_DOUBLE, MPI_SUM, comm_of(A)));
    info.bytes     = bytes[0];
    info.aij_bytes = bytes[1];
    PetscCall(ELLMPViewReport(viewer, info, d->settings, AIJMPFormatGroup(A, d->settings.opts), bytes[2], A->rmap->N));
    PetscFunctionReturn(0);
  }
  Mat M; // every other viewer sees the stored values through MPIAIJ's viewer
  PetscCall(to_mpiaij(A, &M));
  PetscCall((*M->ops->view)(M, viewer));
  PetscCall(MatDestroy(&M));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLoad_MPIELLMP(Mat A, PetscViewer viewer)
{
  MPIELLMP *d = data_of(A);
  Mat M;

  PetscFunctionBegin;
  PetscCall(ELLMPNewLoadMatrix(A, MATMPIAIJ, &M));
  if (A->rmap->n >= 0 || A->rmap->N >= 0) PetscCall(MatSetSizes(M, A->rmap->n, A->cmap->n, A->rmap->N, A->cmap->N));
  PetscCall(MatLoad(M, viewer));
  if (A->rmap->N < 0) PetscCall(MatSetSizes(A, M->rmap->n, M->cmap->n, M->rmap->N, M->cmap->N));
  PetscCall(MatSetBlockSizesFromMats(A, M, M)); // the file's or -matload_block_size
  PetscCall(PetscLayoutSetUp(A->rmap));
  PetscCall(PetscLayoutSetUp(A->cmap));
  PetscCall(MatDestroy(&d->assembly));
  PetscCall(MatDestroy(&d->local_rows));
  d->pending.clear();
  PetscCall(store_from_mpiaij(A, M, true));
  PetscCall(MatDestroy(&M));
  A->preallocated = PETSC_TRUE;
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

PetscErrorCode compose_functions(Mat A, bool on)
{
  PetscObject o = (PetscObject)A;

  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)A, "MatELLMPSetStorage_C", on ? Settings::setstorage : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatELLMPGetSettings_C", on ? MatELLMPGetSettings_MPIELLMP : nullptr));
  PetscCall(ELLMPComposeProducts(A, false, twin_of, on));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiellmp_mpiaij_C", on ? MatConvert_MPIELLMP_MPIAIJ : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiellmp_aij_C", on ? MatConvert_MPIELLMP_MPIAIJ : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaij_mpiellmp_C", on ? MatConvert_MPIAIJ_MPIELLMP : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaij_ellmp_C", on ? MatConvert_MPIAIJ_MPIELLMP : nullptr));
  PetscCall(
      PetscObjectComposeFunction(o, "MatMPIAIJSetPreallocation_C", on ? MatMPIAIJSetPreallocation_MPIELLMP : nullptr));
  PetscFunctionReturn(0);
}

PetscErrorCode MatDestroy_MPIELLMP(Mat A)
{
  MPIELLMP *d = data_of(A);

  PetscFunctionBegin;
  for (Mat *m : {&d->assembly, &d->local_rows, &d->diag, &d->off, &d->twin.aij})
    PetscCall(MatDestroy(m));
  PetscCall(VecDestroy(&d->lvec));
  PetscCall(VecScatterDestroy(&d->scatter));
  delete d;
  A->data = nullptr;
  PetscCall(compose_functions(A, false));
  PetscCall(PetscObjectChangeTypeName((PetscObject)A, nullptr));
  PetscFunctionReturn(0);
}

void set_operations(MatOps o)
{
  o->setvalues                   = MatSetValues_MPIELLMP;
  o->assemblybegin               = MatAssemblyBegin_MPIELLMP;
  o->assemblyend                 = MatAssemblyEnd_MPIELLMP;
  o->setup                       = MatSetUp_MPIELLMP;
  o->setoption                   = MatSetOption_MPIELLMP;
  o->mult                        = MatMult_MPIELLMP;
  o->multadd                     = MatMultAdd_MPIELLMP;
  o->multtranspose               = MatMultTranspose_MPIELLMP;
  o->multtransposeadd            = MatMultTransposeAdd_MPIELLMP;
  o->getrow                      = MatGetRow_MPIELLMP;
  o->restorerow                  = MatRestoreRow_MPIELLMP;
  o->getvalues                   = MatGetValues_MPIELLMP;
  o->getdiagonal                 = MatGetDiagonal_MPIELLMP;
  o->getdiagonalblock            = MatGetDiagonalBlock_MPIELLMP;
  o->getinfo                     = MatGetInfo_MPIELLMP;
  o->invertblockdiagonal         = MatInvertBlockDiagonal_MPIELLMP;
  o->invertvariableblockdiagonal = MatInvertVariableBlockDiagonal_MPIELLMP;
  o->zeroentries                 = MatZeroEntries_MPIELLMP;
  o->copy                        = MatCopy_MPIELLMP;
  o->duplicate                   = MatDuplicate_MPIELLMP;
  o->setfromoptions              = Settings::setfromoptions;
  o->view                        = MatView_MPIELLMP;
  o->load                        = MatLoad_MPIELLMP;
  o->destroy                     = MatDestroy_MPIELLMP;
  OpsThroughAIJ<to_mpiaij>::install(o);
  ValueChangesThroughAIJ<Change, to_mpiaij>::install(o);
  OpsThroughTwin<twin_of, store_twin_values>::install(o);
  o->sor                   = MatSOR_MPIELLMP; // the local sweeps on the stored blocks
  o->multdiagonalblock     = MatMultDiagonalBlock_MPIELLMP;
  o->productsetfromoptions = MatProductSetFromOptions_ELLMP;
}

} // namespace
} // namespace petscmp

using namespace petscmp;

/*MC
   MATMPIELLMP - MATMPIELLMP = MATMPIELLMP - the MPI `MATELLMP`: on each process a diagonal and an off-diagonal
   `MATSEQELLMP` block (as `MATMPIAIJ` lays out its rows), each row's format decided over the whole row

   Level: beginner

.seealso: `MATELLMP`, `MATSEQELLMP`, `MATMPIAIJ`
M*/
PetscErrorCode MatCreate_MPIELLMP(Mat A)
{
  PetscFunctionBegin;
  PetscCall(ELLMPCheckNotLinearSolverServer(A));
  A->data = new (std::nothrow) MPIELLMP();
  PetscCheck(A->data, PETSC_COMM_SELF, PETSC_ERR_MEM, "petscmp: out of memory");
  PetscCall(PetscMemzero(A->ops, sizeof(*A->ops)));
  set_operations(A->ops);
  PetscCall(compose_functions(A, true));
  PetscCall(PetscObjectChangeTypeName((PetscObject)A, MATMPIELLMP));
  PetscFunctionReturn(0);
}
