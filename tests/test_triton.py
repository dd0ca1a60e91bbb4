"""``kscaffold new --triton``: a [torch-noarch] project of Triton (CUDA) and PyTorch (CPU) ops.

The ops are registered with ``torch.library.triton_op``; the project builds without a compiler.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from scaffold.checks import check_project
from scaffold.cli import app
from scaffold.errors import AnswersError, InvalidOptionError
from scaffold.grow.addop import add_op
from scaffold.grow.create import ProjectSpec, create_project
from scaffold.grow.evolve import add_backend, update_project
from scaffold.grow.template import render_files
from scaffold.project.answers import load_answers
from scaffold.project.buildconfig import load_build_config
from tests.helpers import assert_ruff_clean, run, run_with_kernel
from tests.projects import commit_all

runner = CliRunner()


def triton_files(example: str | None = None, backends: str = "cuda,cpu") -> dict[str, bytes]:
    spec = ProjectSpec.parse("tk", backends=backends, example=example, language="triton")
    return render_files(spec.answers())


def new_triton(destination: Path, example: str | None = None, backends: str = "cuda,cpu") -> Path:
    spec = ProjectSpec.parse("tk", backends=backends, example=example, language="triton")
    return create_project(spec, destination)


def ruff(project: Path) -> None:
    assert_ruff_clean(project)


# --- rendering --------------------------------------------------------------------------------


@pytest.mark.parametrize("example", [None, "img2gray"], ids=["relu", "img2gray"])
def test_triton_project_is_noarch_python_only(example: str | None) -> None:
    files = triton_files(example)
    op = example or "relu"
    config = tomllib.loads(files["build.toml"].decode())
    assert config["general"]["backends"] == ["cuda", "cpu"]
    assert config["torch-noarch"] == {}
    assert "torch" not in config and "kernel" not in config
    assert not [path for path in files if path.startswith("csrc/") or "torch_binding" in path]
    assert sorted(path for path in files if path.startswith("torch-ext/")) == [
        "torch-ext/tk/__init__.py",
        f"torch-ext/tk/_{op}_triton.py",
        "torch-ext/tk/layers.py",
    ]
    module = files[f"torch-ext/tk/_{op}_triton.py"].decode()
    for registered in (op, f"{op}_no_grad", f"{op}_out"):
        assert f'triton_op(add_op_namespace_prefix("{registered}")' in module
    # Traced, the launch goes through wrap_triton (the compiler sees the kernel); eager, it
    # launches the kernel itself.
    assert "else wrap_triton" in module and "launch(_kernel)[grid](" in module
    assert {f"tests/test_{op}.py", "benchmarks/benchmark.py", "flake.nix"} <= set(files)
    answers = yaml.safe_load(files[".copier-answers.yml"])
    assert answers["language"] == "triton"


def test_cpp_projects_record_no_language() -> None:
    """C++ projects' answers read as before the option existed (the example stays identical)."""
    files = render_files(ProjectSpec.parse("tk").answers())
    assert "language" not in yaml.safe_load(files[".copier-answers.yml"])
    assert "torch-ext/torch_binding.cpp" in files
    assert not [path for path in files if path.endswith("_triton.py")]


def test_triton_img2gray_uses_the_cpp_kernels_fixed_point() -> None:
    """The Triton kernel and its CPU path use the C++ img2gray's integers, which Pillow uses."""
    cpp = render_files(ProjectSpec.parse("tk", example="img2gray").answers())
    header = cpp["csrc/img2gray.h"].decode()
    weights = re.findall(r"\* (\d+)u", header)
    assert weights == ["19595", "38470", "7471"] and "+ 0x8000u" in header
    module = triton_files("img2gray")["torch-ext/tk/_img2gray_triton.py"].decode()
    assert f"FIXED_POINT_WEIGHTS = ({', '.join(weights)})" in module
    kernel = " + ".join(f"{c}.to(tl.int32) * {w}" for c, w in zip("rgb", weights, strict=True))
    assert f"total = {kernel} + 0x8000" in module
    assert "(total >> 16).to(tl.uint8)" in module
    packed = " + ".join(f"{c} * {w}" for c, w in zip("rgb", weights, strict=True))
    assert f"total = {packed} + 0x8000" in module  # the packed uint8 kernel's


