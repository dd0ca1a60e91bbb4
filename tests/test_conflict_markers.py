"""--conflict-markers writes real markers for each conflict it reports; the template text stays."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold.cli import app
from scaffold.errors import MergeConflictError
from scaffold.grow.addop import add_op
from scaffold.grow.evolve import update_project
from tests.helpers import snapshot
from tests.projects import commit_all, git, new_project

runner = CliRunner()


@pytest.fixture(scope="module")
def cpu_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_project(tmp_path_factory.mktemp("markers") / "my-kernel", backends=("cpu",))


@pytest.fixture
def fresh(cpu_project: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(cpu_project, tmp_path / "my-kernel", symlinks=True))


def _template_text(tmp_path: Path, cpu_project: Path, relative: str) -> bytes:
    """What add-op scale writes at ``relative`` in an untouched project."""
    clean = Path(shutil.copytree(cpu_project, tmp_path / "clean", symlinks=True))
    add_op(clean, "scale")
    return (clean / relative).read_bytes()


@pytest.mark.parametrize(
    "mine",
    [
        b"# my own tests of scale\n",
        b"no newline at the end",
        b"",
        b"import torch\n\n\ndef test_mine() -> None:\n    assert True\n",
    ],
)
def test_markers_on_a_file_the_user_created(
    fresh: Path, cpu_project: Path, tmp_path: Path, mine: bytes
) -> None:
    relative = "tests/test_scale.py"
    (fresh / relative).write_bytes(mine)
    commit_all(fresh, relative)
    before = snapshot(fresh)
    with pytest.raises(MergeConflictError, match="you created this file"):
        add_op(fresh, "scale")
    assert snapshot(fresh) == before

    result = runner.invoke(app, ["add-op", "scale", str(fresh), "--conflict-markers"])
    assert result.exit_code == 0, result.output
    assert "markers written" in result.output and relative in result.output
    text = (fresh / relative).read_bytes()
    assert text.startswith(b"<<<<<<< ") and b"\n=======\n" in text and b"\n>>>>>>> " in text
    assert mine.rstrip(b"\n") in text
    template = _template_text(tmp_path, cpu_project, relative)
    assert template in text  # the template's file is there, to keep or merge


def test_resolving_the_markers_for_the_template_leaves_update_nothing_to_bring(
    fresh: Path, cpu_project: Path, tmp_path: Path
) -> None:
    relative = "tests/test_scale.py"
    (fresh / relative).write_text("# mine\n")
    commit_all(fresh, relative)
    add_op(fresh, "scale", markers=True)
    (fresh / relative).write_bytes(_template_text(tmp_path, cpu_project, relative))
    commit_all(fresh, ".")
    report = update_project(fresh)
    assert report.conflicts == [] and report.written == []


def test_markers_on_a_file_the_user_deleted(fresh: Path) -> None:
    relative = "torch-ext/torch_binding.h"
    git(fresh, "rm", "--quiet", relative)
    git(fresh, "commit", "--quiet", "-m", "drop the header")
    with pytest.raises(MergeConflictError, match="you deleted this file"):
        add_op(fresh, "scale")
    report = add_op(fresh, "scale", markers=True)
    assert relative in [conflict.path for conflict in report.conflicts]
    text = (fresh / relative).read_text()
    assert text.startswith("<<<<<<< ") and "scale" in text and ">>>>>>> " in text


def test_markers_on_a_build_toml_key_conflict(fresh: Path) -> None:
    build = fresh / "build.toml"
    build.write_text(
        build.read_text() + '\n[kernel.scale_cpu]\nbackend = "cpu"\nsrc = ["csrc/cpu/mine.cpp"]\n'
    )
    commit_all(fresh, "build.toml")
    with pytest.raises(MergeConflictError, match="build.toml"):
        add_op(fresh, "scale")
    report = add_op(fresh, "scale", markers=True)
    assert "build.toml" in [conflict.path for conflict in report.conflicts]
    text = build.read_text()
    assert "<<<<<<< " in text and "csrc/cpu/mine.cpp" in text and "csrc/cpu/scale.cpp" in text
