# Tandem: the two commands that matter are `make demo` and `make test` (see README.md).
SHELL := /bin/bash
SWIFT ?= swift
APT_PACKAGES := libjack-jackd2-dev jackd2 libsndfile1-dev libsoxr-dev liblo-dev liblo-tools jack-capture sndfile-tools sox libsox-fmt-all \
                jack-tools tmux pkg-config liblilv-dev lv2-dev swh-lv2 x42-plugins \
                iproute2 util-linux pipewire pipewire-bin pipewire-jack
TEST_FLAGS ?=

.PHONY: deps build release demo test test-tsan bench soak clean

# Installs what is missing with apt (idempotent). As non-root it prints the exact command instead.
deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all installed"; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "deps: installing $$missing"; \
	  (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: missing packages; run:"; echo "  sudo apt-get update && sudo apt-get install -y $$missing"; exit 1; fi

build: deps
	$(SWIFT) build

# The Swift runtime and Foundation linked in: one self-contained binary (copy it to a machine without Swift) that
# starts in about 4 ms of CPU instead of 10 (no dynamic symbol lookup in the Swift libraries).
release: deps
	$(SWIFT) build -c release --static-swift-stdlib

demo: build
	$(SWIFT) run tandem demo

# Every test: unit tests, tests against private JACK servers, the real peers and the RT-safety interposer.
# JACK allows one server per process, so tests run one at a time.
test: deps
	@scripts/clean-jack-shm.sh
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --no-parallel $(TEST_FLAGS)

# The lock-free ring under ThreadSanitizer (its own build folder).
test-tsan: deps
	$(SWIFT) test --scratch-path .build-tsan --sanitize=thread --filter RealtimeTests

# Tandem side by side with jack_capture and sndfile-jackplay; writes docs/PERFORMANCE.md (about 10 minutes).
bench: release
	@scripts/clean-jack-shm.sh
	scripts/bench.py

# 16 channels recorded and 16 played for 10 minutes: memory, file handles, drops (writes docs/RELIABILITY.md).
soak: release
	@scripts/clean-jack-shm.sh
	scripts/soak.py

clean:
	rm -rf .build .build-tsan
