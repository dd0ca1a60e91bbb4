"""Fuzzing the command line: whatever the input, one line and a documented exit, nothing leaked.

The documented exits: 0 success, 1 an error kscaffold explains, 2 a bad name or option (kscaffold's
or the command line parser's). Every run happens in a fresh sandbox next to a folder of bystander
files; only the command's target folder may change.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from scaffold.cli import app
from tests.helpers import no_hang, snapshot
from tests.projects import copy_project

runner = CliRunner()

_HOSTILE_CHARS = "abz09-_. []/\\[/]é字🙂\t'\"$;`*?~"
hostile_text = st.text(_HOSTILE_CHARS, min_size=0, max_size=24)
names = st.one_of(
    st.from_regex(r"[a-z][a-z0-9]{0,6}(-[a-z0-9]{1,6}){0,2}", fullmatch=True),
    hostile_text,
    st.sampled_from(["[/x]", "[general]", "a--b", "x" * 97, "my-kernel\n", "-x", "--help"]),
)
components = st.text("ab []é字🙂-_.", min_size=1, max_size=10).filter(
    lambda part: part not in {".", ".."}
)
relative_paths = st.one_of(
    st.lists(components, min_size=1, max_size=3).map("/".join),
    st.sampled_from(["a[/x]b", "[general]/k", "[bold]x[/bold]", "sp ace/é字🙂"]),
)
option_values = st.one_of(
    hostile_text,
    st.sampled_from(["cuda", "cpu", "cuda,cpu", "rocm", ",", "img2gray", "mit", "wtfpl"]),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
)


def _bystanders(root: Path) -> None:
    (root / "outside" / "[nested]").mkdir(parents=True)
    (root / "outside" / "notes.txt").write_text("mine\n")
    (root / "outside" / "[nested]" / "README.md").write_text("precious\n")


def _run(args: list[str]) -> tuple[int, str]:
    with no_hang(120):
        result = runner.invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{args!r} raised {result.exception!r}\n{result.output}"
    )
    assert "Traceback" not in result.output, result.output
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output)
    if result.exit_code != 0:
        assert "Error" in result.output or "Usage" in result.output, (args, result.output)
    return result.exit_code, result.output


def _outside(root: Path, target: Path) -> dict[str, bytes]:
    return {
        path: data
        for path, data in snapshot(root, exclude=()).items()
        if not (root / path).is_relative_to(target)
    }


@settings(max_examples=30, deadline=None)
@given(
    name=names,
    dest=relative_paths,
    backends=st.none() | option_values,
    example=st.none() | option_values,
    owner=st.none() | option_values,
    license_=st.none() | option_values,
    version=st.none() | option_values,
    force=st.booleans(),
    existing=st.booleans(),
)
@example("[/x]", "k", None, None, None, None, None, False, False)
@example("my-kernel", "a[/x]b", None, None, None, None, None, False, True)
@example("a--b", "k", "cuda,[/]", "[general]", "o\n", "mit", "99999999999999999999", True, True)
def test_new_with_any_input(
    name: str,
    dest: str,
    backends: str | None,
    example: str | None,
    owner: str | None,
    license_: str | None,
    version: str | None,
    force: bool,
    existing: bool,
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        _bystanders(root)
        target = root / "sandbox" / dest
        if existing:
            target.mkdir(parents=True)
            (target / "README.md").write_text("mine\n")
        before = _outside(root, target)
        args = ["new", name, "--dest", str(target), "--no-git"]
        for option, value in (
            ("--backends", backends),
            ("--example", example),
            ("--owner", owner),
            ("--license", license_),
            ("--version", version),
        ):
            if value is not None:
                args += [option, value]
        if force:
            args.append("--force")
        code, output = _run(args)
        assert _outside(root, target) == before, output
        if code != 0 and existing:
            assert snapshot(target) == {"README.md": b"mine\n"}, output


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    command=st.sampled_from(
        [
            ["check"],
            ["clean", "--dry-run"],
            ["clean"],
            ["clean", "--all"],
            ["update"],
            ["add-backend"],
            ["add-op"],
            ["add-op", "scale", "--like"],
            ["build", "--jobs"],
            ["build", "--backend"],
            ["build", "--cuda-archs"],
        ]
    ),
    folder=relative_paths,
    value=option_values,
    is_project=st.booleans(),
)
@example(["check"], "a[/x]b", "", False)
@example(["clean", "--dry-run"], "[general]/k", "", True)
def test_project_commands_with_any_input(
    template_project: Path, command: list[str], folder: str, value: str, is_project: bool
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        _bystanders(root)
        target = root / "sandbox" / folder
        if is_project:
            target.parent.mkdir(parents=True)
            copy_project(template_project, target)
        else:
            target.mkdir(parents=True)
        before = _outside(root, target)
        args = [*command]
        if command[0] == "build":
            if is_project and command[1] != "--jobs" and value in {"cpu", "cuda"}:
                value = "rocm"  # a real compile is the slow tier's business
            if is_project and command[1] == "--jobs":
                value = "0"
            args.append(value)
            if is_project and command[1] == "--cuda-archs":
                args += ["--backend", "cpu"]  # refused before anything compiles
        if command[0] in {"add-backend", "add-op"}:
            args.append(value)
        code, output = _run([*args, str(target)])
        assert _outside(root, target) == before, output
