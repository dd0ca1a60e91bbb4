"""Hostile input: every message printed literally, nothing lost, nothing leaked, no traceback.

Each test names the defect class it guards against; the numbers in the comments refer to the
items of the adversarial review these tests came from.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold.cli import app

runner = CliRunner()


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


# item 14: messages are text, never rich markup.
@pytest.mark.parametrize("folder", ["a[/x]b", "[/]", "[bold]x[/bold]", "a[link=x]b"])
def test_messages_print_bracketed_paths_literally(tmp_path: Path, folder: str) -> None:
    path = tmp_path / folder
    path.mkdir(parents=True)
    for command in ("check", "clean", "build", "update"):
        code, output = invoke(command, path)
        assert code == 1, output
        assert output.startswith("Error: ") and output.count("\n") == 1, output
        assert str(path) in output, output


def test_messages_keep_toml_table_names(project: Path, tmp_path: Path) -> None:
    text = (project / "build.toml").read_text()
    start = text.index("[kernel.")
    (project / "build.toml").write_text(text[:start] + "kernel = 1\n")
    code, output = invoke("build", project)
    assert code == 1, output
    assert "build.toml: [torch] has unknown key" in output, output
    code, output = invoke("check", tmp_path / "[general]")
    assert code == 1 and "[general]" in output, output


# item 10: one build of a project at a time; the second waits for the first.
def test_concurrent_builds_take_turns_on_the_project_lock(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scaffold.compiler import BuildReporter, api

    notes: list[str] = []
    held: list[float] = []

    class Reporter(BuildReporter):
        def note(self, message: str) -> None:
            notes.append(message)

    def locked_build(*args: object) -> list[api.BuildResult]:
        held.append(time.monotonic())
        return []

    monkeypatch.setattr(api, "_build_locked", locked_build)
    (project / ".kscaffold").mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, filelock\n"
            "with filelock.FileLock(sys.argv[1]):\n"
            "    print('held', flush=True); time.sleep(1.5)\n",
            str(project / ".kscaffold" / api.LOCK_NAME),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    started = time.monotonic()

    api.build_project(project, reporter=Reporter())

    holder.wait(timeout=30)
    assert held and held[0] - started > 0.5, "the build did not wait for the lock"
    assert any("Waiting for another kscaffold build" in note for note in notes), notes


# item 15 (build side): what kscaffold build writes is in the way: one line, nothing changed.
@pytest.mark.parametrize("blocker", [".kscaffold-file", "build-file", "variant-link"])
def test_build_refuses_a_file_or_link_where_its_folders_go(
    project: Path, tmp_path: Path, blocker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scaffold.compiler import api

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine\n")
    if blocker == ".kscaffold-file":
        (project / ".kscaffold").write_text("mine\n")
    elif blocker == "build-file":
        (project / "build").write_text("mine\n")
    else:
        variant = api.variant_name(api.find_torch(tmp_path / "torch-cache"), "cpu")
        (project / "build").mkdir()
        (project / "build" / variant).symlink_to(outside)
    monkeypatch.setattr(api, "run_ninja", lambda *a, **k: pytest.fail("got past the check"))
    before = sorted(p.name for p in outside.iterdir())

    code, output = invoke("build", project, "--backend", "cpu")

    assert code == 1 and output.count("\n") == 1 and "is in the way" in output, output
    assert sorted(p.name for p in outside.iterdir()) == before
