"""Which ``#if``/``#elif``/``#else`` branch each part of a C++ file is in, and when it compiles.

Kernel sources register ops per backend under conditionals (``#if defined(CPU_KERNEL) ...
#elif defined(CUDA_KERNEL) ...``), and some declare a schema twice in alternative branches. A
reader that ignores the preprocessor sees both. This module maps offsets of a file (comments
already blanked) to their chain of enclosing branches, and evaluates the conditions for one
build with three-valued logic: the macros kernel-builder defines for a backend are known, every
other macro is unknown, and a branch whose condition is unknown counts as possibly compiled. So
a conclusion drawn from it ("never compiled for CPU", "these two are alternatives") holds in
every build, and nothing is reported that a real build could disprove.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass

#: The macros kernel-builder defines for every translation unit of a backend's variant.
BACKEND_MACROS: Mapping[str, Mapping[str, int]] = {
    "cpu": {"CPU_KERNEL": 1},
    "cuda": {"CUDA_KERNEL": 1, "USE_CUDA": 1},
    "rocm": {"ROCM_KERNEL": 1, "USE_ROCM": 1},
    "metal": {"METAL_KERNEL": 1},
    "xpu": {"XPU_KERNEL": 1, "USE_XPU": 1},
}
_ALL_BACKEND_MACROS = frozenset(name for macros in BACKEND_MACROS.values() for name in macros)


@dataclass(frozen=True)
class Branch:
    """One branch of an ``#if`` chain: its own condition and those of the branches before it."""

    chain: int
    index: int
    #: The conditions of branches ``0..index`` of the chain; the last is this branch's own
    #: (``1`` for ``#else``), the others must all be false for this branch to be taken.
    conditions: tuple[str, ...]


Path = tuple[Branch, ...]


@dataclass(frozen=True)
class Build:
    """What the preprocessor knows in one build: defined macros with values, known-undefined."""

    defined: Mapping[str, int]
    undefined: frozenset[str]

    @classmethod
    def for_backend(cls, backend: str | None) -> Build:
        """A backend's variant; ``None`` for a build about which nothing is known."""
        if backend is None:
            return cls({}, frozenset())
        defined = dict(BACKEND_MACROS.get(backend, {}))
        return cls(defined, _ALL_BACKEND_MACROS - set(defined))


class ConditionalMap:
    """The enclosing branches of every offset of one file."""

    def __init__(self, masked: str) -> None:
        self._starts: list[int] = [0]
        self._paths: list[Path] = [()]
        stack: list[list[Branch]] = []  # per open chain: its branches so far
        chain_ids = 0
        offset = 0
        lines = masked.split("\n")
        index = 0
        while index < len(lines):
            line = lines[index]
            # A directive may continue over several lines with a trailing backslash.
            text = line
            while text.endswith("\\") and index + 1 < len(lines):
                offset += len(lines[index]) + 1
                index += 1
                text = text[:-1] + " " + lines[index]
            offset += len(lines[index]) + 1
            index += 1
            match = _DIRECTIVE.match(text)
            if match is None:
                continue
            kind, argument = match[1], match[2].strip()
            if kind in ("if", "ifdef", "ifndef"):
                chain_ids += 1
                condition = _condition(kind, argument)
                stack.append([Branch(chain_ids, 0, (condition,))])
            elif kind in ("elif", "elifdef", "elifndef", "else") and stack:
                branches = stack[-1]
                previous = branches[-1]
                condition = "1" if kind == "else" else _condition(kind[2:] or "if", argument)
                branches.append(
                    Branch(previous.chain, previous.index + 1, (*previous.conditions, condition))
                )
            elif kind == "endif" and stack:
                stack.pop()
            else:
                continue
            self._starts.append(offset)
            self._paths.append(tuple(branches[-1] for branches in stack))

    def path_at(self, offset: int) -> Path:
        """The branches that enclose ``offset``, outermost first."""
        return self._paths[bisect.bisect_right(self._starts, offset) - 1]


_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)$")


def _condition(kind: str, argument: str) -> str:
    if kind == "ifdef":
        return f"defined({argument})"
    if kind == "ifndef":
        return f"!defined({argument})"
    return argument or "0"


