"""Shared test helpers: tree snapshots and subprocesses whose output ends up in assertions."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = REPO_ROOT / "examples"


def snapshot(root: Path, *, exclude: Sequence[str] = (".git",)) -> dict[str, bytes]:
    """Every file under ``root`` (relative POSIX path → bytes), skipping the ``exclude`` folders."""
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0] in exclude or not path.is_file():
            continue
        files[relative.as_posix()] = path.read_bytes()
    return files


def run(args: Sequence[str | Path], cwd: Path | None = None, **kwargs: object) -> str:
    """Run a command, failing the test with its full output if it exits non-zero."""
    result = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        **kwargs,  # type: ignore[call-overload]
    )
    assert result.returncode == 0, (
        f"{' '.join(map(str, args))} exited {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )
    return str(result.stdout)


def run_with_kernel(project: Path, body: str, backend: str = "cpu") -> str:
    """Run ``body`` in a fresh Python process and return its stdout.

    ``body`` finds ``torch``, ``json`` and ``kernel``: ``project``'s ``backend`` build, loaded with
    ``kernels.get_local_kernel`` as users load it.
    """
    loader = (
        "import json, sys, torch\nfrom pathlib import Path\nfrom kernels import get_local_kernel\n"
        f"kernel = get_local_kernel(Path(sys.argv[1]), backend={backend!r})\n"
    )
    return run([sys.executable, "-c", loader + body, project])


class Hang(BaseException):
    """A command ran past its time: not an Exception, so CliRunner and Hypothesis let it through."""


@contextlib.contextmanager
def no_hang(seconds: int = 30) -> Iterator[None]:
    """Fail instead of hanging (a FIFO opened for reading blocks until a writer comes)."""

    def fail(signum: int, frame: object) -> None:
        raise Hang(f"still running after {seconds} s: a FIFO was opened?")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def write_tree(files: dict[str, bytes], root: Path) -> None:
    """Write rendered ``files`` (relative POSIX path → bytes) under ``root``."""
    for relative, data in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)


def assert_ruff_clean(root: Path) -> None:
    """``ruff check`` and ``ruff format --check`` pass in ``root``, with its own ruff.toml."""
    for command in (["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]):
        result = subprocess.run(
            [sys.executable, "-m", "ruff", *command], cwd=root, capture_output=True, text=True
        )
        assert result.returncode == 0, f"ruff {' '.join(command)}:\n{result.stdout}{result.stderr}"
