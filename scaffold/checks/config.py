"""build.toml rules: the schema of its edition, kernel tables, listed files, python-depends."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any, cast

from scaffold.checks.base import Context, Finding, error, warning
from scaffold.errors import KscaffoldError
from scaffold.project.buildconfig import load_build_config
from scaffold.project.editions import LANGUAGE_EDITION, backend_key_text, kernel_table_backend
from scaffold.project.flakepin import EDITION
from scaffold.project.names import KNOWN_LICENSES
from scaffold.support.safefs import has_control_character, leaves_project, read_regular_text
from scaffold.vocabulary import (
    BUILD_TOML,
    BUILDABLE_SUFFIXES,
    HEADER_SUFFIXES,
    SCANNED_SUFFIXES,
    SOURCE_DIRS,
    TORCH_EXT_DIR,
)

#: Headers kernel-builder writes itself during every build: never listed, never committed.
_WRITTEN_BY_KERNEL_BUILDER = frozenset({"torch-ext/registration.h"})

_NAME_RULE = "lowercase letters, digits and '-', starting with a letter (e.g. 'my-kernel')"


# --------------------------------------------------------------------------------------------
# Schema (edition 5)


def _rust_parser() -> Callable[[str], object] | None:
    """The build.toml parser of kernels (private in kernels 0.17.2), if it is installed."""
    try:
        module = importlib.import_module("kernels._rust")
    except ImportError:
        return None
    build = getattr(module, "Build", None)
    return cast("Callable[[str], object] | None", getattr(build, "open", None))


_RUST_PREFIX = re.compile(r"^.*?build\.toml:\s*", re.DOTALL)


def _fix_for_parser_message(message: str) -> str:
    """A fix for one of kernel-builder's build.toml parse errors."""
    if match := re.search(r"Unknown field ([\w-]+)\. Expected one of (.+)", message):
        return (
            f"Remove or rename '{match[1]}': edition {EDITION} accepts only "
            f"{match[2].strip().rstrip('.')} in that table."
        )
    if match := re.search(r"Missing field ([\w-]+)", message):
        return f"Add '{match[1]}' to the table that lacks it (see the build.toml reference)."
    if "Invalid kernel name" in message:
        return f"Rename general.name: {_NAME_RULE}."
    if match := re.search(r"Unknown variant ([\w-]+)\. Expected one of (.+)", message):
        return f"Replace '{match[1]}' with one of {match[2].strip().rstrip('.')}."
    if "unsupported build edition" in message:
        return f"Set edition = {EDITION} in [general] (run `kernel-builder update-build`)."
    if "Framework" in message:
        return "Add a [torch] table with the src list of the kernel's bindings."
    if "TOML parse error" in message:
        return "Fix the TOML syntax at the line and column shown."
    return "Correct build.toml as the message says (kernel-builder's build.toml reference)."


def _fix_for_config_message(message: str) -> str:
    """A fix for one of scaffold.project.buildconfig's messages."""
    if "unknown key" in message:
        return "Remove or rename the key: the file's edition does not define it."
    if "is missing" in message:
        return "Add the missing key."
    if "general.name" in message:
        return f"Rename general.name: {_NAME_RULE}."
    if "not a backend" in message:
        return "Use one of the backends the message lists."
    if "not supported" in message:
        return "kscaffold builds [torch] kernels only: use a [torch] table."
    return "Change the value as the message says."


def _one_line(text: str) -> str:
    return " ".join(text.split())


def check_schema(context: Context) -> list[Finding]:
    """build.toml against its edition: kernel-builder's parser when installed, and kscaffold's.

    kernels 0.17.2's parser reads editions 4 and 5 only; an edition-6 file is judged by
    kscaffold's reader, which follows kernel-builder's edition-6 schema.
    """
    if context.toml_error is not None:
        return [
            error(
                BUILD_TOML,
                f"Not valid TOML: {_one_line(str(context.toml_error))}.",
                "Fix the TOML syntax at the line and column shown.",
            )
        ]
    findings: list[Finding] = []
    if context.general.get("edition") is None:
        # Without an edition, kernel-builder reads the legacy format (edition 4) and upgrades it
        # in memory: it builds, with the older keys and rules.
        findings.append(
            warning(
                f"{BUILD_TOML} [general]",
                "No edition: kernel-builder reads this file as the legacy format (edition 4) "
                "and upgrades it in memory on every build.",
                f"Run `kernel-builder update-build` (or add edition = {EDITION} to [general] "
                "and move to edition 5's keys).",
            )
        )
    parser = _rust_parser()
    if parser is not None:
        try:
            with _quiet_stderr():  # the parser prints its legacy-format warning itself
                parser(str(context.project))
        except (ValueError, OSError) as problem:
            message = _one_line(_RUST_PREFIX.sub("", str(problem), count=1))
            # kernels 0.17.2 knows no edition 6: kscaffold's reader below judges such a file.
            if not _newer_than_parser(context, message):
                findings.append(
                    error(
                        BUILD_TOML,
                        f"kernel-builder rejects it: {message}",
                        _fix_for_parser_message(message),
                    )
                )
    findings.extend(check_backend_tables(context))
    if not any(finding.is_error for finding in findings):
        # kscaffold's reader: the fallback without kernels, and kscaffold's own limits with it.
        try:
            load_build_config(context.project)
        except KscaffoldError as problem:
            message = _one_line(str(problem)).removeprefix(f"{BUILD_TOML}: ")
            findings.append(error(BUILD_TOML, message, _fix_for_config_message(message)))
    return findings


