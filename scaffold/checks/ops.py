"""Ops: every schema has an implementation for every backend, and a Python wrapper.

An op without an implementation for a backend is a warning: that backend's variant loads, and
only calling the op there fails. A registration in a file no ``src`` list compiles is an error.

Schemas and registrations count for a backend only where the preprocessor may compile them in
that backend's variant (``#if defined(CPU_KERNEL)`` blocks, see
:mod:`scaffold.project.preprocessor`),
and two declarations of one op in alternative ``#if``/``#else`` branches are not a duplicate.
"""

from __future__ import annotations

import ast
from pathlib import Path, PurePosixPath

from scaffold.checks.base import Context, Finding, error, warning
from scaffold.errors import SchemaError
from scaffold.project.preprocessor import Build, exclusive, possible
from scaffold.project.pyregistrations import find_unprefixed_registrations
from scaffold.project.schema import (
    COMPOSITE_KEYS,
    OpSchema,
    Registration,
    find_schemas,
    scan_registrations,
    source_files,
)
from scaffold.support.safefs import read_regular_text
from scaffold.vocabulary import (
    BACKEND_DISPATCH_KEYS,
    BINDING_HEADER,
    HEADER_SUFFIXES,
    SCANNED_SUFFIXES,
    TORCH_EXT_DIR,
)


def _location(context: Context, path: Path | None, line: int) -> str:
    if path is None:
        return TORCH_EXT_DIR
    return f"{context.relative(path)}:{line}" if line else context.relative(path)


def _python_references(package: Path) -> set[str]:
    """Names used as ``ops.<name>`` (or ``torch.ops.<ns>.<name>``) in the kernel's Python code."""
    names: set[str] = set()
    for path in sorted(package.rglob("*.py")) if package.is_dir() else []:
        if path.name == "_ops.py" or "__pycache__" in path.parts:
            continue
        text = read_regular_text(path)  # never a FIFO named like a module
        try:
            tree = ast.parse(text) if text is not None else None
        except (SyntaxError, ValueError, RecursionError):
            continue
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_ops_namespace(node.value):
                names.add(node.attr)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and _is_ops_namespace(node.args[0])
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                names.add(node.args[1].value)
    return names


def _is_ops_namespace(node: ast.expr) -> bool:
    """``ops``, ``_ops.ops``, ``self.ops`` or ``torch.ops.<namespace>``."""
    if isinstance(node, ast.Name):
        return node.id == "ops"
    if isinstance(node, ast.Attribute):
        if node.attr == "ops":
            return True
        return isinstance(node.value, ast.Attribute) and node.value.attr == "ops"
    return False


def _impl_hint(backend: str, key: str, op: str, context: Context) -> str:
    files = sorted(  # a source file of the backend's tables, before any header
        (
            path
            for source_list in context.source_lists
            if source_list.backend == backend
            for path in source_list.files
        ),
        key=lambda path: (PurePosixPath(path).suffix in HEADER_SUFFIXES, path),
    )
    where = f" in {files[0]}" if files else f" in the {backend} kernel's source"
    return (
        f"Register it{where}: TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, {key}, m) "
        f'{{ m.impl("{op}", &your_{op.replace(".", "_")}_{backend}); }}'
    )


def _sources_to_scan(context: Context) -> list[Path]:
    """The C++ sources under torch-ext/ and csrc/, and any other file a src list names."""
    files = set(source_files(context.project))
    for relative in context.listed_files:
        path = context.project / relative
        if path.suffix in SCANNED_SUFFIXES and path.is_file():
            files.add(path)
    return sorted(files)


def check_ops(context: Context) -> list[Finding]:
    """Each declared op is implemented for each backend of build.toml and wrapped in Python."""
    if "torch" not in context.data:
        return []  # a pure-Python ([torch-noarch]) or tvm-ffi kernel: no torch.library schemas
    try:
        schemas = find_schemas(context.project)
    except SchemaError as problem:
        return [
            error(
                TORCH_EXT_DIR,
                str(problem),
                "Write the schema as 'name(Type arg, ...) -> ReturnType' (see torch.library).",
            )
        ]
    if not schemas:
        return [
            warning(
                TORCH_EXT_DIR,
                'No op schema found (no ops.def("name(...) -> ...") in torch-ext/).',
                f"Declare each op once with ops.def(...) in {BINDING_HEADER}.",
            )
        ]
    findings = _duplicates(context, schemas)
    registrations = scan_registrations(_sources_to_scan(context))
    findings.extend(_missing_impls(context, schemas, registrations))
    findings.extend(_undeclared_impls(context, schemas, registrations))
    findings.extend(_missing_wrappers(context, schemas))
    return findings


def check_python_registrations(context: Context) -> list[Finding]:
    """No Python ``torch.library`` registration names an op outside the build's namespace.

    kernel-builder stops every build of such a kernel (its torch-ops-check), whatever the
    framework, so this is an error for ``[torch]`` and ``[torch-noarch]`` kernels alike.
    """
    return [
        error(
            found.location(context.project),
            f"{found.problem()}; two builds loaded in one process would collide.",
            f"{found.fix()}.",
        )
        for found in find_unprefixed_registrations(context.project)
    ]