def possible(path: Path, build: Build) -> bool:
    """Whether code at ``path`` may be compiled in ``build`` (False only when it cannot be)."""
    for branch in path:
        own = evaluate(branch.conditions[-1], build)
        if own is False:
            return False
        if any(evaluate(earlier, build) is True for earlier in branch.conditions[:-1]):
            return False
    return True


def exclusive(first: Path, second: Path) -> bool:
    """Whether two places are in different branches of one chain: never compiled together."""
    chains = {branch.chain: branch.index for branch in first}
    return any(chains.get(branch.chain, branch.index) != branch.index for branch in second)


# --------------------------------------------------------------------------------------------
# Conditions, evaluated to True, False or None (unknown).

_TOKEN = re.compile(
    r"\s*(?:(?P<number>0[xX][0-9a-fA-F]+|\d+)[uUlL]*|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|<<|>>|[()!<>+\-*/%]))"
)


def evaluate(condition: str, build: Build) -> bool | None:
    """The truth of an ``#if`` condition in ``build``; None when it cannot be known."""
    tokens: list[tuple[str, str]] = []
    position = 0
    text = condition.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            return None  # something this reader does not evaluate (a string, __has_include)
        kind = next(key for key in ("number", "name", "op") if match[key] is not None)
        tokens.append((kind, match[kind]))
        position = match.end()
    parser = _Parser(tokens, build)
    try:
        value = parser.disjunction()
    except _Unreadable:
        return None
    if parser.index != len(tokens) or value is None:
        return None
    return value != 0


class _Unreadable(Exception):
    pass


class _Parser:
    """Recursive descent over the usual precedence; a value is an int or None (unknown)."""

    def __init__(self, tokens: list[tuple[str, str]], build: Build) -> None:
        self.tokens = tokens
        self.index = 0
        self.build = build

    def _peek(self) -> str | None:
        return self.tokens[self.index][1] if self.index < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        if self.index >= len(self.tokens):
            raise _Unreadable
        token = self.tokens[self.index]
        self.index += 1
        return token

    def disjunction(self) -> int | None:
        value = self.conjunction()
        while self._peek() == "||":
            self._take()
            other = self.conjunction()
            if value == 0 and other == 0:
                value = 0
            elif (value is not None and value != 0) or (other is not None and other != 0):
                value = 1
            else:
                value = None
        return value

    def conjunction(self) -> int | None:
        value = self.comparison()
        while self._peek() == "&&":
            self._take()
            other = self.comparison()
            if value == 0 or other == 0:
                value = 0
            elif value is not None and other is not None:
                value = 1
            else:
                value = None
        return value

    def comparison(self) -> int | None:
        value = self.arithmetic()
        while self._peek() in ("==", "!=", "<", ">", "<=", ">="):
            operator = self._take()[1]
            other = self.arithmetic()
            if value is None or other is None:
                value = None
                continue
            value = int(
                {
                    "==": value == other,
                    "!=": value != other,
                    "<": value < other,
                    ">": value > other,
                    "<=": value <= other,
                    ">=": value >= other,
                }[operator]
            )
        return value

    def arithmetic(self) -> int | None:
        value = self.unary()
        while self._peek() in ("+", "-", "*", "/", "%", "<<", ">>"):
            self._take()
            self.unary()
            value = None  # versions and sizes: never about which backend is built
        return value

    def unary(self) -> int | None:
        token = self._peek()
        if token == "!":
            self._take()
            value = self.unary()
            return None if value is None else int(value == 0)
        if token in ("-", "+"):
            self._take()
            self.unary()
            return None
        return self.primary()

    def primary(self) -> int | None:
        kind, token = self._take()
        if token == "(":
            value = self.disjunction()
            if self._take()[1] != ")":
                raise _Unreadable
            return value
        if kind == "number":
            return int(token, 16) if token[:2].lower() == "0x" else int(token)
        if kind != "name":
            raise _Unreadable
        if token == "defined":
            parenthesized = self._peek() == "("
            if parenthesized:
                self._take()
            kind, name = self._take()
            if kind != "name" or (parenthesized and self._take()[1] != ")"):
                raise _Unreadable
            if name in self.build.defined:
                return 1
            return 0 if name in self.build.undefined else None
        if self._peek() == "(":
            raise _Unreadable  # a function-like macro such as __has_include
        if token in self.build.defined:
            return self.build.defined[token]
        return 0 if token in self.build.undefined else None
