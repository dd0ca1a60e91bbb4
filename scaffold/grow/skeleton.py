"""Implementation skeletons for ops the user wrote: they compile, register, and fail when called.

When a backend is added to a project whose ops are not the template's, kscaffold cannot know the
algorithm, but it can write the function each op's schema asks for, register it for the new
backend, and have it raise a clear error naming the file to fill in. The marker line lets the
project's tests recognise a skeleton and expect that backend's cases to fail until it is filled in.
"""

from __future__ import annotations

import re

from scaffold.errors import KscaffoldError
from scaffold.project.schema import Argument, OpSchema
from scaffold.vocabulary import BACKEND_DISPATCH_KEYS, BACKEND_SOURCE_SUFFIXES, CSRC_DIR

#: The line that marks a file as a skeleton; the generated tests/conftest.py looks for it.
SKELETON_MARKER = "KSCAFFOLD_SKELETON"


# Schema base types and the C++ types the dispatcher passes for them.
_SCALAR_TYPES = {
    "int": "int64_t",
    "SymInt": "c10::SymInt",
    "float": "double",
    "bool": "bool",
    "str": "c10::string_view",
    "Scalar": "at::Scalar",
    "ScalarType": "at::ScalarType",
    "Device": "at::Device",
    "Layout": "at::Layout",
    "MemoryFormat": "at::MemoryFormat",
    "Generator": "at::Generator",
}
_LIST_TYPES = {
    "int": "at::IntArrayRef",
    "SymInt": "c10::SymIntArrayRef",
    "float": "at::ArrayRef<double>",
    "Tensor": "at::TensorList",
    "Scalar": "at::ArrayRef<at::Scalar>",
}
_BY_REFERENCE = ("at::Scalar", "at::Generator", "c10::SymInt")
_ANNOTATION = re.compile(r"\([a-z!|*\s]*\)")


def skeleton_path(python_name: str, backend: str) -> str:
    """Where the skeleton of ``backend`` goes, relative to the project."""
    return f"{CSRC_DIR}/{backend}/{python_name}_{backend}{BACKEND_SOURCE_SUFFIXES[backend]}"


def _argument_type(argument: Argument, op: OpSchema) -> str:
    mutated = argument.is_mutated
    base = _ANNOTATION.sub("", argument.type).strip()
    optional = base.endswith("?")
    base = base.removesuffix("?")
    list_match = re.fullmatch(r"(\w+)(\??)\[(\d*)\]", base)
    if base == "Tensor":
        if optional:
            return "const std::optional<at::Tensor>&"
        return "at::Tensor&" if mutated else "const at::Tensor&"
    if list_match:
        element, element_optional, size = list_match.groups()
        if element == "Tensor" and element_optional:
            cpp = "const c10::List<std::optional<at::Tensor>>&"
        elif element == "bool" and size:
            cpp = f"std::array<bool, {size}>"
        elif element in _LIST_TYPES:
            cpp = _LIST_TYPES[element]
        else:
            raise KscaffoldError(
                f"Cannot write a skeleton for {op.name}: unsupported list type '{argument.type}'."
            )
    elif base in _SCALAR_TYPES:
        cpp = _SCALAR_TYPES[base]
    else:
        raise KscaffoldError(
            f"Cannot write a skeleton for {op.name}: unsupported type '{argument.type}'."
        )
    if optional:
        cpp = f"std::optional<{cpp}>"
        return f"const {cpp}&" if any(t in cpp for t in _BY_REFERENCE) else cpp
    return f"const {cpp}&" if cpp in _BY_REFERENCE else cpp


def _return_type(op: OpSchema) -> str:
    types = []
    for returned in op.returns:
        base = _ANNOTATION.sub("", returned.type).strip()
        if base == "Tensor":
            types.append("at::Tensor&" if returned.is_mutated else "at::Tensor")
        elif base == "Tensor[]":
            types.append("std::vector<at::Tensor>")
        elif base in _SCALAR_TYPES:
            types.append(_SCALAR_TYPES[base])
        else:
            raise KscaffoldError(
                f"Cannot write a skeleton for {op.name}: unsupported return type '{returned.type}'."
            )
    if not types:
        return "void"
    return types[0] if len(types) == 1 else f"std::tuple<{', '.join(types)}>"


def _function_name(op: OpSchema, backend: str) -> str:
    return f"{op.name.replace('.', '_')}_{backend}"


def render_skeleton(python_name: str, backend: str, ops: list[OpSchema]) -> str:
    """C++ source registering a not-yet-implemented ``backend`` kernel for each op in ``ops``."""
    path = skeleton_path(python_name, backend)
    key = BACKEND_DISPATCH_KEYS[backend]
    functions = []
    for op in ops:
        parameters = ", ".join(
            f"{_argument_type(argument, op)} {argument.name or f'arg{index}'}"
            for index, argument in enumerate(op.arguments)
        )
        unused = "".join(
            f"  (void){argument.name or f'arg{index}'};\n"
            for index, argument in enumerate(op.arguments)
        )
        functions.append(
            f"// {op.schema_text}\n"
            f"{_return_type(op)} {_function_name(op, backend)}({parameters}) {{\n"
            f"{unused}"
            f'  not_implemented("{op.name}");\n'
            "}\n"
        )
    registrations = "".join(
        f'  m.impl("{op.name}", &{python_name}_{backend}::{_function_name(op, backend)});\n'
        for op in ops
    )
    return (
        f"// The {key} implementation of {python_name}'s ops: a skeleton generated from their\n"
        "// schemas. Each function compiles and is registered, but raises until you write it.\n"
        f"// {SKELETON_MARKER}: delete this line once every op below is implemented;\n"
        f"// until then the project's tests expect their {backend} cases to fail.\n"
        "\n"
        "#include <array>\n"
        "#include <optional>\n"
        "#include <tuple>\n"
        "#include <vector>\n"
        "\n"
        "#include <ATen/ATen.h>\n"
        "#include <torch/library.h>\n"
        "\n"
        '#include "registration.h"\n'
        "\n"
        f"namespace {python_name}_{backend} {{\n"
        "\n"
        "[[noreturn]] void not_implemented(const char* op) {\n"
        "  TORCH_CHECK_NOT_IMPLEMENTED(\n"
        f'      false, "{python_name}: ", op, " has no {key} implementation yet: "\n'
        f'      "write it in {path}");\n'
        "}\n"
        "\n" + "\n".join(functions) + "\n"
        f"}}  // namespace {python_name}_{backend}\n"
        "\n"
        f"TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, {key}, m) {{\n"
        f"{registrations}"
        "}\n"
    )
