#!/usr/bin/env python3
"""Module import graph of a Rust crate's `src/` (stdlib only).

Reads every `*.rs` under the source root (default `reference-host/src`), skipping
`#[cfg(test)]` items and `tests.rs` / `*_tests.rs` files, and records an edge
A -> B for every `crate::…` (and `super::…` / `self::…`) path in module A that
resolves to module B (the longest known module prefix of the path). It prints the
module count, the edge count, every strongly connected component larger than one
(an import cycle) and, given a layer map, every edge that points upward across
layers and every cycle that spans more than one layer.

    python3 scripts/import-graph.py                  # report
    python3 scripts/import-graph.py --check          # exit 1 on a layer violation
    python3 scripts/import-graph.py --max-cycles 0   # exit 1 on any import cycle
    python3 scripts/import-graph.py --src src --no-layers --max-cycles 0   # another crate
    python3 scripts/import-graph.py --edges          # also list every edge
    python3 scripts/import-graph.py --layers FILE    # another layer map

The layer map (default `reference-host/layers.txt`) has one `prefix layer` pair a
line (`#` starts a comment); a module takes the layer of its longest matching
prefix, `prefix` matching the module itself and everything under it. A higher
number is a higher layer; an edge from layer m to layer n > m goes upward.
Modules no prefix matches are reported and count as a violation under --check.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def strip_comments_and_strings(text):
    """Blank out comments, string and char literals, keeping newlines and length."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif re.match(r'b?r#*"', text[i:i + 40]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', text[i:i + 40])
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:i + 12])
            if m:
                out.append(" " * m.end())
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(text, start):
    """Index just past the brace block opening at or after `start`."""
    i = text.find("{", start)
    if i < 0:
        return len(text)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


CFG_TEST = re.compile(r"#\[cfg\(\s*(all\(\s*)?test\b[^\]]*\]")


def drop_test_items(text):
    """Remove every item carrying `#[cfg(test)]`; return (text, skipped `mod x;` names)."""
    skipped = []
    while True:
        m = CFG_TEST.search(text)
        if not m:
            return text, skipped
        rest = m.end()
        # Skip further attributes on the same item.
        while True:
            a = re.match(r"\s*#\[[^\]]*\]", text[rest:])
            if not a:
                break
            rest += a.end()
        decl = re.match(r"\s*(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text[rest:])
        if decl:
            skipped.append(decl.group(3))
            end = rest + decl.end()
        else:
            semi = text.find(";", rest)
            brace = text.find("{", rest)
            if brace < 0 or (0 <= semi < brace):
                end = len(text) if semi < 0 else semi + 1
            else:
                end = matching_brace(text, rest)
        text = text[:m.start()] + re.sub(r"[^\n]", "\0", text[m.start():end]) + text[end:]


def module_of(rel):
    """`a/b.rs` -> `a::b`; `a/mod.rs` -> `a`; `lib.rs` -> `crate`."""
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(parts) if parts else "crate"


def is_test_file(name):
    return name == "tests.rs" or name.endswith("_tests.rs")


LINES = {"physical": 0, "code": 0}


def load(src):
    """Map module path -> code (comments, strings and test items removed)."""
    modules = {}
    skipped_decls = set()
    for dirpath, _dirs, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(".rs") or is_test_file(name) or name == "main.rs":
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, src)
            with open(full, encoding="utf-8") as f:
                code = strip_comments_and_strings(f.read())
            code, skipped = drop_test_items(code)
            # Test items were blanked with NULs: a line holding one is test code.
            lines = code.split("\n")
            LINES["physical"] += sum(1 for ln in lines if "\0" not in ln)
            LINES["code"] += sum(1 for ln in lines if "\0" not in ln and ln.strip())
            code = code.replace("\0", " ")
            mod = module_of(rel)
            for s in skipped:
                skipped_decls.add(s if mod == "crate" else mod + "::" + s)
            modules[mod] = code
    for s in skipped_decls:
        modules.pop(s, None)
    return modules


