"""Find the development artifacts in a kernel project, and prove each one was generated.

A file counts as generated only when kscaffold can show it, and is never tracked by git:

* it is listed in kscaffold's build manifest (:mod:`scaffold.outputs.manifest`) and still has
  the content
  kscaffold wrote (a file edited since is the user's);
* it lies in a folder only tools create: kscaffold's ``.kscaffold/``, kernel-builder's CMake scratch
  ``_cmake_build/``, setuptools' ``build/temp.*`` / ``build/lib.*`` / ``build/bdist.*``, or a tool's
  cache named ``*cache`` and tagged with a ``CACHEDIR.TAG`` (pytest, ruff and mypy caches; not
  cargo's ``target/``);
* it is Python bytecode (``*.pyc``) in ``__pycache__/``, or a setuptools metadata file in
  ``*.egg-info/``;
* it is the ``result`` link (or ``result-*``) of ``nix build``, pointing into the Nix store.

Nothing else counts, however much it looks generated. Files named like kernel-builder's
``create-pyproject`` output (``CMakeLists.txt``, ``setup.py``, ``pyproject.toml``, ``cmake/*``,
``metadata-<backend>.json``, ...) are reported as kept: a user's own file of that name and shape is
indistinguishable from the tool's, and only the user can tell them apart.

The scan never leaves the project: it does not follow links, never opens anything but regular
files, and does not descend into virtual environments (``.venv``, ``venv``, any folder with a
``pyvenv.cfg``), git's data, ``node_modules``, or a folder that is a project of its own (one with
a ``build.toml``, ``pyproject.toml``, ``setup.py``, ``Cargo.toml``, ``package.json`` or ``.git``).

``build/`` holds the release payload: the files kscaffold built there are reported separately, so
callers decide whether they go.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from scaffold.outputs.manifest import load_manifest, sha256_file
from scaffold.support import gitutil
from scaffold.vocabulary import BUILD_DIR, KNOWN_BACKENDS, SCRATCH_DIR

ArtifactKind = Literal["file", "folder", "link"]

#: Folders at the project root that only tools create, with who creates them.
TOOL_FOLDERS: dict[str, str] = {
    SCRATCH_DIR: "kscaffold's build scratch folder",
    "_cmake_build": "kernel-builder's CMake build folder",
}
_SETUPTOOLS_SCRATCH = re.compile(r"^(?:temp|lib|bdist)\.[A-Za-z0-9_]+-[A-Za-z0-9_.-]+$")
_CACHEDIR_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"
_EGG_INFO_FILES = frozenset(
    {
        "PKG-INFO",
        "SOURCES.txt",
        "dependency_links.txt",
        "top_level.txt",
        "requires.txt",
        "entry_points.txt",
        "not-zip-safe",
        "zip-safe",
    }
)
_NIX_RESULT = re.compile(r"^result(?:-[A-Za-z0-9_.-]+)?$")

#: The reason given for files listed in kscaffold's build manifest.
BUILT_BY_KSCAFFOLD = "written by kscaffold build"

#: Folder names never entered: other tools' environments and data, never a build's leftovers.
FOREIGN_FOLDER_NAMES = frozenset({".git", ".hg", ".svn", ".venv", "venv", "node_modules", ".tox"})
#: Files that make a subfolder a project (or environment) of its own, which clean leaves alone.
FOREIGN_PROJECT_MARKERS = (
    "build.toml",
    "pyproject.toml",
    "setup.py",
    "Cargo.toml",
    "package.json",
    "pyvenv.cfg",
    ".git",
)
#: What kernel-builder's ``create-pyproject`` writes: reported, never removed (see above).
CREATE_PYPROJECT_FILES = frozenset(
    {
        "CMakeLists.txt",
        "setup.py",
        "pyproject.toml",
        "torch-ext/registration.h",
        *(f"metadata-{backend}.json" for backend in KNOWN_BACKENDS),
    }
)
_CREATE_PYPROJECT_FOLDER = "cmake"
# torch-ext/<python_name>/_ops.py, rendered by create-pyproject's CMake from cmake/_ops.py.in.
_OPS_PY = re.compile(r"^torch-ext/[^/]+/_ops\.py$")
_LOOKS_LIKE_CREATE_PYPROJECT = (
    "named like kernel-builder's create-pyproject output; kscaffold cannot show a tool wrote it, "
    "so it stays (delete it yourself if it is not yours)"
)


def is_regular_file(path: Path) -> bool:
    """Whether ``path`` is a regular file itself (not a link, FIFO, socket or device)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def is_foreign_folder(path: Path) -> bool:
    """A folder kscaffold never enters: another tool's environment or another project."""
    if path.name in FOREIGN_FOLDER_NAMES:
        return True
    return os.path.lexists(path / ".git") or any(
        is_regular_file(path / marker) for marker in FOREIGN_PROJECT_MARKERS
    )


