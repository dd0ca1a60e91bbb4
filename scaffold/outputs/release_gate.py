"""Whether each ``build/<variant>/`` may be released: one judgement for ``publish`` and ``check``.

A variant may be released when the ``kernels`` loader reads its ``metadata.json``, it is a build
of the project's name and major version, its files match the digest its build recorded, and it is
a build of exactly what HEAD holds: made from HEAD's commit (or one with the same files), with no
uncommitted change then (``_dirty``) or now to anything that goes into the build or the upload.
Anything else would release binaries that are not those of the sources, card and benchmarks
uploaded beside them.
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass
from pathlib import Path

from scaffold.outputs.provenance import VariantStatus, head_commit, inspect_variant
from scaffold.support import gitutil
from scaffold.vocabulary import BUILD_DIR, COMPDB_NAME, CSRC_DIR, SCRATCH_DIR, TORCH_EXT_DIR

#: What kscaffold writes into a project; a change there is no change of the sources.
_OUTPUTS = (BUILD_DIR, SCRATCH_DIR, COMPDB_NAME)
#: Folders whose files go into a build whether git tracks them or not.
_BUILD_INPUT_FOLDERS = (f"{TORCH_EXT_DIR}/", f"{CSRC_DIR}/")
_REBUILD = "run `kscaffold build`, then publish"


@dataclass(frozen=True)
class Problem:
    """What bars a variant's release, and how to fix it."""

    what: str
    fix: str

    def __str__(self) -> str:
        return f"{self.what}: {self.fix}."


@dataclass(frozen=True)
class VariantVerdict:
    """One variant: its status when its metadata could be read, and what bars its release."""

    variant: str
    status: VariantStatus | None
    problems: tuple[Problem, ...]


@dataclass(frozen=True)
class _GitState:
    head: str | None
    #: Paths with uncommitted changes: tracked files anywhere but the outputs (a build made now
    #: would be ``_dirty``), untracked ones where the build reads them.
    uncommitted: tuple[str, ...]


def _git_state(project: Path) -> _GitState | None:
    if not gitutil.git_available() or not gitutil.is_inside_work_tree(project):
        return None
    excludes = [f":(exclude){path}" for path in _OUTPUTS]
    status = gitutil.run_git(
        project,
        "status",
        "--porcelain",
        "-z",
        "--untracked-files=all",
        "--",
        ".",
        *excludes,
        ":(exclude,glob)**/__pycache__/**",
        check=False,
    )
    changed: list[str] = []
    records = iter(status.stdout.split("\0"))
    for record in records:
        if len(record) < 4:
            continue
        code, path = record[:2], record[3:]
        if code[0] in "RC":
            next(records, None)  # a rename's or copy's source path follows
        # Untracked files count where the build picks them up; other ones are never uploaded.
        if code != "??" or path.startswith(_BUILD_INPUT_FOLDERS):
            changed.append(path)
    return _GitState(head_commit(project), tuple(changed))


def _first_line(error: BaseException) -> str:
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


def _irregular(variant: Path, project: Path) -> str | None:
    """Which entry under ``variant`` is no folder and no regular file, and what it is (lstat)."""
    pending = [variant]
    while pending:
        folder = pending.pop()
        for entry in sorted(folder.iterdir()):
            mode = entry.lstat().st_mode
            if stat.S_ISDIR(mode):
                pending.append(entry)
            elif not stat.S_ISREG(mode):
                kind = "a link" if stat.S_ISLNK(mode) else "not a regular file"
                return f"{entry.relative_to(project).as_posix()} is {kind}"
    return None


def _recorded_commit(variant: Path) -> str | None:
    try:
        data = json.loads((variant / "metadata.json").read_text(encoding="utf-8"))
        commit = data["provenance"]["kernel"]["commit"]
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        return None
    return commit if isinstance(commit, str) else None


