"""Names validated once, up front, into small value objects that mirror the Hub's rules."""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass

from scaffold.errors import InvalidNameError, InvalidOptionError
from scaffold.project.cxx_reserved import CXX_RESERVED
from scaffold.project.generated_names import (
    GENERATED_HEADERS,
    GENERATED_IDENTIFIERS,
    GENERATED_MODULE_NAMES,
)
from scaffold.vocabulary import (
    CPP_LANGUAGE,
    OP_VARIANT_SUFFIXES,
    SUPPORTED_BACKENDS,
    TRITON_LANGUAGE,
)

#: The Hub's rule for kernel names (also enforced by the ``kernels`` loader on metadata.json);
#: matched against the whole name (``fullmatch``), so a trailing newline is never accepted.
KERNEL_NAME_PATTERN = re.compile(r"[a-z][-a-z0-9]*[a-z0-9]")
#: The Hub's longest repository name.
MAX_NAME_LENGTH = 96
_REPO_OWNER_PATTERN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")

#: License identifiers of the Hub's model-card metadata that a kernel is commonly released under.
KNOWN_LICENSES: tuple[str, ...] = (
    "apache-2.0",
    "mit",
    "bsd-2-clause",
    "bsd-3-clause",
    "bsl-1.0",
    "mpl-2.0",
    "lgpl-2.1",
    "lgpl-3.0",
    "gpl-2.0",
    "gpl-3.0",
    "agpl-3.0",
    "cc-by-4.0",
    "cc-by-sa-4.0",
    "cc-by-nc-4.0",
    "unlicense",
    "other",
)


def suggest_kernel_name(raw: str) -> str | None:
    """Turn a near-miss such as ``My_Kernel`` into a valid name (``my-kernel``), if one exists."""
    candidate = re.sub(r"[^a-z0-9]+", "-", raw.strip().lower()).strip("-")
    candidate = re.sub(r"^[^a-z]+", "", candidate)
    candidate = re.sub(r"-{2,}", "-", candidate)[:MAX_NAME_LENGTH].rstrip("-")
    return candidate if _valid_kernel_name(candidate) else None


def _valid_kernel_name(name: str) -> bool:
    return (
        KERNEL_NAME_PATTERN.fullmatch(name) is not None
        and "--" not in name
        and len(name) <= MAX_NAME_LENGTH
    )


