"""The unique id in the op namespace, so two builds of different code never share one.

Two different libraries registering one namespace abort the process that loads both, and two
builds with the same id silently share the first one's code, so the id must follow the sources.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from scaffold.gitutil import git_available, run_git

#: Git's id of the empty tree: the base of a repository that has no commit yet.
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
#: What kscaffold itself writes into a project; it must not make the tree dirty.
GENERATED_PATHS = ("build", ".kscaffold", "compile_commands.json")


def project_uid(project: Path, sources: Iterable[Path]) -> str:
    """kernel-builder's id: 7 hex digits of git's HEAD tree, ``_dirty`` if the project changed.

    Outside git, 7 hex digits of a hash over ``sources`` (paths and contents) instead. Then every
    edit gives a new namespace, which recompiles every file; in git only the first edit after a
    commit does.
    """
    tree = _git_head_tree(project)
    if tree is None:
        return _content_hash(project, sources)[:7]
    return tree[:7] + ("_dirty" if _git_dirty(project) else "")


def _git_head_tree(project: Path) -> str | None:
    if not git_available():
        return None
    if run_git(project, "rev-parse", "--is-inside-work-tree", check=False).returncode != 0:
        return None
    head = run_git(project, "rev-parse", "--verify", "--quiet", "HEAD^{tree}", check=False)
    return head.stdout.strip() if head.returncode == 0 else _EMPTY_TREE


def _git_dirty(project: Path) -> bool:
    """Tracked changes or untracked, not ignored files under the project, outputs excluded."""
    excludes = [f":(exclude){path}" for path in GENERATED_PATHS]
    status = run_git(
        project,
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--",
        ".",
        *excludes,
        ":(exclude,glob)**/__pycache__/**",
    )
    return bool(status.stdout.strip())


def _content_hash(project: Path, sources: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted({source.resolve() for source in sources}):
        data = path.read_bytes()
        relative = path.relative_to(project.resolve()).as_posix()
        digest.update(f"{relative}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()
