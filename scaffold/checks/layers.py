"""Layers: the package's ``layers`` module is what ``kernels.kernelize`` can take.

``kernelize`` looks a layer up as ``<package>.layers.<Name>`` and takes only its ``forward``:
kernels refuses a layer that is no ``nn.Module``, defines ``__init__`` or has members besides
``forward``, ``can_torch_compile`` and ``has_backward``. Everything here is read with ``ast``,
never imported: ``check`` runs before a build and on machines whose torch no build matches, and
importing would run the kernel's code. The generated tests import the layers from the built
variant and kernelize them, which covers what only an import can show. Whether a layer's
``forward`` takes what the module it replaces takes depends on the model, so it is not checked.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from scaffold.checks.base import Context, Finding, error, warning
from scaffold.project.schema import find_registrations
from scaffold.support.safefs import read_regular_text
from scaffold.vocabulary import TORCH_EXT_DIR

#: The class members kernels allows a layer besides nn.Module's own.
_LAYER_MEMBERS = frozenset({"forward", "can_torch_compile", "has_backward"})
#: nn.Module methods a layer may override without adding a member kernels would refuse.
_MODULE_METHODS = frozenset({"extra_repr"})
#: Modules a layer package may import that no source file holds: kernel-builder writes _ops.py.
_GENERATED_MODULES = frozenset({"_ops"})
#: Dispatch keys whose registration gives an op its gradient in C++.
_AUTOGRAD_KEY_PREFIXES = ("Autograd", "CompositeImplicitAutograd")


def check_layers(context: Context) -> list[Finding]:
    """The ``layers`` module parses, imports what the package has, and exports usable layers."""
    if context.python_name is None:
        return []
    package = context.project / TORCH_EXT_DIR / context.python_name
    path = next(
        (
            candidate
            for candidate in (package / "layers.py", package / "layers" / "__init__.py")
            if candidate.is_file()
        ),
        None,
    )
    if path is None:
        return []
    location = context.relative(path)
    text = read_regular_text(path)
    if text is None:
        return [error(location, "cannot be read as a file.", "Make it a regular Python file.")]
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError, RecursionError) as problem:
        line = getattr(problem, "lineno", None)
        detail = getattr(problem, "msg", None) or str(problem)
        return [
            error(
                f"{location}:{line}" if line else location,
                f"does not parse ({detail}), so the package cannot import its layers.",
                f"Fix the syntax (`python -m py_compile {location}` shows the place).",
            )
        ]
    package_info = _PackageInfo.read(package, context.project)
    layers_package = package / "layers" if path.name == "__init__.py" else package
    findings = _imports(location, tree, layers_package, package, package_info)
    findings.extend(_exports(location, tree, package_info))
    if not package_info.imports_layers:
        findings.append(
            warning(
                context.relative(package / "__init__.py"),
                "never imports the layers module, so kernels finds no layers in the package.",
                "Add `from . import layers as layers` to the package's __init__.py (after the "
                "functions the layers call).",
            )
        )
    return findings


# --- what the package knows about its ops ------------------------------------------------------


@dataclass
class _PackageInfo:
    """The package's Python modules, read once: wrappers, autograd formulas, top-level names."""

    #: Module-level functions of the package: name -> (ops it references, whether it applies an
    #: autograd.Function).
    wrappers: dict[str, tuple[set[str], bool]] = field(default_factory=dict)
    #: Ops with an autograd formula (register_autograd, or an Autograd key in C++).
    autograd_ops: set[str] = field(default_factory=set)
    #: Names bound at the top level of the package's __init__.py.
    init_names: set[str] = field(default_factory=set)
    imports_layers: bool = False

    @classmethod
    def read(cls, package: Path, project: Path) -> _PackageInfo:
        info = cls()
        functions = {"Function"}  # torch.autograd.Function subclasses, by class name
        trees: list[tuple[Path, ast.Module]] = []
        for path in sorted(package.rglob("*.py")):
            inside = path.relative_to(package).parts
            if "__pycache__" in inside or inside[0] in ("layers.py", "layers"):
                continue  # the layers are what is judged, not what judges
            text = read_regular_text(path)
            try:
                tree = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError, RecursionError):
                tree = None
            if tree is not None:
                trees.append((path, tree))
                functions |= _autograd_functions(tree)
        for path, tree in trees:
            custom_ops = _custom_op_functions(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and _called_name(node.func) == "register_autograd":
                    info.autograd_ops |= _registered_ops(node, custom_ops)
            for statement in tree.body:
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                    info.wrappers[statement.name] = _reach(statement, functions)
            if path == package / "__init__.py":
                info.init_names = _bound_names(tree)
                info.imports_layers = _imports_layers(tree)
        for key, ops in find_registrations(project).items():
            if key.startswith(_AUTOGRAD_KEY_PREFIXES):
                info.autograd_ops |= ops
        return info


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _op_name(node: ast.expr) -> str | None:
    """The op a ``"ns::name"`` string or an ``add_op_namespace_prefix("name")`` call names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.rpartition("::")[2].partition(".")[0] or None
    if (
        isinstance(node, ast.Call)
        and _called_name(node.func) == "add_op_namespace_prefix"
        and node.args
    ):
        return _op_name(node.args[0])
    return None


def _custom_op_functions(tree: ast.Module) -> dict[str, str]:
    """Functions decorated ``@custom_op(name)``/``@triton_op(name)``: function -> op name."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and _called_name(decorator.func) in ("custom_op", "triton_op")
                    and decorator.args
                    and (op := _op_name(decorator.args[0]))
                ):
                    found[node.name] = op
    return found