@dataclass(frozen=True)
class KernelName:
    """A kernel's Hub name and the identifiers derived from it."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _valid_kernel_name(self.name):
            rule = (
                "lowercase letters, digits and single '-', starting with a letter and not ending "
                f"with '-', 2 to {MAX_NAME_LENGTH} characters (the kernels library's and the "
                "Hub's limits)"
            )
            raw = str(self.name)
            suggestion = suggest_kernel_name(raw)
            hint = f"; try '{suggestion}'" if suggestion and suggestion != raw else ""
            shown = raw if len(raw) <= 120 else raw[:100] + f"... ({len(raw)} characters)"
            raise InvalidNameError(f"Invalid kernel name {shown!r}: use {rule}{hint}.")

    @property
    def python_name(self) -> str:
        """The import name: the kernel name with ``-`` replaced by ``_``."""
        return self.name.replace("-", "_")

    @property
    def class_name(self) -> str:
        """A CamelCase name for generated classes (``my-kernel`` → ``MyKernel``)."""
        return "".join(part.capitalize() for part in self.name.split("-"))

    def __str__(self) -> str:
        return self.name


def parse_repo_owner(owner: str) -> str:
    """Validate a Hub user or organisation name."""
    if (
        not isinstance(owner, str)
        or not _REPO_OWNER_PATTERN.fullmatch(owner)
        or ".." in owner
        or "--" in owner
    ):
        raise InvalidNameError(
            f"Invalid Hub owner {owner!r}: use letters, digits, '-', '_' or '.', "
            "as in 'my-org' (the part before '/' in 'my-org/my-kernel')."
        )
    return owner


def parse_backends(values: list[str] | str) -> tuple[str, ...]:
    """Parse ``cuda,cpu`` (or a list of such strings) into a canonical, de-duplicated tuple."""
    items = [values] if isinstance(values, str) else list(values)
    requested = {part.strip().lower() for item in items for part in item.split(",") if part.strip()}
    if not requested:
        raise InvalidOptionError(
            f"No backend given: choose one or more of {', '.join(SUPPORTED_BACKENDS)}."
        )
    unknown = sorted(requested - set(SUPPORTED_BACKENDS))
    if unknown:
        raise InvalidOptionError(
            f"Unsupported backend {', '.join(repr(u) for u in unknown)}: "
            f"supported backends are {', '.join(SUPPORTED_BACKENDS)}."
        )
    return tuple(b for b in SUPPORTED_BACKENDS if b in requested)


def parse_license(value: str) -> str:
    """Validate a license id against the Hub identifiers kscaffold knows."""
    license_id = value.strip().lower()
    if license_id not in KNOWN_LICENSES:
        raise InvalidOptionError(
            f"Unknown license '{value}': use a Hub license id ({', '.join(KNOWN_LICENSES)})."
        )
    return license_id


#: Op names: lowercase snake case, as PyTorch names its ops; also a C++ and Python identifier.
OP_NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
#: Longer names would push generated lines past the 100 columns of the project's ruff.toml.
_MAX_LENGTH = 20

#: C++ keywords (and alternative operator spellings) an op name cannot be: it names a namespace.
CXX_KEYWORDS = frozenset(
    {
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
        "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
        "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
        "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
        "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
        "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
        "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
        "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
        "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
        "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
        "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
    }
)  # fmt: skip

#: Names the generated C++ already gives a meaning: namespaces and macros it uses.
_TAKEN_IN_CXX = frozenset(
    {"at", "c10", "std", "cub", "thrust", "detail", "linux", "unix", "assert", "errno"}
)
#: Names every project gives a meaning: the backend's and the generated package's modules.
_TAKEN_IN_PYTHON = frozenset({"torch", "cuda", "ops", "layers"})


def generated_identifiers(op: str) -> frozenset[str]:
    """What the template generates for the op ``op``: its functions, constants and files."""
    camel = "".join(part.capitalize() for part in op.split("_"))
    return frozenset(
        pattern.replace("{op}", op).replace("{OP}", op.upper()).replace("{Op}", camel)
        for pattern in GENERATED_IDENTIFIERS
    )


def _python_builtins() -> frozenset[str]:
    return frozenset(name for name in dir(builtins) if OP_NAME_PATTERN.fullmatch(name))


def _why_taken(name: str, *, compiled: bool) -> str | None:
    """Why the generated code cannot use ``name`` for an op, or None if it can.

    ``compiled``: the project compiles C++ (a Triton project has only Python, so C++ keywords,
    namespaces and header names are free there).
    """
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return "it is a Python keyword"
    if compiled and name in CXX_KEYWORDS:
        return "it is a C++ keyword"
    if name in _TAKEN_IN_PYTHON or (compiled and name in _TAKEN_IN_CXX):
        return "the generated C++ or Python already uses it"
    if compiled and name in GENERATED_HEADERS:
        return (
            f"the op's header csrc/{name}.h would be included in place of the generated "
            f"code's own {name}.h"
        )
    if compiled and name in CXX_RESERVED:
        return (
            "the C/C++ headers the generated code includes already define it at global scope "
            f"(a function, macro, type or namespace), and the op's `namespace {name}` would "
            "collide with it"
        )
    if name in _python_builtins():
        return (
            f"it is a Python builtin, which the op's function `{name}` would shadow in the "
            "generated package"
        )
    if name in GENERATED_MODULE_NAMES:
        return "the generated Python module imports or defines it itself"
    for identifier in sorted(generated_identifiers(name) - {name}):
        if identifier in GENERATED_MODULE_NAMES:
            return (
                f"the op would generate {identifier}, which the generated Python already "
                "defines for itself"
            )
        if compiled and identifier in CXX_RESERVED:
            return (
                f"the op would generate {identifier}, which the C/C++ headers the generated code "
                "includes already define"
            )
    return None


@dataclass(frozen=True)
class OpName:
    """The name of a new op: a valid Python function, ``torch.ops`` name and C++ namespace.

    In a Triton project (``language``) no C++ is generated, so only the Python rules apply.
    """

    name: str
    language: str = CPP_LANGUAGE

    def __post_init__(self) -> None:
        name = self.name
        rule = "lowercase letters, digits and '_', starting with a letter (e.g. 'scale')"
        if not isinstance(name, str) or not OP_NAME_PATTERN.fullmatch(name):
            name = str(name)
            suggestion = re.sub(r"[^a-z0-9_]+", "_", name.strip().lower()).strip("_")
            suggestion = re.sub(r"^[^a-z]+", "", suggestion)
            hint = (
                f"; try '{suggestion}'"
                if suggestion and suggestion != name and OP_NAME_PATTERN.fullmatch(suggestion)
                else ""
            )
            raise InvalidNameError(f"Invalid op name {name!r}: use {rule}{hint}.")
        if len(name) > _MAX_LENGTH:
            raise InvalidNameError(
                f"Invalid op name '{name}': use at most {_MAX_LENGTH} characters."
            )
        if "__" in name or name.endswith("_"):
            raise InvalidNameError(
                f"Invalid op name '{name}': C++ reserves names with '__' and a trailing '_' "
                "reads as a typo; use single '_' between words."
            )
        for suffix, variant in OP_VARIANT_SUFFIXES.items():
            if name.endswith(suffix):
                raise InvalidNameError(
                    f"Invalid op name '{name}': names ending in '{suffix}' name {variant} "
                    f"kscaffold declares for each op ('{name}' would be the one of "
                    f"'{name.removesuffix(suffix)}')."
                )
        why = _why_taken(name, compiled=self.language != TRITON_LANGUAGE)
        if why is not None:
            raise InvalidNameError(f"Invalid op name '{name}': {why}; choose another name.")


def defined_names(source: str) -> frozenset[str]:
    """The names a Python module defines at its top level: functions, classes, assignments, imports.

    An unparsable module defines none that can be told.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                found.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return frozenset(found)


def check_op_name_free(
    op: OpName,
    *,
    package: str | None,
    other_ops: Iterable[str] = (),
    user_names: Iterable[str] = (),
    init_file: str = "the package's __init__.py",
) -> None:
    """Refuse ``op`` where what it generates collides with the project it joins.

    ``package`` is the Python package's name (None: the op may share it, as a project's first
    op made from an example of that name does); ``other_ops`` the project's other ops;
    ``user_names`` what the package's ``__init__.py`` already defines (:func:`defined_names`).
    """
    name = op.name
    if package is not None and name == package:
        raise InvalidNameError(
            f"Invalid op name '{name}': it is the package's own name, which `from {package} "
            f"import {name}` could no longer tell apart; choose another name."
        )
    mine = generated_identifiers(name)
    for other in sorted(set(other_ops) - {name}):
        shared = sorted(mine & generated_identifiers(other))
        if shared:
            raise InvalidNameError(
                f"Invalid op name '{name}': it would generate {shared[0]}, which the op "
                f"'{other}' generates too; choose another name."
            )
    taken = sorted(mine & set(user_names))
    if taken:
        raise InvalidNameError(
            f"Invalid op name '{name}': {init_file} already defines {taken[0]}, which the op "
            "would generate and shadow; choose another name."
        )
