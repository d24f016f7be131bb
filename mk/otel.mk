# OpenTelemetry's cost to a governed call when nobody listens (issue 24: the
# goal is < 100 ns per call with no exporter or API). bench-otel: criterion,
# wall time, each mode beside the call with no observer. profile-otel:
# instructions per call under callgrind (load-robust), the same three modes:
# none (no OpenTelemetry API), off (API without SDK), on (an SDK listens).
# Both build the core with bench-peer, as every core benchmark does (one build).
BENCH_TARGETS += bench-otel

bench-otel: ## benchmark a governed call with no observer, an observer not listening, one listening (criterion)
	cargo bench -p harnessweaver-core --bench otel --features bench-peer -- $(CRITERION_ARGS)

PROFILE_OTEL_CALLS ?= 2000

profile-otel: ## instructions per governed call per observer mode (callgrind; needs valgrind)
	@command -v valgrind >/dev/null || { echo "profile-otel needs valgrind (apt-get install valgrind)"; exit 1; }
	mkdir -p $(PROFILE_DIR)
	cargo build --release -p harnessweaver-core --features bench-peer --example profile_otel --message-format=json \
		| python3 -c 'import json,sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' > $(PROFILE_DIR)/otel-bin
	for mode in none off on; do \
		for n in 0 $(PROFILE_OTEL_CALLS); do \
			valgrind --tool=callgrind --callgrind-out-file=$(PROFILE_DIR)/callgrind.otel-$$mode.$$n $$(cat $(PROFILE_DIR)/otel-bin) $$mode $$n 2>&1 | sed -n 's/.*refs: *//p' | tr -d , > $(PROFILE_DIR)/ir.otel-$$mode.$$n; \
		done; \
		echo "$$mode: $$(( ($$(cat $(PROFILE_DIR)/ir.otel-$$mode.$(PROFILE_OTEL_CALLS)) - $$(cat $(PROFILE_DIR)/ir.otel-$$mode.0)) / $(PROFILE_OTEL_CALLS) )) instructions per call"; \
	done

.PHONY: bench-otel profile-otel

# The same three states from Python (release wheel), as CPU time per call.
BENCH_TARGETS += bench-python-otel

bench-python-otel: bench-wheel ## CPU time per call from Python: no OpenTelemetry API, the API without SDK, the SDK (in-memory exporter)
	$(BENCH_PY) bench/python/bench_otel.py

.PHONY: bench-python-otel
