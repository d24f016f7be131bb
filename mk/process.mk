# The process transport and its OS sandbox (runtime/src/transport/process.rs,
# confine/): bubblewrap from Debian's packages, installed when missing; the
# launcher (harnessweaver-confine) is a binary of the runtime crate, which
# cargo builds for the tests that use it.

BWRAP := /usr/bin/bwrap

bubblewrap: ## install bubblewrap (the namespaces of the process sandbox) when it is missing
	@command -v bwrap >/dev/null 2>&1 || test -x $(BWRAP) || { apt-get update -qq && apt-get install -y -qq bubblewrap; }

# The launcher on its own, for the packages (tools/dist/package.py).
build-confine: ## build the confinement launcher (harnessweaver-confine) of process tools and the code worker
	cargo build -p harnessweaver-runtime --bin harnessweaver-confine

test-process: bubblewrap ## run the process-transport tests: protocol, caps, timeout, and the sandbox attack table
	cargo test -p harnessweaver-runtime --test transport_process --test sandbox_attacks

# Code tools run their worker confined (Landlock, seccomp) and the
# namespaced process tools need bubblewrap: every suite that runs them.
test-rust test-transports test-python test-node test-dist test-demo test-gateway: bubblewrap

# A warm governed call of a sh handler: bare spawn, unconfined, confined, and
# the confinement's parts (release build).
BENCH_TARGETS += bench-process

bench-process: bubblewrap ## benchmark a process-tool call: bare spawn vs unconfined vs confined, and where the time goes
	cargo bench -p harnessweaver-runtime --bench process -- $(CRITERION_ARGS)

.PHONY: bubblewrap build-confine test-process bench-process
