"""A worker of the mixed-language multi-process store test: loads a harness
with the Python binding, waits for the common start time, calls `ping` N
times and prints what was decided as one JSON line."""

import json
import sys
import time

import harnessweaver as hw


def main() -> None:
    harness, calls, start_ms, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    h = hw.load(harness, handlers={"ping": lambda: "pong"})
    time.sleep(max(0.0, start_ms / 1000 - time.time()))
    counts: dict = {}
    for _ in range(calls):
        r = h.call("ping", {}, principal={"id": name}, tenant="acme", raise_on_refusal=False)
        key = "allowed" if r.decision == "allowed" else r.code
        counts[key] = counts.get(key, 0) + 1
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
