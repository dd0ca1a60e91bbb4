"""``kscaffold add-op``: one more op, on every backend of a project, merged like ``add-backend``.

The op is recorded in the project's answers (``ops``), so the template renders it like the first
op: a schema in ``torch-ext/torch_binding.h``, ``csrc/<op>.h`` with the input checks, one source
per backend, a typed wrapper and fake implementation in the Python package, ``tests/test_<op>.py``,
``benchmarks/benchmark_<op>.py`` and the ``build.toml`` entries. The difference between the
renderings without and with the op is merged into the user's files three-way
(:mod:`scaffold.evolve`), so every line the user wrote stays as it is.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path

from scaffold.answers import load_answers
from scaffold.errors import InvalidNameError, InvalidOptionError
from scaffold.evolve import EvolveReport, evolve
from scaffold.schema import find_schemas
from scaffold.vocabulary import LIKE_KINDS, OP_VARIANT_SUFFIXES, SKELETON_KIND

#: Op names: lowercase snake case, as PyTorch names its ops; also a C++ and Python identifier.
OP_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
#: Longer names would push generated lines past the 100 columns of the project's ruff.toml.
_MAX_LENGTH = 20

#: C++ keywords (and alternative operator spellings) an op name cannot be: it names a namespace.
_CXX_KEYWORDS = frozenset(
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

#: Names the generated code already gives a meaning: C++ namespaces and macros it uses, and the
#: module-level names of the generated Python package.
_TAKEN_BY_THE_TEMPLATE = frozenset(
    {
        "at", "c10", "std", "torch", "cuda", "cub", "thrust", "detail", "linux", "unix",
        "assert", "errno", "ops", "layers",
    }
)  # fmt: skip


@dataclass(frozen=True)
class OpName:
    """The name of a new op: a valid C++ namespace, Python function and ``torch.ops`` name."""

    name: str

    def __post_init__(self) -> None:
        name = self.name
        rule = "lowercase letters, digits and '_', starting with a letter (e.g. 'scale')"
        if not OP_NAME_PATTERN.match(name):
            suggestion = re.sub(r"[^a-z0-9_]+", "_", name.strip().lower()).strip("_")
            suggestion = re.sub(r"^[^a-z]+", "", suggestion)
            hint = (
                f"; try '{suggestion}'"
                if suggestion and suggestion != name and OP_NAME_PATTERN.match(suggestion)
                else ""
            )
            raise InvalidNameError(f"Invalid op name '{name}': use {rule}{hint}.")
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
        if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in _CXX_KEYWORDS:
            raise InvalidNameError(
                f"Invalid op name '{name}': it is a Python or C++ keyword; choose another name."
            )
        if name in _TAKEN_BY_THE_TEMPLATE:
            raise InvalidNameError(
                f"Invalid op name '{name}': the generated C++ or Python already uses it; choose "
                "another name."
            )


def add_op(
    project: Path, name: str, *, like: str | None = None, markers: bool = False
) -> EvolveReport:
    """Add the op ``name`` to every backend of ``project``, keeping every edit the user made.

    ``like`` starts the op from a working op of the template (``relu`` or ``img2gray``, with
    its math under the new name); without it, each backend gets a skeleton that compiles,
    registers the op, checks its inputs and raises naming the file to write.
    """
    op = OpName(name)
    if like is not None and like not in LIKE_KINDS:
        raise InvalidOptionError(
            f"Unknown --like '{like}': start the op from one of {', '.join(LIKE_KINDS)}, "
            "or leave --like out for a skeleton."
        )
    project = project.resolve()
    answers = load_answers(project)
    declared = {schema.base_name for schema in find_schemas(project)}
    recorded = {entry.name for entry in answers.ops}
    if op.name in recorded or op.name in declared:
        where = "kscaffold's answers" if op.name in recorded else "torch-ext/"
        raise InvalidOptionError(
            f"{project.name} already has an op named '{op.name}' (declared in {where}): "
            "choose another name."
        )
    for suffix, variant in OP_VARIANT_SUFFIXES.items():
        if f"{op.name}{suffix}" in declared:
            raise InvalidOptionError(
                f"{project.name} already declares '{op.name}{suffix}', the name of {variant} "
                f"kscaffold would declare for '{op.name}': choose another name."
            )
    ops = [*(entry.as_answer() for entry in answers.ops)]
    ops.append({"name": op.name, "kind": like or SKELETON_KIND})
    return evolve(
        project,
        answers,
        answers.with_values(ops=ops),
        markers=markers,
        what=f"add the {op.name} op",
    )
