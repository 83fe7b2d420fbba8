#!/usr/bin/env python3
"""Module and crate import graphs of the workspace's Rust crates (stdlib only).

Every crate target of the workspace (each member's library, and a binary that is
not just a shell over its own library) is read from its root file, following its
`mod` declarations (a file module or an inline `mod x { … }`), skipping
`#[cfg(test)]` items. Every path in a module's non-test code that names a module
is an edge A -> B:

  - `crate::…`, `self::…`, `super::…` paths;
  - a bare path through a child module (`load::from_dir` in `loader` is `loader -> loader::load`),
    in a `use` or in code;
  - a path through a name a `use` bound to a module (`use crate::suite;` then `suite::x`);
  - a path into another workspace crate (`toolcert_core::suite::…`): an edge between modules
    of two crates, and an edge of the crate graph.

The target of a path is the longest known module it names (`crate::suite::Scenario` is
`suite`; a crate's root module is `crate`). `pub(in …)` visibilities are not edges.

It prints, for each crate, the module count, the non-test lines, the edge count and every
strongly connected component larger than one (an import cycle); then the crate graph (from
the manifests' dependencies between workspace members, and from the paths) and its cycles;
and, for a crate with a layer map, every edge that points upward across layers and every
cycle that spans more than one layer.

    python3 scripts/import-graph.py                       # the whole workspace
    python3 scripts/import-graph.py --max-cycles 0        # exit 1 on any import cycle
    python3 scripts/import-graph.py --check               # exit 1 on a layer violation
    python3 scripts/import-graph.py --crate toolcert-core --edges   # one crate, every edge
    python3 scripts/import-graph.py --src reference-host/src        # one crate by folder
    python3 scripts/import-graph.py --lines               # non-test lines per module folder
    python3 scripts/import-graph.py --allow-cycles reference-host=1 --max-cycles 0

A layer map (`reference-host/layers.txt` for the reference host; `--layers FILE` for the
crate given by `--src`) has one `prefix layer` pair a line (`#` starts a comment); a module
takes the layer of its longest matching prefix, `prefix` matching the module itself and
everything under it. A higher number is a higher layer; an edge from layer m to layer n > m
goes upward. Modules no prefix matches are reported and count as a violation under --check.

The crate graph has a map too (`scripts/crate-graph.txt`): each workspace crate and the
workspace crates it may import (`crate: dep dep`). Under --check, a crate edge it does not
list, or a crate it does not name, is a violation: the crates stay in their pipeline order.
"""

import argparse
import os
import re
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Layer maps by package name, relative to the repository root.
LAYER_MAPS = {"reference-host": os.path.join("reference-host", "layers.txt")}

# The crate graph's map: which workspace crates each crate may import.
CRATE_MAP = os.path.join("scripts", "crate-graph.txt")


def read_crate_map(path):
    allowed = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, deps = line.split(":", 1)
                allowed[name.strip()] = set(deps.split())
    return allowed


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
    """Blank (with NULs) every item carrying `#[cfg(test)]`."""
    while True:
        m = CFG_TEST.search(text)
        if not m:
            return text
        rest = m.end()
        # Skip further attributes on the same item.
        while True:
            a = re.match(r"\s*#\[[^\]]*\]", text[rest:])
            if not a:
                break
            rest += a.end()
        semi = text.find(";", rest)
        brace = text.find("{", rest)
        if brace < 0 or (0 <= semi < brace):
            end = len(text) if semi < 0 else semi + 1
        else:
            end = matching_brace(text, rest)
        text = text[:m.start()] + re.sub(r"[^\n]", "\0", text[m.start():end]) + text[end:]


MOD_DECL = re.compile(r"(?<![\w:])(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])")


class Module:
    def __init__(self, crate, path, file):
        self.crate = crate
        self.path = path  # "crate" or "a::b"
        self.file = file
        self.code = ""
        self.children = set()
        self.lines = 0
        self.code_lines = 0


class Crate:
    """One crate target: a package's library or one of its binaries."""

    def __init__(self, package, name, root, manifest_dir, deps, kind):
        self.package = package
        self.name = name  # the name paths use: `toolcert_core`
        self.root = root
        self.manifest_dir = manifest_dir
        self.deps = deps  # package names of workspace members it depends on
        self.kind = kind  # "lib" or "bin"
        self.modules = {}

    @property
    def label(self):
        return self.package if self.kind == "lib" else f"{self.package} (bin {self.name})"

    def folder(self):
        return os.path.relpath(os.path.dirname(self.root), ROOT)


