"""Op schemas read with the dispatcher's own grammar (torchgen), and what code generation needs.

One parser for every schema kscaffold reads: the ``def`` strings of a project's sources
(:mod:`scaffold.project.schema`), the ``--schema`` of ``add-op`` and ``new``, and the schemas the
answers file records. :func:`parse_parts` reads the argument list and the returns with torchgen's
``Arguments`` and ``parse_returns`` (``torchgen.model`` ships with torch and imports no torch);
its strict spacing is normalised first, and its assertion messages become one
:class:`~scaffold.errors.SchemaError` line naming the bad part. What torchgen reads is then read
again by the dispatcher's own C++ parser (:func:`check_with_dispatcher`), stricter about defaults.
The op name is read by the callers: torchgen refuses names ending in ``_out``, which every
template op declares.

:func:`describe` goes further for an op kscaffold generates from a schema: it refuses what the
generated C++ or Python could not express (a view return, a type without a mapping, an argument
named like a keyword) and turns the schema into plain dicts the template renders: each argument's
C++ type for a CPU/CUDA kernel, its Python annotation and default, and a sample value for tests.
"""

from __future__ import annotations

import json
import keyword
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from torchgen.model import (
    Argument as TgArgument,
)
from torchgen.model import (
    BaseTy,
    BaseType,
    ListType,
    OptionalType,
    Return,
    Type,
    parse_returns,
)

from scaffold.errors import SchemaError
from scaffold.project.names import CXX_KEYWORDS
from scaffold.project.stabletypes import STABLE_TENSOR, stable_types
from scaffold.vocabulary import CPP_LANGUAGE, TRITON_LANGUAGE

# --------------------------------------------------------------------------------------------
# Parsing


