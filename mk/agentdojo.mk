# The AgentDojo benchmarks (issue 23). bench-agentdojo: AgentDojo's tools as native handlers under the manifests of
# bench/agentdojo/tools.py, replaying each task's ground truth; utility and attack success per suite for each `flow`
# configuration, written into its section of BENCHMARKS.md (between the agentdojo markers; bench/report.py keeps
# it). bench-agentdojo-sanitize: `strip_instructions` on AgentDojo's injection texts and benign environment data,
# written into docs/sanitizers.md. Both count, they do not time: a debug wheel of the Python binding is enough.
BENCH_TARGETS += bench-agentdojo bench-agentdojo-sanitize
BENCH_VENV ?= $(ROOT)/.venv-bench
AGENTDOJO_STAMP := $(BENCH_VENV)/.hw-agentdojo.stamp
AGENTDOJO_WHEELS := $(ROOT)/target/agentdojo-wheel
# Every configuration meets important_instructions; "no governor", the best configuration and it with sink formats meet every registered
# attack that carries a goal (replay.py --all-attack-configs; `all` there runs every attack for every configuration).
AGENTDOJO_ARGS ?= --attacks all

$(AGENTDOJO_STAMP): bench/agentdojo/requirements.txt
	test -x $(BENCH_VENV)/bin/python || python3 -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r bench/agentdojo/requirements.txt
	touch $@

agentdojo-wheel: venv $(AGENTDOJO_STAMP) ## the debug wheel of the Python binding, installed into .venv-bench with agentdojo
	rm -rf $(AGENTDOJO_WHEELS)
	$(VENV)/bin/maturin build --manifest-path bindings-python/Cargo.toml --out $(AGENTDOJO_WHEELS)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps $(AGENTDOJO_WHEELS)/harnessweaver-*.whl

bench-agentdojo: agentdojo-wheel ## AgentDojo replay: utility and attack success per suite and flow mode
	HW_AGENTDOJO_COMMAND="make bench-agentdojo" $(BENCH_VENV)/bin/python bench/agentdojo/replay.py --write-docs $(AGENTDOJO_ARGS)

bench-agentdojo-sanitize: agentdojo-wheel ## strip_instructions on AgentDojo's injections and benign data (docs/sanitizers.md)
	$(BENCH_VENV)/bin/python bench/agentdojo/sanitizers.py --write-docs

.PHONY: agentdojo-wheel bench-agentdojo bench-agentdojo-sanitize