def _newer_than_parser(context: Context, message: str) -> bool:
    """The installed parser refuses the file's edition only because it predates it."""
    return (
        context.general.get("edition") == LANGUAGE_EDITION
        and "unsupported build edition" in message
    )


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send what native code writes to file descriptor 2 to /dev/null for a moment."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def check_backend_tables(context: Context) -> list[Finding]:
    """Each backend in general.backends has a [kernel.*] table, and each table's is listed.

    A pure-Python ([torch-noarch]) kernel has no tables. In a [torch] kernel, a backend without
    one is built by kernel-builder as a Python-only variant, without the native ops: a warning.
    """
    if "torch-noarch" in context.data:
        return []
    findings: list[Finding] = []
    backends = context.backends
    table_backends: dict[str, list[str]] = {}
    for label, table in context.kernels.items():
        backend = kernel_table_backend(table)
        if backend is None:
            continue  # the schema check reports it
        table_backends.setdefault(backend, []).append(label)
        if backend not in backends:
            findings.append(
                error(
                    f"{BUILD_TOML} [kernel.{label}]",
                    f"{backend_key_text(table, backend)}, but general.backends "
                    f"({', '.join(backends)}) does not list it, so this table is never built.",
                    f'Add "{backend}" to general.backends, or remove [kernel.{label}].',
                )
            )
    edition6 = context.general.get("edition") == LANGUAGE_EDITION
    for backend in backends:
        if backend not in table_backends:
            key = f'language = "cpp-{backend}"' if edition6 else f'backend = "{backend}"'
            findings.append(
                warning(
                    f"{BUILD_TOML} [general]",
                    f'general.backends lists "{backend}", but no [kernel.*] table has '
                    f"{key}: its variant would have no native kernel.",
                    f"Add a [kernel.<op>_{backend}] table with {key}, depends "
                    f"and src (`kscaffold add-backend {backend}` writes one), or remove "
                    f'"{backend}" from general.backends.',
                )
            )
    return findings


# --------------------------------------------------------------------------------------------
# Files


def check_sources_exist(context: Context) -> list[Finding]:
    """Every file named in a src list exists, and so does the kernel's Python package."""
    findings: list[Finding] = []
    for source_list in context.source_lists:
        for relative in source_list.files:
            pure = PurePosixPath(relative)
            path = context.project / relative
            if has_control_character(relative):
                findings.append(
                    error(
                        f"{BUILD_TOML} [{source_list.table}]",
                        f"src entry {relative!r} holds a control character (a newline, tab, "
                        "...): no compiler or build file can name it, and kscaffold build "
                        "refuses it.",
                        "Rename the file without control characters and list the new path.",
                    )
                )
            elif pure.is_absolute() or ".." in pure.parts:
                findings.append(
                    error(
                        f"{BUILD_TOML} [{source_list.table}]",
                        f"src entry '{relative}' points outside the project; Nix copies only "
                        "the project.",
                        "Move the file into the project and list its path relative to build.toml.",
                    )
                )
            elif path.is_symlink() and not path.exists():
                findings.append(
                    error(
                        f"{BUILD_TOML} [{source_list.table}]",
                        f"src entry '{relative}' is a dangling link: it names no file.",
                        f"Replace {relative} with the file itself, or remove it from "
                        f"[{source_list.table}] src.",
                    )
                )
            elif leaves_project(context.project, path):
                findings.append(
                    error(
                        f"{BUILD_TOML} [{source_list.table}]",
                        f"src entry '{relative}' is a link that leads out of the project; Nix "
                        "copies only the project, and a release would build without it.",
                        f"Replace {relative} (or the linked folder on its way) with the file "
                        "itself.",
                    )
                )
            elif not path.is_file():
                what = "is a folder, not a file" if path.is_dir() else "does not exist"
                findings.append(
                    error(
                        f"{BUILD_TOML} [{source_list.table}]",
                        f"src entry '{relative}' {what}.",
                        f"Create {relative}, or remove it from [{source_list.table}] src.",
                    )
                )
    if context.python_name:
        folder = "tvm-ffi-ext" if "tvm-ffi" in context.data else TORCH_EXT_DIR
        init = f"{folder}/{context.python_name}/__init__.py"
        if not (context.project / init).is_file():
            findings.append(
                error(
                    init,
                    f"The kernel's Python package is missing: kernels loads {init} into "
                    "build/<variant>/.",
                    f"Create {init} with the kernel's Python API.",
                )
            )
    return findings


