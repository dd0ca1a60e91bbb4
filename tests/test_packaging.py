"""`pip install .` alone is enough: the wheel carries the template."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from scaffold._version import __version__
from tests.helpers import REPO_ROOT, run


def test_wheel_ships_the_template_and_the_console_script(tmp_path: Path) -> None:
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path, REPO_ROOT],
        cwd=tmp_path,
    )
    (wheel,) = tmp_path.glob("kscaffold-*.whl")
    assert wheel.name.startswith(f"kscaffold-{__version__}-"), "the version has one source"
    names = set(zipfile.ZipFile(wheel).namelist())
    template_files = {
        f"scaffold/_template/{path.relative_to(REPO_ROOT / 'template').as_posix()}"
        for path in (REPO_ROOT / "template").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert template_files <= names, sorted(template_files - names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "kscaffold = scaffold.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
