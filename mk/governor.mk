# The governor: the decision path benchmark (steps 1-9 with a 1 KB output).
BENCH_TARGETS += bench-governor

bench-governor: ## benchmark a governed call (steps 1-9) against the bare handler
	cargo bench -p harnessweaver-core --bench governor --features bench-peer
	$(BENCH_ROWS) governor

.PHONY: bench-governor
