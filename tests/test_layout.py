"""The package's layout by role: imports run one way, from experiments down to layers.

    experiments, analysis, teaching  ->  models, tasks, train, decoding  ->  layers  ->  core

Models never import a task and tasks never import a model; the book's tooling (coursekit) is
never imported by the package students use.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import attention_course
import pytest

PACKAGE = Path(attention_course.__file__).parent
MODELS = sorted(f"attention_course.models.{p.stem}" for p in (PACKAGE / "models").glob("[!_]*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The absolute names of the modules ``path`` imports (relative imports resolved)."""
    name = _module_name(path)
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


IMPORTS = {_module_name(p): _imports(p) for p in PACKAGE.rglob("*.py")}


@pytest.mark.parametrize("layer, forbidden", [
    ("attention_course.layers", ("models", "tasks", "experiments", "analysis", "train", "decoding", "teaching")),
    ("attention_course.models", ("tasks", "experiments", "analysis", "teaching")),
    ("attention_course.tasks", ("models", "experiments", "analysis", "teaching", "layers")),
    ("attention_course.decoding", ("models", "tasks", "experiments")),
    ("attention_course.train", ("models", "tasks", "experiments")),
])
def test_imports_run_one_way(layer, forbidden):
    for module, imported in IMPORTS.items():
        if module == layer or module.startswith(layer + "."):
            bad = sorted(i for i in imported for f in forbidden if i.startswith(f"attention_course.{f}"))
            assert not bad, f"{module} imports {bad}"


def test_the_package_never_imports_the_book_tooling():
    bad = sorted(m for m, imported in IMPORTS.items() if any(i.split(".")[0] == "coursekit" for i in imported))
    assert not bad


def test_each_model_module_alone_loads_no_task():
    """Import each model module by itself in a fresh interpreter and list what it loaded."""
    probe = ("import importlib, sys; importlib.import_module(sys.argv[1]); "
             "print(' '.join(m for m in sys.modules if m.startswith(('attention_course.tasks', "
             "'attention_course.experiments'))))")
    runs = {m: subprocess.Popen([sys.executable, "-c", probe, m], stdout=subprocess.PIPE, text=True) for m in MODELS}
    assert len(MODELS) >= 9
    for module, run in runs.items():
        out, _ = run.communicate(timeout=120)
        assert run.returncode == 0, module
        assert out.split() == [], f"{module} loads {out.split()}"
