# The README's first command: build the Python package and run the example harness.
demo: build-python ## build the Python package and run examples/demo.py (loads examples/shop, runs doctor)
	$(PY) examples/demo.py

.PHONY: demo
