"""The layout, the import graph and ARCHITECTURE.md agree.

The import graph is read from the source (every `import` and `from ... import`, also those
inside functions and under TYPE_CHECKING: a lazy import is still a dependency). Packages
depend only on lower layers (DESIGN.md's order), nothing imports in a cycle, the image
package keeps Kafka's order inside it, and ARCHITECTURE.md names every package.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.paths import REPO

SOURCE = REPO / "kraftsim"

#: The layers of kraftsim, lowest first: a package may import its own layer's peers and
#: any lower layer, never a higher one. Top-level modules count as packages here.
LAYERS: list[set[str]] = [
    {"kraftsim", "errors", "gcpause", "lazy", "tomlinput", "jsoninput", "textsafe", "regular_file"},
    {"protocol", "javacompat"},
    {"versions"},
    {"storage"},
    {"image"},
    {"controller"},
    {"sim"},
    {"scenario", "testing", "conformance", "pipeline", "wire", "shell"},
    {"demo", "cli", "__main__"},
]

#: Imports that go up on purpose, with why.
ALLOWED_UPWARD = {
    ("conformance", "cli"): "differential cases run the kraftsim command as a user would",
}

#: Imports DESIGN.md rules out between peers ("knows nothing of").
FORBIDDEN = {
    ("scenario", "pipeline"): "scenarios know nothing of Spark",
    ("testing", "cli"): "the test helpers know nothing of the CLI",
}

#: Inside kraftsim.image, Kafka's order (org.apache.kafka.image): components, then the
#: image and its delta, the writer, the loader, and what uses loaded images.
IMAGE_LAYERS: list[set[str]] = [
    {"pmap", "intern", "canonical", "provenance", "errors"},
    {"components"},
    {"image", "bulk"},
    {"delta"},
    {"writer", "synthetic"},
    {"loader"},
    {"publisher", "verification"},
]


#: Inside kraftsim.sim, the rooms (ARCHITECTURE.md): a node model both engines share, the
#: event engine and the tick engine side by side (neither imports the other), then the face
#: (Simulation and what it answers with), then what reads cluster directories for the CLI
#: and the importer.
SIM_LAYERS: list[set[str]] = [
    {"types"},
    {"node"},
    {"engine", "ticks"},
    {"saved", "simulation", "admin", "features_tool"},
    {"tools", "importing"},
]
SIM_FORBIDDEN = {("engine", "ticks"), ("ticks", "engine")}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def import_graph() -> dict[str, set[str]]:
    """module -> the kraftsim modules it imports (a `from pkg import submodule` names the
    submodule only; a `from pkg import name` names the package)."""
    mods = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [target, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            edges[mod].update(t for t in targets if t in mods and t != mod)
    return edges


GRAPH = import_graph()


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for root in sorted(set(edges) | {t for ts in edges.values() for t in ts}):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def _level(layers: list[set[str]], name: str) -> int | None:
    return next((i for i, layer in enumerate(layers) if name in layer), None)


def _top(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_every_package_has_a_layer():
    unplaced = sorted({_top(m) for m in GRAPH} - set().union(*LAYERS))
    assert unplaced == [], f"add {unplaced} to LAYERS here and to ARCHITECTURE.md"


def test_packages_import_only_lower_layers():
    wrong = []
    for mod, targets in sorted(GRAPH.items()):
        src = _top(mod)
        for target in sorted(targets):
            dst = _top(target)
            if src == dst or (src, dst) in ALLOWED_UPWARD:
                continue
            lo, hi = _level(LAYERS, dst), _level(LAYERS, src)
            if lo is None or hi is None or lo > hi or (src, dst) in FORBIDDEN:
                wrong.append(f"{mod} imports {target}")
    assert wrong == []


def test_image_keeps_kafkas_order_inside():
    wrong = []
    for mod, targets in sorted(GRAPH.items()):
        parts = mod.split(".")
        if parts[:2] != ["kraftsim", "image"] or len(parts) < 3:
            continue  # the package's __init__ re-exports everything
        for target in sorted(targets):
            tparts = target.split(".")
            if tparts[:2] != ["kraftsim", "image"] or len(tparts) < 3 or tparts[2] == parts[2]:
                continue
            lo, hi = _level(IMAGE_LAYERS, tparts[2]), _level(IMAGE_LAYERS, parts[2])
            if lo is None or hi is None or lo >= hi:
                wrong.append(f"{mod} imports {target}")
    assert wrong == []


def test_other_packages_import_the_image_package_not_its_rooms():
    """Names other packages use are exported by kraftsim.image; the subpackages
    (components, writer, loader, publisher, verification) are its inside."""
    rooms = {"components", "writer", "loader", "publisher", "verification"}
    wrong = sorted(
        f"{mod} imports {target}"
        for mod, targets in GRAPH.items() if not mod.startswith("kraftsim.image")
        for target in targets
        if target.startswith("kraftsim.image.") and target.split(".")[2] in rooms
    )
    assert wrong == []


# ------------------------------------------------------------------------- public names between packages

#: Packages others use through their modules, not their `__init__`: protocol has no package
#: face (its modules are its API), and storage's package exports load lazily (PEP 562), which
#: a type checker sees as Any, so inside kraftsim its modules are imported by name.
MODULE_LIBRARIES = {"protocol", "storage"}

#: The front door imports the one module a command needs, inside the command, so that
#: `kraftsim --help` loads no command's dependencies (tests/reliability/test_startup_imports.py).
FRONT_DOOR = {"cli", "demo", "__main__"}

#: kraftsim.image's rooms are private; its own modules (pmap, intern, delta, synthetic, ...) are not.
IMAGE_ROOMS = {"components", "writer", "loader", "publisher", "verification"}

#: Imports into another package's modules that the rule allows for a reason, (module, module).
DEEP_IMPORTS_WITH_A_REASON = {
    ("conformance.kraftsim_side", "cli.main"): "differential cases run the kraftsim command as a user would",
    ("pipeline.snapshot_cost", "conformance.dist"): "kraftsim.conformance loads nothing at import: its modules are its API",
    ("pipeline.snapshot_cost", "conformance.snapshot_peer"): "kraftsim.conformance loads nothing at import: its modules are its API",
}

def _deep_imports() -> list[tuple[str, str]]:
    """(module, module of another package it imports) where the rule asks for the package."""
    out = []
    for mod, targets in sorted(GRAPH.items()):
        src = _top(mod)
        for target in sorted(targets):
            parts, dst = target.split("."), _top(target)
            if dst == src or len(parts) < 3 or src in FRONT_DOOR:
                continue
            if dst in MODULE_LIBRARIES or (dst == "image" and parts[2] not in IMAGE_ROOMS):
                continue
            out.append((mod.removeprefix("kraftsim."), target.removeprefix("kraftsim.")))
    return out


def test_packages_import_each_others_public_names_from_the_package():
    allowed = set(DEEP_IMPORTS_WITH_A_REASON)
    wrong = [f"{mod} imports {target}" for mod, target in _deep_imports() if (mod, target) not in allowed]
    assert wrong == [], "import the name from the package (export it there), or give a reason here"


def test_the_reasons_given_still_apply():
    assert sorted(set(DEEP_IMPORTS_WITH_A_REASON) - set(_deep_imports())) == []


def test_no_package_imports_another_packages_private_module():
    wrong = sorted(
        f"{mod} imports {target}" for mod, targets in GRAPH.items() for target in targets
        if _top(target) != _top(mod) and any(p.startswith("_") for p in target.split(".")[2:])
    )
    assert wrong == []


@pytest.mark.parametrize("package", ["controller", "scenario", "sim", "testing", "wire"])
def test_lazy_exports_are_listed_and_not_shadowed_by_a_module(package):
    """A lazy name equal to a submodule's would turn into the module once anything imports
    that module (the import binds it on the package), and `__all__` is what mypy reads."""
    import importlib

    front = importlib.import_module(f"kraftsim.{package}")
    lazy = set(front._MODULE_OF)
    rooms = {p.stem if p.suffix else p.name for p in (SOURCE / package).iterdir() if not p.name.startswith("_")}
    assert sorted(lazy & rooms) == []
    assert sorted(lazy - set(front.__all__)) == []


# ------------------------------------------------------------------------------ ARCHITECTURE.md

ARCHITECTURE = REPO / "ARCHITECTURE.md"


def _packages() -> list[str]:
    return sorted(
        str(p.parent.relative_to(REPO)) + "/" for p in SOURCE.rglob("__init__.py")
        if "__pycache__" not in p.parts
    )


def test_architecture_lists_every_package():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    missing = [p for p in _packages() if f"`{p}`" not in text]
    assert missing == [], f"ARCHITECTURE.md does not describe {missing}"


def test_architecture_lists_no_package_that_is_gone():
    """Every package it names exists, or is a layer of LAYERS not written yet."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = set(re.findall(r"`(kraftsim/[a-z_/]+/)`", text))
    planned = {name for layer in LAYERS for name in layer if not (SOURCE / name).exists()}
    gone = [p for p in named - set(_packages()) if p.split("/")[1] not in planned]
    assert sorted(gone) == []


