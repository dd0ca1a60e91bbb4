"""Hostile input: every message printed literally, nothing lost, nothing leaked, no traceback.

Each test names the defect class it guards against; the numbers in the comments refer to the
items of the adversarial review these tests came from.
"""

from __future__ import annotations

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
