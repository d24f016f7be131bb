# Profiling (not a test, not a benchmark): instructions per governed call under
# callgrind, which counts the same on a busy shared machine as on an idle one.
# Runs core/examples/profile_call.rs (the decision-path benchmark's tool, steps
# 1-9 with a 1 KB output) for 0 and PROFILE_CALLS calls; the difference divided
# by PROFILE_CALLS is the per-call cost. The profile stays in target/profile/.
PROFILE_CALLS ?= 2000
PROFILE_DIR := $(ROOT)/target/profile

profile-governor: ## instructions per governed call (callgrind; needs valgrind)
	@command -v valgrind >/dev/null || { echo "profile-governor needs valgrind (apt-get install valgrind)"; exit 1; }
	mkdir -p $(PROFILE_DIR)
	cargo build --release -p harnessweaver-core --example profile_call --message-format=json \
		| python3 -c 'import json,sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' > $(PROFILE_DIR)/bin
	for n in 0 $(PROFILE_CALLS); do \
		valgrind --tool=callgrind --callgrind-out-file=$(PROFILE_DIR)/callgrind.$$n $$(cat $(PROFILE_DIR)/bin) $$n 2>&1 | sed -n 's/.*refs: *//p' | tr -d , > $(PROFILE_DIR)/ir.$$n; \
	done
	@echo "governed call: $$(( ($$(cat $(PROFILE_DIR)/ir.$(PROFILE_CALLS)) - $$(cat $(PROFILE_DIR)/ir.0)) / $(PROFILE_CALLS) )) instructions per call (incl. cloning the args and the 1 KB output and dropping the result); profile: $(PROFILE_DIR)/callgrind.$(PROFILE_CALLS)"
	@echo "breakdown: callgrind_annotate --inclusive=yes $(PROFILE_DIR)/callgrind.$(PROFILE_CALLS) | head -60"

# Loading: instructions to load PROFILE_MANIFESTS manifests (the load
# benchmark's, written by `profile_call write`), counted by callgrind over
# the whole `profile_call load` process (which exits without freeing the
# runtime). Under callgrind the CPU has no SHA instructions, so hashing
# counts for more than it costs natively.
PROFILE_MANIFESTS ?= 2000

profile-load: ## instructions to load 2,000 manifests (callgrind; needs valgrind)
	@command -v valgrind >/dev/null || { echo "profile-load needs valgrind (apt-get install valgrind)"; exit 1; }
	mkdir -p $(PROFILE_DIR)
	cargo build --release -p harnessweaver-core --example profile_call --message-format=json \
		| python3 -c 'import json,sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' > $(PROFILE_DIR)/bin
	$$(cat $(PROFILE_DIR)/bin) write $(PROFILE_MANIFESTS) $(PROFILE_DIR)/load-harness > /dev/null
	valgrind --tool=callgrind --callgrind-out-file=$(PROFILE_DIR)/callgrind.load $$(cat $(PROFILE_DIR)/bin) load $(PROFILE_DIR)/load-harness/harness.yaml 2>&1 \
		| sed -n 's/.*refs: *//p' | tr -d , > $(PROFILE_DIR)/ir.load
	@echo "load of $(PROFILE_MANIFESTS) manifests: $$(cat $(PROFILE_DIR)/ir.load) instructions ($$(( $$(cat $(PROFILE_DIR)/ir.load) / $(PROFILE_MANIFESTS) )) per manifest, process start included); profile: $(PROFILE_DIR)/callgrind.load"
	@echo "breakdown: callgrind_annotate --inclusive=yes $(PROFILE_DIR)/callgrind.load | head -60"

# The load benchmark (criterion): Runtime::load of 10,000 manifests, wall time.
BENCH_TARGETS += bench-load-rust

bench-load-rust: ## benchmark Runtime::load of 10,000 manifests (Rust, wall time; goal < 0.5 s)
	cargo bench -p harnessweaver-core --bench load --features bench-peer -- $(CRITERION_ARGS)
	$(BENCH_ROWS) load

.PHONY: profile-governor profile-load bench-load-rust

# The audit chain (issue 24): instructions and CPU time per event of the
# chained JSON Lines sink, and of the signed one (a checkpoint every 1000), beside
# the unchained sink it replaced. Callgrind cannot see system calls (the chain
# adds a flock, an fstat and an unlock per event); the CPU time printed counts them.
PROFILE_EVENTS ?= 20000

profile-audit: ## instructions and CPU time per audit event: chained and signed sinks beside the unchained one (callgrind; needs valgrind)
	@command -v valgrind >/dev/null || { echo "profile-audit needs valgrind (apt-get install valgrind)"; exit 1; }
	mkdir -p $(PROFILE_DIR)
	cargo build --release -p harnessweaver-core --example profile_audit --message-format=json \
		| python3 -c 'import json,sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' > $(PROFILE_DIR)/audit-bin
	for mode in unchained chained signed; do \
		$$(cat $(PROFILE_DIR)/audit-bin) $$mode 200000 $(PROFILE_DIR)/audit; \
		for n in 0 $(PROFILE_EVENTS); do \
			valgrind --tool=callgrind --callgrind-out-file=$(PROFILE_DIR)/callgrind.audit-$$mode.$$n $$(cat $(PROFILE_DIR)/audit-bin) $$mode $$n $(PROFILE_DIR)/audit 2>&1 | sed -n 's/.*refs: *//p' | tr -d , > $(PROFILE_DIR)/ir.audit-$$mode.$$n; \
		done; \
		echo "$$mode: $$(( ($$(cat $(PROFILE_DIR)/ir.audit-$$mode.$(PROFILE_EVENTS)) - $$(cat $(PROFILE_DIR)/ir.audit-$$mode.0)) / $(PROFILE_EVENTS) )) instructions per event"; \
	done

.PHONY: profile-audit
