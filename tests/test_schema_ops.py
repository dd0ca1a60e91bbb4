"""`kscaffold add-op/new --schema`: ops generated from the schema a kernel author brings.

Fast tier: schemas read with torchgen's grammar into the C++ and Python the template renders,
every refusal one line naming the bad part (and nothing written), a project grown by three schema
ops keeps every user line, re-renders its baseline from the answers, passes `check` and ruff, and
its rendered Python and C++ carry the schema's signature. Slow tier: that project builds for the
CPU and its generated tests run, every case either passing or waiting for a skeleton.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from scaffold.checks import check_project
from scaffold.cli import app
from scaffold.compiler import build_project
from scaffold.errors import AnswersError, InvalidNameError, InvalidOptionError, SchemaError
from scaffold.grow.addop import add_op
from scaffold.grow.create import create_project
from scaffold.grow.evolve import BASELINE_REF, add_backend
from scaffold.grow.template import render_files
from scaffold.project.answers import load_answers
from scaffold.project.schema import parse_schema
from scaffold.project.signature import describe
from scaffold.project.spec import ProjectSpec
from scaffold.support.gitutil import read_ref_files
from tests.helpers import assert_ruff_clean, snapshot, write_tree
from tests.projects import commit_all, copy_project, new_project
from tests.test_add_op import assert_user_text_survives, edit_like_a_user

#: The three ops of the grown project: name, schema.
OPS = {
    "norm2": "(Tensor x, Tensor? bias=None, float eps=1e-5, int[] dims=[]) -> (Tensor, Tensor)",
    "axpy": "(Tensor(a!) x, Scalar alpha) -> ()",
    "stack_sum": "(Tensor[] xs, *, bool flag=False) -> Tensor",
    # Optional lists, a list of optional tensors, a bool list (a std::array in C++) and a list
    # of results.
    "split_scale": (
        "(Tensor x, Tensor?[] extras, SymInt[]? sizes=None, bool[2] mask=[True,False], *, "
        "float[]? w=None) -> (Tensor, Tensor[])"
    ),
}


# --- reading schemas ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "cpp", "python", "cpp_return", "py_return"),
    [
        (
            OPS["norm2"],
            [
                "const at::Tensor& x",
                "const std::optional<at::Tensor>& bias",
                "double eps",
                "at::IntArrayRef dims",
            ],
            [
                "x: torch.Tensor",
                "bias: torch.Tensor | None = None",
                "eps: float = 1e-05",
                "dims: Sequence[int] = ()",
            ],
            "std::tuple<at::Tensor, at::Tensor>",
            "tuple[torch.Tensor, torch.Tensor]",
        ),
        (
            OPS["axpy"],
            ["at::Tensor& x", "const at::Scalar& alpha"],
            ["x: torch.Tensor", "alpha: float | int | bool"],
            "void",
            "None",
        ),
        (
            OPS["stack_sum"],
            ["at::TensorList xs", "bool flag"],
            ["xs: Sequence[torch.Tensor]", "*", "flag: bool = False"],
            "at::Tensor",
            "torch.Tensor",
        ),
        (
            "(Tensor x, SymInt n, ScalarType? dtype=None, str mode='mean', int[2] k=1) -> Tensor",
            [
                "const at::Tensor& x",
                "int64_t n",
                "std::optional<at::ScalarType> dtype",
                "c10::string_view mode",
                "at::IntArrayRef k",
            ],
            [
                "x: torch.Tensor",
                "n: int",
                "dtype: torch.dtype | None = None",
                'mode: str = "mean"',
                "k: Sequence[int] = (1, 1)",
            ],
            "at::Tensor",
            "torch.Tensor",
        ),
        (
            "(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
            ["const at::Tensor& x", "at::Tensor& out"],
            ["x: torch.Tensor", "*", "out: torch.Tensor"],
            "at::Tensor&",
            "torch.Tensor",
        ),
        (
            "(  Tensor  x ,float eps = 1e-6 )->Tensor",
            ["const at::Tensor& x", "double eps"],
            ["x: torch.Tensor", "eps: float = 1e-06"],
            "at::Tensor",
            "torch.Tensor",
        ),
        (
            "(Tensor(a!)[] xs, int[]? dims, int[1]? dim=None, bool[3] mask=True) -> Tensor[]",
            [
                "at::TensorList xs",
                "at::OptionalIntArrayRef dims",
                "at::OptionalIntArrayRef dim",
                "std::array<bool, 3> mask",
            ],
            [
                "xs: Sequence[torch.Tensor]",
                "dims: Sequence[int] | None",
                "dim: Sequence[int] | None = None",
                "mask: Sequence[bool] = (True, True, True)",
            ],
            "std::vector<at::Tensor>",
            "list[torch.Tensor]",
        ),
    ],
    ids=[
        "two-results",
        "in-place",
        "list-keyword-only",
        "scalars",
        "out",
        "loose-spacing",
        "lists",
    ],
)
def test_schemas_map_to_cpp_and_python_types(
    schema: str, cpp: list[str], python: list[str], cpp_return: str, py_return: str
) -> None:
    described = describe("op", schema)
    assert described["cpp_params"] == cpp
    assert described["py_params"] == python
    assert (described["cpp_return"], described["py_return"]) == (cpp_return, py_return)


def test_lists_reach_the_dispatcher_as_lists_and_the_fake_makes_lists() -> None:
    described = describe("op", "(Tensor[] xs, bool[2] m, int[]? dims=None) -> Tensor[]")
    assert described["call_args"] == ["list(xs)", "list(m)", "None if dims is None else list(dims)"]
    assert described["fake_return"] == "[torch.empty_like(tensor) for tensor in xs]"
    assert described["cpp_headers"] == ["array", "optional", "tuple", "vector"]
    # ATen's index lists: each item a tensor or None, checked when it is a tensor.
    indexed = describe("op", "(Tensor x, Tensor?[] indices) -> Tensor")
    assert indexed["cpp_params"][1] == "const c10::List<std::optional<at::Tensor>>& indices"
    assert indexed["py_params"][1] == "indices: Sequence[torch.Tensor | None]"
    assert indexed["call_args"] == ["x", "list(indices)"]
    assert indexed["args"][1]["sample_items"][1] == "None"
    assert [t["name"] for t in indexed["tensors"]] == ["x", "indices"]
    one = describe("op", "(Tensor x) -> (Tensor, Tensor[])")
    assert one["fake_return"] == "torch.empty_like(x), [torch.empty_like(x)]"
    assert describe("op", "(Tensor x) -> Tensor")["cpp_headers"] == ["optional", "tuple"]


def test_a_random_op_takes_an_optional_generator() -> None:
    described = describe("dropout", "(Tensor x, float p=0.5, Generator? generator=None) -> Tensor")
    assert described["cpp_params"][-1] == "std::optional<at::Generator> generator"
    assert described["py_params"][-1] == "generator: torch.Generator | None = None"
    assert described["args"][-1]["sample"] == "None"


def test_an_argument_named_self_leaves_the_layer_its_module(tmp_path: Path) -> None:
    # ATen's schemas call the tensor an op works on `self`: the layer's forward takes it too.
    spec = ProjectSpec.parse(
        "my-kernel", backends=["cpu"], schema="add2(Tensor self, Tensor other) -> Tensor"
    )
    files = render_files(spec.answers())
    layers = ast.parse(files["torch-ext/my_kernel/layers.py"].decode())
    layer = next(n for n in layers.body if isinstance(n, ast.ClassDef) and n.name == "Add2")
    forward = next(n for n in layer.body if isinstance(n, ast.FunctionDef))
    assert [a.arg for a in forward.args.args] == ["module", "self", "other"]
    assert describe("op", "(Tensor x) -> Tensor")["receiver"] == "self"
    write_tree(files, tmp_path)
    assert_ruff_clean(tmp_path)


@pytest.mark.parametrize("language", ["cpp", "triton"])
def test_ops_numbered_past_nine_import_in_ruffs_order(tmp_path: Path, language: str) -> None:
    answers = ProjectSpec.parse("my-kernel", backends=["cpu"], language=language).answers()
    answers["ops"] += [{"name": name, "kind": "relu"} for name in ("op10", "op2", "op_b", "op1b")]
    write_tree(render_files(answers), tmp_path)
    assert_ruff_clean(tmp_path)


def test_signatures_near_the_line_limit_keep_to_ruffs_format(tmp_path: Path) -> None:
    # Names a character apart put each generated signature and call on either side of 100 columns,
    # at the indentation of a method (layers) or a function body (the wrapper's call).
    answers = ProjectSpec.parse("my-kernel", backends=["cpu"]).answers()
    answers["ops"] += [
        {
            "name": "op" + "o" * pad,
            "kind": "schema",
            "schema": f'(Tensor x, str reduce="mean", int? dim{"m" * pad}=None) -> Tensor',
        }
        for pad in range(12)
    ]
    write_tree(render_files(answers), tmp_path)
    assert_ruff_clean(tmp_path)


def test_names_only_the_generated_code_needs_are_free() -> None:
    described = describe("op", "(Tensor type, int i, int match, Tensor device) -> Tensor")
    assert [a["name"] for a in described["args"]] == ["type", "i", "match", "device"]


def test_the_source_scanner_reads_arguments_with_the_same_parser() -> None:
    op = parse_schema("scale_out(Tensor(a!) out, Tensor input, *, float? alpha=None) -> ()")
    assert [(a.type, a.name, a.default, a.keyword_only) for a in op.arguments] == [
        ("Tensor(a!)", "out", None, False),
        ("Tensor", "input", None, False),
        ("float?", "alpha", "None", True),
    ]
    with pytest.raises(SchemaError, match=r"cannot read argument 'Foo x': unknown type specifier"):
        parse_schema("bad(Foo x) -> Tensor")
    # What only the dispatcher refuses too: such a def aborts the process that loads the library.
    with pytest.raises(SchemaError, match=r"argument 'int n=1_000': expected \) but found"):
        parse_schema("bad(Tensor x, int n=1_000) -> Tensor")


BAD_SCHEMAS = {
    "unknown-type": ("(Foo x) -> Tensor", r"cannot read argument 'Foo x': unknown type specifier"),
    "unknown-return": ("(Tensor x) -> Foo", r"cannot read return 'Foo'"),
    "bad-float-default": ("(Tensor x, float eps=abc) -> Tensor", r"'eps': default 'abc' is not a"),
    "bad-int-default": ("(Tensor x, int n=1.5) -> Tensor", r"'n': default '1.5' is not an int"),
    "bad-list-default": ("(Tensor x, int[] d=[1, a]) -> Tensor", r"'d': default .* not a list"),
    "bad-str-default": ("(Tensor x, str s=mean) -> Tensor", r"'s': default 'mean' is not a str"),
    "no-default-after-a-default": (
        "(Tensor x, int? dim=None, Tensor y) -> Tensor",
        r"argument 'y': it has no default but follows 'dim', which has one",
    ),
    "tensor-default": ("(Tensor x=None) -> Tensor", r"'x': a Tensor has no default"),
    "view-argument": ("(Tensor(a) x) -> Tensor(a)", r"'x': 'Tensor\(a\)' marks a view"),
    "view-return": ("(Tensor x) -> Tensor(a)", r"return 1 'Tensor\(a\)': .* view"),
    "unknown-alias": ("(Tensor(a!) x) -> Tensor(b!)", r"no argument is marked '\(b!\)'"),
    "shared-alias": ("(Tensor(a!) q, Tensor(a!) k) -> ()", r"'q' and 'k' share the alias"),
    "duplicate-name": ("(Tensor x, Tensor x) -> Tensor", r"two arguments are named 'x'"),
    "cxx-keyword": ("(Tensor x, int class) -> Tensor", r"'class': .* C\+\+ keyword"),
    "python-keyword": ("(Tensor x, float lambda) -> Tensor", r"'lambda': .*Python .*keyword"),
    "namespace-name": ("(Tensor at) -> Tensor", r"'at': the generated code uses that name"),
    "mode-of-a-mutating-op": (
        '(Tensor(a!) x, str mode="sum") -> ()',
        r"'mode': .*writes to 'x' through torch's auto_functionalized",
    ),
    "ambiguous-name": ("(Tensor x, Layout? l=None) -> Tensor", r"'l': .*ruff refuses .*E741"),
    "out-not-returned": ("(Tensor x, *, Tensor(a!) out) -> Tensor", r"out=\) arguments returns"),
    "two-stars": (
        "(Tensor x, *, *, int k) -> ()",
        r"'\*' \(keyword-only arguments follow\) comes once",
    ),
    "cuda-local": ("(Tensor x, int stream) -> Tensor", r"'stream': the generated code uses"),
    "check-local": ("(Tensor x, Tensor i) -> Tensor", r"'i': the generated checks use"),
    "no-tensor": ("(int n) -> Tensor", r"no 'Tensor' or 'Tensor\[\]' argument"),
    "scalar-return": ("(Tensor x) -> int", r"return 1 'int': .*returns are 'Tensor'"),
    "list-view-return": ("(Tensor(a!)[] x) -> Tensor(a!)[]", r"return 1 .*returns are 'Tensor'"),
    "bool-list-length": ("(Tensor x, bool[] m) -> Tensor", r"'m': give a bool list its length"),
    "optional-bool-list": ("(Tensor x, bool[2]? m) -> Tensor", r"no code for type 'bool\[2\]\?'"),
    "optional-tensors-only": ("(Tensor?[] xs) -> Tensor", r"no 'Tensor' or 'Tensor\[\]' argument"),
    "optional-tensors-default": ("(Tensor x, Tensor?[] ys=[]) -> Tensor", r"a Tensor\?\[\] has no"),
    "no-name": ("(Tensor) -> Tensor", r"argument 'Tensor' needs a type and a name"),
    "no-type": ("(x) -> Tensor", r"argument 'x' needs a type and a name"),
    "no-name-with-default": ("(Tensor x, int=3) -> Tensor", r"'int=3' needs a type and a name"),
    "nothing-after-equals": ("(Tensor x, int y=) -> Tensor", r"'int y=': give the default after"),
    "broken-type": ("(Tensor x, int[ y) -> Tensor", r"cannot read argument 'int\[ y': expected"),
    "unclosed": ("(Tensor x", r"unclosed argument list"),
    "no-returns": ("(Tensor x)", r"no '-> returns' part"),
    "empty-returns": ("(Tensor x) ->", r"empty return type: use '-> \(\)'"),
    "no-parentheses": ("Tensor x -> Tensor", r"write it as '\(arguments\) -> returns'"),
    # torchgen reads these; the dispatcher's C++ parser, which the built library meets, does not.
    "infinite-float-default": (
        "(Tensor x, float eps=-inf) -> Tensor",
        r"argument 'float eps=-inf': .*never inf or nan; declare 'float\? eps=None'",
    ),
    "nan-scalar-default": (
        "(Tensor x, Scalar? s=nan) -> Tensor",
        r"argument 'Scalar\? s=nan': .*declare 'Scalar\? s=None'",
    ),
    "underscored-float-default": (
        "(Tensor x, float w=1_000.5) -> Tensor",
        r"the dispatcher refuses argument 'float w=1_000.5': expected \) but found 'ident'\.$",
    ),
    "plus-signed-default": (
        "(Tensor x, float e=+1) -> Tensor",
        r"the dispatcher refuses argument 'float e=\+1': expected number but found '\+'\.$",
    ),
}


@pytest.mark.parametrize(("schema", "message"), list(BAD_SCHEMAS.values()), ids=list(BAD_SCHEMAS))
def test_bad_schemas_are_refused_in_one_line_naming_the_part(schema: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message) as refused:
        describe("op", schema)
    assert "\n" not in str(refused.value)
    assert isinstance(refused.value, InvalidOptionError)


# --- a project grown by three schema ops -------------------------------------------------------

Grown = tuple[Path, dict[str, list[bytes]]]


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> Grown:
    """my-kernel (cuda, cpu) with user edits, grown by the three schema ops, edits in between."""
    project = new_project(tmp_path_factory.mktemp("schema-ops") / "my-kernel")
    written = edit_like_a_user(project)
    for name, schema in OPS.items():
        add_op(project, name, schema=schema)
        assert_user_text_survives(written, project)
        for relative in (
            f"csrc/{name}.h",
            f"csrc/cpu/{name}.cpp",
            f"csrc/cuda/{name}.cu",
            f"tests/test_{name}.py",
            f"benchmarks/benchmark_{name}.py",
        ):
            mark = "\n\n#" if relative.endswith(".py") else "//"  # ruff format's blank lines
            line = f"{mark} {name}: my note in {relative}\n"
            path = project / relative
            path.write_text(path.read_text() + line)
            written[relative] = [line.encode()]
        commit_all(project, ".", message=f"add {name}")
    wrapper = "torch-ext/my_kernel/__init__.py"
    written[wrapper] = [written[wrapper][0]]
    assert_user_text_survives(written, project)
    return project, written


def test_answers_record_the_schemas_and_the_baseline_re_renders(grown: Grown) -> None:
    project, _ = grown
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["ops"][1:] == [
        {"name": name, "kind": "schema", "schema": schema} for name, schema in OPS.items()
    ]
    assert render_files(load_answers(project).values) == read_ref_files(project, BASELINE_REF)


def test_every_user_line_survives_the_three_add_ops(grown: Grown) -> None:
    assert_user_text_survives(*reversed(grown))


def test_check_and_ruff_are_clean(grown: Grown) -> None:
    project, _ = grown
    assert [str(f) for f in check_project(project) if f.is_error] == []
    assert_ruff_clean(project)


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def test_the_wrapper_and_fake_carry_the_schema(grown: Grown) -> None:
    project, _ = grown
    tree = ast.parse((project / "torch-ext" / "my_kernel" / "__init__.py").read_text())
    norm2 = _function(tree, "norm2")
    assert [a.arg for a in norm2.args.args] == ["x", "bias", "eps", "dims"]
    assert [ast.unparse(a.annotation) for a in norm2.args.args if a.annotation] == [
        "torch.Tensor",
        "torch.Tensor | None",
        "float",
        "Sequence[int]",
    ]
    assert [ast.unparse(d) for d in norm2.args.defaults] == ["None", "1e-05", "()"]
    assert ast.unparse(norm2.returns) == "tuple[torch.Tensor, torch.Tensor]"  # type: ignore[arg-type]
    stack_sum = _function(tree, "stack_sum")
    assert [a.arg for a in stack_sum.args.kwonlyargs] == ["flag"]
    assert "ops.stack_sum(list(xs), flag=flag)" in ast.unparse(stack_sum)
    fake = _function(tree, "_norm2_fake")
    assert "return (torch.empty_like(x), torch.empty_like(x))" in ast.unparse(fake)
    assert ast.unparse(_function(tree, "_axpy_fake").returns) == "None"  # type: ignore[arg-type]
    binding = (project / "torch-ext" / "torch_binding.h").read_text()
    for name, schema in OPS.items():
        assert f'ops.def("{name}{schema}");' in binding


@pytest.mark.parametrize(
    ("op", "signature", "checks"),
    [
        (
            "norm2",
            "std::tuple<at::Tensor, at::Tensor> norm2_{backend}(\n    const at::Tensor& x, "
            "const std::optional<at::Tensor>& bias, double eps, at::IntArrayRef dims) {",
            "check_inputs(x, bias);",
        ),
        (
            "axpy",
            "void axpy_{backend}(at::Tensor& x, const at::Scalar& alpha) {",
            "check_inputs(x);",
        ),
        (
            "stack_sum",
            "at::Tensor stack_sum_{backend}(at::TensorList xs, bool flag) {",
            "check_inputs(xs);",
        ),
        (
            "split_scale",
            "std::tuple<at::Tensor, std::vector<at::Tensor>> split_scale_{backend}(\n"
            "    const at::Tensor& x,\n    const c10::List<std::optional<at::Tensor>>& extras,\n"
            "    at::OptionalIntArrayRef sizes,\n    std::array<bool, 2> mask,\n"
            "    std::optional<at::ArrayRef<double>> w) {",
            "check_inputs(x, extras);",
        ),
    ],
)
def test_each_backend_skeleton_has_the_schema_signature(
    grown: Grown, op: str, signature: str, checks: str
) -> None:
    project, _ = grown
    for backend, suffix in (("cpu", "cpp"), ("cuda", "cu")):
        source = (project / "csrc" / backend / f"{op}.{suffix}").read_text()
        assert signature.replace("{backend}", backend) in source
        assert checks in source
        assert "KSCAFFOLD_SKELETON" in source
        assert f'm.impl("{op}", &{op}::{op}_{backend});' in source
        assert f"write it in csrc/{backend}/{op}.{suffix}" in source
    cuda = (project / "csrc" / "cuda" / f"{op}.cu").read_text()
    assert "OptionalCUDAGuard device_guard(" in cuda and "getCurrentCUDAStream()" in cuda
    header = (project / "csrc" / f"{op}.h").read_text()
    assert "must be on the device of" in header and "is_supported_dtype" in header


def test_the_generated_tests_and_benchmark_parse(grown: Grown) -> None:
    project, _ = grown
    for name in OPS:
        tree = ast.parse((project / "tests" / f"test_{name}.py").read_text())
        tests = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert {
            "test_opcheck",
            "test_torch_compile",
            "test_cpu_and_cuda_agree",
            "test_rejects_a_tensor_on_another_device",
            "test_rejects_an_unsupported_dtype",
        } <= tests
        ast.parse((project / "benchmarks" / f"benchmark_{name}.py").read_text())


@pytest.mark.parametrize(
    ("name", "schema", "like", "error", "message"),
    [
        ("bad", "(Foo x) -> Tensor", None, SchemaError, r"unknown type specifier"),
        ("bad", "(Tensor x, Tensor x) -> Tensor", None, SchemaError, "two arguments are named"),
        ("bad", "other(Tensor x) -> Tensor", None, InvalidOptionError, "names the op 'other'"),
        ("bad", "(Tensor x) -> Tensor", "relu", InvalidOptionError, "--like or --schema"),
        ("Bad", "(Tensor x) -> Tensor", None, InvalidNameError, "Invalid op name 'Bad'"),
    ],
)
def test_a_refused_schema_writes_nothing(
    project: Path,
    name: str,
    schema: str,
    like: str | None,
    error: type[Exception],
    message: str,
) -> None:
    before = snapshot(project)
    with pytest.raises(error, match=message):
        add_op(project, name, schema=schema, like=like)
    assert snapshot(project) == before


def test_cli_add_op_schema_refusal_is_one_line(project: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["add-op", "bad", str(project), "--schema", "(Tensor x) -> Foo"])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert "cannot read return 'Foo'" in result.output
    result = runner.invoke(
        app, ["add-op", "scale", str(project), "--schema", "scale(Tensor x, float s=2) -> Tensor"]
    )
    assert result.exit_code == 0, result.output
    assert "csrc/cpu/scale.cpp" in result.output


def test_new_with_a_schema_makes_it_the_first_op(tmp_path: Path) -> None:
    spec = ProjectSpec.parse(
        "rms-norm", backends=["cpu"], schema="(Tensor x, Tensor weight, float eps=1e-6) -> Tensor"
    )
    files = render_files(spec.answers())
    assert 'ops.def("rms_norm(Tensor x, Tensor weight, float eps=1e-6) -> Tensor");' in (
        files["torch-ext/torch_binding.h"].decode()
    )
    assert "csrc/cpu/rms_norm.cpp" in files and "tests/test_rms_norm.py" in files
    write_tree(files, tmp_path)
    assert_ruff_clean(tmp_path)
    named = ProjectSpec.parse("my-kernel", schema="fused(Tensor x) -> Tensor")
    assert named.answers()["ops"] == [
        {"name": "fused", "kind": "schema", "schema": "(Tensor x) -> Tensor"}
    ]
    with pytest.raises(InvalidOptionError, match="--example or --schema"):
        ProjectSpec.parse("my-kernel", example="img2gray", schema="(Tensor x) -> Tensor")
    with pytest.raises(SchemaError, match="unknown type specifier"):
        ProjectSpec.parse("my-kernel", schema="(Foo x) -> Tensor")
    with pytest.raises(InvalidNameError, match="named after the kernel.*name it in the schema"):
        ProjectSpec.parse("a-kernel-with-a-long-name", schema="(Tensor x) -> Tensor")
    long_kernel = ProjectSpec.parse("a-kernel-with-a-long-name", schema="lin(Tensor x) -> Tensor")
    assert long_kernel.answers()["ops"][0]["name"] == "lin"


@pytest.mark.parametrize("language", ["cpp", "triton"])
def test_a_project_that_starts_from_a_schema_grows_template_ops(
    tmp_path: Path, language: str
) -> None:
    """The package docstring, example and README usage stay the first (schema) op's."""
    spec = ProjectSpec.parse(
        "fused", backends=["cpu"], language=language, schema="(Tensor x, float s=2) -> Tensor"
    )
    project = create_project(spec, tmp_path / "fused")

    def first_op_texts() -> tuple[str, str]:
        usage = re.search(r"```python\n(.*?)```", (project / "README.md").read_text(), re.S)
        assert usage is not None
        return (project / "example.py").read_text(), usage.group(1)

    before = first_op_texts()
    add_op(project, "scale", like="relu")
    commit_all(project, ".", message="scale")
    add_op(project, "grow")
    package = (project / "torch-ext" / "fused" / "__init__.py").read_text()
    assert package.startswith('"""fused: the fused op as a PyTorch custom op, generated from')
    assert first_op_texts() == before
    assert "def scale(" in package and "def grow(" in package
    assert_ruff_clean(project)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('{"name": "x2", "kind": "schema"}', "records no schema"),
        (
            '{"name": "x2", "kind": "schema", "schema": "(Foo x) -> Tensor"}',
            "unknown type specifier",
        ),
        ('{"name": "x2", "kind": "relu", "schema": "(Tensor x) -> Tensor"}', "takes no schema"),
    ],
)
def test_a_hand_edited_schema_answer_is_refused(project: Path, entry: str, message: str) -> None:
    answers = project / ".copier-answers.yml"
    text = answers.read_text()
    line = next(line for line in text.splitlines() if line.startswith("ops: "))
    answers.write_text(text.replace(line, f'ops: [{{"name": "relu", "kind": "relu"}}, {entry}]'))
    commit_all(project, ".", message="hand-edited answers")
    with pytest.raises(AnswersError, match=message):
        load_answers(project)


