"""The header libraries a ``[kernel.*]`` table ``depends`` on, found on this machine.

kernel-builder's Nix build fetches the exact version each dependency name pins (``cutlass_3_8`` is
CUTLASS 3.8). Without Nix, kscaffold looks for it where users keep it and never downloads it:

1. ``$CUTLASS_PATH``: a CUTLASS checkout or release (``include/cutlass/cutlass.h`` inside);
2. the ``nvidia-cutlass`` pip package in the build's Python (``pip install nvidia-cutlass==3.8.*``).

A version other than the pinned one is used with a note, since it usually compiles; a missing
library is an error that names the table, the version and both ways to provide it.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from scaffold.errors import ToolchainError
from scaffold.project.buildconfig import KernelSection
from scaffold.vocabulary import BUILD_TOML

#: Dependency names that need nothing beyond torch itself.
_PROVIDED_BY_TORCH = frozenset({"torch"})
_CUTLASS_NAME = re.compile(r"cutlass_(\d+)_(\d+)")
CUTLASS_PATH_VARIABLE = "CUTLASS_PATH"


@dataclass(frozen=True)
class HeaderLibrary:
    """A found header library: where its headers are and which version they are."""

    name: str
    root: Path
    version: tuple[int, int]
    include_dirs: tuple[Path, ...]


@dataclass(frozen=True)
class ResolvedDependencies:
    """Per kernel table label, the include folders its dependencies add; and notes to show."""

    include_dirs: Mapping[str, tuple[Path, ...]]
    notes: tuple[str, ...]


def resolve_dependencies(
    kernels: Sequence[KernelSection],
    *,
    environ: Mapping[str, str] | None = None,
    find_package_dir: Callable[[str], Path | None] | None = None,
) -> ResolvedDependencies:
    """Find every library ``kernels`` depend on; raise ToolchainError for one that is missing."""
    environ = os.environ if environ is None else environ
    find_package_dir = find_package_dir or _package_dir
    include_dirs: dict[str, tuple[Path, ...]] = {}
    notes: list[str] = []
    for kernel in kernels:
        found: list[Path] = []
        for name in kernel.depends:
            if name in _PROVIDED_BY_TORCH:
                continue
            match = _CUTLASS_NAME.fullmatch(name)
            if match is None:
                raise ToolchainError(
                    f"{BUILD_TOML}: [kernel.{kernel.label}] depends on '{name}', which only "
                    f"kernel-builder's Nix build provides; kscaffold build provides torch and "
                    f"cutlass_X_Y."
                )
            wanted = (int(match[1]), int(match[2]))
            library = find_cutlass(environ, find_package_dir)
            if library is None:
                raise ToolchainError(_missing_cutlass(kernel.label, name, wanted))
            if library.version != wanted:
                notes.append(
                    f"{BUILD_TOML} depends on {name}, but CUTLASS {_dotted(library.version)} is "
                    f"what was found ({library.root}): building with it. kernel-builder's Nix "
                    f"build uses CUTLASS {_dotted(wanted)}."
                )
            found += [d for d in library.include_dirs if d not in found]
        include_dirs[kernel.label] = tuple(found)
    return ResolvedDependencies(include_dirs, tuple(dict.fromkeys(notes)))


def find_cutlass(
    environ: Mapping[str, str], find_package_dir: Callable[[str], Path | None]
) -> HeaderLibrary | None:
    """CUTLASS from ``$CUTLASS_PATH``, else from the ``nvidia-cutlass`` package; None if neither."""
    configured = environ.get(CUTLASS_PATH_VARIABLE)
    if configured:
        root = Path(configured).expanduser()
        library = _cutlass_at(root)
        if library is None:
            raise ToolchainError(
                f"{CUTLASS_PATH_VARIABLE}={configured} holds no CUTLASS headers "
                f"(expected {root / 'include' / 'cutlass' / 'cutlass.h'})."
            )
        return library
    package = find_package_dir("cutlass_library")
    return _cutlass_at(package / "source") if package is not None else None


def _cutlass_at(root: Path) -> HeaderLibrary | None:
    version_header = root / "include" / "cutlass" / "version.h"
    if not (root / "include" / "cutlass" / "cutlass.h").is_file() or not version_header.is_file():
        return None
    text = version_header.read_text(encoding="utf-8", errors="replace")
    numbers = [re.search(rf"#define\s+CUTLASS_{part}\s+(\d+)", text) for part in ("MAJOR", "MINOR")]
    if numbers[0] is None or numbers[1] is None:
        return None
    dirs = [root / "include"]
    if (root / "tools" / "util" / "include").is_dir():
        dirs.append(root / "tools" / "util" / "include")  # cutlass/util/*.h, used by many kernels
    return HeaderLibrary(
        "cutlass", root, (int(numbers[0][1]), int(numbers[1][1])), tuple(d.resolve() for d in dirs)
    )


def _package_dir(name: str) -> Path | None:
    """Where an installed package lives, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _missing_cutlass(label: str, name: str, version: tuple[int, int]) -> str:
    dotted = _dotted(version)
    return (
        f"{BUILD_TOML}: [kernel.{label}] depends on {name} (CUTLASS {dotted} headers), and none "
        f"were found. Install them with `pip install 'nvidia-cutlass=={dotted}.*'`, or point "
        f"{CUTLASS_PATH_VARIABLE} at a CUTLASS {dotted} checkout "
        f"(git clone -b v{dotted}.0 https://github.com/NVIDIA/cutlass)."
    )


def _dotted(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"