def _stale(project: Path, where: str, status: VariantStatus, git: _GitState) -> Problem | None:
    """Why the variant is not a build of HEAD, or None."""
    if git.head is None:
        return None
    commit = _recorded_commit(project / where)
    if commit is None:
        if not status.local_build:
            return None  # a Nix build records its source elsewhere
        return Problem(
            f"{where} records no commit it was built from, so it cannot be told to be a build "
            "of HEAD",
            _REBUILD,
        )
    if commit != git.head:
        diff = gitutil.run_git(
            project, "diff", "--name-only", "-z", commit, git.head, "--", check=False
        )
        if diff.returncode != 0:
            return Problem(
                f"{where} was built from commit {commit[:12]}, which this repository does not "
                f"have (HEAD is {git.head[:12]})",
                _REBUILD,
            )
        changed = [path for path in diff.stdout.split("\0") if path]
        if changed:
            more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
            return Problem(
                f"{where} was built from commit {commit[:12]}, older than HEAD "
                f"({git.head[:12]}), which changes {changed[0]}{more}",
                _REBUILD,
            )
    if git.uncommitted:
        more = f" and {len(git.uncommitted) - 1} more" if len(git.uncommitted) > 1 else ""
        return Problem(
            f"{where} does not hold the uncommitted changes to {git.uncommitted[0]}{more}",
            f"commit them, {_REBUILD}",
        )
    return None


def judge_variant(
    project: Path, variant: Path, name: str, version: int, git: _GitState | None
) -> VariantVerdict:
    """What bars ``variant`` (a ``build/<variant>/`` folder) from a release of ``name``."""
    where = f"{BUILD_DIR}/{variant.name}"
    if variant.is_symlink():
        return VariantVerdict(
            variant.name,
            None,
            (
                Problem(
                    f"{where} is a link, and a release uploads only what is in build/",
                    "replace it with the folder itself (or rebuild), then publish",
                ),
            ),
        )
    irregular = _irregular(variant, project)
    if irregular is not None:
        return VariantVerdict(
            variant.name,
            None,
            (
                Problem(
                    f"{irregular}, and a release uploads only regular files",
                    "remove it (or rebuild), then publish",
                ),
            ),
        )
    try:
        status = inspect_variant(variant)
    except Exception as error:  # noqa: BLE001 - the loader's parser raises several kinds
        return VariantVerdict(
            variant.name,
            None,
            (
                Problem(
                    f"{where}/metadata.json cannot be read by the kernels loader "
                    f"({_first_line(error)})",
                    "rebuild with `kscaffold build`",
                ),
            ),
        )
    problems: list[Problem] = []
    if (status.name, status.version) != (name, version):
        problems.append(
            Problem(
                f"{where} is a build of {status.name} version {status.version}, not of "
                f"build.toml's {name} version {version}",
                "rebuild (or remove it), then publish",
            )
        )
    if status.dirty:
        problems.append(
            Problem(
                f"{where} was built from uncommitted sources (in a project outside git: "
                "from sources changed since its first build)",
                "commit your changes, rebuild, then publish",
            )
        )
    if not status.has_digest:
        problems.append(
            Problem(
                f"{where}/metadata.json records no digest of its files",
                "rebuild with `kscaffold build` (or kernel-builder), then publish",
            )
        )
    if status.digest_problems:
        problems.append(
            Problem(
                f"{where} no longer matches the digest its build recorded "
                f"({status.digest_problems[0]})",
                "rebuild it, then publish",
            )
        )
    if not problems and git is not None:
        stale = _stale(project, where, status, git)
        if stale is not None:
            problems.append(stale)
    return VariantVerdict(variant.name, status, tuple(problems))


def judge_build(project: Path, name: str, version: int) -> list[VariantVerdict]:
    """A verdict for every ``build/<variant>/`` holding a ``metadata.json``, in name order."""
    build = project / BUILD_DIR
    if not build.is_dir() or build.is_symlink():
        return []
    variants = sorted(
        entry
        for entry in build.iterdir()
        if (entry / "metadata.json").exists() or (entry / "metadata.json").is_symlink()
    )
    git = _git_state(project) if variants else None
    return [judge_variant(project, variant, name, version, git) for variant in variants]
