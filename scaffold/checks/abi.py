"""The ABI of every library in ``build/``, checked as kernel-builder's ``check-abi`` does.

The checks are those of the ``kernel-abi-check`` package.

A Hub kernel must load on any Linux with glibc 2.28 or newer (manylinux_2_28) and on any CPython
from 3.9 (the limited API, abi3), as kernel-builder's Nix build guarantees. A library that asks
for a newer Python API is an error. One that asks for newer glibc or libstdc++ symbols is an
error in a Nix build and a warning in a local build (kscaffold's, with this machine's compiler):
such a release loads only on machines as new as this one, which ``publish --allow-local-build``
accepts knowingly.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from scaffold.checks.base import Context, Finding, error, warning
from scaffold.outputs.artifacts import is_regular_file
from scaffold.outputs.provenance import is_local_builder
from scaffold.vocabulary import BUILD_DIR

MANYLINUX = "manylinux_2_28"
PYTHON_ABI = "3.9"


def _libraries(build: Path) -> list[tuple[Path, Path]]:
    """Each ``build/<variant>/`` library, at any depth, with the variant folder it belongs to."""
    found: list[tuple[Path, Path]] = []
    for variant in sorted(p for p in build.iterdir() if p.is_dir() and not p.is_symlink()):
        if not (variant / "metadata.json").is_file():
            continue
        for path in sorted(variant.rglob("*.so")):
            # Never open a FIFO or device named like a library: reading it could block.
            if is_regular_file(path):
                found.append((variant, path))
    return found


def _is_local_build(variant: Path) -> bool:
    try:
        data = json.loads((variant / "metadata.json").read_text(encoding="utf-8"))
        builder = data["provenance"]["kernel-builder"]["version"]
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        return True  # no provenance: not a kernel-builder build
    return is_local_builder(builder)


def check_abi(context: Context) -> list[Finding]:
    """Report manylinux_2_28 and abi3 violations of every ``build/<variant>/`` library."""
    build = context.project / BUILD_DIR
    if not build.is_dir() or build.is_symlink():
        return []
    try:
        from kernel_abi_check import ObjectFile
    except ImportError:
        return [
            warning(
                "build/",
                "The ABI of the built libraries was not checked: kernel-abi-check is missing.",
                "pip install 'kernel-abi-check>=0.14,<0.15' (kscaffold depends on it).",
            )
        ]
    findings: list[Finding] = []
    for variant, library in _libraries(build):
        where = library.relative_to(context.project).as_posix()
        try:
            binary = ObjectFile(library)
            glibc = binary.check_manylinux(MANYLINUX)
            python = binary.check_python_abi(PYTHON_ABI)
        except (OSError, ValueError) as problem:
            findings.append(
                error(
                    where,
                    f"Not a shared library kernel-abi-check can read ({problem}).",
                    "Rebuild the variant (`kscaffold build`) or remove the file.",
                )
            )
            continue
        for symbol in python:
            added = getattr(symbol, "version_added", None)
            what = (
                f"uses {symbol.name}, added to the limited Python API only in {added}"
                if added
                else f"uses {symbol.name}, which is outside the limited Python API (abi3)"
            )
            findings.append(
                error(
                    where,
                    f"The library {what}; an .abi3.so must load on every CPython from "
                    f"{PYTHON_ABI}.",
                    f"Stop calling {symbol.name} (register ops through TORCH_LIBRARY, keep "
                    f"Py_LIMITED_API=0x03090000), then rebuild.",
                )
            )
        by_dep: dict[str, list[str]] = defaultdict(list)
        for needed in glibc:
            by_dep[needed.dep].append(needed.version)
        if by_dep:
            newest = ", ".join(
                f"{dep} {max(versions, key=lambda v: tuple(int(p) for p in v.split('.')))}"
                for dep, versions in sorted(by_dep.items())
            )
            make = warning if _is_local_build(variant) else error
            findings.append(
                make(
                    where,
                    f"{len(glibc)} symbol(s) need {newest}, newer than {MANYLINUX} allows "
                    f"(e.g. {glibc[0].name}): this build loads only on systems that new.",
                    "Build the release with kernel-builder's Nix build (`nix run "
                    ".#build-and-copy -L`), which targets manylinux_2_28.",
                )
            )
    return findings