def count_lines(code):
    lines = code.split("\n")
    physical = sum(1 for ln in lines if "\0" not in ln)
    nonblank = sum(1 for ln in lines if "\0" not in ln and ln.strip())
    return physical, nonblank


def load_crate(crate):
    """Read a crate from its root file, following `mod` declarations."""

    def visit_file(path, file, dir_for_children):
        with open(file, encoding="utf-8") as f:
            code = drop_test_items(strip_comments_and_strings(f.read()))
        mod = crate.modules.setdefault(path, Module(crate, path, file))
        # Lines count toward the file's module, inline modules included.
        physical, nonblank = count_lines(code)
        mod.lines += physical
        mod.code_lines += nonblank
        visit_code(path, file, code.replace("\0", " "), dir_for_children)

    def visit_code(path, file, code, dir_for_children):
        mod = crate.modules.setdefault(path, Module(crate, path, file))
        pos = 0
        while True:
            m = MOD_DECL.search(code, pos)
            if not m:
                break
            name, kind = m.group(1), m.group(2)
            mod.children.add(name)
            child = join(path, name)
            if kind == "{":
                # An inline module is a module of its own, blanked from its parent.
                end = matching_brace(code, m.start())
                inner = code[code.index("{", m.start()) + 1:end - 1]
                visit_code(child, file, inner, os.path.join(dir_for_children, name))
                code = code[:m.start()] + re.sub(r"[^\n]", " ", code[m.start():end]) + code[end:]
                pos = m.start()
                continue
            pos = m.end()
            flat = os.path.join(dir_for_children, name + ".rs")
            nested = os.path.join(dir_for_children, name, "mod.rs")
            if os.path.exists(flat):
                visit_file(child, flat, os.path.join(dir_for_children, name))
            elif os.path.exists(nested):
                visit_file(child, nested, os.path.join(dir_for_children, name))
        mod.code += "\n" + code

    visit_file("crate", crate.root, os.path.dirname(crate.root))


def split_top(inner):
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
    return [p for p in parts if p]


def expand_use_tree(tree):
    """Flatten a `use` tree (`a::{b, c::{d as e}}`) into (path, bound name) pairs."""
    tree = re.sub(r"\s+", " ", tree).strip()
    i = tree.find("{")
    if i < 0:
        m = re.match(r"(.*?)\s+as\s+(\w+)$", tree)
        path, alias = (m.group(1), m.group(2)) if m else (tree, None)
        path = path.replace(" ", "")
        segs = [s for s in path.split("::") if s]
        if alias is None and segs:
            alias = segs[-1] if segs[-1] != "self" else (segs[-2] if len(segs) > 1 else None)
        return [(path, alias)]
    prefix, inner = tree[:i].replace(" ", ""), tree[i + 1:tree.rfind("}")]
    out = []
    for p in split_top(inner):
        for path, alias in expand_use_tree(p.strip()):
            if path == "self":
                segs = [s for s in prefix.split("::") if s]
                # `{self}` binds the prefix's last segment, `{self as x}` binds `x`.
                bound = alias if alias not in (None, "self") else (segs[-1] if segs else None)
                out.append((prefix.rstrip(":"), bound))
            else:
                out.append((prefix + path, alias))
    return out


USE = re.compile(r"(?<![\w:])use\s+([^;]*);")
# A path ends at its first generic argument list: a module path never has one, and a path
# inside the arguments (`Vec::<crate::x::T>::new`) is then matched on its own.
PATH = re.compile(r"(?<![\w:$])((?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)+)")
VIS_IN = re.compile(r"pub\s*\(\s*in\s+[^)]*\)")