# --- slow tier: build the project and run its generated tests ----------------------------------


@pytest.mark.slow
def test_schema_ops_build_and_their_generated_tests_run(grown: Grown, tmp_path: Path) -> None:
    project = copy_project(grown[0], tmp_path / "my-kernel")
    build_project(project, backend="cpu")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rxX", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    output = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    summary = output.strip().splitlines()[-1]
    assert not re.search(r"\d+ (failed|errors?)\b", summary), output
    # relu's suite passes; each schema op's cases wait for its skeleton, and fail only there.
    waiting = [line for line in output.splitlines() if line.startswith("XFAIL")]
    assert waiting and all(any(f"test_{name}.py" in line for name in OPS) for line in waiting), (
        output
    )
    failures = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--runxfail", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    reasons = re.findall(r"^E\s+(\w+Error): (.*)$", failures, re.M)
    assert reasons and all(
        kind in ("NotImplementedError", "OpCheckError") and "no CPU implementation yet" in text
        for kind, text in reasons
    ), failures


def test_add_backend_gives_a_schema_op_its_skeleton_on_the_new_backend(tmp_path: Path) -> None:
    project = new_project(tmp_path / "my-kernel", backends=["cpu"])
    add_op(project, "rotary", schema="(Tensor(a!) q, Tensor(b!) k, Tensor cos, Tensor sin) -> ()")
    commit_all(project, ".", message="add rotary")
    add_backend(project, "cuda")
    source = (project / "csrc" / "cuda" / "rotary.cu").read_text()
    assert (
        "void rotary_cuda(at::Tensor& q, at::Tensor& k, const at::Tensor& cos, "
        "const at::Tensor& sin) {" in source
    )
    assert "OptionalCUDAGuard device_guard(q.device());" in source
    config = tomllib.loads((project / "build.toml").read_text())
    assert config["kernel"]["rotary_cuda"]["src"] == ["csrc/cuda/rotary.cu"]
    assert [str(f) for f in check_project(project) if f.is_error] == []
