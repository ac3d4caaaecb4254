# petscmp: the user's entry point.
#   make            configure and build (installs missing Debian packages first)
#   make demo       build, then run a plain PETSc KSP solve with and without -mat_type aijmp
#   make check      build with tests (and once without OpenMP, with the GPU backends) and run the whole suite
#   make check-gpu  on a machine with a GPU: the device tests of the GPU build (bitwise against the CPU reference)
#   make bench-gpu  on a machine with a GPU: device SpMV against cuSPARSE and a device copy
#   make check-petsc  PETSc's own test harness on its KSP and SNES tutorials, with and without aijmp (about an hour)
#   make bench      benchmarks: MatMult (AIJ, SELL, aijmp), block-Jacobi (apbjacobi, VPBJACOBI, PBJACOBI), CG solves
#   make install PREFIX=/opt/petscmp
BUILD      ?= build
PREFIX     ?= /usr/local
CMAKE_ARGS ?=
NP         ?= 2
MPIEXEC    ?= mpiexec --oversubscribe
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

.PHONY: all deps configure build demo check check-noomp check-avx2 check-gpu-build check-gpu bench-gpu check-int64 check-petsc bench install clean

all: build

deps:
	@bash config/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j$$(nproc)

demo: build
	@bash tutorials/demo.sh $(BUILD) "$(MPIEXEC)"

check: build check-noomp check-avx2
	@cd $(BUILD) && ctest --output-on-failure -j2 --timeout 600

# The GPU backends a configuration builds: where nvcc (the CUDA toolkit) and
# hipcc (Debian's, installed by check-noomp and check-gpu-build) are.
GPU_BACKENDS = cuda=OFF; hip=OFF; \
  if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || [ -n "$$CUDACXX" ]; then cuda=ON; fi; \
  if command -v hipcc >/dev/null; then hip=ON; fi
INSTALL_HIPCC = bash config/install-deps.sh hip || echo "$@: hipcc could not be installed: the HIP backend is not built"
# The extra configurations run the core and kernel test programs whole
# (tests/run_gtest_programs.sh: a minute less than one process per test), and
# through ctest the tests that are more than a gtest case: the GPU backends'
# (reported as skipped where there is no GPU), the contraction gates, the
# OpenMP thread limit.
GTEST_PROGRAMS = tests/core/petscmp_test_core tests/kernels/petscmp_test_kernels
CTEST_EXTRA = ^kernels\.(cuda|hip)\.|^kernels\.OpenmpThreadLimit$$

# The kernels must also build and pass without OpenMP, and without -march=native:
# this build runs the portable (non-AVX-512) kernel paths against the reference,
# the valgrind tests (valgrind cannot decode AVX-512), and the GPU backends where
# their compilers are, with warnings as errors: their contraction gates, and
# their device tests, which report "skipped" where the machine has no GPU (they
# run on the CPU through the emulated backend in the main build).
check-noomp: deps
	@$(INSTALL_HIPCC)
	@$(GPU_BACKENDS); echo "check-noomp: CUDA backend $$cuda, HIP backend $$hip"; \
	  cmake -S . -B $(BUILD)-noomp -DCMAKE_BUILD_TYPE=Release -DPETSCMP_ENABLE_OPENMP=OFF -DPETSCMP_NATIVE=OFF \
	    -DPETSCMP_ENABLE_CUDA=$$cuda -DPETSCMP_ENABLE_HIP=$$hip $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD)-noomp -j$$(nproc) --target petscmp_checks
	@bash tests/run_gtest_programs.sh $(GTEST_PROGRAMS:%=$(BUILD)-noomp/%)
	@cd $(BUILD)-noomp && ctest --output-on-failure -j2 -R '$(CTEST_EXTRA)|^petsc_valgrind'

