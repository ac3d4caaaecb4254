#!/usr/bin/env bash
# own_mpi_session.sh COMMAND...: runs COMMAND (an mpiexec line) with an Open MPI session directory of its own.
# Open MPI 4.1 keeps one session directory per user and host (/tmp/ompi.<host>.<uid>); two launches that start
# at the same moment can race to create or remove it, and one of them then fails in MPI_Init ("A call to mkdir
# was unable to create the desired directory ... File exists"; open-mpi/ompi#8510). The harness runs its tests
# side by side (make -j), so each launch gets a fresh directory, removed afterwards.
session=$(mktemp -d "${TMPDIR:-/tmp}/petscmp-mpi.XXXXXXXX") || exit 1
OMPI_MCA_orte_tmpdir_base=$session "$@"
status=$?
rm -rf "$session"
exit $status
