# Rust: the core's unit tests and the fixture runner.
TEST_TARGETS += test-rust

test-rust: ## run the core's Rust tests (unit, fixtures, conformance)
	cargo test -p harnessweaver-core

.PHONY: test-rust
