# Vigil. `make run` installs everything and starts the daemon; `make test` runs the whole suite.
SHELL := /bin/bash
PACK ?= edge_s
# The model mirror: ../shared/models beside the checkout here and in CI; a directory or URL elsewhere. Empty
# (no ../shared/models, or MODEL_MIRROR=): the pack's pinned upstream sources.
MODEL_MIRROR ?= $(or $(VIGIL_MODEL_MIRROR),$(if $(wildcard ../shared/models),$(abspath ../shared/models)))

.PHONY: run deps build models test doctest check lint typecheck bench clean package package-test package-arm64-smoke

# `make run HOST=0.0.0.0` listens on the LAN (default: config/dev.toml's 127.0.0.1); PORT=… changes the port.
run: deps build models
	HOST="$(HOST)" PORT="$(PORT)" ./scripts/run-dev.sh

deps: node_modules

# System packages first: npm ci compiles gstreamer-superficial against the GStreamer headers. A real target,
# not .PHONY: npm ci runs again only when package-lock.json is newer than node_modules (it replaces the
# native addons under a daemon that `make run` started from the same checkout).
node_modules: package-lock.json
	./scripts/install-system-deps.sh
	npm ci --no-audit --no-fund
	@touch node_modules

build: node_modules
	npm run build

models: build
	@if [ -z "$(MODEL_MIRROR)" ]; then echo "make models: no ../shared/models beside the checkout and no MODEL_MIRROR: installing $(PACK) from its upstream sources"; fi
	node dist/cli/main.js models install $(PACK) --accept-license $(if $(MODEL_MIRROR),--from $(MODEL_MIRROR)) --config config/dev.toml

typecheck: node_modules
	npm run typecheck

lint: node_modules
	npm run lint

# The suite runs with a TMPDIR of its own (mode 1777 like /tmp: as root the PostgreSQL helper runs initdb
# as nobody) that must be empty afterwards: tests and helpers remove every temp dir they make
# (test/helpers/tempDir.ts). tsx's compile cache (tsx-<uid>) is the one thing that may stay.
test: node_modules typecheck lint
	VIGIL_TEST_DEPS=1 ./scripts/install-system-deps.sh
	@tmp=$$(mktemp -d) && chmod 1777 "$$tmp" || exit 1; \
	TMPDIR="$$tmp" npm test; rc=$$?; \
	left=$$(find "$$tmp" -mindepth 1 -maxdepth 1 ! -name 'tsx-*' -printf '%f\n' | sort); \
	rm -rf "$$tmp"; \
	if [ -n "$$left" ]; then echo "make test: the tests left these in their TMPDIR:" >&2; echo "$$left" >&2; [ $$rc -ne 0 ] || rc=1; fi; \
	exit $$rc

# The doc-tests alone (they are part of `make test`): every sh block of README.md and docs/ against a real
# daemon with the fixtures (test/docs/doctest.test.ts, docs/development/tests.md).
doctest: node_modules
	VIGIL_TEST_DEPS=1 ./scripts/install-system-deps.sh
	npx ava test/docs/doctest.test.ts

bench: build
	VIGIL_BENCH_DEPS=1 scripts/install-system-deps.sh
	npx tsx bench/inference.ts
	npx tsx bench/quality.ts
	node --expose-gc --import tsx bench/search.ts
	npx tsx bench/liveness.ts
	npx tsx bench/scrape.ts
	npx tsx bench/places.ts
	node --expose-gc --import tsx bench/monitor-memory.ts
	npx tsx bench/kiosk.ts

# Debian packages (docs/install/debian.md): dist-pkg/vigil_<version>_<arch>.deb from HEAD, ARCH=amd64 or
# arm64 (built in an arm64 Debian root under qemu-user-static: slow, see docs/install/arm64.md). As root.
ARCH ?= amd64
package:
	VIGIL_PACKAGE_DEPS=1 ./scripts/install-system-deps.sh
	packaging/build-package.sh $(ARCH)

# CI: the amd64 package into a fresh Debian 12 root, the README's quickstart against it, remove and purge.
package-test: node_modules
	VIGIL_PACKAGE_DEPS=1 ./scripts/install-system-deps.sh
	packaging/install-test.sh

# By hand after `make package ARCH=arm64` and `make package-test`: the arm64 package under emulation,
# its answers compared with amd64's.
package-arm64-smoke: node_modules
	VIGIL_PACKAGE_DEPS=1 ./scripts/install-system-deps.sh
	packaging/arm64-smoke.sh

clean:
	rm -rf dist var .tmp .pkg-build dist-pkg
