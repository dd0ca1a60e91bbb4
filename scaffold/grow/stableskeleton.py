"""Implementation skeletons for a project built against torch's stable ABI.

The same skeleton as :mod:`scaffold.grow.skeleton` writes (it compiles, registers every op, and
raises naming its file), in the stable ABI's terms: ``torch::stable::Tensor`` arguments,
``STD_TORCH_CHECK`` and boxed (``TORCH_BOX``) registrations under
``STABLE_TORCH_LIBRARY_IMPL_EXPAND``. The stable ABI passes fewer types than ATen's: an op with
an argument of another type is refused by name.
"""

from __future__ import annotations

import re

from scaffold.errors import KscaffoldError
from scaffold.grow.skeleton import SKELETON_MARKER, skeleton_path
from scaffold.project.schema import Argument, OpSchema
from scaffold.project.stabletypes import STABLE_TENSOR, STABLE_VALUE_TYPES
from scaffold.vocabulary import BACKEND_DISPATCH_KEYS

_ANNOTATION = re.compile(r"\([a-z!|*\s]*\)")


def _argument_type(argument: Argument, op: OpSchema) -> str:
    base = _ANNOTATION.sub("", argument.type).strip()
    optional = base.endswith("?")
    base = base.removesuffix("?")
    if base == "Tensor":
        cpp = STABLE_TENSOR
        if optional:
            return f"std::optional<{cpp}>"
        return f"{cpp}&" if argument.is_mutated else f"const {cpp}&"
    if base in STABLE_VALUE_TYPES:
        cpp = STABLE_VALUE_TYPES[base]
        return f"std::optional<{cpp}>" if optional else cpp
    raise KscaffoldError(
        f"Cannot write a stable-ABI skeleton for {op.name}: the type '{argument.type}' is not one "
        "the skeleton passes through torch's stable ABI (Tensor, Tensor?, int, float, bool, "
        "ScalarType): write that backend's source by hand."
    )


def _return_type(op: OpSchema) -> str:
    types = []
    for returned in op.returns:
        base = _ANNOTATION.sub("", returned.type).strip()
        if base == "Tensor":
            types.append(STABLE_TENSOR)
        elif base in STABLE_VALUE_TYPES:
            types.append(STABLE_VALUE_TYPES[base])
        else:
            raise KscaffoldError(
                f"Cannot write a stable-ABI skeleton for {op.name}: unsupported return type "
                f"'{returned.type}'."
            )
    if not types:
        return "void"
    return types[0] if len(types) == 1 else f"std::tuple<{', '.join(types)}>"


def render_stable_skeleton(python_name: str, backend: str, ops: list[OpSchema]) -> str:
    """C++ source registering a not-yet-implemented ``backend`` kernel for each op in ``ops``."""
    path = skeleton_path(python_name, backend)
    key = BACKEND_DISPATCH_KEYS[backend]
    namespace = f"{python_name}_{backend}"
    functions = []
    for op in ops:
        function = f"{op.name.replace('.', '_')}_{backend}"
        names = [argument.name or f"arg{index}" for index, argument in enumerate(op.arguments)]
        parameters = ", ".join(
            f"{_argument_type(argument, op)} {name}"
            for argument, name in zip(op.arguments, names, strict=True)
        )
        unused = "".join(f"  (void){name};\n" for name in names)
        functions.append(
            (
                function,
                f"// {op.schema_text}\n"
                f"{_return_type(op)} {function}({parameters}) {{\n"
                f"{unused}"
                f'  not_implemented("{op.name}");\n'
                "}\n",
            )
        )
    registrations = "".join(
        f'  m.impl("{op.name}", TORCH_BOX(&{namespace}::{function}));\n'
        for op, (function, _) in zip(ops, functions, strict=True)
    )
    return (
        f"// The {key} implementation of {python_name}'s ops: a skeleton generated from their\n"
        "// schemas, against torch's stable ABI (torch/csrc/stable and torch/headeronly only).\n"
        "// Each function compiles and is registered, but raises until you write it.\n"
        f"// {SKELETON_MARKER}: delete this line once every op below is implemented;\n"
        f"// until then the project's tests expect their {backend} cases to fail.\n"
        "\n"
        "#include <optional>\n"
        "#include <stdexcept>\n"
        "#include <string>\n"
        "#include <tuple>\n"
        "\n"
        "#include <torch/csrc/stable/library.h>\n"
        "#include <torch/csrc/stable/tensor.h>\n"
        "#include <torch/headeronly/core/ScalarType.h>\n"
        "\n"
        '#include "registration.h"\n'
        "\n"
        f"namespace {namespace} {{\n"
        "\n"
        "[[noreturn]] void not_implemented(const char* op) {\n"
        f'  throw std::runtime_error(std::string("{python_name}: ") + op +\n'
        f'                           " has no {key} implementation yet: write it in {path}");\n'
        "}\n"
        "\n" + "\n".join(text for _, text in functions) + "\n"
        f"}}  // namespace {namespace}\n"
        "\n"
        f"STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, {key}, m) {{\n"
        f"{registrations}"
        "}\n"
    )
