"""A hand edit of .copier-answers.yml is applied by update, or named as why nothing happened."""

from __future__ import annotations

import re
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold.cli import app
from scaffold.errors import KscaffoldError
from scaffold.grow.evolve import update_project
from scaffold.project.answers import load_answers
from tests.projects import git, new_project

runner = CliRunner()
ANSWERS = ".copier-answers.yml"


def _edit(old: str, new: str) -> Callable[[Path], None]:
    def change(project: Path) -> None:
        path = project / ANSWERS
        text = path.read_text()
        assert old in text, text
        path.write_text(text.replace(old, new, 1))

    return change


EDITS = {
    "a backend": _edit('backends: ["cpu"]', 'backends: ["cpu", "cuda"]'),
    "an op": _edit(
        '{"name": "relu", "kind": "relu"}',
        '{"name": "relu", "kind": "relu"}, {"name": "scale", "kind": "skeleton"}',
    ),
    "the license": _edit('license: "apache-2.0"', 'license: "mit"'),
}


def _build_toml(project: Path) -> dict[str, object]:
    return tomllib.loads((project / "build.toml").read_text())


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    root = tmp_path_factory.mktemp("answers")
    return {
        use_git: new_project(root / str(use_git) / "my-kernel", backends=("cpu",), git=use_git)
        for use_git in (True, False)
    }


def _copy(templates: dict[bool, Path], use_git: bool, tmp_path: Path) -> Path:
    return Path(shutil.copytree(templates[use_git], tmp_path / "my-kernel", symlinks=True))


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_update_applies_a_hand_edit_of_the_answers(
    templates: dict[bool, Path], tmp_path: Path, edit: str
) -> None:
    project = _copy(templates, True, tmp_path)
    EDITS[edit](project)
    git(project, "commit", "--quiet", "-am", f"answers: {edit}")
    report = update_project(project)
    assert report.written, "an edit of the answers must change the project"
    config = _build_toml(project)
    general = config["general"]
    kernels = config["kernel"]
    assert isinstance(general, dict) and isinstance(kernels, dict)
    if edit == "a backend":
        assert "cuda" in general["backends"] and "relu_cuda" in kernels
        assert (project / "csrc" / "cuda" / "relu.cu").is_file()
    elif edit == "an op":
        assert "scale_cpu" in kernels and (project / "tests" / "test_scale.py").is_file()
    else:
        assert general["license"] == "mit"
    assert [op.name for op in load_answers(project).ops][0] == "relu"
    git(project, "add", "-A")
    git(project, "commit", "--quiet", "-m", "applied")
    assert update_project(project).written == []  # applied once, then up to date


@pytest.mark.parametrize("edit", ["a backend", "an op"])
def test_update_without_a_baseline_names_why_nothing_happened(
    templates: dict[bool, Path], tmp_path: Path, edit: str
) -> None:
    project = _copy(templates, False, tmp_path)
    EDITS[edit](project)
    result = runner.invoke(app, ["update", str(project)])
    assert result.exit_code == 1, result.output
    assert "Already up to date" not in result.output
    assert "disagree" in result.output and ANSWERS in result.output, result.output


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('"kind": "relu"}', '"kind": "nosuch"}', "ops[0].kind"),
        ('"kind": "relu"}', '"kind": ["relu"]}', "ops[0].kind"),
        ('[{"name": "relu", "kind": "relu"}]', '["relu"]', "ops[0]"),
    ],
)
def test_an_answer_the_template_cannot_render_is_one_line_naming_the_key(
    templates: dict[bool, Path], tmp_path: Path, old: str, new: str, key: str
) -> None:
    project = _copy(templates, True, tmp_path)
    _edit(old, new)(project)
    git(project, "commit", "--quiet", "-am", "bad answer")
    with pytest.raises(KscaffoldError, match=re.escape(f"{ANSWERS}: {key} ")):
        update_project(project)
    result = runner.invoke(app, ["update", str(project)])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
