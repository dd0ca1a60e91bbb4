"""Where the copier template lives and how to render it.

The template ships inside the wheel as ``scaffold/_template``; in a source checkout it is the
top-level ``template/`` folder. Rendering always goes into a fresh folder, so callers can check
the result before anything reaches the user's destination.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from scaffold._version import __version__
from scaffold.errors import KscaffoldError
from scaffold.project.flakepin import EDITION, PINS
from scaffold.project.signature import describe
from scaffold.vocabulary import CPP_LANGUAGE, SCHEMA_KIND

#: Prefix of the staging folders ``kscaffold new`` renders into.
STAGING_PREFIX = ".kscaffold-new-"
#: What rendering never copies from the installed template: bytecode, caches, staging folders.
RENDER_EXCLUDES = ("__pycache__", "*.py[co]", ".pytest_cache", f"{STAGING_PREFIX}*")


def template_dir() -> Path:
    """The copier template kscaffold renders (wheel copy first, then the source checkout)."""
    package_dir = Path(__file__).resolve().parent.parent  # scaffold/, beside _template/
    for candidate in (package_dir / "_template", package_dir.parent / "template"):
        if (candidate / "copier.yml").is_file():
            return candidate
    raise KscaffoldError(
        f"kscaffold's project template is missing (looked in {package_dir / '_template'} and "
        f"{package_dir.parent / 'template'}): reinstall kscaffold."
    )


def kscaffold_version() -> str:
    """The running kscaffold's version, recorded in every project's answers file.

    Read from the package itself rather than from installed metadata, so that a source checkout
    on ``PYTHONPATH`` records the same version as the wheel built from it.
    """
    return __version__


def isort_key(name: str) -> list[str | int]:
    """Ruff's isort order of module and member names: natural, so ``o2`` comes before ``o10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def render(answers: dict[str, Any], destination: Path) -> None:
    """Render the template with ``answers`` into ``destination`` (an empty or new folder).

    Copier renders the project with its first op's files (``csrc/<op>.h``, ``tests/test_<op>.py``
    and the other paths named after the op). Each further op of ``answers["ops"]`` gets the same
    files rendered with that op as the template's ``op``: a rendering of the whole template, of
    which only the paths named after that op are kept.
    """
    _copy(answers, destination)
    for entry in list(answers.get("ops") or [])[1:]:
        with tempfile.TemporaryDirectory(prefix="kscaffold-op-") as scratch:
            single = Path(scratch) / "project"
            _copy({**answers, "op": entry["name"], "kind": entry["kind"]}, single)
            for path in sorted(single.rglob("*")):
                target = destination / path.relative_to(single)
                if path.is_file() and not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)


def _copy(answers: dict[str, Any], destination: Path) -> None:
    import copier  # imported here: building and cleaning never need copier

    # The build.toml edition and the kernel-builder release the flake pins move together; a
    # project moved to an edition no release builds yet records both in its answers.
    edition = answers.get("edition", EDITION)
    names = [entry["name"] for entry in answers.get("ops") or []]
    data = {
        **answers,
        # What the template renders for each op made from a schema, computed here (the template
        # runs no code): its arguments' C++ and Python types, defaults, samples.
        "signatures": {
            entry["name"]: describe(
                entry["name"],
                entry["schema"],
                language=answers.get("language", CPP_LANGUAGE),
                stable_abi=bool(answers.get("stable_abi")),
            )
            for entry in answers.get("ops") or []
            if entry.get("kind") == SCHEMA_KIND
        },
        # The generated imports of the ops' modules, in the order ruff's isort keeps them.
        "op_import_order": sorted(names, key=isort_key),
        # A Triton project's package imports each op's module and the build's _ops (op "").
        "triton_import_order": sorted(
            [
                {"module": "_ops", "op": "", "eager": False},
                *(
                    # A template op's module has an eager path that skips the dispatcher.
                    {
                        "module": f"_{e['name']}_triton",
                        "op": e["name"],
                        "eager": e["kind"] != SCHEMA_KIND,
                    }
                    for e in answers.get("ops") or []
                ),
            ],
            key=lambda entry: isort_key(entry["module"]),
        ),
        "kscaffold_version": kscaffold_version(),
        "edition": edition,
        "kernel_builder_ref": answers.get("kernel_builder_ref") or PINS[edition],
        "record_builder": "kernel_builder_ref" in answers,
    }
    with warnings.catch_warnings():
        # The template is a plain folder, never a git checkout: copier's VCS warnings don't apply.
        warnings.simplefilter("ignore")
        copier.run_copy(
            str(template_dir()),
            destination,
            data=data,
            defaults=True,
            overwrite=True,
            quiet=True,
            unsafe=False,
            skip_tasks=True,
            # Never what running the template's own files or an interrupted `new` left in it.
            exclude=list(RENDER_EXCLUDES),
        )


def render_files(answers: dict[str, Any]) -> dict[str, bytes]:
    """Render the template with ``answers`` and return its files (relative POSIX path → bytes)."""
    with tempfile.TemporaryDirectory(prefix="kscaffold-render-") as scratch:
        destination = Path(scratch) / "project"
        render(answers, destination)
        return {
            path.relative_to(destination).as_posix(): path.read_bytes()
            for path in sorted(destination.rglob("*"))
            if path.is_file()
        }