def test_generated_triton_project_parses_as_noarch(tmp_path: Path) -> None:
    project = new_triton(tmp_path / "tk", example="img2gray")
    config = load_build_config(project)
    assert config.is_noarch and config.backends == ("cuda", "cpu")
    assert load_answers(project).language == "triton"
    assert [str(f) for f in check_project(project) if f.is_error] == []
    ruff(project)


def test_check_refuses_a_triton_op_outside_the_build_namespace(tmp_path: Path) -> None:
    """The ops are registered by decorators, which kernel-builder's torch-ops-check reads."""
    project = new_triton(tmp_path / "tk")
    module = project / "torch-ext" / "tk" / "_relu_triton.py"
    text = module.read_text()
    prefixed = '@triton_op(add_op_namespace_prefix("relu_out"), '
    assert prefixed in text
    module.write_text(text.replace(prefixed, '@triton_op("mylib::relu_out", '))
    (error,) = [f for f in check_project(project) if f.is_error]
    assert "torch-ext/tk/_relu_triton.py" in str(error) and "mylib::relu_out" in str(error)


def test_unknown_language_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match="Unknown language 'rust'"):
        ProjectSpec.parse("tk", language="rust")
    project = new_triton(tmp_path / "tk")
    answers = project / ".copier-answers.yml"
    answers.write_text(answers.read_text().replace('language: "triton"', 'language: "rust"'))
    with pytest.raises(AnswersError, match="Unknown language 'rust'"):
        load_answers(project)


