"""No project file is read through a link leading out; no src path with a control character."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import tomlkit

from scaffold.checks import check_project
from scaffold.compiler import build_project
from scaffold.errors import KscaffoldError
from scaffold.testing.project_tests import prepare_project_tests

SECRET = "kscaffold-secret-never-read-0123"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(f"{SECRET}\n")
    (folder / "relu.cpp").write_text(f"// {SECRET}\n")
    return folder


def _absolute(project: Path, outside: Path, name: str) -> None:
    (project / name).symlink_to(outside / "secret.txt")


def _relative(project: Path, outside: Path, name: str) -> None:
    (project / name).symlink_to(os.path.relpath(outside / "secret.txt", project))


def _chain(project: Path, outside: Path, name: str) -> None:
    (project / "hop.txt").symlink_to(outside / "secret.txt")
    (project / name).symlink_to("hop.txt")


LINKS: dict[str, Callable[[Path, Path, str], None]] = {
    "absolute": _absolute,
    "relative": _relative,
    "a chain": _chain,
}


@pytest.mark.parametrize("link", sorted(LINKS))
def test_kscaffold_test_never_reads_requirements_through_a_link_out(
    project: Path, outside: Path, link: str
) -> None:
    requirements = project / "requirements-dev.txt"
    requirements.unlink()
    LINKS[link](project, outside, "requirements-dev.txt")
    with pytest.raises(KscaffoldError, match="requirements-dev.txt is a link that leads out") as e:
        prepare_project_tests(project)
    assert SECRET not in str(e.value)


@pytest.mark.parametrize("link", sorted(LINKS))
def test_a_build_toml_linked_from_outside_is_refused(
    project: Path, outside: Path, link: str
) -> None:
    (outside / "secret.txt").write_text((project / "build.toml").read_text())
    (project / "build.toml").unlink()
    LINKS[link](project, outside, "build.toml")
    with pytest.raises(KscaffoldError, match="build.toml is a link that leads out"):
        build_project(project)


def _set_src(project: Path, entries: list[str]) -> None:
    path = project / "build.toml"
    document = tomlkit.parse(path.read_text())
    document["kernel"]["relu_cpu"]["src"] = entries  # type: ignore[index]
    path.write_text(tomlkit.dumps(document))


def _src_errors(project: Path) -> list[str]:
    return [
        f"{finding.location}: {finding.message}"
        for finding in check_project(project)
        if finding.is_error and "src entry" in finding.message
    ]


def test_check_names_each_source_linked_out_of_the_project(project: Path, outside: Path) -> None:
    cpu = project / "csrc" / "cpu"
    (cpu / "relu.cpp").unlink()
    (cpu / "relu.cpp").symlink_to(outside / "relu.cpp")  # a file linked from outside
    (project / "csrc" / "linked").symlink_to(outside, target_is_directory=True)  # a folder
    (cpu / "gone.cpp").symlink_to(cpu / "nowhere.cpp")  # dangling
    (project / "csrc" / "relu.h").rename(project / "csrc" / "relu_real.h")
    (project / "csrc" / "relu.h").symlink_to("relu_real.h")  # inside: fine
    _set_src(
        project,
        ["csrc/cpu/relu.cpp", "csrc/linked/relu.cpp", "csrc/cpu/gone.cpp", "csrc/relu.h"],
    )
    errors = _src_errors(project)
    assert any("'csrc/cpu/relu.cpp' is a link that leads out" in e for e in errors), errors
    assert any("'csrc/linked/relu.cpp' is a link that leads out" in e for e in errors), errors
    assert any("'csrc/cpu/gone.cpp' is a dangling link" in e for e in errors), errors
    assert not any("csrc/relu.h" in e for e in errors), errors
    assert all(SECRET not in e for e in errors)


@pytest.mark.parametrize(
    "entry",
    ["csrc/cpu/relu.cpp\n", "csrc/cpu/re\tlu.cpp", "csrc/cpu/relu.cpp\r", "csrc/cpu/\x1b[31m.cpp"],
)
def test_a_src_path_with_a_control_character_is_refused(project: Path, entry: str) -> None:
    _set_src(project, ["csrc/cpu/relu.cpp", entry])
    errors = _src_errors(project)
    assert any("holds a control character" in e and repr(entry) in e for e in errors), errors
    with pytest.raises(KscaffoldError, match="holds a control character") as caught:
        build_project(project, backend="cpu")
    assert "\n" not in str(caught.value)
    assert not (project / ".kscaffold" / "build").exists()  # refused before ninja