_PYEXT = re.compile(r"[A-Za-z0-9_]+")


def check_build_rules(context: Context) -> list[Finding]:
    """What kernel-builder or the loader refuses later, though the schema accepts it.

    A src entry that is not a source or header (``build.toml`` itself), a file in two src lists
    (compiled twice into one library: duplicate symbols), a ``pyext`` that is not a plain
    extension (``""``, ``..``, ``/``), CUTLASS on a table that is not CUDA, and a license that the
    Hub's card metadata does not know.
    """
    findings: list[Finding] = []
    seen: dict[str, list[tuple[str, str | None]]] = {}
    for source_list in context.source_lists:
        where = f"{BUILD_TOML} [{source_list.table}]"
        for relative in source_list.files:
            suffix = PurePosixPath(relative).suffix
            if source_list.compiled and suffix not in BUILDABLE_SUFFIXES | HEADER_SUFFIXES:
                findings.append(
                    error(
                        where,
                        f"src entry '{relative}' is not a C++/CUDA source or header: "
                        "kernel-builder would try to compile it.",
                        f"Remove '{relative}' from [{source_list.table}] src.",
                    )
                )
            earlier = seen.setdefault(relative, [])
            # Two lists compiled into one variant: [torch] and any table, or two of one backend.
            clash = next(
                (
                    table
                    for table, backend in earlier
                    if None in (backend, source_list.backend) or backend == source_list.backend
                ),
                None,
            )
            earlier.append((source_list.table, source_list.backend))
            if clash is not None and suffix not in HEADER_SUFFIXES:
                findings.append(
                    error(
                        where,
                        f"src entry '{relative}' is also listed in [{clash}]: the variant would "
                        "compile it twice (duplicate symbols at link time).",
                        f"List '{relative}' in one src only.",
                    )
                )
    torch = context.data.get("torch")
    pyext = torch.get("pyext") if isinstance(torch, dict) else None
    if isinstance(pyext, list):
        for entry in pyext:
            if not isinstance(entry, str) or not _PYEXT.fullmatch(entry.lstrip(".")):
                findings.append(
                    error(
                        f"{BUILD_TOML} [torch]",
                        f"pyext entry {entry!r} is not a file extension: the build would copy "
                        "files it should not, or none.",
                        'Use plain extensions such as pyext = ["py", "pyi"].',
                    )
                )
    for label, table in context.kernels.items():
        depends = table.get("depends")
        backend = kernel_table_backend(table)
        cutlass = (
            [d for d in depends if isinstance(d, str) and d.startswith("cutlass")]
            if (isinstance(depends, list))
            else []
        )
        if cutlass and backend != "cuda":
            findings.append(
                error(
                    f"{BUILD_TOML} [kernel.{label}]",
                    f"depends names {', '.join(cutlass)} on a {backend} table: CUTLASS is "
                    "CUDA-only, and kernel-builder refuses it elsewhere.",
                    f"Remove {', '.join(cutlass)} from [kernel.{label}] depends.",
                )
            )
    license_id = context.general.get("license")
    if isinstance(license_id, str) and license_id.strip().lower() not in KNOWN_LICENSES:
        findings.append(
            error(
                f"{BUILD_TOML} [general]",
                f"license '{license_id}' is not a license id the Hub's card metadata knows.",
                f"Use one of {', '.join(KNOWN_LICENSES)}.",
            )
        )
    return findings


def _headers(context: Context) -> list[str]:
    generated = {artifact.path for artifact in context.artifacts.artifacts}
    generated |= {kept.path for kept in context.artifacts.kept if kept.tracked_artifact}
    # Files of the Python package with a pyext suffix ship with it (Nix copies them too):
    # headers there are data for a JIT compiler, not sources of the build.
    package = f"{TORCH_EXT_DIR}/{context.python_name}/" if context.python_name else None
    torch = context.data.get("torch")
    pyext = torch.get("pyext") if isinstance(torch, dict) else None
    shipped = (
        {f".{ext}" for ext in pyext if isinstance(ext, str)} if isinstance(pyext, list) else set()
    )
    headers: list[str] = []
    for folder in SOURCE_DIRS:
        root = context.project / folder
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            relative = context.relative(path)
            if (
                path.suffix in HEADER_SUFFIXES
                and path.is_file()
                and relative not in _WRITTEN_BY_KERNEL_BUILDER
                and not any(relative == g or relative.startswith(g + "/") for g in generated)
                and not (package and relative.startswith(package) and path.suffix in shipped)
            ):
                headers.append(relative)
    return headers


