"""One vocabulary: what `check` demands, `build` accepts, and every module names the same way."""

from __future__ import annotations

import ast
from pathlib import Path

from scaffold import vocabulary
from scaffold.checks import check_project
from tests.test_build import fake_plan, write_project

SCAFFOLD = Path(__file__).resolve().parents[1] / "scaffold"


def test_every_header_check_demands_is_one_build_accepts(tmp_path: Path) -> None:
    project = write_project(tmp_path / "add-one")
    headers = [f"csrc/cpu/addend_impl{suffix}" for suffix in sorted(vocabulary.HEADER_SUFFIXES)]
    for header in headers:
        (project / header).write_text("#pragma once\n")
    # Included by a source: an unlisted header is then an error (Nix would leave it out).
    source = project / "csrc/cpu/add_one.cpp"
    includes = "".join(f'#include "{Path(header).name}"\n' for header in headers)
    source.write_text(includes + source.read_text())
    demanded = {f.location for f in check_project(project) if f.is_error}
    assert set(headers) <= demanded, sorted(demanded)
    build_toml = project / "build.toml"
    text = build_toml.read_text()
    listed = ", ".join(f'"{header}"' for header in headers)
    build_toml.write_text(text.replace('"csrc/cpu/addend.h"]', f'"csrc/cpu/addend.h", {listed}]'))
    assert not [str(f) for f in check_project(project) if f.location in headers]
    plan = fake_plan(project, "cpu")  # headers are listed for Nix, never compiled on their own
    assert [step.source for step in plan.steps] == [
        "torch-ext/torch_binding.cpp",
        "csrc/cpu/add_one.cpp",
    ]


def test_backends_and_suffixes_are_spelt_only_in_the_vocabulary() -> None:
    """No other module keeps its own tuple of backends or set of suffixes."""
    offenders = []
    for path in sorted(SCAFFOLD.rglob("*.py")):
        if path.name == "vocabulary.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Tuple | ast.Set | ast.List):
                words = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                if {"cuda", "cpu"} <= words or {".cu", ".cpp"} <= words or {".h", ".cuh"} <= words:
                    offenders.append(f"{path.relative_to(SCAFFOLD)}:{node.lineno}")
    assert not offenders, f"spell these with scaffold.vocabulary: {offenders}"
