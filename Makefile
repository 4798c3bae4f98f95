# The two commands of the README:
#   make run    build, then `hopattn bench` (the default grid) on the GPU
#   make test   build everything, then the whole test suite (gpu tests skip without an sm_90 GPU)
# Both bootstrap what they need (scripts/bootstrap.sh: CUTLASS and cudnn-frontend headers into
# .deps/, missing Debian packages).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: run test build configure bootstrap clean

bootstrap:
	scripts/bootstrap.sh

configure: bootstrap
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

run: build
	$(BUILD)/bin/hopattn bench

clean:
	rm -rf $(BUILD)