def _registered_ops(call: ast.Call, custom_ops: dict[str, str]) -> set[str]:
    """The op a ``register_autograd`` call gives a formula to."""
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in custom_ops  # my_op.register_autograd(backward, ...)
    ):
        return {custom_ops[func.value.id]}
    op = _op_name(call.args[0]) if call.args else None
    return {op} if op else set()


def _autograd_functions(tree: ast.Module) -> set[str]:
    """Classes that subclass ``autograd.Function`` and define ``backward``."""
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(_called_name(base) == "Function" for base in node.bases)
        and any(isinstance(item, ast.FunctionDef) and item.name == "backward" for item in node.body)
    }


def _is_ops_namespace(node: ast.expr) -> bool:
    """``ops``, ``_ops.ops`` or ``torch.ops.<namespace>``."""
    if isinstance(node, ast.Name):
        return node.id == "ops"
    if isinstance(node, ast.Attribute):
        return node.attr == "ops" or (
            isinstance(node.value, ast.Attribute) and node.value.attr == "ops"
        )
    return False


def _reach(function: ast.AST, autograd_functions: set[str]) -> tuple[set[str], bool]:
    """The ops ``function`` references (``ops.<op>``); whether it applies an autograd.Function."""
    ops: set[str] = set()
    applies = False
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and _is_ops_namespace(node.value):
            ops.add(node.attr)
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "apply"
            and _called_name(node.value) in autograd_functions
        ):
            applies = True
    return ops, applies