# Machines without AVX-512 run the kernels' and the builder's AVX2 paths. On an
# AVX-512 machine they are built for x86-64-v3 (AVX2, FMA, F16C) and tested
# against the reference here; where the CPU has no AVX-512, the native build
# above already runs them. (The PETSc glue holds no AVX2 path: the builds
# above compile it.)
check-avx2: deps
	@if ! grep -qw avx2 /proc/cpuinfo || ! grep -qw f16c /proc/cpuinfo; then \
	  echo "check-avx2: this CPU has no AVX2 and F16C: the AVX2 paths cannot run here"; \
	elif ! grep -qw avx512f /proc/cpuinfo; then \
	  echo "check-avx2: no AVX-512 on this CPU: the native build's tests run the AVX2 paths"; \
	else \
	  cmake -S . -B $(BUILD)-avx2 -DCMAKE_BUILD_TYPE=Release -DPETSCMP_ARCH=x86-64-v3 $(CMAKE_ARGS) >/dev/null && \
	  cmake --build $(BUILD)-avx2 -j$$(nproc) --target petscmp_checks && \
	  bash tests/run_gtest_programs.sh $(GTEST_PROGRAMS:%=$(BUILD)-avx2/%) && \
	  cd $(BUILD)-avx2 && ctest --output-on-failure -j2 -R '$(CTEST_EXTRA)'; \
	fi

# The GPU backends alone, without PETSc (make check builds and tests them in
# check-noomp): the build to carry to a machine with a GPU for check-gpu.
GPU_BUILD ?= $(BUILD)-gpu
check-gpu-build: deps
	@$(INSTALL_HIPCC)
	@$(GPU_BACKENDS); \
	  if [ $$cuda = OFF ] && [ $$hip = OFF ]; then echo "check-gpu-build: no nvcc and no hipcc: no GPU backend to build"; exit 0; fi; \
	  echo "check-gpu-build: CUDA backend $$cuda, HIP backend $$hip"; \
	  cmake -S . -B $(GPU_BUILD) -DCMAKE_BUILD_TYPE=Release -DPETSCMP_WITH_PETSC=OFF -DPETSCMP_ENABLE_OPENMP=OFF \
	    -DPETSCMP_ENABLE_CUDA=$$cuda -DPETSCMP_ENABLE_HIP=$$hip $(CMAKE_ARGS) >/dev/null && \
	  cmake --build $(GPU_BUILD) -j$$(nproc) --target petscmp_gpu_checks && \
	  cd $(GPU_BUILD) && ctest --output-on-failure -j2 -R '^kernels\.(cuda|hip)\.'

# On a machine with a GPU (carry $(GPU_BUILD) there when it has no compilers
# or GoogleTest): every device test must run and pass, none may skip.
check-gpu:
	@bash tests/gpu/check_gpu.sh $(GPU_BUILD)

bench-gpu:
	@bash bench/run_gpu.sh $(GPU_BUILD)

# 64-bit PetscInt: Debian's libpetsc64-real3.18-dev; builds and compares ex1 with AIJ.
PETSC64_DIR ?= /usr/lib/petscdir/petsc64-3.18/x86_64-linux-gnu-real
check-int64: deps
	@dpkg-query -W libpetsc64-real3.18-dev >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libpetsc64-real3.18-dev >/dev/null)
	@PETSC_DIR=$(PETSC64_DIR) cmake -S . -B $(BUILD)-int64 -DCMAKE_BUILD_TYPE=Release -DPETSCMP_BUILD_TESTS=OFF >/dev/null
	@cmake --build $(BUILD)-int64 -j$$(nproc) --target petscmp ex1
	@a=$$($(BUILD)-int64/tutorials/ex1 -n 20 | awk '{print $$3,$$4,$$5,$$6}'); b=$$($(BUILD)-int64/tutorials/ex1 -n 20 -dll_append $(abspath $(BUILD)-int64)/src/libpetscmp.so -dm_mat_type aijmp | awk '{print $$3,$$4,$$5,$$6}'); \
	  echo "int64 AIJ: $$a"; echo "int64 aijmp: $$b"; test "$$a" = "$$b"

# PETSc's test harness (gmakefile.test of libpetsc3.18-dev-examples) on every KSP and SNES tutorial:
# without the plugin, lossless aijmp (identical figures), fp32 aijmp (no crash, no error).
# A representative subset runs in make check (ctest petsc_harness_quick).
check-petsc: build
	@bash tests/petsc-harness/check_petsc.sh $(BUILD) full

bench: build
	@bash bench/run.sh $(BUILD) "$(MPIEXEC)"

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	@rm -rf $(BUILD) $(BUILD)-noomp $(BUILD)-avx2 $(BUILD)-gpu
