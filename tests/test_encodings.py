"""No command crashes on its own output in an ASCII or latin-1 locale, or on a non-UTF-8 folder."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from scaffold.cli.build_progress import ConsoleBuildReporter
from scaffold.compiler import BuildResult

ROOT = Path(__file__).resolve().parents[1]


def kscaffold(
    *args: str | bytes, cwd: Path, encoding: str | None
) -> subprocess.CompletedProcess[bytes]:
    environment = {**os.environ, "LANG": "C", "LC_ALL": "C", "PYTHONPATH": str(ROOT)}
    environment.pop("PYTHONUTF8", None)
    if encoding is not None:
        environment["PYTHONIOENCODING"] = encoding
    else:
        environment.pop("PYTHONIOENCODING", None)
    return subprocess.run(
        [sys.executable, "-m", "scaffold", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        check=False,
        timeout=300,
    )


def _no_crash(result: subprocess.CompletedProcess[bytes]) -> str:
    output = (result.stdout + result.stderr).decode("utf-8", errors="replace")
    assert "Traceback" not in output and "UnicodeEncodeError" not in output, output
    assert "UnicodeDecodeError" not in output, output
    return output


# Folder names: plain non-ASCII, and bytes that are not UTF-8 at all.
FOLDERS: dict[str, bytes] = {"accented": "café".encode(), "not-utf-8": b"caf\xe9-\xff"}


@pytest.mark.parametrize(
    ("encoding", "folder"),
    [("ascii", "accented"), ("ascii", "not-utf-8"), ("latin-1", "not-utf-8"), (None, "not-utf-8")],
)
def test_commands_survive_the_locale_and_the_folder_name(
    tmp_path: Path, encoding: str | None, folder: str
) -> None:
    parent = os.path.join(os.fsencode(tmp_path), FOLDERS[folder])
    os.mkdir(parent)
    project = os.path.join(parent, b"my-kernel")
    result = kscaffold(
        "new", "my-kernel", "--backends", "cpu", "--dest", project, cwd=tmp_path, encoding=encoding
    )
    output = _no_crash(result)
    assert result.returncode == 0, output
    for args in (
        ("check", project),
        ("add-op", "scale", project),
        ("update", project),
        ("clean", project),
        ("check", os.path.join(parent, b"missing")),
        ("add-op", "tanh", project),
    ):
        result = kscaffold(*args, cwd=tmp_path, encoding=encoding)
        output = _no_crash(result)
        assert result.returncode in (0, 1, 2), output  # 2: an invalid argument
        assert output.strip(), args


@pytest.mark.parametrize(
    ("encoding", "arrow", "mark"),
    [("ascii", "->", "ok"), ("latin-1", "->", "ok"), ("utf-8", "→", "✓")],
)
def test_build_progress_falls_back_to_ascii_symbols(
    tmp_path: Path, encoding: str, arrow: str, mark: str
) -> None:
    buffer = io.BytesIO()
    stream = io.TextIOWrapper(buffer, encoding=encoding)
    console = Console(file=stream, markup=False, highlight=False, emoji=False, width=200)
    reporter = ConsoleBuildReporter(console, console)
    reporter.variant_started("cpu", "torch-cpu")
    reporter.variant_finished(
        BuildResult("cpu", "torch-cpu", tmp_path, "_ops_abc", (), ("a.cpp",), True)
    )
    reporter.close()
    stream.flush()
    text = buffer.getvalue().decode(encoding)
    assert f"Building cpu {arrow} build/torch-cpu/" in text, text
    assert f"  {mark} torch-cpu" in text, text
