# Docs: the pages' code blocks run as written (pages opt in with `<!-- test: run -->`),
# the API reference has a docstring / TSDoc comment on every public name, and the
# reference pages agree with the core (the Rust side of that runs under test-rust).
TEST_TARGETS += test-docs

test-docs: build-python build-node ## run the docs' code blocks and check the API reference's docstrings
	$(PY) -m pytest -q tests/docs

.PHONY: test-docs
