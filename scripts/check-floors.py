#!/usr/bin/env python3
"""The house's floors, checked from the code's own imports (make test).

usage: check-floors.py [--graph]   (from anywhere in the checkout)

Three rules, each printed with what breaks it:

1. Crates point one way (docs/architecture.md, "Crates"): `recovery` and
   `gossip` depend on no other crate of the workspace; `eco` on
   `recovery` and `gossip` only (the test kit is a dev-dependency);
   `testkit` on `eco`, `recovery`, `gossip`; `simulations` on anything.
   Read from each crate's Cargo.toml [dependencies].
2. No file circle inside a crate: file A imports from file B (a `use`, or
   a path `crate::…`/`super::…` in the code) and B, through any chain,
   from A. Test modules (`#[cfg(test)] mod …`) are left out: a test may
   reach anywhere.
3. eco's wings (the directories of src/) sit on floors (FLOORS below,
   bottom first; the same table is in docs/architecture.md, "Floors"); a
   wing imports only from its own floor or below, every wing is on a
   floor, and src/ holds no loose module but main.rs and lib.rs.

--graph prints the module graph of src/ (who imports whom, with counts).
"""
from __future__ import annotations

import os
import re
import sys
import tomllib
from collections import defaultdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# Rule 1: the workspace crates each crate may depend on.
CRATES = {
    "recovery": set(),
    "gossip": set(),
    "eco": {"recovery", "gossip"},
    "testkit": {"eco", "recovery", "gossip"},
    "simulations": {"eco", "recovery", "gossip", "testkit"},
}
CRATE_DIRS = {
    "eco": ".",
    "recovery": "recovery",
    "gossip": "gossip",
    "testkit": "testkit",
    "simulations": "simulations",
}

# Rule 3: eco's top-level modules, bottom floor first.
FLOORS = [
    # What every part uses: files, time, text, the events' names (src/base/).
    ("base", {"base"}),
    # The config, read and validated.
    ("config", {"config"}),
    # This machine: the state file, the data directory, the lock, logging.
    ("local", {"local"}),
    # The world outside: the group, the store, etcd, the CA, auth.
    ("outside", {"provider", "store", "codec", "etcd", "pki", "auth"}),
    # What eco does with them: snapshots, the change archive, metrics, the
    # HTTP API, the quorum-loss driver.
    ("work", {"snapshot", "archive", "metrics", "api", "quorum_loss"}),
    # The daemon and the commands.
    ("top", {"daemon", "commands", "main", "lib"}),
]



def strip_tests(text: str) -> str:
    """The text without `#[cfg(test)] mod x { … }` blocks (braces counted;
    strings and comments are rare enough in those headers not to matter)."""
    out = []
    i = 0
    pattern = re.compile(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{")
    while True:
        m = pattern.search(text, i)
        if not m:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:m.start()])
        depth = 1
        j = m.end()
        while j < len(text) and depth:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            j += 1
        i = j


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand_use_tree(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree.split("as")[0] if "as" in tree and "::" not in tree.split("as")[-1] else tree]
    head, _, rest = tree.partition("{")
    inner = rest[: rest.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur:
        parts.append(cur)
    out = []
    for p in parts:
        for e in expand_use_tree(p):
            out.append(head + e if e not in ("self",) else head.rstrip(":"))
    return out


class Crate:
    def __init__(self, name: str, src: str):
        self.name = name
        self.src = src
        self.files: dict[tuple[str, ...], str] = {}  # module path -> file
        for dp, _, fns in os.walk(src):
            for fn in fns:
                if not fn.endswith(".rs"):
                    continue
                rel = os.path.relpath(os.path.join(dp, fn), src)
                parts = rel[:-3].split(os.sep)
                if parts[-1] in ("mod", "lib", "main") and len(parts) >= 1:
                    if parts[-1] == "mod":
                        parts = parts[:-1]
                    elif len(parts) == 1:
                        parts = [] if parts[0] == "lib" else ["main"]
                self.files[tuple(parts)] = os.path.join(dp, fn)
        # Exported macros live at the crate's root by name
        # (`crate::event!`), but in the file that defines them.
        self.macros: dict[str, tuple[str, ...]] = {}
        for module, file in self.files.items():
            text = open(file, encoding="utf-8").read()
            for m in re.finditer(r"#\[macro_export\]\s*macro_rules!\s*(\w+)", text):
                self.macros[m.group(1)] = module

    def module_of(self, path: tuple[str, ...]) -> tuple[str, ...] | None:
        """The longest prefix of `path` that is a file module."""
        for n in range(len(path), -1, -1):
            if path[:n] in self.files:
                return path[:n]
        return None

    def imports(self, module: tuple[str, ...]) -> list[tuple[str, ...]]:
        file = self.files[module]
        is_dir_module = os.path.basename(file) in ("mod.rs", "lib.rs", "main.rs")
        text = strip_comments(strip_tests(open(file, encoding="utf-8").read()))
        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            paths.extend(expand_use_tree(m.group(1)))
        paths.extend(re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text))
        # The module `super` and `self` name, from this file.
        here = module if is_dir_module else module[:-1]
        found = []
        for p in paths:
            segs = [s for s in p.split("::") if s]
            if not segs:
                continue
            if segs[0] == "crate":
                base, segs = (), segs[1:]
            elif segs[0] == "self":
                base, segs = (module if is_dir_module else module), segs[1:]
            elif segs[0] == "super":
                base = here
                segs = segs[1:]
                while segs and segs[0] == "super":
                    base = base[:-1]
                    segs = segs[1:]
            else:
                continue
            if base == () and len(segs) == 1 and segs[0] in self.macros:
                target = self.macros[segs[0]]
            else:
                target = self.module_of(tuple(base) + tuple(segs))
            if target is not None and target != module:
                found.append(target)
        return found

    def graph(self) -> dict[tuple[str, ...], dict[tuple[str, ...], int]]:
        g: dict = {}
        for module in self.files:
            edges: dict = defaultdict(int)
            for t in self.imports(module):
                edges[t] += 1
            g[module] = edges
        return g