def expand_use_tree(tree):
    """Flatten a `use` tree (`a::{b, c::{d}}`) into its full paths."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    i = tree.find("{")
    if i < 0:
        return [tree]
    prefix, inner = tree[:i], tree[i + 1:tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p:
            out.extend(prefix + q for q in expand_use_tree(p))
    return out


def absolute(path, mod):
    """Rewrite a `crate::`/`super::`/`self::` path to a `::`-joined module path."""
    segs = path.split("::")
    if segs[0] == "crate":
        return segs[1:]
    here = [] if mod == "crate" else mod.split("::")
    if segs[0] == "self":
        return here + segs[1:]
    base = list(here)
    while segs and segs[0] == "super":
        # `super` in `a/b.rs` is `a`; in `a/mod.rs` it is the parent of `a`.
        base = base[:-1]
        segs = segs[1:]
    return base + segs


def resolve(segs, modules):
    """The longest known module that prefixes `segs`, or None."""
    for k in range(len(segs), 0, -1):
        cand = "::".join(segs[:k])
        if cand in modules:
            return cand
    return None


PATH = re.compile(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)")
USE = re.compile(r"\buse\s+((?:crate|super|self)::[^;]*);")


def edges_of(modules):
    edges = {m: set() for m in modules}
    for mod, code in modules.items():
        paths = []
        for m in USE.finditer(code):
            paths.extend(expand_use_tree(m.group(1)))
        paths.extend(m.group(1) for m in PATH.finditer(USE.sub(" ", code)))
        aliases = {}
        for p in paths:
            segs = absolute(p.rstrip(":*"), mod)
            target = resolve(segs, modules)
            if target and target != mod and target != "crate":
                edges[mod].add(target)
            if target and target == "::".join(segs) and segs:
                # `use crate::a::b;` makes `b::c::…` a path into `a::b`.
                aliases[segs[-1]] = segs
        for name, segs in aliases.items():
            for m in re.finditer(r"(?<![\w:])" + name + r"((?:::\w+)+)", code):
                target = resolve(segs + m.group(1).split("::")[1:], modules)
                if target and target != mod:
                    edges[mod].add(target)
    return edges


def sccs(edges):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def read_layers(path):
    layers = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                prefix, layer = line.split()
                layers.append((prefix, int(layer)))
    return layers


def layer_of(mod, layers):
    best = None
    for prefix, layer in layers:
        if mod == prefix or mod.startswith(prefix + "::"):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, layer)
    return None if best is None else best[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=os.path.join(ROOT, "reference-host", "src"))
    ap.add_argument("--layers", default=os.path.join(ROOT, "reference-host", "layers.txt"))
    ap.add_argument("--no-layers", action="store_true", help="read no layer map (a crate without one)")
    ap.add_argument("--check", action="store_true", help="exit 1 on a cross-layer violation")
    ap.add_argument("--edges", action="store_true", help="list every edge")
    ap.add_argument(
        "--max-upward",
        type=int,
        metavar="N",
        help="exit 1 if more than N edges go upward, or a module is unmapped (a ratchet for CI "
        "while the layering is unfinished: lower N as edges go, never raise it)",
    )
    ap.add_argument(
        "--max-cycles",
        type=int,
        metavar="N",
        help="exit 1 if there are more than N import cycles, in a layer or across layers "
        "(CI holds it at 0)",
    )
    args = ap.parse_args()

    modules = load(args.src)
    modules.pop("crate", None)
    edges = edges_of(modules)
    n_edges = sum(len(v) for v in edges.values())
    print(f"modules: {len(modules)}")
    print(f"non-test lines: {LINES['physical']} (of which code, not blank or comment: {LINES['code']})")
    print(f"edges: {n_edges}")
    if args.edges:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"  {a} -> {b}")

    cycles = sorted((c for c in sccs(edges) if len(c) > 1), key=lambda c: (-len(c), c))
    largest = len(cycles[0]) if cycles else 1
    print(f"cycles (SCCs > 1): {len(cycles)}; largest: {largest}")
    for c in cycles:
        print(f"  [{len(c)}] " + " ".join(c))

    layers = None if args.no_layers or not os.path.exists(args.layers) else read_layers(args.layers)
    violations = 0
    if layers is None:
        print("layer map: none (--no-layers)" if args.no_layers else f"layer map: none ({args.layers} missing)")
    else:
        print(f"layer map: {os.path.relpath(args.layers, ROOT)}")
        unmapped = sorted(m for m in modules if layer_of(m, layers) is None)
        for m in unmapped:
            print(f"  unmapped module: {m}")
        violations += len(unmapped)
        up = []
        for a in sorted(edges):
            for b in sorted(edges[a]):
                la, lb = layer_of(a, layers), layer_of(b, layers)
                if la is not None and lb is not None and lb > la:
                    up.append((a, la, b, lb))
        print(f"upward edges: {len(up)}")
        for a, la, b, lb in up:
            print(f"  {a} (L{la}) -> {b} (L{lb})")
        crossing = [c for c in cycles if len({layer_of(m, layers) for m in c}) > 1]
        print(f"cycles crossing a layer: {len(crossing)}")
        for c in crossing:
            by = sorted({layer_of(m, layers) for m in c}, key=lambda x: (x is None, x))
            print(f"  [{len(c)}] layers {by}: " + " ".join(c))
        violations += len(up) + len(crossing)
        if args.max_upward is not None and (len(up) > args.max_upward or unmapped):
            print(
                f"FAIL: {len(up)} upward edge(s) (at most {args.max_upward} allowed) and "
                f"{len(unmapped)} unmapped module(s): import downward only, or map a new "
                f"module in {os.path.relpath(args.layers, ROOT)}",
                file=sys.stderr,
            )
            return 1
    if args.max_cycles is not None and len(cycles) > args.max_cycles:
        print(
            f"FAIL: {len(cycles)} import cycle(s) (at most {args.max_cycles} allowed): move what "
            "both modules need into a module below them",
            file=sys.stderr,
        )
        return 1
    if args.check and violations:
        print(f"FAIL: {violations} layer violation(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
