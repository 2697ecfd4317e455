"""The map of ``docs/architecture.md`` held by the code: what each package imports, read from the source without running it."""

from __future__ import annotations

import ast
from pathlib import Path

from streaming.engine import LAYERS

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "streaming" / "engine"


def _imports(path: Path) -> list[tuple[str, bool, int]]:
    """``(module, for type checking only, line)`` of every ``from ... import`` of ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text())
    typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test) for node in ast.walk(block)}
    package = list(path.relative_to(ROOT).parent.parts)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.append((module, id(node) in typing_only, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, id(node) in typing_only, node.lineno) for alias in node.names)
    return found


def _layer(module: str) -> str | None:
    """The engine package ``module`` lies in (``None`` for the engine's shared modules and anything outside the engine)."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["streaming", "engine"] and len(parts) > 2 and (ENGINE / parts[2]).is_dir() else None


def test_every_engine_package_is_a_layer_and_imports_only_those_below_it():
    assert sorted(LAYERS) == sorted(path.name for path in ENGINE.iterdir() if (path / "__init__.py").is_file())
    upward = []
    for path in sorted(ENGINE.rglob("*.py")):
        own = _layer(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for module, typing_only, line in _imports(path):
            other = _layer(module)
            if other is None or typing_only:
                continue
            if own is None or LAYERS.index(other) > LAYERS.index(own):
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert upward == []


def test_nothing_under_streaming_imports_streamlit():
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "streaming").rglob("*.py"))
        for module, _, line in _imports(path)
        if module.split(".")[0] == "streamlit"
    ]
    assert found == []


def test_only_the_front_ends_import_the_application_layer():
    """``streaming/app/`` sits above the engine, the analysis, the charts, Show code and reports: none of them imports it."""
    below = [ROOT / "streaming" / name for name in ("engine", "analysis", "charts", "export.py", "report.py")]
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for place in below
        for path in sorted([place] if place.suffix else place.rglob("*.py"))
        for module, _, line in _imports(path)
        if module.startswith("streaming.app")
    ]
    assert found == []