def circles(g) -> list[list]:
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in g:
        if v not in index:
            visit(v)
    return out


def workspace_deps(crate_dir: str) -> set[str]:
    with open(os.path.join(ROOT, crate_dir, "Cargo.toml"), "rb") as f:
        manifest = tomllib.load(f)
    deps = set(manifest.get("dependencies", {}))
    return {d for d in deps if d in CRATES}


def main() -> int:
    problems = []
    # 1. Crates.
    for crate, allowed in CRATES.items():
        extra = workspace_deps(CRATE_DIRS[crate]) - allowed
        for d in sorted(extra):
            problems.append(f"crate {crate} depends on {d}, which sits above it")
    # 2. File circles.
    crates = {c: Crate(c, os.path.join(ROOT, d, "src")) for c, d in CRATE_DIRS.items()}
    for name, crate in crates.items():
        for comp in circles(crate.graph()):
            files = [os.path.relpath(crate.files[m], ROOT) for m in comp]
            problems.append(f"file circle in {name}: {' <-> '.join(files)}")
    # 3. eco's floors.
    eco = crates["eco"]
    floor_of = {}
    for level, (_, mods) in enumerate(FLOORS):
        for m in mods:
            floor_of[m] = level
    tops = {m[0] if m else "lib" for m in eco.files}
    for t in sorted(tops - set(floor_of)):
        problems.append(f"src/{t}: a module on no floor (add it to FLOORS in {sys.argv[0]})")
    # Every wing is a directory: no loose module beside main.rs and lib.rs.
    for f in sorted(os.listdir(os.path.join(ROOT, "src"))):
        if f.endswith(".rs") and f not in ("main.rs", "lib.rs"):
            problems.append(f"src/{f}: a loose module (put it in the wing of its floor)")
    up = defaultdict(int)
    module_graph = defaultdict(lambda: defaultdict(int))
    for module, edges in eco.graph().items():
        a = module[0] if module else "lib"
        for target, n in edges.items():
            b = target[0] if target else "lib"
            if a == b:
                continue
            module_graph[a][b] += n
            if a in floor_of and b in floor_of and floor_of[b] > floor_of[a]:
                up[(a, b)] += n
    if "--graph" in sys.argv:
        for a in sorted(module_graph):
            print(f"{a} -> " + ", ".join(f"{b} ({n})" for b, n in sorted(module_graph[a].items())))
    for (a, b), n in sorted(up.items()):
        problems.append(
            f"src/{a} ({FLOORS[floor_of[a]][0]}) imports src/{b} ({FLOORS[floor_of[b]][0]}), "
            f"a floor above it ({n} uses)"
        )
    for p in problems:
        print(f"floors: {p}")
    if problems:
        return 1
    print(
        f"floors: {len(CRATES)} crates point one way, no file circle, "
        f"src/ in wings on {len(FLOORS)} floors, none imports from above"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