def test_cli_new_triton(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["new", "tk", "--triton", "--example", "img2gray", "--dest", str(tmp_path / "tk")]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tk" / "torch-ext" / "tk" / "_img2gray_triton.py").is_file()
    assert not (tmp_path / "tk" / "csrc").exists()
    assert "kscaffold test" in result.output


# --- growing a Triton project ------------------------------------------------------------------


def add_triton_ops(project: Path, ops: dict[str, tuple[str | None, str | None]]) -> None:
    """Add each op (name: its --like and --schema) and commit it: a Triton module, no C++."""
    for name, (like, schema) in ops.items():
        report = add_op(project, name, like=like, schema=schema)
        assert f"torch-ext/tk/_{name}_triton.py" in report.added, report.added
        assert not [path for path in report.written if path.startswith("csrc/")]
        commit_all(project, ".", message=f"add {name}")


def test_add_op_in_a_triton_project_adds_triton_ops(tmp_path: Path) -> None:
    project = new_triton(tmp_path / "tk")
    add_triton_ops(
        project, {"scale": ("relu", None), "gray": ("img2gray", None), "clamp": (None, None)}
    )
    package = (project / "torch-ext" / "tk" / "__init__.py").read_text()
    assert "from ._gray_triton import DTYPES as GRAY_DTYPES" in package
    assert "    ops.scale_out(out, x)" in package
    skeleton = (project / "torch-ext" / "tk" / "_clamp_triton.py").read_text()
    assert "KSCAFFOLD_SKELETON" in skeleton and "raise NotImplementedError" in skeleton
    assert "KSCAFFOLD_SKELETON" not in (project / "torch-ext/tk/_scale_triton.py").read_text()
    assert [entry.kind for entry in load_answers(project).ops] == [
        "relu",
        "relu",
        "img2gray",
        "skeleton",
    ]
    assert tomllib.loads((project / "build.toml").read_text())["torch-noarch"] == {}
    assert update_project(project).written == []
    assert [str(f) for f in check_project(project) if f.is_error] == []
    ruff(project)


#: Schemas a Triton op takes: in-place writes, lists, optional tensors, defaults, several results.
TRITON_SCHEMAS = {
    "rotate": "(Tensor(a!) q, Tensor(b!) k, Tensor cos, Tensor sin, bool is_neox=True) -> ()",
    "pair": "(Tensor[] xs, Tensor device, int dim=0, *, bool flag=False) -> (Tensor, Tensor)",
    "fold": (
        '(Tensor x, Tensor?[] extras, str reduce="mean", Tensor? bias=None, float eps=1e-5, '
        "int[] dims=[], ScalarType? dtype=None) -> Tensor[]"
    ),
}


def test_add_op_with_a_schema_in_a_triton_project_writes_a_triton_op(tmp_path: Path) -> None:
    project = new_triton(tmp_path / "tk")
    add_triton_ops(project, {name: (None, schema) for name, schema in TRITON_SCHEMAS.items()})
    rotate = (project / "torch-ext" / "tk" / "_rotate_triton.py").read_text()
    assert "KSCAFFOLD_SKELETON" in rotate
    assert 'mutates_args=("q", "k"),' in rotate
    assert f"schema={TRITON_SCHEMAS['rotate']!r}".replace("'", '"') in rotate
    fold = (project / "torch-ext" / "tk" / "_fold_triton.py").read_text()
    assert '_check_tensor(item, f"extras[{i}]", first_device)' in fold
    assert "write it in {SOURCE}" in fold and 'SOURCE = "torch-ext/tk/_fold_triton.py"' in fold
    pair = (project / "torch-ext" / "tk" / "_pair_triton.py").read_text()
    # A tensor may be named `device`: it is checked against the first tensor's device.
    assert "first_device = xs[0].device" in pair
    assert '_check_tensor(device, "device", first_device)' in pair
    package = (project / "torch-ext" / "tk" / "__init__.py").read_text()
    assert "from ._pair_triton import DTYPES as PAIR_DTYPES" in package
    assert "_pair_eager" not in package  # a schema op goes through the dispatcher
    assert [entry.kind for entry in load_answers(project).ops][1:] == ["schema"] * 3
    assert [str(f) for f in check_project(project) if f.is_error] == []
    ruff(project)


@pytest.mark.parametrize(
    ("schema", "refusal"),
    [
        ("(Tensor x, *, Tensor(a!) out) -> ()", "argument 'out': a Triton op"),
        ("(Tensor(a!) x) -> Tensor(a!)", "returns only new tensors, not 'x'"),
    ],
)
def test_a_schema_triton_op_cannot_have_is_refused_with_nothing_written(
    tmp_path: Path, schema: str, refusal: str
) -> None:
    project = new_triton(tmp_path / "tk")
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    result = runner.invoke(app, ["add-op", "spin", str(project), "--schema", schema])
    assert result.exit_code != 0 and refusal in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_add_backend_in_a_triton_project_says_what_it_did(tmp_path: Path) -> None:
    project = new_triton(tmp_path / "tk", backends="cuda")
    report = add_backend(project, "cpu")
    assert tomllib.loads((project / "build.toml").read_text())["general"]["backends"] == [
        "cuda",
        "cpu",
    ]
    assert not [path for path in report.written if path.startswith(("csrc/", "torch-ext/"))]
    (note,) = report.notes
    assert "torch-ext/tk/_<op>_triton.py already holds" in note


# --- built and run -----------------------------------------------------------------------------


def _kscaffold_test(project: Path) -> str:
    return run([sys.executable, "-m", "scaffold", "test", project, "--", "-q", "-rs"], cwd=project)


@pytest.mark.slow
@pytest.mark.parametrize("example", [None, "img2gray"], ids=["relu", "img2gray"])
def test_new_triton_builds_and_its_tests_pass_on_the_cpu(
    tmp_path: Path, example: str | None
) -> None:
    project = new_triton(tmp_path / "tk", example=example)
    output = _kscaffold_test(project)
    summary = output.strip().splitlines()[-1]
    assert re.match(
        r"kscaffold test passed \(\d+ passed, .*\)\. Tested: cpu \(build/torch-cpu/\)", summary
    ), output
    assert re.search(r"\d+ passed", output) and "failed" not in output.lower(), output
    if "cuda (build/torch-cuda/)" not in summary:  # no GPU: the CUDA cases skip, saying why
        assert "Skipped: cuda (pure Python, copied into build/torch-cuda/" in summary, summary
        assert "needs a CUDA GPU" in output, output
    assert sorted(p.name for p in (project / "build").iterdir()) == ["torch-cpu", "torch-cuda"]
    # kernels loads the pure-Python cpu variant, and its op runs on CPU tensors.
    call, expected = {
        None: ("relu(torch.tensor([-1.0, 2.0]))", "[0.0, 2.0]"),
        "img2gray": ("img2gray(torch.tensor([[[255, 0, 0]]], dtype=torch.uint8))", "[[76]]"),
    }[example]
    assert run_with_kernel(project, f"print(kernel.{call}.tolist())").strip() == expected


@pytest.mark.slow
def test_grown_triton_project_passes_its_tests(tmp_path: Path) -> None:
    project = new_triton(tmp_path / "tk", backends="cpu")
    add_op(project, "scale", like="relu")
    commit_all(project, ".", message="scale")
    add_op(project, "norm")  # a name C's headers take: free where no C++ is generated
    commit_all(project, ".", message="norm")
    for name, schema in TRITON_SCHEMAS.items():
        add_op(project, name, schema=schema)
        commit_all(project, ".", message=name)
    # rotate written in PyTorch: its generated tests (opcheck, torch.compile) pass.
    rotate = project / "torch-ext" / "tk" / "_rotate_triton.py"
    source = rotate.read_text()
    skeleton = source[source.index('    if q.device.type == "cuda":') : source.index("\n\n@_op")]
    source = source.replace(skeleton, "    q.mul_(cos)\n    k.add_(sin)")
    rotate.write_text(re.sub(r"KSCAFFOLD_SKELETON.*\n.*\n", "", source))
    output = _kscaffold_test(project)
    assert re.search(r"\d+ passed", output) and " failed" not in output, output
    assert re.search(r"\d+ xfailed", output), output  # norm, pair, fold: skeletons until written
    rotate_tests = run([sys.executable, "-m", "pytest", "tests/test_rotate.py", "-q"], cwd=project)
    assert re.search(r"\d+ passed", rotate_tests) and "xfail" not in rotate_tests, rotate_tests


@pytest.mark.slow
def test_triton_kernels_agree_with_the_cpu_path_in_tritons_interpreter(tmp_path: Path) -> None:
    """The Triton kernels give the CPU path's values (uint8: Pillow's), without a GPU.

    Triton's interpreter (TRITON_INTERPRET=1) runs the CUDA kernels on CPU tensors.
    """
    pytest.importorskip("triton", reason="needs triton")
    project = new_triton(tmp_path / "tk", example="img2gray")
    add_op(project, "cut", like="relu")
    run([sys.executable, "-m", "scaffold", "build", project])
    script = """
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from kernels import get_local_kernel

kernel = get_local_kernel(Path(sys.argv[1]), backend="cuda")
gray = sys.modules[kernel.__name__ + "._img2gray_triton"]
cut = sys.modules[kernel.__name__ + "._cut_triton"]


def launch(module, source, result):
    module._launch(source, result)
    return result


generator = torch.Generator().manual_seed(0)
# 317 x 1031 pixels: the packed kernel's words, then 3 pixels for the general kernel.
image = torch.randint(0, 256, (317, 1031, 3), dtype=torch.uint8, generator=generator)
triton_gray = launch(gray, image, image.new_empty(image.shape[:-1]))
pillow = torch.from_numpy(np.array(Image.fromarray(image.numpy()).convert("L")))
assert torch.equal(triton_gray, pillow), "uint8 differs from Pillow"
assert torch.equal(triton_gray, gray._cpu(image)), "uint8 differs from the CPU path"
# A view one pixel into its storage is not 4-byte aligned: the general kernel alone.
shifted = image.view(-1, 3)[1:]
assert shifted.storage_offset() % 4 != 0
shifted_gray = launch(gray, shifted, shifted.new_empty(shifted.shape[:-1]))
assert torch.equal(shifted_gray, pillow.view(-1)[1:]), "unaligned uint8 differs from Pillow"
# An aligned image into a result one byte into its storage (an out= view): general kernel too.
flat = image.view(-1, 3)
shifted_out = flat.new_empty(flat.shape[0] + 1)[1:]
assert shifted_out.storage_offset() % 4 != 0
launch(gray, flat, shifted_out)
assert torch.equal(shifted_out, pillow.view(-1)), "uint8 into an unaligned result differs"
for dtype in (torch.float32, torch.float16, torch.float64):
    image = torch.rand(37, 1031, 3, dtype=torch.float64, generator=generator).to(dtype)
    result = launch(gray, image, image.new_empty(image.shape[:-1]))
    torch.testing.assert_close(result, gray._cpu(image))
x = torch.randn(10007, generator=generator)
x[:3] = torch.tensor([float("nan"), -0.0, -1.0])
result = torch.empty_like(x)
cut._kernel[(-(-x.numel() // cut.BLOCK_SIZE),)](x, result, x.numel(), BLOCK_SIZE=cut.BLOCK_SIZE)
torch.testing.assert_close(result, torch.relu(x), rtol=0, atol=0, equal_nan=True)
assert torch.equal(result.signbit(), torch.relu(x).signbit())
print("agree")
"""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    assert run([sys.executable, "-c", script, project], env=env).strip() == "agree"
