"""The package's layers point down: no module imports one above it, at module level or inside a
function, and no import cycle exists anywhere (read from the source, nothing imported)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("linbandit_host", "agents", "envs_data", "linbandit_gym")

#: Bottom to top (docs/contracts.md, "Layers"); a module belongs to the longest prefix listed.
LAYERS = [
    ("linbandit_host",),  # memory limit, warnings at the user's line
    ("agents", "envs_data"),  # agents, sketches, designs; data
    (
        "linbandit_gym.envs",
        "linbandit_gym.vector",
        "linbandit_gym.registration",
        "linbandit_gym._version",
    ),
    (
        "linbandit_gym.specs",
        "linbandit_gym.registry",
        "linbandit_gym.arguments",
    ),  # names users type, argument checks
    (
        "linbandit_gym.loop",
        "linbandit_gym.feedback",
        "linbandit_gym.batched",  # the loop and its
        "linbandit_gym.evaluate",
        "linbandit_gym.threads",
        "linbandit_gym.records",  # records
        "linbandit_gym.plots",
        "linbandit_gym.text",
    ),
    ("linbandit_gym.experiments",),  # configs, planner, runner, figures, report
    ("linbandit_gym.cli", "linbandit_gym.__main__"),  # the `linbandit` command
]


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Project module -> the project modules it imports, anywhere in its source."""
    graph = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                names = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for name in names:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    targets.add(name)
        graph[module] = targets
    return graph


def _layer(module: str) -> int:
    best, level = -1, None
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), i
    if module == "linbandit_gym":
        return 4  # the package's face: run, make_vec, the env ids (the loop's layer)
    assert level is not None, f"{module} is in no layer: add it to LAYERS"
    return level


def test_every_import_points_down_or_sideways():
    graph = _imports(_modules())
    upward = [
        f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
        for m, targets in graph.items()
        for t in sorted(targets)
        if _layer(t) > _layer(m)
    ]
    assert not upward, "\n".join(upward)


def test_no_module_imports_the_package_root():
    """``linbandit_gym/__init__`` imports the layers to offer ``run`` and the env ids; a module
    inside importing it back (``import linbandit_gym``, ``from .. import x``) would close a
    cycle."""
    graph = _imports(_modules())
    assert not [
        m for m, targets in graph.items() if "linbandit_gym" in targets and m != "linbandit_gym"
    ]


def test_there_is_no_import_cycle():
    graph = _imports(_modules())
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    # a package importing its own submodule, which imports nothing of it back, is no cycle; two
    # modules each importing the other are
    assert not cycles, cycles