class Workspace:
    def __init__(self, crates):
        self.crates = crates
        self.by_name = {}
        for c in crates:
            if c.kind == "lib":
                self.by_name[c.name] = c

    def resolve(self, mod, segs, aliases):
        """The module a path names, as (crate, module path), or None."""
        crate = mod.crate
        segs = [s for s in segs if s and not s.startswith("<")]
        if not segs:
            return None
        head = segs[0]
        if head == "crate":
            base, rest = "crate", segs[1:]
        elif head == "self":
            base, rest = mod.path, segs[1:]
        elif head == "super":
            here = [] if mod.path == "crate" else mod.path.split("::")
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    here = here[:-1]
                segs = segs[1:]
            base, rest = ("::".join(here) or "crate"), segs
        elif head in mod.children:
            base, rest = join(mod.path, head), segs[1:]
        elif head in aliases:
            crate, base = aliases[head]
            rest = segs[1:]
        elif head in self.by_name and self.by_name[head] is not crate:
            crate = self.by_name[head]
            base, rest = "crate", segs[1:]
        else:
            return None
        target = base
        for s in rest:
            cand = join(target, s)
            if cand in crate.modules:
                target = cand
            else:
                break
        if target not in crate.modules:
            return None
        return crate, target

    def edges(self):
        """Map (crate label, module) -> set of (crate label, module)."""
        out = {}
        for crate in self.crates:
            for mod in crate.modules.values():
                out[(crate.label, mod.path)] = set()
        for crate in self.crates:
            for mod in crate.modules.values():
                code = VIS_IN.sub(" ", mod.code)
                mine = out[(crate.label, mod.path)]
                aliases = {}
                uses = []
                for m in USE.finditer(code):
                    uses.extend(expand_use_tree(m.group(1)))
                # A `use` may name a module another `use` bound: resolve to a fixed point.
                for _ in range(3):
                    for path, alias in uses:
                        hit = self.resolve(mod, path.rstrip(":*").split("::"), aliases)
                        if hit and alias and hit[1] == full_target(path, hit) and alias != "_":
                            aliases[alias] = hit
                for path, _alias in uses:
                    hit = self.resolve(mod, path.rstrip(":*").split("::"), aliases)
                    if hit:
                        add(mine, crate, mod, hit)
                rest = USE.sub(" ", code)
                for m in PATH.finditer(rest):
                    segs = [s.strip() for s in m.group(1).split("::")]
                    hit = self.resolve(mod, segs, aliases)
                    if hit:
                        add(mine, crate, mod, hit)
        return out


def full_target(path, hit):
    """The module path `hit` has when `path` names a module itself (not an item in one)."""
    segs = [s for s in path.rstrip(":*").split("::") if s]
    last = segs[-1] if segs else ""
    if last == "self" and len(segs) > 1:
        last = segs[-2]
    if hit[1] == "crate":
        return "crate" if last in ("crate", "self", "super") or last == hit[0].name else None
    return hit[1] if hit[1].split("::")[-1] == last else None


def join(base, name):
    return name if base == "crate" else f"{base}::{name}"


def add(edges, crate, mod, hit):
    hc, hm = hit
    if hc is crate and hm == mod.path:
        return
    edges.add((hc.label, hm))


