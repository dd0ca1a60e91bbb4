"""The few git operations kscaffold needs, each checking its result."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

from scaffold.errors import KscaffoldError

#: How git's output is decoded: as file names are, whatever the locale.
_ENCODING, _ERRORS = "utf-8", "surrogateescape"

# Used only when the user has no git identity configured, so the first commit can still be made.
_FALLBACK_IDENTITY = ("-c", "user.name=kscaffold", "-c", "user.email=kscaffold@localhost")


def git_available() -> bool:
    return shutil.which("git") is not None


def run_git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``git args`` in ``repo``; raise a KscaffoldError carrying git's output on failure."""
    if not git_available():
        raise KscaffoldError("git is not installed: install git, or pass --no-git.")
    # Git prints paths as the file system holds them: bytes that are not UTF-8 round-trip as
    # Python's file names do (surrogateescape) instead of failing to decode.
    result = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        check=False,
        encoding=_ENCODING,
        errors=_ERRORS,
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


def init_and_commit(repo: Path, message: str, paths: Sequence[str] | None = None) -> None:
    """``git init`` a new project and commit ``paths`` in it (default: everything not ignored).

    Only the paths named are staged: files that were in the folder before kscaffold wrote into
    it stay untracked, never committed (or pushed) on the user's behalf.
    """
    run_git(repo, "init", "--quiet")
    if paths is None:
        run_git(repo, "add", "--all")
    else:
        for start in range(0, len(paths), 500):
            run_git(repo, "add", "--force", "--", *paths[start : start + 500])
    run_git(repo, *_identity_args(repo), "commit", "--quiet", "--no-verify", "-m", message)


def has_uncommitted_changes(repo: Path) -> bool:
    # Only the project's own folder counts when it sits inside a larger repository.
    return bool(run_git(repo, "status", "--porcelain", "--", ".").stdout.strip())


def read_ref_files(repo: Path, ref: str) -> dict[str, bytes] | None:
    """Every file of the commit ``ref`` points to, or None when the ref does not exist."""
    if run_git(
        repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False
    ).returncode:
        return None
    # From the top of the work tree: in a subfolder, git archive would take only that subfolder.
    top = run_git(repo, "rev-parse", "--show-toplevel").stdout.strip()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref], cwd=top, capture_output=True, check=False
    )
    if archive.returncode != 0:
        raise KscaffoldError(
            f"`git archive {ref}` failed in {repo}: {archive.stderr.decode(errors='replace')}"
        )
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member) if member.isfile() else None
            if extracted is not None:
                files[member.name] = extracted.read()
    return files


def write_ref_files(repo: Path, ref: str, files: dict[str, bytes], message: str) -> None:
    """Commit ``files`` as a tree of their own onto ``ref``, leaving index and work tree alone."""
    with tempfile.TemporaryDirectory(prefix="kscaffold-ref-") as scratch:
        tree_dir = Path(scratch) / "tree"
        for relative, data in files.items():
            path = tree_dir / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        git_dir = run_git(repo, "rev-parse", "--absolute-git-dir").stdout.strip()
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(scratch) / "index")}
        common = ["git", f"--git-dir={git_dir}", f"--work-tree={tree_dir}"]

        def plumbing(*args: str) -> str:
            result = subprocess.run(
                [*common, *args],
                cwd=tree_dir,
                env=env,
                capture_output=True,
                check=False,
                encoding=_ENCODING,
                errors=_ERRORS,
            )
            if result.returncode != 0:
                raise KscaffoldError(f"`git {' '.join(args)}` failed: {result.stderr.strip()}")
            return result.stdout.strip()

        plumbing("add", "--all", "--force", ".")
        tree = plumbing("write-tree")
        parent = run_git(repo, "rev-parse", "--verify", "--quiet", ref, check=False).stdout.strip()
        identity = _identity_args(repo)
        commit = plumbing(
            *identity, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", message
        )
        run_git(repo, "update-ref", ref, commit)