@pytest.mark.parametrize("package", ["kraftsim.image", "kraftsim.controller", "kraftsim.storage"])
def test_package_exports_resolve(package):
    module = __import__(package, fromlist=["__all__"])
    assert all(hasattr(module, name) for name in module.__all__)


def test_sim_keeps_its_rooms_in_order():
    """kraftsim.sim's modules import only their own room and rooms below it (SIM_LAYERS);
    the two engines know nothing of each other."""
    wrong = []
    for mod, targets in sorted(GRAPH.items()):
        parts = mod.split(".")
        if parts[:2] != ["kraftsim", "sim"] or len(parts) < 3:
            continue  # the package's __init__ is its face
        for target in sorted(targets):
            tparts = target.split(".")
            if tparts[:2] != ["kraftsim", "sim"] or len(tparts) < 3 or tparts[2] == parts[2]:
                continue
            lo, hi = _level(SIM_LAYERS, tparts[2]), _level(SIM_LAYERS, parts[2])
            if lo is None or hi is None or lo > hi or (parts[2], tparts[2]) in SIM_FORBIDDEN:
                wrong.append(f"{mod} imports {target}")
    assert wrong == []


def test_sim_rooms_are_all_placed():
    """Every module or room directly under kraftsim/sim/ has a place in SIM_LAYERS, so the
    flat folder does not grow back."""
    sim = SOURCE / "sim"
    names = {p.stem for p in sim.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in sim.iterdir() if (p / "__init__.py").is_file()}
    assert sorted(names - set().union(*SIM_LAYERS)) == []
    assert len(names) <= 12, "kraftsim/sim/ is a face and a few rooms: put a new module in a room"