def read_manifest(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def workspace_crates(only_src=None):
    root_manifest = read_manifest(os.path.join(ROOT, "Cargo.toml"))
    members = root_manifest.get("workspace", {}).get("members", ["."])
    dirs = []
    for m in members:
        if m.endswith("/*"):
            parent = os.path.join(ROOT, m[:-2])
            dirs.extend(sorted(os.path.join(parent, d) for d in os.listdir(parent)
                               if os.path.exists(os.path.join(parent, d, "Cargo.toml"))))
        else:
            dirs.append(os.path.normpath(os.path.join(ROOT, m)))
    packages = {}
    for d in dirs:
        man = read_manifest(os.path.join(d, "Cargo.toml"))
        packages[os.path.realpath(d)] = (d, man)
    names = {man["package"]["name"]: d for d, man in packages.values()}
    crates = []
    for d, man in packages.values():
        pkg = man["package"]["name"]
        deps = []
        for dep_name, spec in man.get("dependencies", {}).items():
            if isinstance(spec, dict) and "path" in spec:
                deps.append(spec.get("package", dep_name))
        lib = man.get("lib", {}).get("path", "src/lib.rs")
        lib_path = os.path.join(d, lib)
        has_lib = os.path.exists(lib_path)
        if has_lib:
            crates.append(Crate(pkg, pkg.replace("-", "_"), lib_path, d, deps, "lib"))
        bins = man.get("bin", [])
        if not bins and os.path.exists(os.path.join(d, "src", "main.rs")):
            bins = [{"name": pkg, "path": "src/main.rs"}]
        for b in bins:
            path = os.path.join(d, b.get("path", "src/main.rs"))
            bin_deps = deps + ([pkg] if has_lib else [])
            crates.append(Crate(pkg, b["name"].replace("-", "_"), path, d, bin_deps, "bin"))
    for c in crates:
        load_crate(c)
    # A binary that is only a shell over its own library (a `main` and nothing else) adds
    # nothing to either graph.
    crates = [c for c in crates if not (c.kind == "bin" and len(c.modules) == 1
                                        and any(o.kind == "lib" and o.package == c.package for o in crates))]
    if only_src:
        want = os.path.realpath(only_src)
        crates_sel = [c for c in crates if os.path.realpath(os.path.dirname(c.root)) == want]
        # A single crate still resolves paths into the others.
        return crates, crates_sel, names
    return crates, crates, names


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
                if nxt not in edges:
                    continue
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


def folder_of(crate, mod):
    """The module folder a module counts under: its top-level module, or the crate root."""
    if mod.path == "crate":
        return os.path.relpath(mod.file, ROOT)
    rel = os.path.relpath(mod.file, ROOT)
    top = mod.path.split("::")[0]
    base = os.path.relpath(os.path.dirname(crate.root), ROOT)
    if os.path.isdir(os.path.join(os.path.dirname(crate.root), top)):
        return os.path.join(base, top) + "/"
    return rel


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", help="only the crate whose root file is in this folder")
    ap.add_argument("--crate", dest="crate_name", help="only this package (its library, and binaries)")
    ap.add_argument("--layers", help="the layer map of the crate given by --src")
    ap.add_argument("--no-layers", action="store_true", help="read no layer map")
    ap.add_argument("--check", action="store_true", help="exit 1 on a cross-layer violation")
    ap.add_argument("--edges", action="store_true", help="list every edge")
    ap.add_argument("--lines", action="store_true", help="list non-test lines per module folder")
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
        help="exit 1 if a crate has more than N import cycles, in a layer or across layers, or "
        "the crate graph has a cycle (CI holds it at 0)",
    )
    ap.add_argument(
        "--allow-cycles",
        action="append",
        default=[],
        metavar="PACKAGE=N",
        help="a crate allowed exactly N cycles (between modules plus between top-level modules) in "
        "place of --max-cycles: a ratchet, fewer fails too, so N is lowered as cycles go",
    )
    args = ap.parse_args()

    all_crates, crates, _names = workspace_crates(args.src)
    if args.crate_name:
        crates = [c for c in crates if c.package == args.crate_name]
    if not crates:
        print("no crate matches", file=sys.stderr)
        return 2
    ws = Workspace(all_crates)
    edges = ws.edges()
    allow = {}
    for a in args.allow_cycles:
        pkg, n = a.split("=", 1)
        allow[pkg] = int(n)

    failed = []
    for crate in crates:
        label = crate.label
        inner = {m: {t for (c, t) in edges[(label, m)] if c == label} for m in crate.modules}
        outer = sorted({(c, t) for m in crate.modules for (c, t) in edges[(label, m)] if c != label})
        n_edges = sum(len(v) for v in inner.values())
        lines = sum(m.lines for m in crate.modules.values())
        code_lines = sum(m.code_lines for m in crate.modules.values())
        print(f"crate {label} ({crate.folder()})")
        print(f"  modules: {len(crate.modules)}")
        print(f"  non-test lines: {lines} (of which not blank, not comment: {code_lines})")
        print(f"  edges: {n_edges} in the crate, {len(outer)} to modules of other crates")
        if args.lines:
            folders = {}
            for m in crate.modules.values():
                f = folder_of(crate, m)
                a, b = folders.get(f, (0, 0))
                folders[f] = (a + m.lines, b + m.code_lines)
            for f in sorted(folders):
                print(f"    {folders[f][0]:6} {folders[f][1]:6}  {f}")
        if args.edges:
            for a in sorted(inner):
                for b in sorted(inner[a]):
                    print(f"    {a} -> {b}")
                for (c, t) in sorted(x for x in edges[(label, a)] if x[0] != label):
                    print(f"    {a} -> {c}::{t}")
        cycles = sorted((c for c in sccs(inner) if len(c) > 1), key=lambda c: (-len(c), c))
        largest = len(cycles[0]) if cycles else 1
        print(f"  cycles (SCCs > 1): {len(cycles)}; largest: {largest}")
        for c in cycles:
            print(f"    [{len(c)}] " + " ".join(c))
        # The same graph between top-level modules (a folder and everything in it).
        tops = {}
        for a in inner:
            ta = a.split("::")[0]
            tops.setdefault(ta, set())
            tops[ta].update(b.split("::")[0] for b in inner[a] if b.split("::")[0] != ta)
        top_cycles = sorted((c for c in sccs(tops) if len(c) > 1), key=lambda c: (-len(c), c))
        n_top = sum(len(v) for v in tops.values())
        print(f"  top-level modules: {len(tops)}, edges between them: {n_top}, cycles: {len(top_cycles)}")
        for c in top_cycles:
            print(f"    [{len(c)}] " + " ".join(c))
        limit = allow.get(crate.package, args.max_cycles)
        if limit is not None and len(cycles) + len(top_cycles) > limit:
            failed.append(
                f"{label}: {len(cycles)} import cycle(s) between modules and {len(top_cycles)} "
                f"between top-level modules (at most {limit} allowed): move what both modules "
                "need into a module below them"
            )
        elif crate.package in allow and len(cycles) + len(top_cycles) < limit:
            # The ratchet only goes down: a cycle broken lowers N in the same change.
            failed.append(
                f"{label}: {len(cycles) + len(top_cycles)} import cycle(s), fewer than the "
                f"{limit} allowed: lower --allow-cycles {crate.package}={len(cycles) + len(top_cycles)}"
            )

        layer_file = None
        if not args.no_layers:
            if args.layers and args.src:
                layer_file = args.layers
            elif crate.kind == "lib" and crate.package in LAYER_MAPS:
                layer_file = os.path.join(ROOT, LAYER_MAPS[crate.package])
        if layer_file and os.path.exists(layer_file):
            layers = read_layers(layer_file)
            print(f"  layer map: {os.path.relpath(layer_file, ROOT)}")
            mods = [m for m in crate.modules if m != "crate"]
            unmapped = sorted(m for m in mods if layer_of(m, layers) is None)
            for m in unmapped:
                print(f"    unmapped module: {m}")
            up = []
            for a in sorted(inner):
                for b in sorted(inner[a]):
                    la, lb = layer_of(a, layers), layer_of(b, layers)
                    if la is not None and lb is not None and lb > la:
                        up.append((a, la, b, lb))
            print(f"  upward edges: {len(up)}")
            for a, la, b, lb in up:
                print(f"    {a} (L{la}) -> {b} (L{lb})")
            crossing = [c for c in cycles if len({layer_of(m, layers) for m in c}) > 1]
            print(f"  cycles crossing a layer: {len(crossing)}")
            for c in crossing:
                by = sorted({layer_of(m, layers) for m in c}, key=lambda x: (x is None, x))
                print(f"    [{len(c)}] layers {by}: " + " ".join(c))
            if args.max_upward is not None and (len(up) > args.max_upward or unmapped):
                failed.append(
                    f"{label}: {len(up)} upward edge(s) (at most {args.max_upward} allowed) and "
                    f"{len(unmapped)} unmapped module(s): import downward only, or map a new "
                    f"module in {os.path.relpath(layer_file, ROOT)}"
                )
            if args.check and (up or crossing or unmapped):
                failed.append(f"{label}: {len(up) + len(crossing) + len(unmapped)} layer violation(s)")

    # The crate graph: a manifest's dependency on a workspace member, or a path into one.
    graph = {c.label: set() for c in all_crates}
    lib_label = {c.package: c.label for c in all_crates if c.kind == "lib"}
    via = {}
    for c in all_crates:
        for d in c.deps:
            if d in lib_label and lib_label[d] != c.label:
                graph[c.label].add(lib_label[d])
        for m in c.modules:
            for (tc, tm) in edges[(c.label, m)]:
                if tc != c.label:
                    graph[c.label].add(tc)
                    via.setdefault((c.label, tc), 0)
                    via[(c.label, tc)] += 1
    print("crate graph (a dependency between workspace crates; paths between them in brackets):")
    for a in sorted(graph):
        for b in sorted(graph[a]):
            print(f"  {a} -> {b} [{via.get((a, b), 0)}]")
    crate_cycles = [c for c in sccs(graph) if len(c) > 1]
    print(f"crate graph cycles: {len(crate_cycles)}")
    for c in crate_cycles:
        print(f"  [{len(c)}] " + " ".join(c))
    if args.max_cycles is not None and crate_cycles:
        failed.append(f"the crate graph has {len(crate_cycles)} cycle(s)")
    # Each edge against the crate map (by package name: a binary counts as its package).
    allowed = read_crate_map(os.path.join(ROOT, CRATE_MAP))
    package_of = {c.label: c.package for c in all_crates}
    unlisted = sorted({c.package for c in all_crates} - set(allowed))
    off_map = sorted(
        (package_of[a], package_of[b])
        for a in graph
        for b in graph[a]
        if package_of[a] != package_of[b] and package_of[b] not in allowed.get(package_of[a], set())
    )
    print(f"crate map: {CRATE_MAP}; edges it does not allow: {len(off_map)}")
    for a, b in off_map:
        print(f"  {a} -> {b}")
    for c in unlisted:
        print(f"  crate not in the map: {c}")
    if args.check and (off_map or unlisted):
        failed.append(
            f"the crate graph: {len(off_map)} edge(s) and {len(unlisted)} crate(s) not in "
            f"{CRATE_MAP}: import downward only, or name a new crate there"
        )

    for f in failed:
        print(f"FAIL: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
