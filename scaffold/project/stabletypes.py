"""The C++ types torch's stable ABI passes between the dispatcher and a kernel.

Fewer than ATen's: tensors, optional tensors and a few value types. One home for them, used by
the skeletons ``add-op --schema`` renders and by those ``add-backend`` writes for ops the user
wrote.
"""

from __future__ import annotations

from typing import Any

from scaffold.errors import SchemaError

#: The value types torch's stable ABI passes to a kernel (optional too), as its C++ types.
STABLE_VALUE_TYPES = {
    "int": "int64_t",
    "float": "double",
    "bool": "bool",
    "ScalarType": "torch::headeronly::ScalarType",
}
STABLE_TENSOR = "torch::stable::Tensor"


def stable_types(
    args: list[dict[str, Any]], returns: list[dict[str, Any]], where: str
) -> dict[str, str]:
    """Argument name -> its C++ type in torch's stable ABI; the returns must be new tensors.

    Raises:
        SchemaError: Naming the first argument or return the stable ABI cannot pass.
    """
    types: dict[str, str] = {}
    for arg in args:
        base = arg["type"].removesuffix("?")
        optional = base != arg["type"]
        if base == "Tensor" and optional and arg["mutated"]:
            raise SchemaError(
                f"{where}, argument '{arg['name']}': torch's stable ABI passes no optional tensor "
                "to write to; make it 'Tensor(a!)'."
            )
        if base == "Tensor":
            cpp = f"std::optional<{STABLE_TENSOR}>" if optional else STABLE_TENSOR
            types[arg["name"]] = (
                cpp if optional else (f"{cpp}&" if arg["mutated"] else f"const {cpp}&")
            )
        elif base in STABLE_VALUE_TYPES:
            cpp = STABLE_VALUE_TYPES[base]
            types[arg["name"]] = f"std::optional<{cpp}>" if optional else cpp
        else:
            raise SchemaError(
                f"{where}, argument '{arg['name']}': torch's stable ABI passes Tensor, Tensor?, "
                f"int, float, bool and ScalarType (and their optionals), not '{arg['type']}'; "
                "leave out --stable-abi, or pass it as one of those."
            )
    for index, ret in enumerate(returns):
        if ret["is_list"]:
            raise SchemaError(
                f"{where}, return {index + 1}: torch's stable ABI returns no Tensor[]; return a "
                "fixed number of tensors, as in '-> (Tensor, Tensor)'."
            )
        if ret["alias"]:
            raise SchemaError(
                f"{where}, return {index + 1}: a stable-ABI op returns new tensors, not "
                f"'{ret['alias']}'; return nothing ('-> ()') for the tensors it writes to."
            )
    return types