def _suggest_table(context: Context, header: str) -> str:
    """The src list a header most likely belongs to: one listing a file in its folder."""
    folder = PurePosixPath(header).parent
    for source_list in context.source_lists:
        if any(PurePosixPath(path).parent == folder for path in source_list.files):
            return source_list.table
    return "torch"


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def _included_names(context: Context) -> set[str]:
    """The file names that some #include of the project's sources names."""
    names: set[str] = set()
    tops = {PurePosixPath(path).parts[0] for path in context.listed_files if path.strip()}
    for folder in sorted({*SOURCE_DIRS} | tops):
        if folder in ("..", ".") or PurePosixPath(folder).is_absolute():
            continue  # outside the project: the src rule reports it
        root = context.project / folder
        files = root.rglob("*") if root.is_dir() else [root]
        for path in files:
            if path.suffix not in SCANNED_SUFFIXES:
                continue
            text = read_regular_text(path)  # None for a folder, a FIFO or an unreadable file
            if text is not None:
                names.update(PurePosixPath(m).name for m in _INCLUDE.findall(text))
    return names


def check_headers_listed(context: Context) -> list[Finding]:
    """Every header under csrc/ and torch-ext/ is in some src list: Nix copies nothing else.

    A header no source includes breaks nothing when Nix leaves it out: a warning.
    """
    listed = context.listed_files
    unlisted = [header for header in _headers(context) if header not in listed]
    included = _included_names(context) if unlisted else set()
    findings: list[Finding] = []
    for header in unlisted:
        fix = f'Add "{header}" to [{_suggest_table(context, header)}] src in build.toml.'
        if PurePosixPath(header).name in included:
            findings.append(
                error(
                    header,
                    "Header is not listed in any src of build.toml: Nix copies only listed "
                    "files, so the Nix build fails to find it (local builds still work).",
                    fix,
                )
            )
        else:
            findings.append(
                warning(
                    header,
                    "Header is not listed in any src of build.toml and no source includes it: "
                    "Nix leaves it out of the build.",
                    f"Delete it if it is unused; otherwise {fix[0].lower()}{fix[1:]}",
                )
            )
    return findings


# --------------------------------------------------------------------------------------------
# python-depends


def _curated_python_depends() -> dict[str, Any] | None:
    """The Python dependencies the kernels package lets a kernel declare (python_depends.json)."""
    spec = importlib.util.find_spec("kernels")
    if spec is None or spec.origin is None:
        return None
    try:
        data = json.loads((Path(spec.origin).parent / "python_depends.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _names(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def check_python_depends(context: Context) -> list[Finding]:
    """python-depends only names the dependencies the kernels loader accepts."""
    declared: list[tuple[str, str | None, list[str]]] = [
        ("general", None, _names(context.general.get("python-depends")))
    ]
    for section in ("cuda", "xpu", "neuron", "tpu"):
        table = context.general.get(section)
        if isinstance(table, dict):
            declared.append((f"general.{section}", section, _names(table.get("python-depends"))))
    if not any(names for _, _, names in declared):
        return []
    curated = _curated_python_depends()
    if curated is None:
        return [
            warning(
                f"{BUILD_TOML} [general]",
                "Cannot check python-depends: the kernels package (its python_depends.json) "
                "is not installed.",
                "pip install kernels, then run kscaffold check again.",
            )
        ]
    general = curated.get("general", {})
    per_backend = curated.get("backends", {})
    general_names = set(general) if isinstance(general, dict) else set()
    findings: list[Finding] = []
    for table, backend, names in declared:
        backend_names = set(per_backend.get(backend, {})) if backend else set()
        allowed = general_names | backend_names
        for name in names:
            if name in allowed:
                continue
            homes = sorted(
                b for b, deps in per_backend.items() if isinstance(deps, dict) and name in deps
            )
            if homes:
                fix = (
                    f'Move "{name}" to [general.{homes[0]}] python-depends: kernels accepts it '
                    f"only for the {', '.join(homes)} backend."
                )
            else:
                fix = (
                    f'Remove "{name}": kernels accepts only {", ".join(sorted(allowed))} here. '
                    "Import other packages lazily in your Python code and document them."
                )
            findings.append(
                error(
                    f"{BUILD_TOML} [{table}]",
                    f'python-depends "{name}" is not a dependency the kernels loader accepts: '
                    "loading the kernel fails with 'unsupported kernel dependency'.",
                    fix,
                )
            )
    return findings
