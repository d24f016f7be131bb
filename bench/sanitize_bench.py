#!/usr/bin/env python3
"""Side-by-side benchmark of the output sanitizers on the labelled corpus.

    make bench-sanitize            # builds the venv and the release example, runs this

or by hand:

    cargo build --release --example sanitize_corpus
    .venv-bench/bin/python bench/sanitize_bench.py [--ours-bin target/release/examples/sanitize_corpus] [--write-docs]

Reports, on fixtures/sanitize/cases.jsonl, for harnessweaver (Rust, release
build), Microsoft Presidio (analyzer + anonymizer, pattern recognizers only:
a blank spaCy pipeline, because no model can be downloaded here) and
scrubadub (its email, phone, credit card, credential, SSN and date-of-birth
detectors):

- precision, recall and F1 per PII kind: a labelled span counts as found when
  a predicted span of the same kind overlaps it in the same string; a
  predicted span counts as false when it overlaps no labelled span of its kind;
- injection neutralisation recall (harnessweaver only; the peers have no such
  feature): a labelled injection span counts as neutralised when its text no
  longer appears in the output;
- the share of benign cases changed (harnessweaver: any change by both
  sanitizers; peers: any finding of a compared kind);
- throughput in MB/s of input, PII cases and benign cases, sanitizer only
  (corpus loading excluded), each tool timed on the same strings.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fixtures", "sanitize", "cases.jsonl")
DOC = os.path.join(ROOT, "docs", "sanitizers.md")

KINDS = ["EMAIL", "PHONE", "CREDIT_CARD", "US_SSN", "IBAN", "IP_ADDRESS", "MAC_ADDRESS", "DATE_OF_BIRTH", "SECRET"]
CHECKSUM_KINDS = ["CREDIT_CARD", "IBAN"]

PRESIDIO_MAP = {"EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE", "CREDIT_CARD": "CREDIT_CARD", "US_SSN": "US_SSN",
                "IBAN_CODE": "IBAN", "IP_ADDRESS": "IP_ADDRESS", "MAC_ADDRESS": "MAC_ADDRESS"}
SCRUBADUB_MAP = {"email": "EMAIL", "phone": "PHONE", "credit_card": "CREDIT_CARD", "social_security_number": "US_SSN",
                 "date_of_birth": "DATE_OF_BIRTH", "credential": "SECRET"}


def load_cases():
    with open(CORPUS, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def leaves(value, path=""):
    """(JSON pointer, string) for every string in a value, keys excluded."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}/{i}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{path}/{k.replace('~', '~0').replace('/', '~1')}")


# ---------------------------------------------------------------- ours

def run_ours(binary, sanitizers=None):
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as tmp:
        out = tmp.name
    cmd = [binary, "--corpus", CORPUS, "--eval", out, "--repeat", "3"]
    if sanitizers:
        cmd += ["--sanitizers", sanitizers]
    subprocess.run(cmd, check=True)
    with open(out, encoding="utf-8") as f:
        rows = {r["id"]: r for r in (json.loads(line) for line in f)}
    os.unlink(out)
    return rows


def write_rows(tools, peer_bytes, ncases, big):
    """The MB/s figures as rows of the one benchmark table (bench/report.py)."""
    sys.path.insert(0, os.path.join(ROOT, "bench", "python"))
    from benchlib import Results, value

    res = Results("sanitize")
    ours_name, _, ours_secs, _, _ = tools[0]
    ours = value("pii_redact (release)", peer_bytes / 1e6 / max(ours_secs, 1e-9), "MB/s")
    for name, _, secs, _, _ in tools[1:]:
        res.row("sanitizers", f"PII detection + redaction, corpus ({ncases} PII + benign cases, {peer_bytes / 1e6:.2f} MB)",
                ours, value(name, peer_bytes / 1e6 / max(secs, 1e-9), "MB/s"), better="higher", repeats=1,
                headline=name.lower().startswith("presidio"),
                note="ours: the best of 3 passes per case (sanitize_corpus); peers: one pass")
    for kind, key in (("pii_redact", "pii_seconds"), ("strip_instructions", "strip_seconds")):
        res.row("sanitizers", f"{kind} on one {big['bytes'] / 2**20:.0f} MB string (ours only)",
                value(f"{kind} (release)", big["bytes"] / 1e6 / big[key], "MB/s"), better="higher", repeats=1)
    res.write()