@dataclass(frozen=True)
class Artifact:
    """A generated file, folder (everything in it) or link that may be removed."""

    path: str
    kind: ArtifactKind
    reason: str

    @property
    def in_build(self) -> bool:
        """Whether it lies under ``build/``."""
        return PurePosixPath(self.path).parts[0] == BUILD_DIR

    @property
    def is_release_payload(self) -> bool:
        """Whether kscaffold built it into ``build/<variant>/``, the release payload."""
        return self.in_build and self.reason == BUILT_BY_KSCAFFOLD


@dataclass(frozen=True)
class Kept:
    """A file that looks like an artifact but must stay, and why."""

    path: str
    reason: str
    #: Looks generated but git tracks it (``check`` reports these as errors).
    tracked_artifact: bool = False
    #: kscaffold build wrote it, and it was edited since.
    edited: bool = False
    #: For a tracked artifact, why it counts as generated.
    origin: str = ""
    #: Named like kernel-builder's create-pyproject output (kept: it cannot be told from a user's).
    kernel_builder_lookalike: bool = False


def _tracked(path: str, origin: str) -> Kept:
    return Kept(path, f"tracked by git; {origin}", tracked_artifact=True, origin=origin)


@dataclass
class ArtifactScan:
    """What :func:`scan_artifacts` found."""

    project: Path
    artifacts: list[Artifact] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)


def tracked_files(project: Path) -> set[str]:
    """Project-relative POSIX paths git tracks under ``project`` (empty outside git)."""
    if not gitutil.is_inside_work_tree(project):
        return set()
    output = gitutil.run_git(project, "ls-files", "-z", "--cached").stdout
    return {entry for entry in output.split("\0") if entry}


def _manifest_entries(project: Path) -> dict[str, str]:
    """Manifest entries with safe, project-relative paths only."""
    entries: dict[str, str] = {}
    for relative, digest in load_manifest(project).items():
        pure = PurePosixPath(relative)
        if pure.is_absolute() or ".." in pure.parts or not pure.parts:
            continue
        entries[pure.as_posix()] = digest
    return entries


def _points_into_nix_store(path: Path) -> bool:
    try:
        return os.readlink(path).startswith("/nix/store/")
    except OSError:
        return False


def _is_cache_dir(path: Path) -> bool:
    # Only a tool's cache next to the project's sources (.pytest_cache, .ruff_cache, .mypy_cache);
    # other tagged folders (cargo's target/, a dataset cache) are someone else's to manage.
    tag = path / "CACHEDIR.TAG"
    if not path.name.endswith("cache") or not is_regular_file(tag):
        return False
    try:
        with tag.open("rb") as stream:
            return stream.read(len(_CACHEDIR_SIGNATURE)) == _CACHEDIR_SIGNATURE
    except OSError:
        return False


@dataclass(frozen=True)
class _FolderRule:
    """A folder whose files are generated when ``accepts`` says so."""

    reason: str
    accepts: Callable[[str], bool]
    not_accepted: str


def _folder_rule(relative: str, path: Path) -> _FolderRule | None:
    parts = PurePosixPath(relative).parts
    name = parts[-1]
    if len(parts) == 1 and name in TOOL_FOLDERS:
        return _FolderRule(TOOL_FOLDERS[name], lambda _: True, "")
    if len(parts) == 2 and parts[0] == BUILD_DIR and _SETUPTOOLS_SCRATCH.match(name):
        return _FolderRule("setuptools' build scratch folder", lambda _: True, "")
    if name == "__pycache__":
        return _FolderRule(
            "Python bytecode cache",
            lambda file: file.endswith((".pyc", ".pyo")) and "/" not in file,
            "not Python bytecode",
        )
    if name.endswith(".egg-info") and is_regular_file(path / "PKG-INFO"):
        return _FolderRule(
            "setuptools package metadata",
            lambda file: file in _EGG_INFO_FILES,
            "not a file setuptools writes in .egg-info",
        )
    if _is_cache_dir(path):
        return _FolderRule("a cache folder tagged with CACHEDIR.TAG", lambda _: True, "")
    return None


