#!/usr/bin/env bash
# Installs what petscmp needs on Debian 12 when it is missing: PETSc 3.18 with
# OpenMPI (petsc-dev) and its tutorials with their test harness
# (libpetsc3.18-dev-examples), CMake, pkg-config, GoogleTest. Idempotent and quiet when
# everything is present; uses sudo only when not root.
#   install-deps.sh       what the PETSc plugin and its tests need
#   install-deps.sh hip   also Debian's hipcc (ROCm 5.2), for the HIP backend
# (The CUDA backend uses nvcc from the CUDA toolkit of the machine, not a Debian package.)
set -euo pipefail
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in petsc-dev libpetsc3.18-dev-examples cmake pkg-config googletest libgtest-dev make g++ openmpi-bin; do
  have_pkg "$p" || need+=("$p")
done
if [ "${1:-}" = hip ]; then
  have_pkg hipcc || need+=(hipcc)
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "petscmp: installing missing Debian packages: ${need[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