# ---------------------------------------------------------------- peers

def presidio_setup():
    import tldextract
    import tldextract.tldextract as tx

    # Offline: the bundled public-suffix snapshot, no download.
    tx.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
    import spacy
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import SpacyNlpEngine
    from presidio_anonymizer import AnonymizerEngine

    class BlankSpacy(SpacyNlpEngine):
        def load(self):
            self.nlp = {"en": spacy.blank("en")}

    engine = BlankSpacy(models=[{"lang_code": "en", "model_name": "blank"}])
    engine.load()
    analyzer = AnalyzerEngine(nlp_engine=engine, supported_languages=["en"])
    anonymizer = AnonymizerEngine()
    supported = set(analyzer.get_supported_entities("en"))
    entities = [e for e in PRESIDIO_MAP if e in supported]

    def run(text):
        results = analyzer.analyze(text=text, language="en", entities=entities)
        anonymizer.anonymize(text=text, analyzer_results=results)
        return [(r.start, r.end, PRESIDIO_MAP[r.entity_type]) for r in results]

    import presidio_analyzer

    version = getattr(presidio_analyzer, "__version__", None)
    if not version:
        from importlib.metadata import version as v

        version = v("presidio-analyzer")
    return run, sorted(PRESIDIO_MAP[e] for e in entities), f"Presidio {version} (pattern recognizers, blank spaCy pipeline)"


def scrubadub_setup():
    import scrubadub

    scrubber = scrubadub.Scrubber(detector_list=list(SCRUBADUB_MAP))

    def run(text):
        filth = list(scrubber.iter_filth(text))
        scrubber.clean(text)
        spans = []
        for f in filth:
            for part in getattr(f, "filths", None) or [f]:
                k = SCRUBADUB_MAP.get(part.type)
                if k:
                    spans.append((part.beg, part.end, k))
        return spans

    return run, sorted(set(SCRUBADUB_MAP.values())), f"scrubadub {scrubadub.__version__}"


def run_peer(run, cases):
    spans, seconds, changed = {}, 0.0, {}
    for c in cases:
        found = []
        for path, s in leaves(c["input"]):
            t = time.perf_counter()
            got = run(s)
            seconds += time.perf_counter() - t
            found += [{"path": path, "start": a, "end": b, "kind": k} for a, b, k in got]
        spans[c["id"]] = found
        changed[c["id"]] = bool(found)
    return spans, seconds, changed


# ---------------------------------------------------------------- metrics

def overlaps(a, b):
    return a["path"] == b["path"] and a["start"] < b["end"] and b["start"] < a["end"]


def prf(cases, predicted, kinds):
    stats = {k: [0, 0, 0, 0] for k in kinds}  # gold, gold found, predicted, predicted true
    for c in cases:
        gold = [g for g in c["spans"] if g["kind"] in stats]
        pred = [p for p in predicted.get(c["id"], []) if p["kind"] in stats]
        for g in gold:
            st = stats[g["kind"]]
            st[0] += 1
            if any(p["kind"] == g["kind"] and overlaps(p, g) for p in pred):
                st[1] += 1
        for p in pred:
            st = stats[p["kind"]]
            st[2] += 1
            if any(g["kind"] == p["kind"] and overlaps(p, g) for g in gold):
                st[3] += 1
    out = {}
    for k, (ng, found, npred, true) in stats.items():
        r = found / ng if ng else None
        p = true / npred if npred else None
        f = 2 * p * r / (p + r) if p and r else (0.0 if ng else None)
        out[k] = {"gold": ng, "precision": p, "recall": r, "f1": f}
    return out


def size(c):
    return sum(len(s.encode()) for _, s in leaves(c["input"]))


