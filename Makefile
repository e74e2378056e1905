# bagd — top-level entry points. Every target works on a fresh Debian 12 machine as root.
#   make deps      install the Debian packages that are missing (idempotent)
#   make build     configure + build (RelWithDebInfo) into build/
#   make test      deps + build + every test under ctest
#   make test-asan the same with ASan + UBSan, in build-asan/
#   make bench     Google Benchmark programs in bench/ (not pass/fail)
#   make bench-deps what the side-by-side benchmarks need besides (BIRD 2)
#   make fuzz      libFuzzer targets with clang; FUZZ_SECONDS per target (default 60)
#   make demo      bagd with FRR and GoBGP peers in network namespaces (root)
#   make demo-sonic the same peers, bagd writing SONiC APPL_DB in a private redis-server (root);
#                  ZMQ=1: over SONiC's ZMQ route path (docs/sonic.md)
#   make fabric    a BAG domain of 16 bagd routers in namespaces: proportionality and ripple experiments (root, < 10 min)

JOBS        ?= 2
BUILD       ?= build
ASAN_BUILD  ?= build-asan
BENCH_BUILD ?= build-bench
FUZZ_BUILD  ?= build-fuzz
DEB_BUILD   ?= build-deb
FUZZ_SECONDS ?= 60
CMAKE_GEN   := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

# Build and test dependencies, all from Debian 12.
DEPS := cmake g++ make ninja-build ccache pkg-config \
        libboost-dev libabsl-dev libprotobuf-dev protobuf-compiler prometheus-cpp-dev \
        catch2 libbenchmark-dev nlohmann-json3-dev clang libclang-rt-14-dev \
        libgrpc++-dev protobuf-compiler-grpc libboost-dev libre2-dev \
        iproute2 python3 frr gobgpd libhiredis-dev libzmq3-dev redis-server \
        go-md2man dpkg-dev mmdebstrap lintian systemd-container python3-matplotlib \
        bgpdump pmacct tshark

# What only the side-by-side benchmarks need (bench/ingest_compare.py runs BIRD next to bagd);
# not installed by `make test`: Debian starts bird.service when it installs bird2.
BENCH_DEPS := bird2

.PHONY: all deps bench-deps build test test-asan bench fuzz demo demo-sonic fabric deb clean

all: build

deps:
	@missing=""; for p in $(DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "run as root (or install:$$missing)"; exit 1; fi; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else echo "deps: all present"; fi

bench-deps: deps
	@$(MAKE) --no-print-directory deps DEPS="$(BENCH_DEPS)"

# /usr: the install rules and the Debian package use system paths (/usr/sbin, /etc/bagd).
$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: deps
	$(MAKE) build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DBAGD_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

bench: deps
	cmake -S . -B $(BENCH_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DBAGD_BENCH=ON -DBUILD_TESTING=OFF
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target wire_decode_bench update_blaster wcmp_quality fib_bench group_budget_bench appldb_bench
	$(BENCH_BUILD)/bench/wire_decode_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
	$(BENCH_BUILD)/bench/wcmp_quality
	$(BENCH_BUILD)/bench/group_budget_bench
	$(BENCH_BUILD)/bench/fib_bench --runs 3
	$(BENCH_BUILD)/bench/appldb_bench --runs 3
	@echo "ingest comparison (root, ~35 min for 3 runs; make bench-deps installs BIRD): python3 bench/ingest_compare.py --runs 3; see docs/benchmarks.md"

fuzz: deps
	CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBAGD_FUZZ=ON -DBUILD_TESTING=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	tests/fuzz/run_fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

demo: deps
	$(MAKE) build
	python3 tools/demo/demo.py

# Debian's python3 (its python3-matplotlib draws the pictures); tables and pictures in $(BUILD)/fabric.
FABRIC_PYTHON ?= /usr/bin/python3
fabric: deps
	$(MAKE) build
	$(FABRIC_PYTHON) tools/fabric/fabric.py all --build $(BUILD) --out $(BUILD)/fabric
	$(FABRIC_PYTHON) tools/fabric/fabric.py comeup --topology tools/fabric/comeup.toml --restart p1r1 --restart p1r2 \
	  --build $(BUILD) --out $(BUILD)/fabric

# The Debian package (CPack DEB, from the install rules; docs/operations.md), Release, stripped.
deb: deps
	cmake -S . -B $(DEB_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF
	cmake --build $(DEB_BUILD) -j $(JOBS)
	cd $(DEB_BUILD) && cpack -G DEB
	@ls -l $(DEB_BUILD)/bagd_*.deb

demo-sonic: deps
	$(MAKE) build
	python3 tools/demo/demo_sonic.py $(if $(ZMQ),--zmq)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(BENCH_BUILD) $(FUZZ_BUILD) $(DEB_BUILD)