@dataclass(frozen=True)
class SchemaParts:
    """The arguments (in order, with the keyword-only ones marked) and returns of a schema."""

    positional: tuple[TgArgument, ...]
    keyword_only: tuple[TgArgument, ...]
    returns: tuple[Return, ...]
    #: Each argument and return as written (spaces collapsed): ``Tensor! out``, ``int[2] s=[1, 1]``.
    written_arguments: tuple[str, ...] = ()
    written_returns: tuple[str, ...] = ()

    @property
    def arguments(self) -> tuple[TgArgument, ...]:
        return (*self.positional, *self.keyword_only)

    def text(self) -> str:
        """The canonical ``(args) -> returns`` text (torchgen's spacing)."""
        args = [str(a) for a in self.positional]
        if self.keyword_only:
            args += ["*", *(str(a) for a in self.keyword_only)]
        returns = ", ".join(str(r) for r in self.returns)
        if len(self.returns) != 1:
            returns = f"({returns})"
        return f"({', '.join(args)}) -> {returns}"


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """Split on ``separator`` outside brackets and parentheses, each part stripped."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == separator and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts]


def _normalise(part: str, fresh: list[str] | None = None) -> str:
    """One argument or return in torchgen's spacing: ``Tensor(a!) x=[1,2]``.

    torchgen splits on ``", "`` and compares what it prints with what it read, so
    ``Tensor( a! )  x = [1, 2]`` must reach it as above.
    """
    left, equals, default = part.partition("=")
    left = re.sub(r"\s*([()\[\]?!|])\s*", r"\1", re.sub(r"\s+", " ", left).strip())
    if fresh and re.match(r"Tensor!", left):  # the dispatcher's `Tensor!`: a fresh alias set
        left = f"Tensor({fresh.pop(0)}!)" + left[len("Tensor!") :]
    left = re.sub(r"([)\]?!])(?=[A-Za-z_]\w*$)", r"\1 ", left)  # `Tensor(a!)x`: name the name
    default = default.strip()
    if not default.startswith(("'", '"')):
        default = re.sub(r"\s+", "", default)
    return f"{left}={default}" if equals else left


def _fresh_letters(text: str) -> list[str]:
    """Alias letters the schema does not use, for its ``Tensor!`` arguments."""
    used = set(re.findall(r"\(([a-z])", text))
    return [letter for letter in "zyxwvutsrqponmlkjihgfedcba" if letter not in used]


def matching_paren(text: str, start: int) -> int:
    """Index of the ``)`` that closes the ``(`` at ``start``, or -1."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return -1


def _tg_error(error: Exception) -> str:
    message = str(error).strip() or type(error).__name__
    return message.splitlines()[0]


def split_name(schema: str) -> tuple[str | None, str]:
    """The op name a schema starts with (None if it starts at ``(``), and the rest.

    ``rms_norm(Tensor x) -> Tensor`` gives ``("rms_norm", "(Tensor x) -> Tensor")``.
    """
    text = schema.strip()
    open_paren = text.find("(")
    name = text[:open_paren].strip() if open_paren > 0 else ""
    return (name or None), (text[open_paren:] if open_paren >= 0 else text)


def parse_parts(text: str, *, where: str, dispatcher: bool = True) -> SchemaParts:
    """Read ``(args) -> returns`` (no name) with torchgen's grammar.

    ``where`` names the schema in messages (``op schema 'name(...) -> ...'``). ``dispatcher``:
    then also with the dispatcher's own parser (:func:`check_with_dispatcher`).

    Raises:
        SchemaError: One line naming the part torchgen (or the dispatcher's rules) refused.
    """
    text = text.strip()
    if not text.startswith("("):
        raise SchemaError(f"{where}: write it as '(arguments) -> returns'.")
    close = matching_paren(text, 0)
    if close < 0:
        raise SchemaError(f"{where} has an unclosed argument list.")
    rest = text[close + 1 :].strip()
    if not rest.startswith("->"):
        raise SchemaError(f"{where} has no '-> returns' part (write '-> ()' for none).")
    returns_text = rest[2:].strip()
    if not returns_text:
        raise SchemaError(f"{where} has an empty return type: use '-> ()'.")
    raw_args = [part for part in split_top_level(text[1:close]) if part]
    fresh = _fresh_letters(text)
    positional: list[TgArgument] = []
    keyword_only: list[TgArgument] = []
    declared: list[str] = []
    for raw in raw_args:
        if raw == "*":
            if "*" in declared:
                raise SchemaError(f"{where}: '*' (keyword-only arguments follow) comes once.")
            declared.append("*")
            continue
        arg = _normalise(raw, fresh)
        if re.fullmatch(r"[^\s=]+\s*(=.*)?", raw.strip()):  # one word: a type, or a name
            raise SchemaError(
                f"{where}: argument '{raw}' needs a type and a name, as in 'Tensor x' or "
                "'float eps=1e-6'."
            )
        if arg.rstrip().endswith("="):
            raise SchemaError(f"{where}, argument '{raw}': give the default after '='.")
        try:
            parsed = TgArgument.parse(arg)
        except (AssertionError, RuntimeError, ValueError, KeyError, IndexError) as error:
            # The dispatcher's reason, where it has one, says where the text went wrong.
            reason = _dispatcher_refusal(f"f({raw}) -> ()") or _tg_error(error)
            raise SchemaError(f"{where}: cannot read argument '{raw}': {reason}.") from error
        (keyword_only if "*" in declared else positional).append(parsed)
        declared.append(re.sub(r"\s+", " ", raw.strip()))
    if returns_text.startswith("(") and matching_paren(returns_text, 0) == len(returns_text) - 1:
        inner = [part for part in split_top_level(returns_text[1:-1]) if part]
    else:
        inner = [returns_text]
    returns: list[Return] = []
    for raw in inner:
        try:
            (ret,) = parse_returns(_normalise(raw, fresh))
        except (AssertionError, RuntimeError, ValueError, KeyError, IndexError) as error:
            reason = _dispatcher_refusal(f"f() -> ({raw})") or _tg_error(error)
            raise SchemaError(f"{where}: cannot read return '{raw}': {reason}.") from error
        returns.append(ret)
    parts = SchemaParts(
        tuple(positional),
        tuple(keyword_only),
        tuple(returns),
        tuple(d for d in declared if d != "*"),
        tuple(re.sub(r"\s+", " ", raw.strip()) for raw in inner),
    )
    if dispatcher:
        check_with_dispatcher(parts, text, where)
    return parts


def _dispatcher_refusal(schema: str) -> str | None:
    """Why the dispatcher's C++ parser refuses ``schema`` (its first line), or None."""
    import torch  # the dispatcher's parser; only here, as torchgen.model imports no torch

    try:
        torch._C.parse_schema(schema)
    except RuntimeError as error:
        reason = _tg_error(error).strip().removesuffix(":").removesuffix(" here").strip()
        return reason or "refused"
    return None


def check_with_dispatcher(parts: SchemaParts, text: str, where: str) -> None:
    """Raise a SchemaError for a schema torchgen reads but the dispatcher's C++ parser refuses.

    torchgen's grammar is looser about defaults (``inf``, ``nan``, ``1_000``, ``+1``); the library
    ``def``s such a schema while it loads, and the error escapes the static initialiser: the
    process aborts. Only a schema the dispatcher refuses is read again part by part, so that the
    message names the bad part.
    """
    whole = _dispatcher_refusal(f"f{text}")
    if whole is None:
        return
    probes = [("argument", a, f"f({a}) -> ()") for a in parts.written_arguments]
    probes += [("return", r, f"f() -> ({r})") for r in parts.written_returns]
    for kind, part, probe in probes:
        reason = _dispatcher_refusal(probe)
        if reason is None:
            continue
        non_number = re.fullmatch(r"(\S+)\s+(\w+)\s*=\s*[-+]?(inf|nan)", part)
        if kind == "argument" and non_number:
            type_, name = non_number.group(1, 2)
            raise SchemaError(
                f"{where}, argument '{part}': the dispatcher reads a default only as a number, "
                f"never inf or nan; declare '{type_.rstrip('?')}? {name}=None' and choose the "
                "value in the kernel."
            )
        raise SchemaError(f"{where}: the dispatcher refuses {kind} '{part}': {reason}.")
    raise SchemaError(f"{where}: the dispatcher refuses it: {whole}.")


# --------------------------------------------------------------------------------------------
# What kscaffold generates from a schema

_SCALARS: dict[BaseTy, tuple[str, str, str]] = {
    # schema type: (C++ type of a CPU/CUDA kernel's parameter, Python annotation, sample)
    BaseTy.int: ("int64_t", "int", "1"),
    BaseTy.SymInt: ("int64_t", "int", "1"),  # a backend kernel takes SymInt as int64_t
    BaseTy.float: ("double", "float", "0.5"),
    BaseTy.bool: ("bool", "bool", "False"),
    BaseTy.str: ("c10::string_view", "str", '"a"'),
    BaseTy.Scalar: ("const at::Scalar&", "float | int | bool", "2"),
    BaseTy.ScalarType: ("at::ScalarType", "torch.dtype", "torch.float32"),
    BaseTy.Device: ("at::Device", "torch.device", "device"),
    BaseTy.Layout: ("at::Layout", "torch.layout", "torch.strided"),
    BaseTy.MemoryFormat: ("at::MemoryFormat", "torch.memory_format", "torch.contiguous_format"),
}
_LISTS: dict[BaseTy, tuple[str, str, str]] = {
    BaseTy.int: ("at::IntArrayRef", "Sequence[int]", "[-1]"),
    BaseTy.SymInt: ("at::IntArrayRef", "Sequence[int]", "[-1]"),
    BaseTy.float: ("at::ArrayRef<double>", "Sequence[float]", "[0.5]"),
}
#: The C++ parameter types of the lists the schema may make optional ('int[]?').
_OPTIONAL_LISTS: dict[Type, str] = {
    BaseType(BaseTy.int): "at::OptionalIntArrayRef",
    BaseType(BaseTy.SymInt): "at::OptionalIntArrayRef",
    BaseType(BaseTy.float): "std::optional<at::ArrayRef<double>>",
}
#: Sample tensors' shape in tests: small, odd, no multiple of any block size.
SAMPLE_SHAPE = "(7, 13)"
#: Names the generated C++ and Python use around the arguments (namespaces, modules, helpers,
#: the skeletons' locals).
_TAKEN = frozenset(
    {
        "at", "c10", "std", "torch", "ops", "Sequence", "add_op_namespace_prefix", "list",
        "check_inputs", "check_tensor", "not_implemented", "device_guard", "stream",
        "OP", "SOURCE", "DTYPES", "triton_op",  # a Triton op's module
    }
)  # fmt: skip
#: Names ruff's E741 (selected by the project's ruff.toml) refuses in the generated Python.
_AMBIGUOUS = frozenset({"l", "O", "I"})
#: The locals of check_inputs (csrc/<op>.h, or a Triton op's module), which takes the tensors.
_TAKEN_BY_TENSORS = frozenset({"first_device", "i", "item"})


def _literal(default: str, base: BaseTy, where: str) -> str:
    """The Python literal of a scalar default, or a SchemaError naming it."""
    article = "an" if base.name[0] in "aeiou" else "a"
    bad = SchemaError(f"{where}: default '{default}' is not {article} {base.name}.")
    if base in (BaseTy.int, BaseTy.SymInt):
        if not re.fullmatch(r"-?\d+", default):
            raise bad
        return str(int(default))
    if base == BaseTy.float:
        try:
            value = float(default)
        except ValueError:
            raise bad from None
        return repr(value)  # never inf or nan: the dispatcher refuses those (check_with_dispatcher)
    if base == BaseTy.bool:
        if default not in ("True", "False"):
            raise bad
        return default
    if base == BaseTy.str:
        if not re.fullmatch(r"\"[^\"\\]*\"|'[^'\\]*'", default):
            raise bad
        return json.dumps(default[1:-1])  # double quotes, as ruff format writes them
    if base == BaseTy.Scalar:
        if default in ("True", "False"):
            return default
        try:
            number = float(default)
        except ValueError:
            raise bad from None
        return str(int(default)) if re.fullmatch(r"-?\d+", default) else repr(number)
    raise SchemaError(f"{where}: kscaffold generates no default of type {base.name} but None.")


def _describe_argument(arg: TgArgument, keyword_only: bool, where: str) -> dict[str, Any]:
    name = arg.name
    here = f"{where}, argument '{name}'"
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise SchemaError(f"{here}: the name is not an identifier.")
    if keyword.iskeyword(name) or name in CXX_KEYWORDS:
        raise SchemaError(f"{here}: the name is a Python or C++ keyword; rename it.")
    if name in _TAKEN or name.startswith("_"):
        raise SchemaError(f"{here}: the generated code uses that name; rename it.")
    if name in _AMBIGUOUS:
        raise SchemaError(
            f"{here}: the project's ruff refuses 'l', 'O' and 'I' as Python names (E741: they "
            "read as 1 and 0); give it a longer name."
        )
    annotation = arg.annotation
    mutated = annotation is not None and annotation.is_write
    if annotation is not None and not mutated:
        raise SchemaError(
            f"{here}: '{arg.type}({annotation})' marks a view of an input without '!'; kscaffold "
            "generates ops that return new tensors or write to arguments marked '(a!)'."
        )
    if annotation is not None and (annotation.alias_set_after or len(annotation.alias_set) > 1):
        raise SchemaError(f"{here}: use a single alias letter, as in 'Tensor(a!)'.")
    kind, cpp, py, sample, default = _map_type(arg.type, mutated, arg.default, here)
    if kind != "value" and name in _TAKEN_BY_TENSORS:
        raise SchemaError(f"{here}: the generated checks use that name; rename it.")
    return {
        "name": name,
        "schema": str(arg),
        "kind": kind,  # tensor, optional_tensor, tensor_list, optional_tensor_list or value
        "cpp": cpp,
        "py": py,
        "default": default,
        "keyword_only": keyword_only,
        "mutated": mutated,
        "alias": annotation.alias_set[0] if annotation is not None else None,
        "type": str(arg.type),
        # A value for tests and benchmarks: the default where there is one.
        "sample": default if kind == "value" and default is not None else sample,
    }


def _map_type(
    t: Type, mutated: bool, default: str | None, here: str
) -> tuple[str, str, str, str, str | None]:
    """(kind, C++ type, Python annotation, sample expression, Python default) of a schema type."""
    tensor = f"random_input({SAMPLE_SHAPE}, dtype, device, seed={{seed}})"
    if t == BaseType(BaseTy.Tensor):
        if default is not None:
            raise SchemaError(f"{here}: a Tensor has no default; make it 'Tensor?' for None.")
        return (
            "tensor",
            "at::Tensor&" if mutated else "const at::Tensor&",
            "torch.Tensor",
            tensor,
            None,
        )
    if isinstance(t, OptionalType):
        if default is not None and default != "None":
            inner = _map_type(t.elem, mutated, default, here)  # validates the default
            value = inner[4]
        else:
            value = "None" if default is not None else None
        if t.elem == BaseType(BaseTy.Tensor):
            return (
                "optional_tensor",
                "const std::optional<at::Tensor>&",
                "torch.Tensor | None",
                tensor,
                value,
            )
        if isinstance(t.elem, BaseType) and t.elem.name in _SCALARS:
            cpp, py, sample = _SCALARS[t.elem.name]
            cpp = cpp.removeprefix("const ").removesuffix("&")
            wrapped = f"std::optional<{cpp}>"
            if t.elem.name == BaseTy.Scalar:
                wrapped = f"const {wrapped}&"
            return ("value", wrapped, f"{py} | None", sample, value)
        if t.elem == BaseType(BaseTy.Generator):  # random ops: None takes torch's default one
            return (
                "value",
                "std::optional<at::Generator>",
                "torch.Generator | None",
                "None",
                value,
            )
        if isinstance(t.elem, ListType) and t.elem.elem in _OPTIONAL_LISTS:
            _, _, py, sample, _ = _map_type(t.elem, mutated, None, here)
            return ("value", _OPTIONAL_LISTS[t.elem.elem], f"{py} | None", sample, value)
        raise SchemaError(f"{here}: kscaffold generates no code for type '{t}'.")
    if isinstance(t, ListType):
        if default is not None:
            raise_list = SchemaError(f"{here}: default '{default}' is not a list of {t.elem}.")
            if isinstance(t.elem, BaseType) and t.elem.name in (*_LISTS, BaseTy.bool):
                items = default[1:-1].split(",") if default.startswith("[") else None
                if items is None:
                    if t.size is None:
                        raise raise_list
                    items = [default] * t.size
                try:
                    values = [_literal(i.strip(), t.elem.name, here) for i in items if i.strip()]
                except SchemaError:
                    raise raise_list from None
                default = f"({', '.join(values)}{',' if len(values) == 1 else ''})"
            else:
                raise SchemaError(f"{here}: a {t} has no default.")
        if t.elem == OptionalType(BaseType(BaseTy.Tensor)):  # ATen's index lists: None skips
            return (
                "optional_tensor_list",
                "const c10::List<std::optional<at::Tensor>>&",
                "Sequence[torch.Tensor | None]",
                f"[{tensor}, None]",
                default,
            )
        if t.elem == BaseType(BaseTy.Tensor):
            return (
                "tensor_list",
                "at::TensorList",
                "Sequence[torch.Tensor]",
                f"[{tensor}, {tensor.replace('{seed}', '{next_seed}')}]",
                default,
            )
        if isinstance(t.elem, BaseType) and t.elem.name in _LISTS:
            cpp, py, sample = _LISTS[t.elem.name]
            return ("value", cpp, py, sample, default)
        if t.elem == BaseType(BaseTy.bool):
            # ATen passes a bool list as a std::array, so the dispatcher wants its length.
            if t.size is None:
                raise SchemaError(f"{here}: give a bool list its length, as in 'bool[3]'.")
            sample = f"[{', '.join(['True'] * t.size)}]"
            return ("value", f"std::array<bool, {t.size}>", "Sequence[bool]", sample, default)
        raise SchemaError(f"{here}: kscaffold generates no code for type '{t}'.")
    if isinstance(t, BaseType) and t.name in _SCALARS:
        cpp, py, sample = _SCALARS[t.name]
        value = _literal(default, t.name, here) if default is not None else None
        return ("value", cpp, py, sample, value)
    raise SchemaError(f"{here}: kscaffold generates no code for type '{t}'.")


def describe(
    name: str, text: str, *, language: str = CPP_LANGUAGE, stable_abi: bool = False
) -> dict[str, Any]:
    """Everything the template renders for the op ``name`` with schema ``text``.

    ``language`` is the project's: a Triton op is a ``torch.library.triton_op``, which returns
    new tensors only. ``stable_abi``: the C++ is written against torch's stable ABI, which passes
    fewer types.

    Raises:
        SchemaError: If the dispatcher would refuse the schema, or kscaffold cannot generate it.
    """
    where = f"schema '{text.strip()}' of {name}"
    # kscaffold's own checks first (their messages say more); the dispatcher's parser last.
    parts = parse_parts(text, where=where, dispatcher=False)
    args = [_describe_argument(a, False, where) for a in parts.positional]
    args += [_describe_argument(a, True, where) for a in parts.keyword_only]
    for index, arg in enumerate(args):  # a seed of their own: no two sample tensors alike
        sample = arg["sample"].replace("{seed}", str(10 * index))
        arg["sample"] = sample.replace("{next_seed}", str(10 * index + 1))
        # A list's tensors one a line, as ruff format writes a list too long for one.
        arg["sample_items"] = (
            split_top_level(arg["sample"][1:-1])
            if arg["kind"] in ("tensor_list", "optional_tensor_list")
            else []
        )
    defaulted = None  # the last positional argument with a default so far
    for arg in args:
        if arg["keyword_only"]:
            break
        if arg["default"] is not None:
            defaulted = arg["name"]
        elif defaulted is not None:
            raise SchemaError(
                f"{where}, argument '{arg['name']}': it has no default but follows "
                f"'{defaulted}', which has one, and Python takes defaults last; give it a "
                "default, move it up, or make it keyword-only (after '*')."
            )
    seen: set[str] = set()
    for arg in args:
        if arg["name"] in seen:
            raise SchemaError(f"{where}: two arguments are named '{arg['name']}'.")
        seen.add(arg["name"])
    mutated = [a["name"] for a in args if a["mutated"]]
    if mutated and "mode" in seen:
        raise SchemaError(
            f"{where}, argument 'mode': torch.compile and opcheck run an op that writes to "
            f"'{mutated[0]}' through torch's auto_functionalized, whose own 'mode' parameter "
            "this name collides with; rename it."
        )
    aliases: dict[str, str] = {}  # alias letter -> argument
    aliases_of = {a["name"]: a["alias"] for a in args}
    for arg in args:
        if arg["alias"] is not None:
            if arg["alias"] in aliases:
                raise SchemaError(
                    f"{where}: '{aliases[arg['alias']]}' and '{arg['name']}' share the alias "
                    f"'({arg['alias']}!)'; give each mutated argument its own letter."
                )
            aliases[arg["alias"]] = arg["name"]
    tensors = [a for a in args if a["kind"] in ("tensor", "tensor_list")]
    if not tensors:
        raise SchemaError(
            f"{where}: no 'Tensor' or 'Tensor[]' argument, so the dispatcher cannot pick a "
            "backend; add the tensor the op works on."
        )
    first = tensors[0]
    returns = [_describe_return(r, index, aliases, where) for index, r in enumerate(parts.returns)]
    return_names = [r["name"] for r in returns if r["name"]]
    if len(set(return_names)) != len(return_names):
        raise SchemaError(f"{where}: two returns share a name.")
    aliased = [r for r in returns if r["alias"]]
    outs = [a["name"] for a in args if a["keyword_only"] and a["mutated"]]
    if outs and returns and [r["alias"] for r in returns] != outs:
        raise SchemaError(
            f"{where}: an op with keyword-only mutated (out=) arguments returns them all, in "
            f"order, as '{', '.join(f'Tensor({aliases_of[name]}!)' for name in outs)}', or "
            "returns nothing ('-> ()')."
        )
    keyword_tensors = [a["name"] for a in args if a["keyword_only"] and a["kind"] != "value"]
    if language == TRITON_LANGUAGE and keyword_tensors:
        raise SchemaError(
            f"{where}, argument '{keyword_tensors[0]}': a Triton op (torch.library.triton_op) "
            "takes no keyword-only tensors; move it before the '*'."
        )
    if language == TRITON_LANGUAGE and aliased:
        raise SchemaError(
            f"{where}: a Triton op (torch.library.triton_op) returns only new tensors, not "
            f"'{aliased[0]['alias']}': return nothing ('-> ()'), the caller has the tensors the "
            "op writes to."
        )
    like = f"{first['name']}[0]" if first["kind"] == "tensor_list" else first["name"]
    # A new list of tensors: one like each tensor of a list argument, or one like the tensor.
    new_list = (
        f"[torch.empty_like(tensor) for tensor in {first['name']}]"
        if first["kind"] == "tensor_list"
        else f"[torch.empty_like({like})]"
    )
    fake_results = [
        r["alias"] or (new_list if r["is_list"] else f"torch.empty_like({like})") for r in returns
    ]
    # The kernels' C++ types: ATen's, or those of torch's stable ABI (which refuses the rest).
    if stable_abi:
        cpp_of = stable_types(args, returns, where)
        tensor_type = STABLE_TENSOR
        cpp_types = [STABLE_TENSOR for _ in returns]
    else:
        cpp_of = {a["name"]: a["cpp"] for a in args}
        tensor_type = "at::Tensor"
        cpp_types = [r["cpp"] for r in returns]
    py_types = [r["py"] for r in returns]
    check_with_dispatcher(parts, text, where)
    schema = f"{name}{parts.text()}"
    return {
        "schema": schema,
        # The schema in docstrings, indented 8 columns: lines that keep to ruff's 100.
        "schema_lines": textwrap.wrap(
            schema, width=92, break_long_words=False, break_on_hyphens=False
        ),
        # The schema without the name as Python string literals, for a Triton op's triton_op:
        # one, and the same in pieces that keep to 100 columns (concatenated in parentheses).
        "signature_literal": _python_string(parts.text()),
        "signature_literal_lines": _python_string_pieces(parts.text(), width=80),
        "args": args,
        "returns": returns,
        "tensors": [a for a in args if a["kind"] != "value"],
        # The tensor every other tensor is checked against (device) and results are shaped like.
        "first": first["name"],
        "first_is_list": first["kind"] == "tensor_list",
        "like": like,
        "cpp_params": [f"{cpp_of[a['name']]} {a['name']}" for a in args],
        # check_inputs reads every tensor, written to or not.
        "cpp_tensor_params": [
            f"const {tensor_type}& {a['name']}"
            if a["kind"] == "tensor"
            else f"{cpp_of[a['name']]} {a['name']}"
            for a in args
            if a["kind"] != "value"
        ],
        "py_params": _python_parameters(args),
        # A layer's forward names its module `self`, unless the schema takes that name (ATen's
        # convention for the tensor an op works on): then `module`.
        "receiver": "module" if "self" in seen else "self",
        "call_args": [
            ("" if not a["keyword_only"] else f"{a['name']}=") + _call_value(a) for a in args
        ],
        # What the fake returns: a new tensor like the first tensor argument, or the argument
        # a return aliases.
        "fake_return": ", ".join(fake_results) if fake_results else None,
        "mutated": [a["name"] for a in args if a["mutated"]],
        "cpp_return": (
            "void"
            if not cpp_types
            else cpp_types[0]
            if len(cpp_types) == 1
            else f"std::tuple<{', '.join(cpp_types)}>"
        ),
        "py_return": (
            "None"
            if not py_types
            else py_types[0]
            if len(py_types) == 1
            else f"tuple[{', '.join(py_types)}]"
        ),
        "mutates": bool(aliases),
        # torch.compile functionalizes a custom op only if no return aliases an argument.
        "returns_alias": bool(aliased),
        "uses_sequence": any("Sequence" in a["py"] for a in args),
        # The standard headers the skeletons' signature needs.
        "cpp_headers": sorted(
            {"optional", "tuple"}
            | {"array" for a in args if "std::array" in a["cpp"]}
            | {"vector" for t in cpp_types if "std::vector" in t}
        ),
    }


def _python_string(text: str) -> str:
    """``text`` as a Python literal, in the quotes ruff format keeps."""
    if '"' in text and "'" not in text:  # ruff keeps single quotes that spare escapes
        return f"'{text}'"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _python_string_pieces(text: str, *, width: int) -> list[str]:
    """``text`` as literals of about ``width`` characters that concatenate back to it.

    Split after spaces, which the pieces keep.
    """
    pieces: list[str] = []
    for word in text.split(" "):
        if pieces and len(pieces[-1]) + len(word) < width:
            pieces[-1] += f"{word} "
        else:
            pieces.append(f"{word} ")
    pieces[-1] = pieces[-1][:-1]
    return [_python_string(piece) for piece in pieces]


def _call_value(arg: dict[str, Any]) -> str:
    """The wrapper's expression for an argument: a sequence as the list the dispatcher takes."""
    name: str = arg["name"]
    if not arg["py"].startswith("Sequence"):
        return name
    if arg["py"].endswith("| None"):
        return f"None if {name} is None else list({name})"
    return f"list({name})"


def _python_parameters(args: list[dict[str, Any]]) -> list[str]:
    """The wrapper's parameters: annotations, defaults and the keyword-only marker."""
    parameters: list[str] = []
    for arg in args:
        if arg["keyword_only"] and "*" not in parameters:
            parameters.append("*")
        default = f" = {arg['default']}" if arg["default"] is not None else ""
        parameters.append(f"{arg['name']}: {arg['py']}{default}")
    return parameters


def _describe_return(
    ret: Return, index: int, aliases: dict[str, str], where: str
) -> dict[str, Any]:
    here = f"{where}, return {index + 1} '{ret}'"
    if ret.type == ListType(BaseType(BaseTy.Tensor), None) and ret.annotation is None:
        return {
            "name": ret.name,
            "alias": None,
            "is_list": True,
            "cpp": "std::vector<at::Tensor>",
            "py": "list[torch.Tensor]",
        }
    if ret.type != BaseType(BaseTy.Tensor):
        raise SchemaError(
            f"{here}: kscaffold generates ops whose returns are 'Tensor' or 'Tensor[]' (new, "
            "or an argument marked '(a!)'); return the other values as tensors."
        )
    alias = None
    if ret.annotation is not None:
        if not ret.annotation.is_write:
            raise SchemaError(
                f"{here}: a return marked without '!' is a view of an input, which kscaffold "
                "does not generate; return a new Tensor or a mutated argument '(a!)'."
            )
        letter = ret.annotation.alias_set[0]
        if letter not in aliases:
            raise SchemaError(f"{here}: no argument is marked '({letter}!)'.")
        alias = aliases[letter]
    mutated = alias is not None
    return {
        "name": ret.name,
        "alias": alias,
        "is_list": False,
        "cpp": "at::Tensor&" if mutated else "at::Tensor",
        "py": "torch.Tensor",
    }
