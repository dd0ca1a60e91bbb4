"""The package stays typed (mypy --strict) and lint-clean (ruff), checked like any other test."""

from __future__ import annotations

import shutil
import sys

import pytest

from tests.helpers import REPO_ROOT, run


def test_ruff_is_clean() -> None:
    if shutil.which("ruff") is None and not (REPO_ROOT / ".venv" / "bin" / "ruff").exists():
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    run([sys.executable, "-m", "ruff", "check", "scaffold", "tests"], cwd=REPO_ROOT)
    run([sys.executable, "-m", "ruff", "format", "--check", "scaffold", "tests"], cwd=REPO_ROOT)


def test_mypy_strict_is_clean() -> None:
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    run([sys.executable, "-m", "mypy"], cwd=REPO_ROOT)
