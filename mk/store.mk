# State stores (memory, SQLite, Redis): the store tests start a real
# redis-server on a free port of 127.0.0.1, so it is installed from Debian's
# packages when missing; `bench-store` measures decisions per second.
BENCH_TARGETS += bench-store

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
BENCH_VENV := $(ROOT)/.venv-bench

redis-server: ## install redis-server (Debian package) when it is missing
	@command -v redis-server >/dev/null || ($(SUDO) apt-get update && $(SUDO) apt-get install -y redis-server)

# The conformance, fault and multi-process tests run under test-rust.
test-rust: redis-server

$(BENCH_VENV)/bin/python:
	python3 -m venv $(BENCH_VENV)

bench-store: redis-server $(BENCH_VENV)/bin/python ## decisions per second: memory, SQLite, Redis (1 and 4 processes, round trips) beside Python `limits` on Redis
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'limits[redis]' redis
	# With the workspace-hack selected, dependencies resolve with the features every other
	# release build uses, so this reuses their build instead of compiling them again.
	cargo build --release -p harnessweaver-runtime -p harnessweaver-workspace-hack --bin harnessweaver
	$(BENCH_VENV)/bin/python bench/store/bench_store.py --bin target/$(HOST_TRIPLE)/release/harnessweaver

.PHONY: redis-server bench-store

# tests/python/test_store_multiprocess.py starts a redis-server too.
test-python: redis-server