def _walk_files(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        for name in files:
            yield base / name
        for name in dirs:  # links to folders are not followed: remove the link itself
            if (base / name).is_symlink():
                yield base / name
        dirs[:] = [name for name in dirs if not is_foreign_folder(base / name)]


class _Scanner:
    def __init__(self, project: Path) -> None:
        self.project = project
        self.tracked = tracked_files(project)
        self.tracked_dirs = {
            parent.as_posix()
            for entry in self.tracked
            for parent in PurePosixPath(entry).parents
            if parent.as_posix() != "."
        }
        self.manifest = _manifest_entries(project)
        self.scan = ArtifactScan(project)

    def relative(self, path: Path) -> str:
        return path.relative_to(self.project).as_posix()

    def add(self, path: str, kind: ArtifactKind, reason: str) -> None:
        if path in self.tracked:
            self.scan.kept.append(_tracked(path, reason))
        else:
            self.scan.artifacts.append(Artifact(path, kind, reason))

    def folder(self, relative: str, path: Path, rule: _FolderRule) -> None:
        files = [(self.relative(file), file) for file in _walk_files(path)]
        prefix = relative + "/"
        accepted = [
            (rel, file)
            for rel, file in files
            if rule.accepts(rel.removeprefix(prefix))
            and (file.is_symlink() or is_regular_file(file))
        ]
        foreign = any(
            is_foreign_folder(Path(folder) / name)
            for folder, dirs, _ in os.walk(path)
            for name in dirs
        )
        if len(accepted) == len(files) and relative not in self.tracked_dirs and not foreign:
            self.scan.artifacts.append(Artifact(relative, "folder", rule.reason))
            return
        accepted_paths = {rel for rel, _ in accepted}
        for rel, file in files:
            if rel in accepted_paths:
                self.add(rel, "link" if file.is_symlink() else "file", rule.reason)
            elif rel not in self.tracked:
                why = rule.not_accepted if is_regular_file(file) or file.is_symlink() else ""
                why = why or "not a regular file"
                self.scan.kept.append(Kept(rel, f"{why} (in {rule.reason})"))

    def file(self, relative: str, path: Path) -> None:
        if relative in self.manifest:
            self.manifest_file(relative, path)
            return
        parts = PurePosixPath(relative).parts
        if (
            relative in CREATE_PYPROJECT_FILES
            or _OPS_PY.match(relative)
            or (
                len(parts) == 2
                and parts[0] == _CREATE_PYPROJECT_FOLDER
                and parts[1].endswith((".cmake", ".py", ".in"))
            )
        ):
            if relative not in self.tracked and is_regular_file(path):
                self.scan.kept.append(
                    Kept(relative, _LOOKS_LIKE_CREATE_PYPROJECT, kernel_builder_lookalike=True)
                )
            return
        if "/" not in relative and _NIX_RESULT.match(relative) and path.is_symlink():
            if _points_into_nix_store(path):
                self.add(relative, "link", "the result link of `nix build`")
            else:
                self.scan.kept.append(Kept(relative, "a link that does not point into /nix/store"))

    def manifest_file(self, relative: str, path: Path) -> None:
        if relative in self.tracked:
            self.scan.kept.append(_tracked(relative, BUILT_BY_KSCAFFOLD))
        elif not is_regular_file(path):
            self.scan.kept.append(Kept(relative, "no longer a regular file"))
        elif sha256_file(path) != self.manifest[relative]:
            self.scan.kept.append(
                Kept(relative, "changed since kscaffold build wrote it", edited=True)
            )
        else:
            self.scan.artifacts.append(Artifact(relative, "file", BUILT_BY_KSCAFFOLD))

    def run(self) -> ArtifactScan:
        for folder, dirs, files in os.walk(self.project):
            base = Path(folder)
            keep_walking: list[str] = []
            for name in sorted(dirs):
                path = base / name
                relative = self.relative(path)
                if path.is_symlink():  # a link: never followed, only the link itself is judged
                    self.file(relative, path)
                    continue
                top = PurePosixPath(relative).parts[0]
                # Inside build/ and kscaffold's own folders a setup.py marks no project of its own.
                within_ours = top in {BUILD_DIR, *TOOL_FOLDERS}
                if within_ours and name in FOREIGN_FOLDER_NAMES and base != self.project:
                    continue
                if not within_ours and is_foreign_folder(path):
                    # git's data, a virtual environment, a project of its own: never ours.
                    continue
                if relative in self.tracked:  # a submodule
                    continue
                rule = _folder_rule(relative, path)
                if rule is not None:
                    self.folder(relative, path, rule)
                else:
                    keep_walking.append(name)
            dirs[:] = keep_walking
            for name in sorted(files):
                path = base / name
                self.file(self.relative(path), path)
        self.scan.artifacts.sort(key=lambda artifact: artifact.path)
        self.scan.kept.sort(key=lambda kept: kept.path)
        return self.scan


def scan_artifacts(project: Path) -> ArtifactScan:
    """Every generated file, folder and link in ``project``, and the look-alikes that must stay."""
    return _Scanner(project).run()
