# Tandem: the two commands that matter are `make demo` and `make test` (see README.md).
SHELL := /bin/bash
SWIFT ?= swift
APT_PACKAGES := libjack-jackd2-dev jackd2 dpkg-dev man-db libsndfile1-dev libsoxr-dev liblo-dev liblo-tools jack-capture sndfile-tools sox libsox-fmt-all \
                jack-tools tmux pkg-config liblilv-dev lv2-dev swh-lv2 x42-plugins jalv mda-lv2 lv2-examples gcc \
                iproute2 util-linux pipewire pipewire-bin pipewire-jack prometheus blop-lv2 fomp ffmpeg \
                ladspa-sdk dssi-dev libasound2-dev swh-plugins cmt caps tap-plugins hexter whysynth xsynth-dssi \
                invada-studio-plugins-ladspa invada-studio-plugins-lv2 lsp-plugins-ladspa lsp-plugins-lv2
# What only `make bench` compares against (installed by `bench`, not by `deps`).
BENCH_PACKAGES := ecasound
# What only `make web-test` drives the page with (installed by `web-test`, not by `deps`).
WEB_TEST_PACKAGES := chromium chromium-driver
TEST_FLAGS ?=

.PHONY: deps build release demo test test-tsan fuzz bench soak clean man completions install install-files uninstall deb deb-check \
        plugin-sweep plugin-sweep-ci web-test

