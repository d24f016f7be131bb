# cel-lite: the benchmark, beside the `cel` crate (cel-rust) as a peer.
# The Rust tests (conformance, fixtures, hostile) run under test-rust.
BENCH_TARGETS += bench-cel

bench-cel: ## benchmark cel-lite (approval expression) against the cel crate, with the ratio
	cargo bench -p harnessweaver-core --bench cel_lite --features bench-peer
	$(BENCH_ROWS) cel

.PHONY: bench-cel
