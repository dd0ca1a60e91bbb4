"""`kscaffold new` end to end through the CLI, including every bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold._version import __version__
from scaffold.cli import app
from scaffold.grow import create
from tests.helpers import run, snapshot

runner = CliRunner()


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def test_version_is_the_one_recorded_in_new_projects(tmp_path: Path) -> None:
    code, output = invoke("--version")
    assert code == 0 and output.strip() == f"kscaffold {__version__}"
    invoke("new", "my-kernel", "--dest", tmp_path / "my-kernel", "--no-git")
    answers = (tmp_path / "my-kernel" / ".copier-answers.yml").read_text()
    assert f'_kscaffold_version: "{__version__}"' in answers


def test_new_creates_a_committed_project(tmp_path: Path) -> None:
    code, output = invoke("new", "my-kernel", "--dest", tmp_path / "my-kernel")
    assert code == 0, output
    project = tmp_path / "my-kernel"
    assert (project / "build.toml").is_file()
    # Default backends: both, so the same project tests green with and without a GPU.
    assert (project / "csrc" / "cuda" / "relu.cu").is_file()
    assert (project / "csrc" / "cpu" / "relu.cpp").is_file()
    assert 'backends = ["cuda", "cpu"]' in (project / "build.toml").read_text()
    assert run(["git", "status", "--porcelain"], cwd=project) == ""
    assert run(["git", "log", "--oneline"], cwd=project).count("\n") == 1


def test_new_defaults_to_a_folder_named_after_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = invoke("new", "my-kernel", "--no-git")
    assert code == 0, output
    assert (tmp_path / "my-kernel" / "build.toml").is_file()
    assert not (tmp_path / "my-kernel" / ".git").exists()


BAD_INPUTS = [
    (["My_Kernel"], "Invalid kernel name 'My_Kernel'.*try 'my-kernel'"),
    (["kernel_"], "Invalid kernel name"),
    (["my-kernel", "--backends", "cuda,rocm"], "Unsupported backend 'rocm'"),
    (["my-kernel", "--backends", ","], "No backend given"),
    (["my-kernel", "--example", "matmul"], "Unknown example 'matmul'.*img2gray"),
    (["my-kernel", "--license", "wtfpl"], "Unknown license 'wtfpl'"),
    (["my-kernel", "--owner", "bad owner"], "Invalid Hub owner 'bad owner'"),
    (["my-kernel", "--version", "0"], "Invalid version 0"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUTS, ids=[a[0][-1] for a in BAD_INPUTS])
def test_bad_input_is_refused_with_one_line_and_nothing_written(
    tmp_path: Path, args: list[str], message: str
) -> None:
    code, output = invoke("new", *args, "--dest", tmp_path / "out")
    assert code == 2, output
    assert output.startswith("Error: ") and output.count("\n") == 1, output
    assert pytest.importorskip("re").search(message, output), output
    assert list(tmp_path.iterdir()) == []


def test_existing_non_empty_destination_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    code, output = invoke("new", "my-kernel", "--dest", tmp_path)
    assert code == 1, output
    assert "already exists and is not empty" in output and "--force" in output
    assert snapshot(tmp_path) == {"notes.txt": b"mine"}


def test_destination_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("x")
    code, output = invoke("new", "my-kernel", "--dest", tmp_path / "taken")
    assert code == 1 and "is not a folder" in output, output


def test_force_writes_into_an_existing_folder_and_keeps_other_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    code, output = invoke("new", "my-kernel", "--dest", tmp_path, "--force", "--no-git")
    assert code == 0, output
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert (tmp_path / "build.toml").is_file()


def test_empty_existing_destination_is_used(tmp_path: Path) -> None:
    code, output = invoke("new", "my-kernel", "--dest", tmp_path, "--no-git")
    assert code == 0, output
    assert (tmp_path / "flake.nix").is_file()


def test_failure_while_rendering_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_render(answers: object, destination: Path) -> None:
        destination.mkdir(parents=True)
        (destination / "half-written").write_text("x")
        raise create.KscaffoldError("the template is broken")

    monkeypatch.setattr(create, "render", broken_render)
    code, output = invoke("new", "my-kernel", "--dest", tmp_path / "a" / "b")
    assert code == 1 and "the template is broken" in output, output
    assert list(tmp_path.iterdir()) == []


def test_failure_after_writing_removes_what_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_git(repo: Path, message: str, paths: object = None) -> None:
        raise create.KscaffoldError("git exploded")

    monkeypatch.setattr(create.gitutil, "init_and_commit", broken_git)
    (tmp_path / "empty").mkdir()
    for destination in (tmp_path / "new", tmp_path / "empty"):
        code, output = invoke("new", "my-kernel", "--dest", destination)
        assert code == 1 and "git exploded" in output, output
    assert snapshot(tmp_path) == {} and [p.name for p in tmp_path.iterdir()] == ["empty"]


def test_new_inside_another_repository_gets_its_own(tmp_path: Path) -> None:
    run(["git", "init", "-q"], cwd=tmp_path)
    code, output = invoke("new", "my-kernel", "--dest", tmp_path / "kernels" / "my-kernel")
    assert code == 0, output
    project = tmp_path / "kernels" / "my-kernel"
    assert run(["git", "rev-parse", "--show-toplevel"], cwd=project).strip() == str(project)
    assert run(["git", "status", "--porcelain"], cwd=project) == ""
