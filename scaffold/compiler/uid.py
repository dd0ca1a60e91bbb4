"""The id in the op namespace, which keeps builds of different source states apart.

Two different libraries registering one namespace abort the process that loads both, and two
builds with the same id silently share the first one's code, so the id must follow the sources.
As in kernel-builder, work in progress is the exception: every uncommitted state is ``_dirty``,
so that editing a file recompiles only that file.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from scaffold.outputs.manifest import write_atomically
from scaffold.support.gitutil import git_available, run_git
from scaffold.vocabulary import BUILD_DIR, COMPDB_NAME, SCRATCH_DIR

#: Git's id of the empty tree: the base of a repository that has no commit yet.
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
#: What kscaffold itself writes into a project; it must not make the tree dirty.
GENERATED_PATHS = (BUILD_DIR, SCRATCH_DIR, COMPDB_NAME)
#: Outside git: the source hash of the first build, which later builds compare against.
_BASELINE_FILE = "source-baseline"


def project_uid(project: Path, sources: Iterable[Path], state: Path | None = None) -> str:
    """kernel-builder's id: 7 hex digits of git's HEAD tree, ``_dirty`` if the project changed.

    Outside git, the role of HEAD goes to the sources as the first build in ``state`` saw them:
    7 hex digits of a hash over their paths and contents, recorded there, and ``_dirty`` while
    they differ from it. As in git, only the first edit then recompiles every file (the namespace
    changes once); later edits recompile what they touch. Without ``state``, the hash alone.
    """
    tree = _git_head_tree(project)
    if tree is not None:
        return tree[:7] + ("_dirty" if _git_dirty(project) else "")
    current = _content_hash(project, sources)[:7]
    if state is None:
        return current
    record = state / _BASELINE_FILE
    try:
        baseline = record.read_text(encoding="utf-8").strip()
    except OSError:
        baseline = ""
    if not re.fullmatch(r"[0-9a-f]{7}", baseline):
        write_atomically(record, current + "\n")
        return current
    return baseline if baseline == current else baseline + "_dirty"


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
    root = Path(os.path.abspath(project))
    # Paths as the project names them: a source linked from outside still hashes under its name.
    for path in sorted({Path(os.path.abspath(source)) for source in sources}):
        data = path.read_bytes()
        relative = os.path.relpath(path, root).replace(os.sep, "/")
        digest.update(f"{relative}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()