# ------------------------------------------------------------------------- no private reach

#: `x._name` allowed anyway, with why. Keys: an attribute name (anywhere) or a module path.
PRIVATE_REACH_ALLOWED = {
    "_SubParsersAction": "argparse: the subparsers' type has no public name (annotations of register())",
    "_actions": "argparse: a parser's actions are reachable only so (usage texts, Kafka's help layout)",
    "_replace": "namedtuple's public API (the underscore only keeps it apart from field names)",
    "kraftsim/pipeline/session.py": "pyspark: reusing or stopping a JVM gateway has no public API",
    "kraftsim/image/verification/digest.py": "sums a PMap's subtrees by identity (the cache of its digests)",
    "kraftsim/protocol/batch_io.py": "hands the fast path's own resolver back to the C extension",
}


def _own_private_names(tree: ast.AST) -> set[str]:
    """The underscore names the module's own classes define: methods, class attributes,
    `self._x = ...` assignments and __slots__ entries."""
    names: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
                if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in targets) and node.value:
                    names.update(c.value for c in ast.walk(node.value)
                                 if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return names


def private_reaches(source: str, module: str = "") -> list[str]:
    """Every `x._name` (one underscore, not a dunder) where `x` is not self/cls and no class of
    this module defines `_name`: an object's private attribute read from another module."""
    tree = ast.parse(source)
    own = _own_private_names(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if node.attr in own or node.attr in PRIVATE_REACH_ALLOWED:
            continue
        found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_reads_another_classes_private_attributes():
    wrong = []
    for path in sorted(SOURCE.rglob("*.py")):
        module = str(path.relative_to(REPO))
        if module not in PRIVATE_REACH_ALLOWED:
            wrong += private_reaches(path.read_text(encoding="utf-8"), module)
    assert wrong == []


def test_the_private_reach_check_finds_reaches():
    src = ("class A:\n    def __init__(self):\n        self._mine = 1\n    def same(self, other):\n"
           "        return other._mine\n\ndef f(seg, log):\n    return seg._parsed, log.segments._last, A()._mine\n")
    assert private_reaches(src) == [":8: seg._parsed", ":8: log.segments._last"]
    assert private_reaches("import argparse\nx: argparse._SubParsersAction\ny = t._replace(a=1)\n") == []


def test_the_private_reach_allow_list_stays_short_and_true():
    assert len(PRIVATE_REACH_ALLOWED) <= 10
    for key in PRIVATE_REACH_ALLOWED:
        if key.startswith("kraftsim/"):
            path = REPO / key
            assert path.is_file() and private_reaches(path.read_text(encoding="utf-8"), key), f"{key}: drop it"


def test_the_sim_api_document_names_every_public_simulation_method():
    """docs/sim-api.md (cited by kraftsim.sim.simulation) covers Simulation's public face."""
    from kraftsim.sim import Simulation

    text = (REPO / "docs" / "sim-api.md").read_text(encoding="utf-8")
    public = sorted(n for n in dir(Simulation) if not n.startswith("_"))
    assert [n for n in public if f"`{n}" not in text and f" `{n}(" not in text and f"{n}`" not in text] == []
    assert "docs/sim-api.md" in (SOURCE / "sim" / "simulation.py").read_text(encoding="utf-8")
