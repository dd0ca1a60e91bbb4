"""``kscaffold clean``: remove what builds generated, and nothing kscaffold cannot prove it did.

What counts as generated is decided by :mod:`scaffold.outputs.artifacts`. Files git tracks are never
removed, nor are files whose content changed since kscaffold wrote them; both are reported with the
reason they stay. Folders that removal leaves empty go too. ``build/`` (the release payload) stays
unless ``include_build`` is set, and even then only the files kscaffold built there go.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from scaffold.errors import KscaffoldError, NotAProjectError
from scaffold.outputs.artifacts import Artifact, ArtifactKind, is_regular_file, scan_artifacts
from scaffold.outputs.manifest import MANIFEST_PATH
from scaffold.vocabulary import ANSWERS_FILE, BUILD_TOML

#: kscaffold's state folder, which holds the record of generated files.
STATE_FOLDER = MANIFEST_PATH.parts[0]


@dataclass(frozen=True)
class Removal:
    """One thing clean removed (or, in a dry run, would remove)."""

    path: str
    kind: ArtifactKind
    reason: str


@dataclass(frozen=True)
class Skip:
    """A file that looks generated but stays, and why."""

    path: str
    reason: str


@dataclass
class CleanReport:
    """What :func:`clean_project` removed and what it left, with reasons."""

    project: Path
    dry_run: bool
    removed: list[Removal] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    #: Files kscaffold built under build/ that stayed because ``include_build`` was not set.
    kept_build: list[str] = field(default_factory=list)


def _project_dir(project: Path) -> Path:
    if not project.is_dir():
        raise NotAProjectError(f"{project} is not a folder.")
    if not is_regular_file(project / BUILD_TOML):
        raise NotAProjectError(
            f"{project} has no {BUILD_TOML}, so it is not a kernel project: kscaffold clean only "
            "works in one (run it in the project's folder or pass its path)."
        )
    if not (is_regular_file(project / ANSWERS_FILE) or _declares_general(project / BUILD_TOML)):
        raise NotAProjectError(
            f"{project} is neither a kscaffold project (no {ANSWERS_FILE}) nor a kernel-builder "
            f"one (its {BUILD_TOML} has no [general] table), so kscaffold clean leaves it alone."
        )
    return project.resolve()


def _declares_general(path: Path) -> bool:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data.get("general"), dict)


def _emptied_folders(project: Path, removed: list[str]) -> list[str]:
    """Folders (deepest first) that are left empty once ``removed`` are gone."""
    gone = set(removed)
    verdict: dict[str, bool] = {}

    def empties(relative: str) -> bool:
        if relative not in verdict:
            path = project / relative
            try:
                entries = list(os.scandir(path))
            except OSError:
                entries = []
            verdict[relative] = bool(path.is_dir()) and all(
                f"{relative}/{entry.name}" in gone
                or (entry.is_dir(follow_symlinks=False) and empties(f"{relative}/{entry.name}"))
                for entry in entries
            )
        return verdict[relative]

    candidates = {
        parent.as_posix()
        for relative in removed
        for parent in PurePosixPath(relative).parents
        if parent.as_posix() != "."
    }
    emptied = [folder for folder in candidates if folder not in gone and empties(folder)]
    return sorted(emptied, key=lambda folder: (-folder.count("/"), folder))


def _keeping_the_record(root: Path, artifact: Artifact) -> list[Artifact]:
    """``artifact``; for the whole state folder, its entries except the record of built files."""
    if artifact.path != STATE_FOLDER or artifact.kind != "folder":
        return [artifact]
    keep = {MANIFEST_PATH.name, ".gitignore"}
    entries: list[Artifact] = []
    for entry in sorted(os.scandir(root / STATE_FOLDER), key=lambda e: e.name):
        if entry.name in keep and not entry.is_dir(follow_symlinks=False):
            continue
        kind: ArtifactKind = "folder" if entry.is_dir(follow_symlinks=False) else "file"
        entries.append(Artifact(f"{STATE_FOLDER}/{entry.name}", kind, artifact.reason))
    return entries


def _remove(path: Path, artifact: Artifact) -> None:
    if artifact.kind == "folder" and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def clean_project(
    project: Path, *, dry_run: bool = False, include_build: bool = False
) -> CleanReport:
    """Remove the generated files of ``project``; report what went and what stayed.

    Args:
        project: The kernel project (the folder with build.toml).
        dry_run: Only report what would be removed; change nothing.
        include_build: Also remove the files kscaffold built under ``build/``.
    """
    root = _project_dir(project)
    scan = scan_artifacts(root)
    report = CleanReport(project=root, dry_run=dry_run)
    report.skipped = [Skip(kept.path, kept.reason) for kept in scan.kept]
    chosen: list[Artifact] = []
    for artifact in scan.artifacts:
        if artifact.is_release_payload and not include_build:
            report.kept_build.append(artifact.path)
        else:
            chosen.append(artifact)
    if report.kept_build:
        # The record of what kscaffold built stays with the payload it proves, so that a later
        # `clean --all` still knows those files: everything else in .kscaffold/ goes.
        chosen = [c for a in chosen for c in _keeping_the_record(root, a)]
    emptied = _emptied_folders(root, [artifact.path for artifact in chosen])
    report.removed = [Removal(a.path, a.kind, a.reason) for a in chosen] + [
        Removal(folder, "folder", "left empty") for folder in emptied
    ]
    if dry_run:
        return report
    for artifact in chosen:
        path = root / artifact.path
        try:
            _remove(path, artifact)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise KscaffoldError(
                f"Cannot remove {artifact.path}: {error.strerror or error}. Fix its permissions "
                "and run kscaffold clean again."
            ) from error
    for folder in emptied:
        with contextlib.suppress(OSError):  # something appeared in it meanwhile: it stays
            (root / folder).rmdir()
    return report
