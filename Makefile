# Vigil. `make run` installs everything and starts the daemon; `make test` runs the whole suite.
SHELL := /bin/bash
PACK ?= edge_s
# The model mirror: ../shared/models beside the checkout here and in CI; a directory or URL elsewhere.
MODEL_MIRROR ?= $(or $(VIGIL_MODEL_MIRROR),$(abspath ../shared/models))

.PHONY: run deps node_modules build models test check lint typecheck bench clean

# `make run HOST=0.0.0.0` listens on the LAN (default: config/dev.toml's 127.0.0.1); PORT=… changes the port.
run: deps build models
	HOST="$(HOST)" PORT="$(PORT)" ./scripts/run-dev.sh

deps: node_modules

# System packages first: npm ci compiles gstreamer-superficial against the GStreamer headers.
node_modules: package-lock.json
	./scripts/install-system-deps.sh
	npm ci --no-audit --no-fund
	@touch node_modules

build: node_modules
	npm run build

models: build
	node dist/cli/main.js models install $(PACK) --accept-license --from $(MODEL_MIRROR) --config config/dev.toml

typecheck: node_modules
	npm run typecheck

lint: node_modules
	npm run lint

test: node_modules typecheck lint
	VIGIL_TEST_DEPS=1 ./scripts/install-system-deps.sh
	npm test

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

clean:
	rm -rf dist var .tmp
