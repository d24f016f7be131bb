# harnessweaver: one Makefile; CI calls the same targets a person types.
# Areas add their own targets in mk/*.mk and append to TEST_TARGETS / BENCH_TARGETS.
SHELL := /bin/bash
.DEFAULT_GOAL := help

ROOT := $(abspath .)
HOST_TRIPLE := $(shell rustc -vV | sed -n 's/^host: //p')
export CARGO_BUILD_TARGET := $(HOST_TRIPLE)
VENV := $(ROOT)/.venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(VENV)
export PATH := $(VENV)/bin:$(PATH)

TEST_TARGETS :=
BENCH_TARGETS :=

include $(wildcard mk/*.mk)

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-16s %s\n", $$1, $$2}'

test: $(TEST_TARGETS) ## build and run every test
	@echo "all test targets passed: $(TEST_TARGETS)"

bench: $(BENCH_TARGETS) ## run every benchmark

.PHONY: help test bench
