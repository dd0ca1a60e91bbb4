"""`kscaffold build` through the CLI: one-line errors; compile errors keep the compiler output."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold.cli import app
from tests.test_build import write_project

runner = CliRunner()


def test_not_a_project_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["build", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: ") and "build.toml" in result.output, result.output
    assert result.output.count("\n") == 1, result.output


def test_malformed_build_toml_names_the_key(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    build_toml = project / "build.toml"
    build_toml.write_text(build_toml.read_text().replace("version = 3", 'version = "3"'))
    result = runner.invoke(app, ["build", str(project)])
    assert result.exit_code == 1 and "general.version" in result.output, result.output


@pytest.mark.slow
def test_compile_error_shows_file_and_line_and_fails(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    (project / "torch-ext" / "torch_binding.cpp").write_text("int broken( {\n")
    result = runner.invoke(app, ["build", str(project), "--backend", "cpu", "--jobs", "1"])
    assert result.exit_code == 1, result.output
    assert "torch_binding.cpp:1:" in result.output and "error" in result.output, result.output
    assert not (project / "build").exists()