# Installs what is missing with apt (idempotent). As non-root it prints the exact command instead.
deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all installed"; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "deps: installing $$missing"; \
	  (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: missing packages; run:"; echo "  sudo apt-get update && sudo apt-get install -y $$missing"; exit 1; fi
	@# mido: the independent MIDI file implementation the MIDIFile tests compare against.
	@# Into the python3 the tests run (python3 -m pip), else Debian's python3-mido.
	@python3 -c 'import mido' 2>/dev/null || python3 -m pip install -q mido 2>/dev/null \
	  || python3 -m pip install -q --break-system-packages mido 2>/dev/null \
	  || { [ "$$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-mido && python3 -c 'import mido'; } \
	  || { echo "deps: install the Python package mido (python3 -m pip install mido)"; exit 1; }

build: deps
	$(SWIFT) build

# The Swift runtime and Foundation linked in: one self-contained binary (copy it to a machine without Swift) that
# starts in about 4 ms of CPU instead of 10 (no dynamic symbol lookup in the Swift libraries).
release: deps
	$(SWIFT) build -c release --static-swift-stdlib

demo: build
	$(SWIFT) run tandem demo

# Every test: docs/ARCHITECTURE.md's names against the code, unit tests, tests against private JACK servers, the real
# peers and the RT-safety interposer.
# JACK allows one server per process, so tests run one at a time. The run's output is kept in TEST_LOG too; at the end
# come the ten slowest tests (scripts/slowest-tests.py) and the wall time from make's start, the build included. The
# target fails when a test fails.
TEST_LOG ?= /tmp/tandem-make-test.log
test: TEST_STARTED := $(shell date +%s)
test: deps
	scripts/check-architecture.py
	@scripts/clean-jack-shm.sh
	$(SWIFT) build --build-tests
	@echo "$(SWIFT) test --skip-build --no-parallel $(TEST_FLAGS) 2>&1 | tee $(TEST_LOG)"; \
	set -o pipefail; built=$$(date +%s); \
	$(SWIFT) test --skip-build --no-parallel $(TEST_FLAGS) 2>&1 | tee $(TEST_LOG); status=$$?; \
	done=$$(date +%s); scripts/slowest-tests.py --top 10 $(TEST_LOG); \
	echo "make test: $$((done - $(TEST_STARTED))) s of wall time (the test run $$((done - built)) s); exit status $$status"; \
	exit $$status

# The adversarial checks at any size (they run CI-sized in `make test`): the OSC fuzzer at a recording session and
# the preset fuzzer fed to both `preset check` and `run`. SEED is one seed or a comma-separated list (COUNT packets
# in total, split over the seeds); e.g. `make fuzz SEED=1,2,3,4,5 COUNT=20000 PRESET_COUNT=300`. Summaries:
# /tmp/tandem-osc-fuzz.txt and /tmp/tandem-preset-run-fuzz.txt.
SEED ?= 1568802
COUNT ?= 20000
PRESET_SEED ?= 1547870
PRESET_COUNT ?= 200
fuzz: deps
	@scripts/clean-jack-shm.sh
	$(SWIFT) build --build-tests
	TANDEM_FUZZ_SEEDS=$(SEED) TANDEM_FUZZ_COUNT=$(COUNT) TANDEM_PRESET_FUZZ_SEED=$(PRESET_SEED) \
	  TANDEM_PRESET_FUZZ_COUNT=$(PRESET_COUNT) \
	  $(SWIFT) test --skip-build --no-parallel --filter 'OSCFuzzTests|PresetRunFuzzTests' $(TEST_FLAGS)

# The HTTP API against its OpenAPI document (schemathesis: 0 server errors, 0 schema violations) and the page in a
# real browser (chromium through selenium), each against a session of its own (about 3 + 4 minutes on 2 cores).
web-test: build
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(WEB_TEST_PACKAGES)"
	@python3 -c 'import selenium, schemathesis' 2>/dev/null || python3 -m pip install -q selenium schemathesis \
	  || python3 -m pip install -q --break-system-packages selenium schemathesis
	@scripts/clean-jack-shm.sh
	scripts/api-check.py
	@scripts/clean-jack-shm.sh
	scripts/page-test.py --no-firefox

# The lock-free ring under ThreadSanitizer: scripts/tsan is a package of the Realtime module and its tests alone, so
# only they are built sanitized (its own .build folder).
test-tsan: deps
	cd scripts/tsan && $(SWIFT) test --sanitize=thread

# Tandem side by side with jack_capture and sndfile-jackplay, then 128 and 256 channels beside the floor client and a
# round with no recorder (the machine's own xruns); writes docs/PERFORMANCE.md (about 35 + 27 minutes on 2 cores).
# Then the rack against jalv and ecasound (its own section of that file, between <!-- rack:begin/end -->; with the
# bare-client floor, 3 rounds per tool, about 25 minutes), then
# the MIDI synth against jalv.
bench: release
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BENCH_PACKAGES)"
	@scripts/clean-jack-shm.sh
	scripts/bench.py
	@scripts/clean-jack-shm.sh
	scripts/bench_rack.py
	@scripts/clean-jack-shm.sh
	scripts/bench_midi.py

# Every LV2 plugin this machine can install, through a rack (docs/RELIABILITY.md, "The plugin catalog"): installs the
# plugin packages, writes .build/plugin-sweep.md (a line per plugin) and its summary into docs/RELIABILITY.md (about
# 17 minutes on 2 cores). `plugin-sweep-ci` is the 35-plugin subset CI runs (about 2 minutes).
plugin-sweep: build
	@scripts/clean-jack-shm.sh
	scripts/plugin-sweep.py --install --jobs 2 --out .build/plugin-sweep.md --json .build/plugin-sweep.json \
	  --doc docs/RELIABILITY.md

plugin-sweep-ci: build
	@scripts/clean-jack-shm.sh
	scripts/plugin-sweep.py --install --list scripts/plugin-sweep-ci.txt --out .build/plugin-sweep-ci.md

# 16 channels recorded and 16 played for 10 minutes: memory, file handles, drops (writes docs/RELIABILITY.md). Then the
# soak-like tests that `make test` runs short, at full size (TANDEM_SOAK=1, read through TestSupport's SoakSize): 30 s of
# 64 channels played, 30 s of a dense MIDI stream, and the kill and signal loops at their full count.
SOAK_TESTS := PlayerTests/sixtyFourChannelsPlayWithoutUnderruns|RecorderMIDITests/denseStreamLosesNothing|\
              RecordCommandTests/killNineLeavesAReadableFileAndTheNextStartCompletesItsReport|\
              RecordCommandTests/signalsAtRandomMomentsLoseNothing|\
              MIDIRecordCommandTests/killNineLeavesAReadableMIDIFileAndTheNextStartCompletesIt
soak: release
	@scripts/clean-jack-shm.sh
	scripts/soak.py
	$(SWIFT) build --build-tests
	@scripts/clean-jack-shm.sh
	TANDEM_SOAK=1 $(SWIFT) test --skip-build --no-parallel --filter '$(subst $() ,,$(SOAK_TESTS))' $(TEST_FLAGS)

clean:
	rm -rf .build .build-tsan

# ---- Install and package (docs/DEPLOYMENT.md) ----
# `make install PREFIX=/usr/local DESTDIR=` installs the self-contained release binary, the man page and shell
# completions generated from the argument parser, the systemd unit template, the presets and the docs.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(PREFIX)/bin
DATADIR := $(PREFIX)/share
MAN1DIR := $(DATADIR)/man/man1
UNITDIR ?= $(PREFIX)/lib/systemd/system
# Debian's zsh reads vendor-completions under /usr and site-functions under /usr/local.
ZSHDIR ?= $(if $(filter /usr,$(PREFIX)),$(DATADIR)/zsh/vendor-completions,$(DATADIR)/zsh/site-functions)
GENERATED := .build/generated
RELEASE_BIN := .build/release/tandem
# The installed binary is stripped (80 MB -> 61 MB; names in crash backtraces go). `make install STRIP=true` keeps them.
STRIP ?= strip

# The man page comes from swift-argument-parser's generate-manual plugin (it works offline: the tool is part of the
# argument-parser package). The plugin builds the package first; it is told to use the debug build, because its
# default release build would relink .build/release/tandem without --static-swift-stdlib. Its generic EXIT STATUS is
# replaced by packaging/tandem.1.tail (exit codes, environment, files).
man: deps $(GENERATED)/tandem.1
$(GENERATED)/tandem.1: $(shell find Sources -name '*.swift') packaging/tandem.1.tail
	@mkdir -p $(GENERATED)
	$(SWIFT) package generate-manual --configuration debug --authors "the Tandem authors"
	sed '/^\.Sh "EXIT STATUS"/,$$d' .build/plugins/GenerateManual/outputs/tandem/tandem.1 > $@.tmp
	cat packaging/tandem.1.tail >> $@.tmp
	mv $@.tmp $@

completions: release
	@mkdir -p $(GENERATED)
	$(RELEASE_BIN) --generate-completion-script bash > $(GENERATED)/tandem.bash
	$(RELEASE_BIN) --generate-completion-script zsh > $(GENERATED)/_tandem
	$(RELEASE_BIN) --generate-completion-script fish > $(GENERATED)/tandem.fish

install: man release completions
	$(MAKE) --no-print-directory install-files

# Copies what `install` built; no build step (run as root after building as yourself).
install-files:
	install -Dm755 $(RELEASE_BIN) $(DESTDIR)$(BINDIR)/tandem
	$(STRIP) $(DESTDIR)$(BINDIR)/tandem
	install -d $(DESTDIR)$(MAN1DIR)
	gzip -9n < $(GENERATED)/tandem.1 > $(DESTDIR)$(MAN1DIR)/tandem.1.gz
	install -Dm644 $(GENERATED)/tandem.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/tandem
	install -Dm644 $(GENERATED)/_tandem $(DESTDIR)$(ZSHDIR)/_tandem
	install -Dm644 $(GENERATED)/tandem.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/tandem.fish
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|/usr/local|$(PREFIX)|g' packaging/tandem@.service > $(DESTDIR)$(UNITDIR)/tandem@.service
	chmod 644 $(DESTDIR)$(UNITDIR)/tandem@.service
	install -d $(DESTDIR)$(DATADIR)/tandem/presets/media
	install -m644 Presets/*.toml $(DESTDIR)$(DATADIR)/tandem/presets/
	install -m644 Presets/media/* $(DESTDIR)$(DATADIR)/tandem/presets/media/
	install -d $(DESTDIR)$(DATADIR)/doc/tandem
	install -m644 README.md docs/*.md $(DESTDIR)$(DATADIR)/doc/tandem/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/tandem $(DESTDIR)$(MAN1DIR)/tandem.1.gz \
	  $(DESTDIR)$(DATADIR)/bash-completion/completions/tandem $(DESTDIR)$(ZSHDIR)/_tandem \
	  $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/tandem.fish $(DESTDIR)$(UNITDIR)/tandem@.service
	rm -rf $(DESTDIR)$(DATADIR)/tandem $(DESTDIR)$(DATADIR)/doc/tandem

# A Debian package of the same files under /usr, built with dpkg-deb; its Depends come from dpkg-shlibdeps on the
# binary (the library packages it links). Writes .build/tandem_VERSION_ARCH.deb.
deb: man release completions
	rm -rf .build/deb
	$(MAKE) --no-print-directory install-files PREFIX=/usr DESTDIR=$(CURDIR)/.build/deb/root
	scripts/build-deb.sh .build/deb/root .build

# What CI does with the package (as root): install it with dpkg, check the unit with systemd-analyze where it exists,
# run the installed `tandem demo` (exit 0 only when its take verifies) and render `man tandem`, then purge it.
deb-check: deb
	@deb=$$(ls -t .build/tandem_*.deb | head -1); set -e; \
	dpkg -i "$$deb"; \
	if command -v systemd-analyze >/dev/null; then systemd-analyze verify /usr/lib/systemd/system/tandem@.service; fi; \
	demo=$$(mktemp -d); (cd "$$demo" && /usr/bin/tandem demo --seconds 4); \
	MANPAGER=cat man tandem > "$$demo/man.txt"; grep -q "tandem run podcast" "$$demo/man.txt"; \
	echo "deb-check: man tandem rendered $$(wc -l < "$$demo/man.txt") lines"; \
	dpkg --purge tandem >/dev/null; rm -rf "$$demo"; \
	echo "deb-check: $$deb installed, its tandem demo verified its take, man page rendered; purged again"
