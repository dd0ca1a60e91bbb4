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


def test_kscaffold_runs_without_the_test_extras() -> None:
    """`pip install .` brings no pytest: every module but the pytest plugin imports without it."""
    blocked = ("pytest", "_pytest", "hypothesis", "PIL")
    script = (
        "import pkgutil, runpy, sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None  # an import of it raises ImportError\n"
        "import scaffold\n"
        "for module in pkgutil.walk_packages(scaffold.__path__, 'scaffold.'):\n"
        "    if module.name not in ('scaffold.__main__', 'scaffold.testing.pytest_plugin'):\n"
        "        __import__(module.name)\n"
        "sys.argv = ['kscaffold', '--help']\n"
        "runpy.run_module('scaffold', run_name='__main__')\n"
    )
    assert "Usage: kscaffold" in run([sys.executable, "-c", script], cwd=REPO_ROOT)
