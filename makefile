# petscmp: the user's entry point.
#   make            configure and build (installs missing Debian packages first)
#   make demo       build, then run a plain PETSc KSP solve with and without -mat_type aijmp
#   make check      build with tests (and once without OpenMP) and run the whole suite
#   make bench      memory-bound MatMult benchmark (AIJ, SELL, every aijmp mode)
#   make install PREFIX=/opt/petscmp
BUILD      ?= build
PREFIX     ?= /usr/local
CMAKE_ARGS ?=
NP         ?= 2
MPIEXEC    ?= mpiexec --oversubscribe
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

.PHONY: all deps configure build demo check check-noomp bench install clean

all: build

deps:
	@bash config/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j$$(nproc)

demo: build
	@bash tutorials/demo.sh $(BUILD) "$(MPIEXEC)"

check: build check-noomp
	@cd $(BUILD) && ctest --output-on-failure -j2 --timeout 600

# The kernels must also build and pass without OpenMP.
check-noomp: deps
	@cmake -S . -B $(BUILD)-noomp -DCMAKE_BUILD_TYPE=Release -DPETSCMP_ENABLE_OPENMP=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD)-noomp -j$$(nproc) --target petscmp petscmp_test_core petscmp_test_kernels
	@cd $(BUILD)-noomp && ctest --output-on-failure -j2 -R '^core|^kernels'

bench: build
	@bash bench/run.sh $(BUILD) "$(MPIEXEC)"

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	@rm -rf $(BUILD) $(BUILD)-noomp