def _bound_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level (definitions, assignments, imports)."""
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(statement.name)
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            names.update(
                (alias.asname or alias.name).partition(".")[0] for alias in statement.names
            )
        else:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
    return names


def _imports_layers(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module == "layers" or (
                node.module is None and any(alias.name == "layers" for alias in node.names)
            ):
                return True
        elif isinstance(node, ast.Import) and any(
            alias.name.endswith(".layers") for alias in node.names
        ):
            return True
    return False


# --- the layers module -------------------------------------------------------------------------


def _module_exists(folder: Path, dotted: str) -> bool:
    target = folder.joinpath(*dotted.split("."))
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def _imports(
    location: str, tree: ast.Module, here: Path, package: Path, info: _PackageInfo
) -> list[Finding]:
    """Relative imports of modules or names the package does not have."""
    findings: list[Finding] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = here
        for _ in range(node.level - 1):
            base = base.parent
        dots = "." * node.level
        if node.module is not None:
            first = node.module.partition(".")[0]
            if first not in _GENERATED_MODULES and not _module_exists(base, node.module):
                findings.append(
                    error(
                        f"{location}:{node.lineno}",
                        f"imports from {dots}{node.module}, which the package does not have: "
                        "importing the layers fails.",
                        f"Import from a module of {package.name}/, or add the module.",
                    )
                )
            continue
        if base != package:
            continue  # names of a subpackage's __init__ are not read
        for alias in node.names:
            name = alias.name
            if (
                name not in info.init_names
                and name not in _GENERATED_MODULES
                and not _module_exists(package, name)
            ):
                findings.append(
                    error(
                        f"{location}:{node.lineno}",
                        f"imports '{name}' from the package, whose __init__.py does not define "
                        "it (nor is it a module of the package): importing the layers fails.",
                        f"Import a function {package.name}/__init__.py defines before it imports "
                        "the layers.",
                    )
                )
    return findings


def _exported_names(tree: ast.Module) -> list[tuple[str, int]]:
    """The strings of ``__all__ = [...]`` (and ``+=``), with their lines."""
    names: list[tuple[str, int]] = []
    for statement in tree.body:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AugAssign | ast.AnnAssign):
            targets = [statement.target]
        value = getattr(statement, "value", None)
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        if isinstance(value, ast.List | ast.Tuple):
            names.extend(
                (item.value, item.lineno)
                for item in value.elts
                if isinstance(item, ast.Constant) and isinstance(item.value, str)
            )
    return names


def _is_module_base(base: ast.expr, module_aliases: set[str]) -> bool | None:
    """Whether a base class is ``nn.Module``: True, False, or None when it cannot be told."""
    dotted = ast.unparse(base)
    if dotted in ("torch.nn.Module", "nn.Module") or dotted in module_aliases:
        return True
    if dotted == "object":
        return False
    return None


def _exports(location: str, tree: ast.Module, info: _PackageInfo) -> list[Finding]:
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    functions = {
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    module_aliases = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == "torch.nn"
        for alias in node.names
        if alias.name == "Module"
    }
    bound = _bound_names(tree)
    findings: list[Finding] = []
    exported = _exported_names(tree)
    if not exported:
        # No __all__: kernels may take any class by name, so every nn.Module subclass is a layer.
        exported = [
            (name, node.lineno)
            for name, node in classes.items()
            if _is_layer(node, classes, module_aliases, set())[0] is True
        ]
    for name, line in exported:
        where = f"{location}:{line}"
        if name in classes:
            findings.extend(_layer_class(where, classes[name], classes, module_aliases, info))
        elif name in imported:
            continue  # defined elsewhere: not read here
        elif name in functions or name in bound:
            findings.append(
                error(
                    where,
                    f"exports '{name}', which is not an nn.Module subclass: kernels can take "
                    "only a layer class's forward.",
                    f"Remove '{name}' from __all__: export layer classes only (torch.nn.Module "
                    "subclasses with a forward).",
                )
            )
        else:
            findings.append(
                error(
                    where,
                    f"exports '{name}', which the module does not define: importing "
                    f"`from layers import *` fails.",
                    f"Define {name} or remove it from __all__.",
                )
            )
    return findings


def _is_layer(
    node: ast.ClassDef, classes: dict[str, ast.ClassDef], aliases: set[str], seen: set[str]
) -> tuple[bool | None, bool]:
    """Whether ``node`` is an nn.Module subclass (None: cannot tell) and has a forward."""
    has_forward = any(
        isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "forward"
        for item in node.body
    )
    verdicts: list[bool | None] = []
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
            is_module, base_forward = _is_layer(
                classes[base.id], classes, aliases, seen | {node.name}
            )
            verdicts.append(is_module)
            has_forward = has_forward or base_forward
        else:
            verdicts.append(_is_module_base(base, aliases))
    if any(verdict is True for verdict in verdicts):
        return True, has_forward
    if any(verdict is None for verdict in verdicts):
        return None, True  # an imported base may be a module with a forward
    return False, has_forward


def _layer_class(
    where: str,
    node: ast.ClassDef,
    classes: dict[str, ast.ClassDef],
    aliases: set[str],
    info: _PackageInfo,
) -> list[Finding]:
    is_module, has_forward = _is_layer(node, classes, aliases, set())
    if is_module is False:
        return [
            error(
                where,
                f"exports {node.name}, which is not an nn.Module subclass: kernels refuses it.",
                f"Derive {node.name} from torch.nn.Module.",
            )
        ]
    if not has_forward:
        return [
            error(
                where,
                f"exports {node.name}, which has no forward: kernels takes a layer's forward.",
                f"Define {node.name}.forward, taking what the module it replaces takes.",
            )
        ]
    findings: list[Finding] = []
    members = _members(node)
    if "__init__" in members:
        findings.append(
            error(
                where,
                f"{node.name} defines __init__: kernels refuses a layer with a constructor "
                "(a layer keeps no state; kernelize takes only its forward).",
                f"Remove {node.name}.__init__; read state from the replaced module's attributes.",
            )
        )
    extra = sorted(
        name
        for name in members
        if name not in _LAYER_MEMBERS | _MODULE_METHODS | {"__init__"}
        and not (name.startswith("__") and name.endswith("__"))
    )
    if extra:
        findings.append(
            error(
                where,
                f"{node.name} has members kernels refuses in a layer: {', '.join(extra)} "
                "(only forward, can_torch_compile and has_backward).",
                "Move them to module-level functions or constants of layers.py.",
            )
        )
    findings.extend(_backward(where, node, info))
    return findings


def _members(node: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(item.name)
        elif isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    return names


def _class_flag(node: ast.ClassDef, name: str) -> bool | None:
    """The constant a class assigns to ``name`` (None: not assigned, or not a constant)."""
    value: ast.expr | None = None
    for item in node.body:
        targets = item.targets if isinstance(item, ast.Assign) else []
        if isinstance(item, ast.AnnAssign):
            targets = [item.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            value = getattr(item, "value", None)
    if isinstance(value, ast.Constant) and isinstance(value.value, bool):
        return value.value
    return None


def _backward(where: str, node: ast.ClassDef, info: _PackageInfo) -> list[Finding]:
    """``has_backward`` (True, or absent: kernels' default) on a layer whose ops have no formula."""
    forward = next(
        (
            item
            for item in node.body
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "forward"
        ),
        None,
    )
    if forward is None:
        return []
    ops, applies = _reach(forward, set())
    for call in ast.walk(forward):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            wrapper = info.wrappers.get(call.func.id)
            if wrapper is not None:
                ops |= wrapper[0]
                applies = applies or wrapper[1]
    if applies or not ops or ops & info.autograd_ops:
        return []  # a formula, or nothing of the package's own to judge
    flag = _class_flag(node, "has_backward")
    reached = ", ".join(sorted(ops))
    if flag is True:
        return [
            error(
                where,
                f"{node.name} sets has_backward = True, but its forward calls ops with no "
                f"autograd formula ({reached}): kernelize would use it for Mode.TRAINING and "
                "backward would fail.",
                "Register one (torch.library.register_autograd) or set has_backward = False.",
            )
        ]
    if flag is None:
        return [
            warning(
                where,
                f"{node.name} does not set has_backward, which kernels takes as True, but its "
                f"forward calls ops with no autograd formula ({reached}).",
                "Set has_backward = False, or register a formula "
                "(torch.library.register_autograd).",
            )
        ]
    return []
