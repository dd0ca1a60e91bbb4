"""Find the development artifacts in a kernel project, and prove each one was generated.

A file counts as generated only when kscaffold can show it, and is never tracked by git:

* it is listed in kscaffold's build manifest (:mod:`scaffold.manifest`) and still has the content
  kscaffold wrote (a file edited since is the user's);
* it lies in a folder only tools create: kscaffold's ``.kscaffold/``, kernel-builder's CMake scratch
  ``_cmake_build/``, setuptools' ``build/temp.*`` / ``build/lib.*`` / ``build/bdist.*``, or a folder
  tagged as a cache with a ``CACHEDIR.TAG`` (pytest, ruff and mypy caches);
* it is Python bytecode (``*.pyc``) in ``__pycache__/``, or a setuptools metadata file in
  ``*.egg-info/``;
* it is one of the files kernel-builder's ``create-pyproject`` writes (CMakeLists.txt, setup.py,
  pyproject.toml, cmake/*, torch-ext/registration.h, metadata-<backend>.json, and the
  ``torch-ext/<python_name>/_ops.py`` its CMake renders) *and* its content carries that tool's
  marks: a user's own ``setup.py`` or ``CMakeLists.txt`` stays;
* it is the ``result`` link (or ``result-*``) of ``nix build``, pointing into the Nix store.

``build/`` holds the release payload: the files kscaffold built there are reported separately, so
callers decide whether they go.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from scaffold import gitutil
from scaffold.manifest import load_manifest, sha256_file
from scaffold.vocabulary import KNOWN_BACKENDS

ArtifactKind = Literal["file", "folder", "link"]

#: Folders at the project root that only tools create, with who creates them.
TOOL_FOLDERS: dict[str, str] = {
    ".kscaffold": "kscaffold's build scratch folder",
    "_cmake_build": "kernel-builder's CMake build folder",
}
#: The release payload folder (``build/<variant>/``).
BUILD_DIR = "build"
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

_CREATE_PYPROJECT = "written by kernel-builder's create-pyproject"
#: The reason given for files listed in kscaffold's build manifest.
BUILT_BY_KSCAFFOLD = "written by kscaffold build"


def _read_text(path: Path, limit: int = 1 << 20) -> str:
    try:
        with path.open("rb") as stream:
            return stream.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _has_all(*needles: str) -> Callable[[Path], bool]:
    def check(path: Path) -> bool:
        text = _read_text(path)
        return all(needle in text for needle in needles)

    return check


def _matches(pattern: str) -> Callable[[Path], bool]:
    compiled = re.compile(pattern, re.MULTILINE)
    return lambda path: compiled.search(_read_text(path)) is not None


def _cmakelists(path: Path) -> bool:
    text = _read_text(path)
    names_the_ops = "OPS_NAME" in text or "TORCH_EXTENSION_NAME" in text
    return "cmake_minimum_required" in text and names_the_ops


def _metadata_json(path: Path) -> bool:
    try:
        data = json.loads(_read_text(path))
    except ValueError:
        return False
    return isinstance(data, dict) and ("python-depends" in data or "id" in data)


_CMAKE_CODE = _matches(r"\b(?:function|macro|set|include|if|message|foreach)\s*\(")
_PYTHON_CODE = _matches(r"^\s*(?:import|from)\s+\w")

#: create-pyproject's files (project-relative) and how to recognise each one's content.
CREATE_PYPROJECT_FILES: dict[str, Callable[[Path], bool]] = {
    "CMakeLists.txt": _cmakelists,
    "setup.py": _has_all("CMakeExtension", "build_ext"),
    "pyproject.toml": _has_all("[build-system]", "cmake", "torch"),
    "torch-ext/registration.h": _has_all("REGISTER_EXTENSION", "TORCH_LIBRARY_EXPAND"),
    **{f"metadata-{backend}.json": _metadata_json for backend in KNOWN_BACKENDS},
    "cmake/utils.cmake": _CMAKE_CODE,
    "cmake/kernel.cmake": _CMAKE_CODE,
    "cmake/build-variants.cmake": _CMAKE_CODE,
    "cmake/compile-metal.cmake": _CMAKE_CODE,
    "cmake/get_gpu_lang.cmake": _CMAKE_CODE,
    "cmake/add_build_metadata.py": _PYTHON_CODE,
    "cmake/add_gpu_arch_metadata.py": _PYTHON_CODE,
    "cmake/hipify.py": _PYTHON_CODE,
    "cmake/metallib_to_header.py": _PYTHON_CODE,
    "cmake/get_gpu_lang.py": _PYTHON_CODE,
    "cmake/_ops.py.in": _has_all("@OPS_NAME@"),
}
# torch-ext/<python_name>/_ops.py, rendered by create-pyproject's CMake from cmake/_ops.py.in.
_OPS_PY = re.compile(r"^torch-ext/[^/]+/_ops\.py$")
_ops_py_generated = _has_all("add_op_namespace_prefix", "ops")


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
    tag = path / "CACHEDIR.TAG"
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
    if name.endswith(".egg-info") and (path / "PKG-INFO").is_file():
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
        accepted = [(rel, file) for rel, file in files if rule.accepts(rel.removeprefix(prefix))]
        if len(accepted) == len(files) and relative not in self.tracked_dirs:
            self.scan.artifacts.append(Artifact(relative, "folder", rule.reason))
            return
        accepted_paths = {rel for rel, _ in accepted}
        for rel, file in files:
            if rel in accepted_paths:
                self.add(rel, "link" if file.is_symlink() else "file", rule.reason)
            elif rel not in self.tracked:
                self.scan.kept.append(Kept(rel, f"{rule.not_accepted} (in {rule.reason})"))

    def file(self, relative: str, path: Path) -> None:
        if relative in self.manifest:
            self.manifest_file(relative, path)
            return
        check = CREATE_PYPROJECT_FILES.get(relative)
        if check is None and _OPS_PY.match(relative):
            check = _ops_py_generated
        if check is not None and not path.is_symlink():
            if check(path):
                self.add(relative, "file", _CREATE_PYPROJECT)
            elif relative not in self.tracked:
                self.scan.kept.append(
                    Kept(relative, "named like a kernel-builder file, but its content is not one")
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
        elif path.is_symlink() or not path.is_file():
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
                if name == ".git" or path.is_symlink() or (path / ".git").exists():
                    # git's own data, a nested repository, or a link: never ours to touch.
                    if path.is_symlink():
                        self.file(relative, path)
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
