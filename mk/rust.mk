# Rust: the core's unit tests and the fixture runner.
TEST_TARGETS += test-rust

test-rust: ## run the Rust tests of both crates (unit, fixtures, conformance)
	cargo test -p harnessweaver-core -p harnessweaver-runtime

.PHONY: test-rust
