"""The package's architecture: layers imported only downwards, and no import circle anywhere.

Both read every import statement, those inside functions and under ``TYPE_CHECKING`` included,
so a circle hidden in a function-level import fails here as a module-level one would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parent.parent


def test_layers_contract_is_kept() -> None:
    """pyproject.toml's import-linter contract: the folder tree is the architecture."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout, result.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_circles() -> None:
    graph = grimp.build_graph("scaffold", cache_dir=None)
    assert _cycles(graph) == []


def test_cycle_finder_sees_a_function_level_circle(tmp_path: Path, monkeypatch) -> None:
    """The check above can fail: a circle closed only inside a function is found."""
    package = tmp_path / "circular_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circular_pkg.b import B\nA = 1\n")
    (package / "b.py").write_text("B = 2\n\ndef late():\n    from circular_pkg.a import A\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("circular_pkg", cache_dir=None)
    assert _cycles(graph) == [["circular_pkg.a", "circular_pkg.b"]]


def test_public_entry_points_import_from_the_package() -> None:
    import scaffold

    for name in scaffold.__all__:
        assert callable(getattr(scaffold, name)), name
