"""The few git operations kscaffold needs, each checking its result."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from scaffold.errors import KscaffoldError

# Used only when the user has no git identity configured, so the first commit can still be made.
_FALLBACK_IDENTITY = ("-c", "user.name=kscaffold", "-c", "user.email=kscaffold@localhost")


def git_available() -> bool:
    return shutil.which("git") is not None


def run_git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``git args`` in ``repo``; raise a KscaffoldError carrying git's output on failure."""
    if not git_available():
        raise KscaffoldError("git is not installed: install git, or pass --no-git.")
    result = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=False
    )
    if check and result.returncode != 0:
        output = (result.stderr or result.stdout).strip()
        raise KscaffoldError(f"`git {' '.join(args)}` failed in {repo}: {output}")
    return result


def is_inside_work_tree(path: Path) -> bool:
    if not git_available():
        return False
    result = run_git(path, "rev-parse", "--is-inside-work-tree", check=False)
    return result.returncode == 0 and result.stdout.strip() == "true"


def _identity_args(repo: Path) -> tuple[str, ...]:
    configured = run_git(repo, "config", "user.email", check=False).stdout.strip()
    return () if configured else _FALLBACK_IDENTITY


def init_and_commit(repo: Path, message: str) -> None:
    """``git init`` a new project and commit everything in it."""
    run_git(repo, "init", "--quiet")
    run_git(repo, "add", "--all")
    run_git(repo, *_identity_args(repo), "commit", "--quiet", "--no-verify", "-m", message)
