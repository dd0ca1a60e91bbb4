"""Layers for ``kernels.kernelize``: rendered for every op, kept in step by add-op, checked.

Fast tier only: the generated tests that kernelize each layer run in the slow builds of
test_img2gray_build.py and test_add_op.py.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from scaffold.checks import Finding, check_project
from scaffold.errors import InvalidNameError
from scaffold.grow import template as template_module
from scaffold.grow.addop import OpName, add_op
from scaffold.grow.create import ProjectSpec
from scaffold.grow.evolve import update_project
from scaffold.grow.template import render_files
from scaffold.project.layernames import layer_class_name
from tests.projects import commit_all, new_project

LAYERS = "torch-ext/my_kernel/layers.py"
INIT = "torch-ext/my_kernel/__init__.py"

#: Op names, with the kind each is rendered from, chosen to collide under a naive CamelCase.
OPS = [
    {"name": "relu", "kind": "relu"},
    {"name": "img2gray", "kind": "img2gray"},
    {"name": "fused_add", "kind": "relu"},
    {"name": "rope_2d", "kind": "skeleton"},
    {"name": "rope2d", "kind": "relu"},
    {"name": "a_b_c", "kind": "skeleton"},
]


def classes_of(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def class_constant(node: ast.ClassDef, name: str) -> object:
    for item in node.body:
        if isinstance(item, ast.Assign) and [ast.unparse(t) for t in item.targets] == [name]:
            return ast.literal_eval(item.value)
    raise AssertionError(f"{node.name} does not set {name}")


def test_layer_class_names_follow_the_rule_and_never_collide() -> None:
    assert [layer_class_name(op["name"]) for op in OPS] == [
        "Relu",
        "Img2gray",
        "FusedAdd",
        "Rope_2d",
        "Rope2d",
        "ABC",
    ]
    names = ["x1", "x_1", "ab_c", "a_bc", "abc", "a_b_c", "a1_b", "a_1b", "a1b", "scale"]
    assert len({layer_class_name(OpName(name).name) for name in names}) == len(names)


def test_an_op_cannot_be_named_like_the_layers_module() -> None:
    with pytest.raises(InvalidNameError, match="already uses it"):
        OpName("layers")


def test_rendered_layers_name_every_op_and_call_its_wrapper() -> None:
    spec = ProjectSpec.parse("my-kernel", backends=("cuda", "cpu"))
    files = render_files({**spec.answers(), "ops": OPS})
    tree = ast.parse(files[LAYERS])
    classes = classes_of(tree)
    expected = {layer_class_name(op["name"]): op for op in OPS}
    assert set(classes) == set(expected)
    exported = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"
    )
    assert sorted(exported) == sorted(expected)
    imported = {
        alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names
    }
    assert imported == {op["name"] for op in OPS}
    for name, op in expected.items():
        layer = classes[name]
        assert [ast.unparse(base) for base in layer.bases] == ["torch.nn.Module"]
        members = {item.name for item in layer.body if isinstance(item, ast.FunctionDef)}
        assert members == {"forward"}, "kernels refuses __init__ and other members"
        (forward,) = (item for item in layer.body if isinstance(item, ast.FunctionDef))
        assert [arg.arg for arg in forward.args.args] == [
            "self",
            "image" if op["kind"] == "img2gray" else "x",
        ]
        (returned,) = (node for node in ast.walk(forward) if isinstance(node, ast.Return))
        assert isinstance(returned.value, ast.Call)
        assert ast.unparse(returned.value.func) == op["name"]
        assert class_constant(layer, "can_torch_compile") is True
        # Skeletons have no autograd formula until the user writes one.
        assert class_constant(layer, "has_backward") is (op["kind"] != "skeleton")
    # The package imports the layers after every wrapper they call.
    init = ast.parse(files[INIT])
    last = init.body[-1]
    assert isinstance(last, ast.ImportFrom) and [a.name for a in last.names] == ["layers"]
    defined = {node.name for node in init.body if isinstance(node, ast.FunctionDef)}
    assert {op["name"] for op in OPS} <= defined
    # The generated tests ask kernels for each op's layer by its class name.
    for name, op in expected.items():
        assert f'LAYER = "{name}"' in files[f"tests/test_{op['name']}.py"].decode()


def test_the_card_shows_kernelize_with_a_hub_mapping() -> None:
    spec = ProjectSpec.parse("my-kernel", backends=("cuda", "cpu"), owner="acme")
    card = render_files(spec.answers())["README.md"].decode()
    assert "get_kernel(" in card
    assert '@use_kernel_forward_from_hub("Relu")' in card
    repository = (
        'LayerRepository(\n            repo_id="acme/my-kernel",\n            layer_name="Relu",'
    )
    assert card.count(repository) == 2  # one for each backend
    assert "kernelize(model, mode=Mode.INFERENCE" in card
    code = card.split("### As a layer of a model")[1].split("```python\n")[1].split("```")[0]
    compile(code, "README.md", "exec")  # the snippet is Python


USER_LAYER = (
    "\n\nclass MyRelu(torch.nn.Module):\n"
    "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    "        return relu(x) * 2\n"
)


def test_add_op_adds_a_layer_and_keeps_the_users_edits(project: Path) -> None:
    layers = project / LAYERS
    user_line = "    # Mine: measured on my model.\n"
    text = layers.read_text()
    anchor = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    text = text.replace(anchor, user_line + anchor, 1).replace(
        '    "Relu",\n', '    "MyRelu",\n    "Relu",\n'
    )
    layers.write_text(text + USER_LAYER)
    commit_all(project, ".", message="user edits of layers.py")
    for name, like in (("scale", "relu"), ("gray", "img2gray"), ("clamp", None)):
        add_op(project, name, like=like)
        commit_all(project, ".", message=f"add {name}")
    text = layers.read_text()
    assert text.count(user_line) == 1
    classes = classes_of(ast.parse(text))
    assert set(classes) == {"Relu", "Scale", "Gray", "Clamp", "MyRelu"}
    assert text.count(USER_LAYER) == 1
    assert class_constant(classes["Clamp"], "has_backward") is False
    assert class_constant(classes["Gray"], "has_backward") is True
    assert "from . import (\n    clamp,\n    gray,\n    relu,\n    scale,\n)\n" in text
    # Both sides added names at one place of the list: both kept, the user's first.
    assert (
        '__all__ = [\n    "MyRelu",\n    "Clamp",\n    "Gray",\n    "Relu",\n    "Scale",\n]'
        in text
    )
    assert text.index(user_line) < text.index("class Scale")
    assert text.index("class Relu") < text.index(USER_LAYER) < text.index("class Scale")
    assert not [str(f) for f in check_project(project) if f.is_error]


def test_update_gives_a_project_of_an_older_template_its_layers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    older = tmp_path / "older-template"
    shutil.copytree(template_module.template_dir(), older)
    package = older / "project" / "torch-ext" / "{{ python_name }}"
    (package / "layers.py.jinja").unlink()
    init = package / "__init__.py.jinja"
    text = init.read_text()
    init.write_text(text[: text.index("\n\n# Last, since the layers")] + "\n")
    monkeypatch.setattr(template_module, "template_dir", lambda: older)
    project = new_project(tmp_path / "p")
    monkeypatch.undo()
    assert not (project / LAYERS).exists()
    helper = "\n\ndef relu_twice(x: torch.Tensor) -> torch.Tensor:\n    return relu(relu(x))\n"
    with open(project / INIT, "a") as handle:
        handle.write(helper)
    commit_all(project, ".", message="a helper")

    report = update_project(project)
    assert sorted(report.written) == [INIT, LAYERS]
    assert set(classes_of(ast.parse((project / LAYERS).read_text()))) == {"Relu"}
    text = (project / INIT).read_text()
    assert text.count(helper) == 1 and "from . import layers as layers" in text
    assert not [str(f) for f in check_project(project) if f.is_error]


# --- check ------------------------------------------------------------------------------------


def layer_findings(project: Path) -> list[Finding]:
    return [f for f in check_project(project) if "layers" in f.message or "layer" in f.message]


GOOD_HEADER = '"""Layers."""\n\nimport torch\n\nfrom . import relu\n\n'
RELU_LAYER = (
    "class Relu(torch.nn.Module):\n"
    "    can_torch_compile = True\n"
    "    has_backward = True\n\n"
    "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    "        return relu(x)\n"
)

#: layers.py payloads: (text, the severity expected, a fragment of its message, the line).
PAYLOADS: dict[str, tuple[str, str, str, int | None]] = {
    "syntax-error": (
        GOOD_HEADER + "class Relu(torch.nn.Module:\n    pass\n",
        "error",
        "does not parse",
        7,
    ),
    "exports-a-function": (
        GOOD_HEADER
        + '__all__ = ["Relu", "helper"]\n\n'
        + RELU_LAYER
        + "\n\ndef helper():\n    pass\n",
        "error",
        "exports 'helper', which is not an nn.Module subclass",
        7,
    ),
    "exports-a-constant": (
        GOOD_HEADER + '__all__ = ["SCALE"]\nSCALE = 2.0\n',
        "error",
        "exports 'SCALE', which is not an nn.Module subclass",
        7,
    ),
    "exports-nothing-defined": (
        GOOD_HEADER + '__all__ = ["Relu", "Missing"]\n\n' + RELU_LAYER,
        "error",
        "exports 'Missing', which the module does not define",
        7,
    ),
    "exports-a-plain-class": (
        GOOD_HEADER
        + '__all__ = ["Relu"]\n\nclass Relu:\n    def forward(self, x):\n        return relu(x)\n',
        "error",
        "exports Relu, which is not an nn.Module subclass",
        7,
    ),
    "exports-a-module-without-forward": (
        GOOD_HEADER
        + '__all__ = ["Relu"]\n\nclass Relu(torch.nn.Module):\n    has_backward = True\n',
        "error",
        "exports Relu, which has no forward",
        7,
    ),
    "a-constructor": (
        GOOD_HEADER
        + '__all__ = ["Relu"]\n\n'
        + RELU_LAYER.replace(
            "    def forward",
            "    def __init__(self):\n        super().__init__()\n\n    def forward",
        ),
        "error",
        "Relu defines __init__",
        7,
    ),
    "an-extra-member": (
        GOOD_HEADER
        + '__all__ = ["Relu"]\n\n'
        + RELU_LAYER.replace("    has_backward", "    eps = 1e-6\n    has_backward"),
        "error",
        "members kernels refuses in a layer: eps",
        7,
    ),
    "no-all-a-layer-with-a-constructor": (
        GOOD_HEADER
        + RELU_LAYER.replace(
            "    def forward",
            "    def __init__(self):\n        super().__init__()\n\n    def forward",
        ),
        "error",
        "Relu defines __init__",
        7,
    ),
    "imports-a-missing-module": (
        GOOD_HEADER.replace(
            "from . import relu", "from . import relu\nfrom .fused import fused_relu"
        )
        + '__all__ = ["Relu"]\n\n'
        + RELU_LAYER,
        "error",
        "imports from .fused, which the package does not have",
        6,
    ),
    "imports-a-missing-wrapper": (
        GOOD_HEADER.replace("from . import relu", "from . import relu, gelu")
        + '__all__ = ["Relu"]\n\n'
        + RELU_LAYER,
        "error",
        "imports 'gelu' from the package",
        5,
    ),
}


@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_check_reports_a_broken_layers_module_with_its_file(
    project: Path, payload: tuple[str, str, str, int | None]
) -> None:
    text, severity, fragment, line = payload
    (project / LAYERS).write_text(text)
    findings = [f for f in check_project(project) if f.location.startswith(LAYERS)]
    assert [(f.severity, f.location) for f in findings if fragment in f.message] == [
        (severity, f"{LAYERS}:{line}" if line else LAYERS)
    ], "\n".join(map(str, findings))
    assert len(findings) == 1, "\n".join(map(str, findings))


def test_check_passes_the_generated_layers_and_a_layer_calling_ops_directly(
    project: Path,
) -> None:
    assert not [str(f) for f in check_project(project) if f.location.startswith(LAYERS)]
    # kernels-community style: the layer calls the op through _ops, from torch.nn.Module.
    (project / LAYERS).write_text(
        "from torch.nn import Module\n\nfrom ._ops import ops\n\n"
        '__all__ = ["Relu"]\n\n\n'
        "class Relu(Module):\n"
        "    has_backward = True\n\n"
        "    def forward(self, x):\n"
        "        return ops.relu(x)\n"
    )
    assert not [str(f) for f in check_project(project) if f.location.startswith(LAYERS)]


def test_check_refuses_has_backward_on_an_op_without_autograd(project: Path) -> None:
    add_op(project, "clamp")  # a skeleton: no register_autograd
    layers = project / LAYERS
    text = layers.read_text()
    assert "    has_backward = False\n" in text
    layers.write_text(text.replace("    has_backward = False\n", "    has_backward = True\n"))
    findings = [f for f in check_project(project) if f.location.startswith(LAYERS)]
    assert [(f.severity, f.message.split(",")[0]) for f in findings] == [
        ("error", "Clamp sets has_backward = True")
    ], "\n".join(map(str, findings))
    assert "clamp, clamp_no_grad, clamp_out" in findings[0].message
    # Left out, kernels takes it as True: a warning.
    layers.write_text(text.replace("    has_backward = False\n", ""))
    findings = [f for f in check_project(project) if f.location.startswith(LAYERS)]
    assert [f.severity for f in findings] == ["warning"], "\n".join(map(str, findings))
    # An autograd formula registered for the op makes has_backward = True right.
    layers.write_text(text.replace("    has_backward = False\n", "    has_backward = True\n"))
    init = project / INIT
    init.write_text(
        init.read_text().replace(
            "\n\n# Last, since the layers",
            '\n\ntorch.library.register_autograd(add_op_namespace_prefix("clamp"), '
            "lambda ctx, grad: grad)\n\n\n# Last, since the layers",
        )
    )
    assert not [str(f) for f in check_project(project) if f.location.startswith(LAYERS)]


def test_check_warns_when_the_package_never_imports_its_layers(project: Path) -> None:
    init = project / INIT
    init.write_text(init.read_text().replace("from . import layers as layers  # noqa: E402\n", ""))
    findings = [f for f in check_project(project) if f.location == INIT]
    assert [(f.severity, "never imports the layers module" in f.message) for f in findings] == [
        ("warning", True)
    ]
