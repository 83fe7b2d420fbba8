#!/usr/bin/env python3
"""How much a spec editor writes: the scenario files of a base commit against the same
scenarios now (working tree), plus the fragment files they share.

Scenarios are matched by id; a base scenario that became one leg of a params file counts
that file once. Four measures, so formatting cannot flatter the result:
  lines      as written;
  reprinted  both sides printed by one printer (objects inline up to 100 columns);
  chars      characters other than whitespace;
  tokens     member names plus scalar values (format-independent; $schema left out).

Usage: python3 scripts/scenario-size.py [BASE]   (default BASE: 4e39b2a, issue 15's start)
"""
import glob
import json
import re
import subprocess
import sys

WIDTH = 100


def reprint(v, ind=0, lead=0):
    flat = json.dumps(v, ensure_ascii=False, separators=(", ", ": "))
    if not isinstance(v, (dict, list)) or not v or 2 * ind + lead + len(flat) <= WIDTH:
        return flat
    pad = "  " * (ind + 1)
    if isinstance(v, dict):
        items = [
            pad + json.dumps(k, ensure_ascii=False) + ": " + reprint(x, ind + 1, len(k) + 4)
            for k, x in v.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * ind + "}"
    return "[\n" + ",\n".join(pad + reprint(x, ind + 1) for x in v) + "\n" + "  " * ind + "]"


def tokens(v):
    if isinstance(v, dict):
        return sum(1 + tokens(x) for k, x in v.items() if k != "$schema")
    if isinstance(v, list):
        return sum(tokens(x) for x in v)
    return 1


def measure(texts):
    docs = [json.loads(t) for t in texts]
    return {
        "files": len(texts),
        "lines": sum(t.count("\n") for t in texts),
        "reprinted": sum(reprint(d).count("\n") + 1 for d in docs),
        "chars": sum(len(re.sub(r"\s", "", t)) for t in texts),
        "tokens": sum(tokens(d) for d in docs),
    }


def ids(doc):
    if "id" in doc:
        yield doc["id"]
    for entry in doc.get("params", []):
        yield entry["id"]


def is_scenario(path):
    return path.count("/") == 2 and "/fragments/" not in path


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "4e39b2a"
    listed = subprocess.check_output(
        ["git", "ls-tree", "-r", "--name-only", base, "scenarios/"], text=True
    ).split()
    base_texts = {
        p: subprocess.check_output(["git", "show", f"{base}:{p}"], text=True)
        for p in listed
        if p.endswith(".json") and is_scenario(p)
    }
    base_ids = {i for t in base_texts.values() for i in ids(json.loads(t))}
    now_texts, fragments = {}, []
    for p in sorted(glob.glob("scenarios/*/*.json")):
        text = open(p, encoding="utf-8").read()
        if "/fragments/" in p:
            fragments.append(text)
        elif base_ids & set(ids(json.loads(text))):
            now_texts[p] = text
    before = measure(list(base_texts.values()))
    now = measure(list(now_texts.values()))
    with_fragments = measure(list(now_texts.values()) + fragments)
    print(f"base {base}: {before['files']} scenario files; now: {now['files']} files hold the same scenarios, plus {len(fragments)} fragment files")
    print(f"{'':10} {'base':>8} {'now':>8} {'+frags':>8} {'change':>8}")
    for k in ("lines", "reprinted", "chars", "tokens"):
        change = 1 - with_fragments[k] / before[k]
        print(f"{k:10} {before[k]:8} {now[k]:8} {with_fragments[k]:8} {-change:8.1%}")


if __name__ == "__main__":
    main()