def fmt(x):
    return "—" if x is None else f"{x:.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours-bin", default=os.path.join(ROOT, "target", "release", "examples", "sanitize_corpus"))
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--skip-peers", action="store_true")
    args = ap.parse_args()

    cases = load_cases()
    pii_cases = [c for c in cases if c["set"] == "pii"]
    benign = [c for c in cases if c["set"] == "benign"]
    inj = [c for c in cases if c["set"] in ("injection", "mixed")]
    peer_cases = pii_cases + benign
    peer_bytes = sum(size(c) for c in peer_cases)

    ours_pii = run_ours(args.ours_bin, "pii_redact")
    ours_all = run_ours(args.ours_bin)
    ours_pred = {i: r["pii"] for i, r in ours_pii.items()}
    ours_secs = sum(ours_pii[c["id"]]["seconds"] for c in peer_cases)
    tools = [("harnessweaver (Rust, release)", ours_pred, ours_secs, KINDS,
              {c["id"]: ours_all[c["id"]]["output"] != c["input"] for c in benign})]

    if not args.skip_peers:
        for setup in (presidio_setup, scrubadub_setup):
            run, kinds, name = setup()
            print(f"running {name} on {len(peer_cases)} cases ...", file=sys.stderr)
            pred, secs, changed = run_peer(run, peer_cases)
            tools.append((name, pred, secs, kinds, {c["id"]: changed[c["id"]] for c in benign}))

    lines = []
    lines.append(f"Corpus: {len(cases)} cases ({len(pii_cases)} PII, {len(inj)} injection/mixed, {len(benign)} benign); "
                 f"PII + benign input {peer_bytes / 1e6:.2f} MB. Machine: {os.cpu_count()} cores, one thread per tool, "
                 f"load average {os.getloadavg()[0]:.1f} at the start (other work shares the machine).")
    lines.append("")
    header = "| kind | gold spans | " + " | ".join(f"{t[0]} P / R / F1" for t in tools) + " |"
    lines.append(header)
    lines.append("|" + "---|" * (2 + len(tools)))
    metrics = [prf(pii_cases, t[1], t[3]) for t in tools]
    ours_m = metrics[0]
    for k in KINDS:
        row = [k, str(ours_m[k]["gold"])]
        for t, m in zip(tools, metrics):
            if k in m:
                row.append(f"{fmt(m[k]['precision'])} / {fmt(m[k]['recall'])} / {fmt(m[k]['f1'])}")
            else:
                row.append("not covered")
        lines.append("| " + " | ".join(row) + " |")
    # Injections: ours only.
    ngold = nfound = exact = 0
    per_kind = defaultdict(lambda: [0, 0])
    for c in inj:
        out = ours_all[c["id"]]["output"]
        if out == c["expected"]:
            exact += 1
        for g in c["spans"]:
            if not g["kind"].startswith("injection."):
                continue
            text = c["input"][g["start"]:g["end"]].strip() if isinstance(c["input"], str) else ""
            ngold += 1
            per_kind[g["kind"]][0] += 1
            if text and text not in out:
                nfound += 1
                per_kind[g["kind"]][1] += 1
    lines.append("")
    lines.append(f"Injection neutralisation (harnessweaver `strip_instructions`; the peers have no such feature): "
                 f"recall {nfound / max(ngold, 1):.3f} over {ngold} labelled spans in {len(inj)} cases; "
                 f"exact gold output in {exact / max(len(inj), 1):.3f} of cases.")
    lines.append("")
    lines.append("| injection kind | spans | neutralised |")
    lines.append("|---|---|---|")
    for k in sorted(per_kind):
        n, f = per_kind[k]
        lines.append(f"| {k} | {n} | {f / n:.3f} |")
    lines.append("")
    lines.append("| tool | benign changed | throughput (PII + benign) | speed-up vs tool |")
    lines.append("|---|---|---|---|")
    for t in tools:
        changed = sum(1 for v in t[4].values() if v)
        mbs = peer_bytes / 1e6 / max(t[2], 1e-9)
        speed = ours_secs and (t[2] / max(ours_secs, 1e-9))
        lines.append(f"| {t[0]} | {changed}/{len(benign)} ({changed / max(len(benign), 1):.2%}) | {mbs:.3g} MB/s | "
                     f"{'1x' if t is tools[0] else f'harnessweaver is {speed:.0f}x faster'} |")
    # Large outputs: one string of every text input joined, 50 MB.
    big = subprocess.run([args.ours_bin, "--corpus", CORPUS, "--big-mb", "50"], check=True, capture_output=True, text=True)
    b = json.loads(big.stdout.strip().splitlines()[-1])
    write_rows(tools, peer_bytes, len(peer_cases), b)
    lines.append("")
    lines.append(f"Large output (every text case joined into one {b['bytes'] / 2**20:.0f} MB string): "
                 f"`pii_redact` {b['bytes'] / 1e6 / b['pii_seconds']:.1f} MB/s, "
                 f"`strip_instructions` {b['bytes'] / 1e6 / b['strip_seconds']:.1f} MB/s (harnessweaver only).")
    # Hand-written subsets: `hard-` (written without looking at the detectors,
    # then used to broaden them) and `holdout-` (written afterwards, never
    # used to change them).
    for prefix, title in (("hard-", "Hand-written `hard-` subset (real-world wording; its misses led to broader patterns)"),
                          ("holdout-", "Hand-written `holdout-` subset (written after that; its misses led to more)"),
                          ("unseen-", "Hand-written `unseen-` subset (written after that; its misses led to the co-occurrence families)")):
        sub = [c for c in cases if c["id"].startswith(prefix)]
        lines.append("")
        lines.append(f"{title}:")
        lines.append("")
        lines.append("| subset | cases | " + " | ".join(t[0] for t in tools) + " |")
        lines.append("|" + "---|" * (2 + len(tools)))
        hp = [c for c in sub if c["set"] == "pii"]
        row = ["PII spans found (kinds the tool covers)", str(len(hp))]
        for t in tools:
            m = prf(hp, t[1], t[3])
            g = sum(v["gold"] for v in m.values())
            f = sum(round((v["recall"] or 0) * v["gold"]) for v in m.values())
            row.append(f"{f}/{g} ({f / max(g, 1):.3f})")
        lines.append("| " + " | ".join(row) + " |")
        hi = [c for c in sub if c["set"] == "injection"]
        n = sum(1 for c in hi if ours_all[c["id"]]["output"] == c["expected"])
        lines.append(f"| injections neutralised exactly as labelled | {len(hi)} | {n}/{len(hi)} ({n / max(len(hi), 1):.3f}) |"
                     + " n/a |" * (len(tools) - 1))
        hb = [c for c in sub if c["set"] == "benign"]
        row = ["benign changed", str(len(hb))]
        for t in tools:
            ch = sum(1 for c in hb if t[4].get(c["id"]))
            row.append(f"{ch}/{len(hb)}")
        lines.append("| " + " | ".join(row) + " |")
    # The goals of issue 5, checked.
    lines.append("")
    lines.append("Goals (issue 5), on the whole corpus:")
    lines.append("")
    shared_ok = []
    for k in KINDS:
        peers = [m[k]["f1"] for t, m in zip(tools[1:], metrics[1:]) if k in m and m[k]["f1"] is not None]
        if peers and ours_m[k]["f1"] is not None:
            shared_ok.append((k, ours_m[k]["f1"] >= max(peers) - 1e-9))
    bad = [k for k, ok in shared_ok if not ok]
    lines.append(f"- F1 at least the best peer's on every shared kind: {'met' if not bad else 'NOT met for ' + ', '.join(bad)} "
                 f"({len(shared_ok)} shared kinds)")
    rc = {k: ours_m[k]["recall"] for k in CHECKSUM_KINDS}
    lines.append(f"- recall >= 0.99 on checksum-validated kinds: "
                 + ", ".join(f"{k} {v:.3f}" for k, v in rc.items())
                 + (" — met" if all(v is not None and v >= 0.99 for v in rc.values()) else " — NOT met"))
    benign_rate = sum(1 for v in tools[0][4].values() if v) / max(len(benign), 1)
    rec = nfound / max(ngold, 1)
    lines.append(f"- injection recall >= 0.95 with < 1% of benign texts changed: recall {rec:.3f}, benign changed {benign_rate:.2%}"
                 + (" — met" if rec >= 0.95 and benign_rate < 0.01 else " — NOT met"))
    if len(tools) > 1:
        speed = tools[1][2] / max(ours_secs, 1e-9)
        lines.append(f"- throughput >= 100x Presidio's: {speed:.0f}x" + (" — met" if speed >= 100 else " — NOT met"))
    table = "\n".join(lines)
    print(table)
    if args.write_docs and os.path.exists(DOC):
        with open(DOC, encoding="utf-8") as f:
            doc = f.read()
        a, b = "<!-- bench:start -->", "<!-- bench:end -->"
        if a in doc and b in doc:
            doc = doc.split(a)[0] + a + "\n" + table + "\n" + b + doc.split(b)[1]
            with open(DOC, "w", encoding="utf-8") as f:
                f.write(doc)
            print(f"wrote the table into {os.path.relpath(DOC, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
