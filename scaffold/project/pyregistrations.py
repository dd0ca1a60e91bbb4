"""Python ``torch.library`` registrations that bypass the build's op namespace.

kernel-builder refuses to build a kernel whose Python code registers an op under a namespace of
its own (``@torch.library.custom_op("myns::op")``): every build of a kernel must put its ops in
the namespace ``_ops.add_op_namespace_prefix`` gives, so two builds loaded in one process never
collide. This module applies kernel-builder's rule (its ``torch-ops-check`` hook) as it does: to
the module-level functions and classes of every ``.py`` file it packages (``torch-ext/``,
``tvm-ffi-ext/``, ``tests/``), whose decorator is one of the ``torch.library`` registration calls
with a first argument that is not an ``add_op_namespace_prefix(...)`` call.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from scaffold.errors import BuildConfigError
from scaffold.support.safefs import read_regular_text
from scaffold.vocabulary import TESTS_DIR, TORCH_EXT_DIR

#: The decorators kernel-builder's check looks at (bare, or as an attribute: torch.library.X).
REGISTRATION_DECORATORS = frozenset(
    {
        "custom_op",
        "triton_op",
        "register_kernel",
        "register_fake",
        "register_vmap",
        "register_torch_dispatch",
    }
)
PREFIX_FUNCTION = "add_op_namespace_prefix"
#: The folders whose Python files kernel-builder copies into its build, and checks.
SCANNED_DIRS: tuple[str, ...] = (TORCH_EXT_DIR, "tvm-ffi-ext", TESTS_DIR)

_KINDS: dict[type, str] = {
    ast.FunctionDef: "function",
    ast.AsyncFunctionDef: "async function",
    ast.ClassDef: "class",
}


@dataclass(frozen=True)
class UnprefixedRegistration:
    """One decorated function or class registered outside the build's op namespace."""

    path: Path
    line: int
    decorator: str
    kind: str
    name: str
    #: The op name as written, when it is a string literal ("myns::silu_and_mul").
    literal: str | None

    @property
    def op(self) -> str:
        """The op's own name, for the fix: the literal's part after ``::``, else ``<op>``."""
        if self.literal is None:
            return "<op>"
        return self.literal.rpartition("::")[2] or "<op>"

    def location(self, project: Path) -> str:
        """``torch-ext/x/op.py:7``: the decorator's file, relative to ``project``, and line."""
        try:
            where = self.path.relative_to(project).as_posix()
        except ValueError:
            where = str(self.path)
        return f"{where}:{self.line}"

    def what(self) -> str:
        """``@custom_op("myns::f") on function f``."""
        target = f'"{self.literal}"' if self.literal is not None else "..."
        return f"@{self.decorator}({target}) on {self.kind} {self.name}"

    def problem(self, others: str = "") -> str:
        """What is wrong, in the words ``check`` and ``build`` both use.

        ``others`` follows the registration it names: " (and 2 more)".
        """
        return (
            f"{self.what()}{others} registers an op outside the build's namespace, which "
            "kernel-builder refuses to build"
        )

    def fix(self) -> str:
        return (
            f'Write @torch.library.{self.decorator}(add_op_namespace_prefix("{self.op}"), ...), '
            "importing add_op_namespace_prefix from ._ops"
        )


def _func_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _violations(path: Path, tree: ast.Module) -> list[UnprefixedRegistration]:
    found: list[UnprefixedRegistration] = []
    for node in ast.iter_child_nodes(tree):
        kind = _KINDS.get(type(node))
        if kind is None:
            continue
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call) or not decorator.args:
                continue
            name = _func_name(decorator)
            if name not in REGISTRATION_DECORATORS:
                continue
            first = decorator.args[0]
            if isinstance(first, ast.Call) and _func_name(first) == PREFIX_FUNCTION:
                continue
            literal = (
                first.value
                if isinstance(first, ast.Constant) and isinstance(first.value, str)
                else None
            )
            found.append(
                UnprefixedRegistration(path, decorator.lineno, name or "", kind, node.name, literal)
            )
    return found


def python_files(project: Path) -> list[Path]:
    """The ``.py`` files under the folders kernel-builder packages, in a stable order."""
    files: list[Path] = []
    for folder in SCANNED_DIRS:
        root = project / folder
        if root.is_dir() and not root.is_symlink():
            files.extend(
                path for path in sorted(root.rglob("*.py")) if "__pycache__" not in path.parts
            )
    return files


def find_unprefixed_registrations(project: Path) -> list[UnprefixedRegistration]:
    """Every registration kernel-builder's torch-ops-check would refuse, in file order.

    A file that cannot be read or parsed is skipped (the compiler or the tests report it).
    """
    found: list[UnprefixedRegistration] = []
    for path in python_files(project):
        text = read_regular_text(path)
        if text is None:
            continue
        try:
            tree = ast.parse(text, filename=str(path))
        except (SyntaxError, ValueError, RecursionError):
            continue
        found.extend(_violations(path, tree))
    return found


def refuse_unprefixed_registrations(project: Path) -> None:
    """Raise, in one line, if the project registers an op outside its namespace."""
    found = find_unprefixed_registrations(project)
    if not found:
        return
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise BuildConfigError(
        f"{found[0].location(project)}: {found[0].problem(more)}. {found[0].fix()}."
    )
