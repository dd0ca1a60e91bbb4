"""Read a kernel project's op schemas and per-backend registrations from its C++ sources.

Schemas are the ``<lib>.def("name(Tensor x) -> Tensor")`` calls (kscaffold's template puts them in
``torch-ext/torch_binding.h``); implementations are the ``<lib>.impl("name", ...)`` calls inside a
``TORCH_LIBRARY_IMPL[_EXPAND](<namespace>, <DispatchKey>, <lib>) { ... }`` block, one block per
backend. The scanner reads C++ as text: it drops comments, reads string literals (adjacent ones
concatenated, raw strings included) and matches braces, which is all these registrations need.
It does not expand macros, but it knows the ``#if``/``#elif``/``#else`` branch each schema and
registration sits in (:mod:`scaffold.project.preprocessor`), so a check can ask whether it is
compiled for
a backend. The stable-ABI forms (``STABLE_TORCH_LIBRARY*``) are read like the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from scaffold.errors import SchemaError
from scaffold.project.preprocessor import ConditionalMap
from scaffold.project.preprocessor import Path as Path_
from scaffold.project.signature import matching_paren, parse_parts, split_top_level
from scaffold.support.safefs import read_regular_text
from scaffold.vocabulary import (
    SCANNED_SUFFIXES,
    SOURCE_DIRS,
    TORCH_EXT_DIR,
)

#: Dispatch keys whose kernels serve every backend.
COMPOSITE_KEYS: frozenset[str] = frozenset(
    {
        "CompositeImplicitAutograd",
        "CompositeExplicitAutograd",
        "CompositeExplicitAutogradNonFunctional",
    }
)

# `torch::kCPU`, `c10::DeviceType::CUDA`, `at::kCUDA`, `c10::DispatchKey::CPU` -> the key's name.
_DEVICE_ARGUMENT = re.compile(r"(?:\w+::)*(?:DeviceType::|DispatchKey::|k)(\w+)\s*$")


@dataclass(frozen=True)
class Argument:
    """One argument (or named return) of an op schema."""

    type: str
    name: str | None = None
    default: str | None = None
    keyword_only: bool = False

    @property
    def is_mutated(self) -> bool:
        """Whether the op writes to this argument (an alias annotation with ``!``)."""
        return "!" in self.type


@dataclass(frozen=True)
class OpSchema:
    """An op schema as declared with ``def``.

    ``name`` is the name as written before ``(``, overload included (``relu.out``): the string that
    ``impl`` calls name and ``torch.ops.<namespace>`` resolves.
    """

    name: str
    schema_text: str
    arguments: tuple[Argument, ...]
    returns: tuple[Argument, ...]
    file: Path | None = None
    line: int = 0
    #: The ``#if`` branches around the declaration, outermost first.
    branches: Path_ = ()
    #: Declared as ``def("name", fn)``: the dispatcher infers the schema from the function's
    #: C++ signature, so arguments and returns are not known here.
    inferred: bool = False

    @property
    def base_name(self) -> str:
        """The op's name without its overload (``relu`` for ``relu.out``)."""
        return self.name.partition(".")[0]

    @property
    def overload(self) -> str:
        """The overload name (``out`` for ``relu.out``), empty for the default overload."""
        return self.name.partition(".")[2]

    @property
    def mutates(self) -> bool:
        """Whether the op writes to any of its arguments."""
        return any(arg.is_mutated for arg in self.arguments)


@dataclass(frozen=True)
class Registration:
    """One ``impl`` of an op for one dispatch key, and where it is."""

    op: str
    dispatch_key: str
    file: Path
    line: int
    #: The ``#if`` branches around the ``impl`` call, outermost first.
    branches: Path_ = ()


# --------------------------------------------------------------------------------------------
# Schema strings


def _split_top_level(text: str, separator: str = ",") -> list[str]:
    return split_top_level(text, separator)


_OP_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?$")


def _type_text(declaration: str) -> str:
    """The type of ``Tensor(a!) x=None`` (``Tensor(a!)``): the declaration less name and default."""
    return declaration.partition("=")[0].rsplit(" ", 1)[0] if " " in declaration else declaration


def parse_schema(schema_text: str, *, file: Path | None = None, line: int = 0) -> OpSchema:
    """Parse one schema such as ``"relu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"``."""
    text = schema_text.strip()
    open_paren = text.find("(")
    if open_paren <= 0:
        raise SchemaError(
            f"Op schema '{schema_text}' has no argument list: write it as 'name(args) -> returns'."
        )
    name = text[:open_paren].strip()
    if "::" in name:  # a namespace-qualified name; the namespace comes from the library
        name = name.rsplit("::", 1)[1]
    if not _OP_NAME.match(name):
        raise SchemaError(
            f"Op schema '{schema_text}' has an invalid name '{name}': use letters, digits and '_', "
            "with an optional '.overload'."
        )
    # The arguments and returns are read with the dispatcher's grammar (torchgen), like every
    # schema kscaffold reads; the name is read here (torchgen refuses the `_out` suffix).
    parts = parse_parts(text[open_paren:], where=f"Op schema '{schema_text}'")
    # Types and defaults as written (`Tensor!`, `[1, 1]`), names as torchgen read them.
    read = (*parts.positional, *parts.keyword_only)
    arguments = [
        Argument(
            _type_text(written),
            arg.name,
            written.partition("=")[2].strip() or None,
            keyword_only=index >= len(parts.positional),
        )
        for index, (arg, written) in enumerate(zip(read, parts.written_arguments, strict=True))
    ]
    returns = [
        Argument(written if r.name is None else _type_text(written), r.name)
        for r, written in zip(parts.returns, parts.written_returns, strict=True)
    ]
    return OpSchema(
        name=name,
        schema_text=text,
        arguments=tuple(arguments),
        returns=tuple(returns),
        file=file,
        line=line,
    )


# --------------------------------------------------------------------------------------------
# C++ scanning


@dataclass(frozen=True)
class _Literal:
    start: int
    end: int
    value: str


@dataclass(frozen=True)
class _Source:
    """A C++ file with comments blanked out and string literals read."""

    path: Path
    masked: str  # comments and literal contents replaced by spaces (newlines kept)
    literals: dict[int, _Literal]  # by start offset in `masked`
    conditionals: ConditionalMap

    def line_of(self, offset: int) -> int:
        return self.masked.count("\n", 0, offset) + 1

    def strings_at(self, offset: int) -> tuple[str, int] | None:
        """The (concatenated) string literal starting at ``offset`` and the offset after it."""
        values: list[str] = []
        position = offset
        while True:
            while position < len(self.masked) and self.masked[position].isspace():
                position += 1
            literal = self.literals.get(position)
            if literal is None:
                break
            values.append(literal.value)
            position = literal.end
        if position < len(self.masked) and self.masked[position] == "#":
            # `"na" #DIM "d_forward"` inside a macro: the name is made by the preprocessor.
            return None
        return ("".join(values), position) if values else None


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0", "r": "\r"}
_RAW_PREFIX = re.compile(r'(?:u8|[uUL])?R"([^()\\\s]{0,16})\(')


def _scan(path: Path, text: str) -> _Source:
    masked: list[str] = []
    literals: dict[int, _Literal] = {}
    index = 0
    length = len(text)

    def blank(segment: str) -> str:
        return "".join("\n" if c == "\n" else " " for c in segment)

    while index < length:
        char = text[index]
        if text.startswith("//", index):
            end = text.find("\n", index)
            end = length if end < 0 else end
            masked.append(blank(text[index:end]))
            index = end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            end = length if end < 0 else end + 2
            masked.append(blank(text[index:end]))
            index = end
        elif (raw := _RAW_PREFIX.match(text, index)) is not None and (
            index == 0 or not (text[index - 1].isalnum() or text[index - 1] == "_")
        ):
            closing = ")" + raw.group(1) + '"'
            body_start = raw.end()
            body_end = text.find(closing, body_start)
            body_end = length if body_end < 0 else body_end
            end = min(length, body_end + len(closing))
            literals[index] = _Literal(index, end, text[body_start:body_end])
            masked.append('"' + blank(text[index + 1 : end - 1]) + '"' if end - index >= 2 else " ")
            index = end
        elif char == '"' or (char == "'" and not (index and text[index - 1].isalnum())):
            # A ' after a digit or letter is a digit separator (1'000), not a character literal.
            value: list[str] = []
            position = index + 1
            while position < length and text[position] not in (char, "\n"):
                if text[position] == "\\" and position + 1 < length:
                    value.append(_ESCAPES.get(text[position + 1], text[position + 1]))
                    position += 2
                else:
                    value.append(text[position])
                    position += 1
            closed = position < length and text[position] == char
            end = position + 1 if closed else position
            if char == '"':
                literals[index] = _Literal(index, end, "".join(value))
            inner = text[index + 1 : end - 1] if closed else text[index + 1 : end]
            masked.append(char + blank(inner) + (char if closed else ""))
            index = end
        else:
            masked.append(char)
            index += 1
    text = "".join(masked)
    return _Source(path=path, masked=text, literals=literals, conditionals=ConditionalMap(text))


def _read_source(path: Path) -> _Source | None:
    text = read_regular_text(path)
    return None if text is None else _scan(path, text)


def _matching_brace(masked: str, open_index: int) -> int:
    depth = 0
    for index in range(open_index, len(masked)):
        if masked[index] == "{":
            depth += 1
        elif masked[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    return len(masked)


_DEF_CALL = re.compile(r"[.>]\s*def\s*\(")
_IMPL_BLOCK = re.compile(
    r"\b(?:STABLE_)?TORCH_LIBRARY_IMPL(?:_EXPAND)?\s*\(\s*[^,()]+?\s*,\s*(?P<key>\w+)\s*,\s*(?P<lib>\w+)\s*\)\s*\{"
)
_LIBRARY_BLOCK = re.compile(
    r"\b(?:STABLE_)?TORCH_LIBRARY(?:_FRAGMENT)?(?:_EXPAND)?\s*\(\s*[^,()]+?\s*,\s*(?P<lib>\w+)\s*\)\s*\{"
)


def _call_arguments(source: _Source, open_paren: int) -> list[str]:
    """The top-level argument texts (masked) of the call whose ``(`` is at ``open_paren``."""
    close = matching_paren(source.masked, open_paren)
    if close < 0:
        return []
    return _split_top_level(source.masked[open_paren + 1 : close])


def _library_def_calls(source: _Source) -> set[int]:
    """Offsets of the ``<lib>.def(`` calls inside a ``TORCH_LIBRARY*`` block of that ``lib``."""
    offsets: set[int] = set()
    for block in _LIBRARY_BLOCK.finditer(source.masked):
        end = _matching_brace(source.masked, block.end() - 1)
        call = re.compile(rf"\b{re.escape(block.group('lib'))}\s*(?:\.|->)\s*def\s*\(")
        offsets.update(match.end() for match in call.finditer(source.masked, block.end(), end))
    return offsets


def _schemas_in(source: _Source) -> Iterator[OpSchema]:
    library_defs: set[int] | None = None
    for match in _DEF_CALL.finditer(source.masked):
        found = source.strings_at(match.end())
        if found is None:
            continue
        text = found[0]
        line = source.line_of(match.start())
        branches = source.conditionals.path_at(match.start())
        if "(" not in text:
            # `def("name", fn)`: an op whose schema the dispatcher infers from `fn` when it is
            # called on a torch library; anywhere else (pybind11's `m.def`) not an op at all.
            if library_defs is None:
                library_defs = _library_def_calls(source)
            name = text.strip().rsplit("::", 1)[-1]
            if match.end() in library_defs and _OP_NAME.match(name):
                yield OpSchema(name, text, (), (), source.path, line, branches, inferred=True)
            continue
        schema = parse_schema(text, file=source.path, line=line)
        yield replace(schema, branches=branches)


def _impl_calls(source: _Source, start: int, end: int, lib: str) -> Iterator[tuple[str, int, int]]:
    """``(op, offset, open_paren)`` for each ``<lib>.impl("op", ...)`` between the offsets."""
    call = re.compile(rf"\b{re.escape(lib)}\s*(?:\.|->)\s*impl\s*\(")
    for match in call.finditer(source.masked, start, end):
        found = source.strings_at(match.end())
        if found is not None:
            op = found[0].rsplit("::", 1)[-1]
            yield op, match.start(), match.end() - 1


def _registrations_in(source: _Source) -> Iterator[Registration]:
    for block in _IMPL_BLOCK.finditer(source.masked):
        end = _matching_brace(source.masked, block.end() - 1)
        for op, offset, _ in _impl_calls(source, block.end(), end, block.group("lib")):
            yield _registration(source, op, block.group("key"), offset)
    for block in _LIBRARY_BLOCK.finditer(source.masked):
        end = _matching_brace(source.masked, block.end() - 1)
        lib = block.group("lib")
        # `lib.impl("op", torch::kCUDA, &fn)` names its device in the second argument.
        for op, offset, open_paren in _impl_calls(source, block.end(), end, lib):
            args = _call_arguments(source, open_paren)
            device = _DEVICE_ARGUMENT.search(args[1]) if len(args) >= 3 else None
            key = device.group(1) if device else "CompositeImplicitAutograd"
            yield _registration(source, op, key, offset)
        # `lib.def("op(...) -> ...", &fn)` registers a composite kernel along with the schema.
        def_call = re.compile(rf"\b{re.escape(lib)}\s*(?:\.|->)\s*def\s*\(")
        for match in def_call.finditer(source.masked, block.end(), end):
            if len(_call_arguments(source, match.end() - 1)) >= 2:
                found = source.strings_at(match.end())
                if found is not None:
                    op = found[0].split("(", 1)[0].strip().rsplit("::", 1)[-1]
                    yield _registration(source, op, "CompositeImplicitAutograd", match.start())


def _registration(source: _Source, op: str, key: str, offset: int) -> Registration:
    return Registration(
        op, key, source.path, source.line_of(offset), source.conditionals.path_at(offset)
    )


# --------------------------------------------------------------------------------------------
# Project-level API


def source_files(project: Path, dirs: Iterable[str] = SOURCE_DIRS) -> list[Path]:
    """The C++/CUDA sources under the project's source folders, sorted."""
    files: list[Path] = []
    for folder in dirs:
        root = project / folder
        if root.is_dir():
            files.extend(
                path
                for path in root.rglob("*")
                if path.suffix in SCANNED_SUFFIXES and path.is_file() and not path.is_symlink()
            )
    return sorted(files)


def parse_schemas(files: Iterable[Path]) -> list[OpSchema]:
    """Every op schema declared in ``files``, in file order.

    Raises:
        SchemaError: If a ``def`` string cannot be read as a schema.
    """
    schemas: list[OpSchema] = []
    for path in files:
        source = _read_source(path)
        if source is not None:
            schemas.extend(_schemas_in(source))
    return schemas


def scan_registrations(files: Iterable[Path]) -> list[Registration]:
    """Every ``impl`` registration in ``files``, with its dispatch key and place."""
    registrations: list[Registration] = []
    for path in files:
        source = _read_source(path)
        if source is not None:
            registrations.extend(_registrations_in(source))
    return registrations


def find_schemas(project: Path) -> list[OpSchema]:
    """The op schemas declared in the project's ``torch-ext/`` sources."""
    return parse_schemas(source_files(project, (TORCH_EXT_DIR,)))


def find_registrations(project: Path) -> dict[str, set[str]]:
    """Ops with an implementation, by dispatch key (``{"CPU": {"relu"}, "CUDA": {"relu"}}``).

    Reads every C++/CUDA source under ``torch-ext/`` and ``csrc/``.
    """
    registered: dict[str, set[str]] = {}
    for registration in scan_registrations(source_files(project)):
        registered.setdefault(registration.dispatch_key, set()).add(registration.op)
    return registered