def _builds(context: Context) -> list[Build]:
    """The builds to reason about: each declared backend's, or an unknown one if none."""
    return [Build.for_backend(backend) for backend in context.backends] or [Build.for_backend(None)]


def _duplicates(context: Context, schemas: list[OpSchema]) -> list[Finding]:
    builds = _builds(context)
    seen: dict[str, list[OpSchema]] = {}
    findings: list[Finding] = []
    for schema in schemas:
        earlier = seen.setdefault(schema.name, [])
        clash = next(
            (
                other
                for other in earlier
                if not exclusive(other.branches, schema.branches)
                and any(
                    possible(other.branches, build) and possible(schema.branches, build)
                    for build in builds
                )
            ),
            None,
        )
        earlier.append(schema)
        if clash is not None:
            first = clash
            findings.append(
                error(
                    _location(context, schema.file, schema.line),
                    f"Op '{schema.name}' is declared twice (first at "
                    f"{_location(context, first.file, first.line)}); loading the kernel fails.",
                    "Keep one declaration, or give the second an overload name such as "
                    f"'{schema.base_name}.out'.",
                )
            )
    return findings


def _missing_impls(
    context: Context, schemas: list[OpSchema], registrations: list[Registration]
) -> list[Finding]:
    findings: list[Finding] = []
    for backend in context.backends:
        key = BACKEND_DISPATCH_KEYS.get(backend)
        if key is None:
            continue
        compiled = context.compiled_for(backend)
        build = Build.for_backend(backend)
        declared: set[str] = set()
        for schema in schemas:
            if schema.name in declared or not possible(schema.branches, build):
                continue  # not in this backend's variant, or reported once already
            declared.add(schema.name)
            candidates = [
                r
                for r in registrations
                if r.op == schema.name
                and (r.dispatch_key in COMPOSITE_KEYS | {key})
                and possible(r.branches, build)
            ]
            if any(context.relative(r.file) in compiled for r in candidates):
                continue
            if not candidates and any(
                r.op == schema.name
                and possible(r.branches, build)
                and context.relative(r.file) in compiled
                for r in registrations
            ):
                continue  # a device-specific op, e.g. a CPU-only helper in the CUDA variant
            location = _location(context, schema.file, schema.line)
            if candidates:
                where = context.relative(candidates[0].file)
                tables = [f"[{s.table}]" for s in context.source_lists if s.backend == backend]
                findings.append(
                    error(
                        location,
                        f"Op '{schema.name}' is implemented for {key} in {where}, but no src list "
                        f"of the {backend} build names that file, so it is not compiled.",
                        f'Add "{where}" to the src of {tables[0] if tables else "[torch]"}.',
                    )
                )
            else:
                # The variant still loads and its other ops work, as in kernels that declare
                # every op everywhere but implement some on one device only: not a release gate.
                findings.append(
                    warning(
                        location,
                        f"Op '{schema.name}' has no {backend} implementation: the {backend} "
                        f"variant loads, but calling this op with {backend} tensors fails "
                        f"(\"Could not run ... with arguments from the '{key}' backend\").",
                        _impl_hint(backend, key, schema.name, context)
                        + " Or leave it, if the op is not meant for this device.",
                    )
                )
    return findings


def _undeclared_impls(
    context: Context, schemas: list[OpSchema], registrations: list[Registration]
) -> list[Finding]:
    declared = {schema.name for schema in schemas}
    findings: list[Finding] = []
    for registration in registrations:
        if registration.op in declared:
            continue
        findings.append(
            error(
                _location(context, registration.file, registration.line),
                f"'{registration.op}' is registered for {registration.dispatch_key} but no "
                "schema declares it: loading the kernel fails.",
                f'Declare it with ops.def("{registration.op}(...) -> ...") in '
                f"{BINDING_HEADER}, or fix the name in m.impl(...).",
            )
        )
    return findings


def _missing_wrappers(context: Context, schemas: list[OpSchema]) -> list[Finding]:
    if not context.python_name:
        return []
    package = context.project / TORCH_EXT_DIR / context.python_name
    used = _python_references(package)
    init = f"{TORCH_EXT_DIR}/{context.python_name}/__init__.py"
    findings: list[Finding] = []
    reported: set[str] = set()
    for schema in schemas:
        if schema.base_name in used or schema.base_name in reported:
            continue
        reported.add(schema.base_name)
        findings.append(
            warning(
                _location(context, schema.file, schema.line),
                f"Op '{schema.name}' has no Python wrapper: nothing in torch-ext/"
                f"{context.python_name}/ calls ops.{schema.base_name}, so users of the kernel "
                "cannot reach it through its API.",
                f"Add a function to {init} that calls ops.{schema.base_name}(...) "
                f"(with `from ._ops import ops`).",
            )
        )
    return findings
