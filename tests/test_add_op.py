"""`kscaffold add-op`: more ops in one project, merged into the user's edits like add-backend.

Fast tier: what add-op writes, that every user line survives, refusals and conflicts change
nothing, baselines re-render, add-backend covers every op. Slow tier: the three-op project of
the README (relu, `scale --like relu`, the skeleton `clamp`) builds and passes its own tests,
which include the default op's suite.
"""

from __future__ import annotations

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
from scaffold.errors import (
    DirtyTreeError,
    InvalidNameError,
    InvalidOptionError,
    MergeConflictError,
    NotAProjectError,
)
from scaffold.grow.addop import add_op
from scaffold.grow.evolve import BASELINE_REF, add_backend
from scaffold.grow.template import render_files
from scaffold.project.answers import load_answers
from scaffold.project.names import OpName
from scaffold.project.spec import ProjectSpec
from scaffold.support.gitutil import read_ref_files
from scaffold.vocabulary import (
    OP_KINDS,
    SCHEMA_KIND,
    SKELETON_KIND,
    STABLE_ABI_KINDS,
    TRITON_KINDS,
    TRITON_LANGUAGE,
)
from tests.helpers import assert_ruff_clean, snapshot, write_tree
from tests.projects import commit_all, copy_project, new_project
from tests.test_build import cuda_toolkit_or_skip

USER_EDITS: dict[str, tuple[str, str]] = {
    # file: (a line of the template to anchor on, the user's line inserted before it)
    "torch-ext/torch_binding.cpp": ("REGISTER_EXTENSION", "// my note on the binding"),
    "torch-ext/torch_binding.h": ("inline void define_", "// my note on the schemas"),
    "csrc/cuda/relu.cu": ("#include <algorithm>", "// Tuned by me: keep the block size."),
    "csrc/cpu/relu.cpp": ("constexpr int64_t kGrainSize", "// Measured on my machine."),
}
USER_WRAPPER = (
    "\n\ndef relu_twice(x: torch.Tensor) -> torch.Tensor:\n"
    '    """Mine."""\n'
    "    return relu(relu(x))\n"
)
#: The three-op project, and what the user wrote in each file.
Grown = tuple[Path, dict[str, list[bytes]]]
USER_HEADER = '  "csrc/relu.h",\n  "csrc/mine.h",\n'


def edit_like_a_user(project: Path, wrapper_code: str = USER_WRAPPER) -> dict[str, list[bytes]]:
    """Edit the binding, the schemas, the wrapper, two kernels and build.toml; commit.

    Returns what the user wrote in each file: text that must survive byte for byte.
    """
    written: dict[str, list[bytes]] = {}
    for relative, (anchor, line) in USER_EDITS.items():
        path = project / relative
        text = path.read_text()
        if line not in text:
            path.write_text(text.replace(anchor, f"{line}\n{anchor}", 1))
        written[relative] = [f"{line}\n".encode()]
    wrapper = project / "torch-ext" / "my_kernel" / "__init__.py"
    wrapper.write_text(wrapper.read_text() + wrapper_code)
    written["torch-ext/my_kernel/__init__.py"] = [wrapper_code.encode()]
    build_toml = project / "build.toml"
    if "csrc/mine.h" not in build_toml.read_text():
        (project / "csrc" / "mine.h").write_text("#pragma once\n")
        text = build_toml.read_text()
        build_toml.write_text(text.replace('  "csrc/relu.h",\n', USER_HEADER))
    written["build.toml"] = [b'  "csrc/mine.h",\n']
    commit_all(project, ".", message="user edits")
    return written


def assert_user_text_survives(written: dict[str, list[bytes]], project: Path) -> None:
    for relative, pieces in written.items():
        now = (project / relative).read_bytes()
        for piece in pieces:
            assert now.count(piece) == 1, f"{relative} lost or repeated the user's {piece!r}"


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> Grown:
    """New my-kernel (cuda, cpu), user edits, add-op scale --like relu, edits, add-op clamp."""
    project = new_project(tmp_path_factory.mktemp("grown") / "my-kernel")
    first = edit_like_a_user(project)
    add_op(project, "scale", like="relu")
    assert_user_text_survives(first, project)
    commit_all(project, ".", message="add scale")
    scale_cpu = project / "csrc" / "cpu" / "scale.cpp"
    scale_cpu.write_text("// Unrolled by me.\n" + scale_cpu.read_text())
    second = edit_like_a_user(project, USER_WRAPPER.replace("relu", "scale"))
    second["csrc/cpu/scale.cpp"] = [b"// Unrolled by me.\n"]
    add_op(project, "clamp")
    written = {k: first.get(k, []) + second[k] for k in second}
    written["torch-ext/my_kernel/__init__.py"] = [
        *first["torch-ext/my_kernel/__init__.py"],
        *second["torch-ext/my_kernel/__init__.py"],
    ]
    written = {k: list(dict.fromkeys(v)) for k, v in written.items()}
    assert_user_text_survives(written, project)
    commit_all(project, ".", message="add clamp")
    return project, written


def test_add_op_writes_every_piece_of_the_op(grown: Grown) -> None:
    project, _ = grown
    for op in ("scale", "clamp"):
        for relative in (
            f"csrc/{op}.h",
            f"csrc/cuda/{op}.cu",
            f"csrc/cpu/{op}.cpp",
            f"tests/test_{op}.py",
            f"benchmarks/benchmark_{op}.py",
        ):
            assert (project / relative).is_file(), relative
    config = tomllib.loads((project / "build.toml").read_text())
    assert config["torch"]["src"][-3:] == ["csrc/mine.h", "csrc/scale.h", "csrc/clamp.h"]
    assert config["kernel"]["clamp_cpu"]["src"] == ["csrc/cpu/clamp.cpp"]
    assert config["kernel"]["scale_cuda"]["src"] == ["csrc/cuda/scale.cu"]
    binding = (project / "torch-ext" / "torch_binding.h").read_text()
    for schema in (
        "scale(Tensor input) -> Tensor",
        "clamp_out(Tensor(a!) out, Tensor input) -> ()",
    ):
        assert schema in binding
    wrapper = (project / "torch-ext" / "my_kernel" / "__init__.py").read_text()
    assert (
        "def clamp(x: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:" in wrapper
    )
    assert 'register_fake(add_op_namespace_prefix("clamp"))' in wrapper
    # scale starts from relu's working math under its own name; clamp raises naming its file.
    assert "scale_value(input[i])" in (project / "csrc" / "cpu" / "scale.cpp").read_text()
    clamp_cu = (project / "csrc" / "cuda" / "clamp.cu").read_text()
    assert "KSCAFFOLD_SKELETON" in clamp_cu and "write it in csrc/cuda/clamp.cu" in clamp_cu


def test_every_user_line_survives_both_add_ops(grown: Grown) -> None:
    project, written = grown
    assert_user_text_survives(written, project)
    text = (project / "torch-ext" / "my_kernel" / "__init__.py").read_text()
    # The wrappers come before the layers' import, which calls them; the user's helpers stay at
    # the end, in the order written.
    layers_import = text.index("from . import layers")
    assert text.index("def scale(") < layers_import < text.index("def relu_twice")
    assert text.index("def relu_twice") < text.index("def scale_twice")


def test_answers_record_the_ops_and_baselines_re_render(
    grown: Grown,
) -> None:
    project, _ = grown
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["ops"] == [
        {"name": "relu", "kind": "relu"},
        {"name": "scale", "kind": "relu"},
        {"name": "clamp", "kind": "skeleton"},
    ]
    # A fresh clone has no baseline ref: rendering the answers must give the stored one.
    assert render_files(load_answers(project).values) == read_ref_files(project, BASELINE_REF)


def test_check_is_clean_after_add_op(grown: Grown) -> None:
    project, _ = grown
    assert [str(f) for f in check_project(project) if f.is_error] == []


def test_generated_python_of_added_ops_is_lint_clean(
    grown: Grown,
) -> None:
    project, _ = grown
    assert_ruff_clean(project)


def test_add_op_like_img2gray_and_add_backend_covers_every_op(tmp_path: Path) -> None:
    project = new_project(tmp_path / "my-kernel", backends=["cuda"])
    add_op(project, "gray", like="img2gray")
    commit_all(project, ".", message="add gray")
    add_op(project, "clamp")
    commit_all(project, ".", message="add clamp")
    add_backend(project, "cpu")
    for op in ("relu", "gray", "clamp"):
        assert (project / "csrc" / "cpu" / f"{op}.cpp").is_file(), op
    config = tomllib.loads((project / "build.toml").read_text())
    assert {name for name, table in config["kernel"].items() if table["backend"] == "cpu"} == {
        "relu_cpu",
        "gray_cpu",
        "clamp_cpu",
    }
    assert "gray_value" in (project / "csrc" / "cpu" / "gray.cpp").read_text() or (
        "convert_range" in (project / "csrc" / "cpu" / "gray.cpp").read_text()
    )
    assert [str(f) for f in check_project(project) if f.is_error] == []


def test_add_op_without_git_renders_its_baseline_from_the_answers(tmp_path: Path) -> None:
    project = new_project(tmp_path / "my-kernel", git=False)
    kernel = project / "csrc" / "cuda" / "relu.cu"
    kernel.write_text("// mine\n" + kernel.read_text())
    add_op(project, "scale", like="relu")
    add_op(project, "shift", like="relu")
    assert kernel.read_text().startswith("// mine\n")
    assert (project / "csrc" / "cpu" / "shift.cpp").is_file()
    assert [str(f) for f in check_project(project) if f.is_error] == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Scale", "Invalid op name 'Scale'.*try 'scale'"),
        ("my-op", "Invalid op name 'my-op'.*try 'my_op'"),
        ("2x", "Invalid op name '2x'"),
        ("", "Invalid op name ''"),
        ("scale_out", "the out= variant"),
        ("scale_no_grad", "the variant without autograd"),
        ("x__y", "'__'"),
        ("class", "keyword"),
        ("match", "keyword"),
        ("torch", "already uses it"),
        ("a" * 21, "at most 20"),
    ],
)
def test_op_names_are_refused_up_front(name: str, message: str) -> None:
    with pytest.raises(InvalidNameError, match=message):
        OpName(name)


@pytest.mark.parametrize(
    ("name", "like", "setup", "error", "message"),
    [
        ("relu", None, "none", InvalidOptionError, "already has an op named 'relu'"),
        (
            "mine",
            None,
            "user op",
            InvalidOptionError,
            r"already has an op named 'mine' .*torch-ext",
        ),
        ("scale", "gelu", "none", InvalidOptionError, "Unknown --like 'gelu'.*relu, img2gray"),
        ("scale", None, "dirty", DirtyTreeError, "uncommitted changes"),
        ("Scale", None, "none", InvalidNameError, "Invalid op name"),
    ],
)
def test_refusals_change_nothing(
    project: Path, name: str, like: str | None, setup: str, error: type[Exception], message: str
) -> None:
    if setup == "user op":
        binding = project / "torch-ext" / "torch_binding.h"
        binding.write_text(
            binding.read_text().replace("\n}\n", '\n  ops.def("mine(Tensor x) -> Tensor");\n}\n')
        )
        commit_all(project, ".", message="my op")
    if setup == "dirty":
        (project / "csrc" / "relu.h").write_text("// half-done edit\n")
    before = snapshot(project)
    with pytest.raises(error, match=message):
        add_op(project, name, like=like)
    assert snapshot(project) == before


def test_conflict_changes_nothing_unless_markers_are_asked(project: Path) -> None:
    wrapper = project / "torch-ext" / "my_kernel" / "__init__.py"
    wrapper.write_text(
        wrapper.read_text().replace('__all__ = ["SUPPORTED_DTYPES", "relu"]', '__all__ = ["relu"]')
    )
    commit_all(project, ".", message="my __all__")
    before = snapshot(project)
    with pytest.raises(MergeConflictError, match=r"torch-ext/my_kernel/__init__.py \(lines \d+"):
        add_op(project, "scale", like="relu")
    assert snapshot(project) == before
    report = add_op(project, "scale", like="relu", markers=True)
    assert [c.path for c in report.conflicts] == ["torch-ext/my_kernel/__init__.py"]
    assert "<<<<<<< torch-ext/my_kernel/__init__.py (yours)" in wrapper.read_text()


def test_cli_add_op(project: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["add-op", "my-op", str(project)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: Invalid op name 'my-op'"), result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    result = runner.invoke(app, ["add-op", "scale", str(project), "--like", "relu"])
    assert result.exit_code == 0, result.output
    assert "csrc/cpu/scale.cpp" in result.output and "Added the scale op" in result.output


# --- slow tier: build the three-op project and run its own tests ------------------------------


@pytest.fixture(scope="module")
def grown_cpu_build(grown: Grown, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the three-op project, built for the CPU once per module (tests only read it)."""
    project = copy_project(grown[0], tmp_path_factory.mktemp("built") / "my-kernel")
    build_project(project, backend="cpu")
    return project


@pytest.mark.slow
def test_three_op_project_passes_its_generated_tests(grown_cpu_build: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rxX", "-p", "no:cacheprovider", "tests"],
        cwd=grown_cpu_build,
        capture_output=True,
        text=True,
        check=False,
    )
    output = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    summary = output.strip().splitlines()[-1]
    assert " passed" in summary, output
    assert not re.search(r"\d+ (failed|errors?)\b", summary), output
    # Only the skeleton's cases wait for it; relu's and scale's all ran and passed.
    waiting = [line for line in output.splitlines() if line.startswith(("XFAIL", "XPASS"))]
    assert waiting and all("test_clamp.py" in line for line in waiting), output
    assert all("csrc/cpu/clamp.cpp is a skeleton" in line for line in waiting if "[cpu" in line)


@pytest.mark.slow
def test_three_op_project_compiles_and_links_for_cuda(grown: Grown, tmp_path: Path) -> None:
    cuda_toolkit_or_skip()
    project = copy_project(grown[0], tmp_path / "my-kernel")
    (result,) = build_project(project, backend="cuda", cuda_archs=["8.0"])
    library = next(result.variant_dir.glob("*.abi3.so"))
    symbols = subprocess.run(["nm", "-C", library], capture_output=True, text=True, check=True)
    for op in ("relu", "scale", "clamp"):
        assert f"{op}::{op}_cuda(" in symbols.stdout, op


def test_an_added_op_renders_as_it_would_as_the_first_op() -> None:
    """The files of a later op are the template's per-op files, rendered with that op."""
    spec = ProjectSpec.parse("my-kernel", backends=("cuda", "cpu"))
    first = render_files({**spec.answers(), "ops": [{"name": "scale", "kind": "relu"}]})
    later = render_files(
        {**spec.answers(), "ops": [*spec.answers()["ops"], {"name": "scale", "kind": "relu"}]}
    )
    for relative in (
        "csrc/scale.h",
        "csrc/cpu/scale.cpp",
        "csrc/cuda/scale.cu",
        "tests/test_scale.py",
    ):
        assert later[relative] == first[relative], relative
    assert later["benchmarks/benchmark_scale.py"] == first["benchmarks/benchmark.py"]


#: Kernel names up to this long keep every generated line in ruff's 100 columns (a longer one
#: leaves a few lines whose path or name alone outgrows them); op names are at most 20.
_LINT_CLEAN_KERNEL_NAME = "a-kernel-name-long-enough-to-push-lines-past-100-columns-of-ruff"

#: Per flavour: what project options make it, the op kinds it renders, and the schemas it takes
#: (mutating, list, tuple).
_FLAVOURS = {
    "cpp": (
        {},
        OP_KINDS,
        [
            "(Tensor x, Tensor? bias=None, float eps=1e-5, int[] dims=[]) -> (Tensor, Tensor)",
            "(Tensor(a!) x, Scalar alpha) -> ()",
            "(Tensor[] xs, *, bool flag=False) -> Tensor",
        ],
    ),
    "stable-abi": (
        {"stable_abi": "2.10"},
        STABLE_ABI_KINDS,
        ["(Tensor x, Tensor? bias=None, float eps=1e-5) -> (Tensor, Tensor)"],
    ),
    "triton": (
        {"language": TRITON_LANGUAGE},
        TRITON_KINDS,
        [
            "(Tensor x, Tensor? bias=None, float eps=1e-5, int[] dims=[]) -> (Tensor, Tensor)",
            "(Tensor(a!) x, Scalar alpha) -> ()",
        ],
    ),
}


@pytest.mark.parametrize(
    ("flavour", "first"),
    [
        (flavour, first)
        for flavour, (_, kinds, _) in sorted(_FLAVOURS.items())
        for first in kinds
        if first != SKELETON_KIND  # a project starts from an example or a schema
    ],
)
def test_generated_python_is_lint_clean_for_the_longest_names(
    tmp_path: Path, flavour: str, first: str
) -> None:
    """20-character ops of every kind the flavour renders, in a kernel of a 64-character name.

    The README's usage is the first op's, so each kind is also the first op once.
    """
    assert len(_LINT_CLEAN_KERNEL_NAME) == 64
    options, kinds, schemas = _FLAVOURS[flavour]
    spec = ProjectSpec.parse(_LINT_CLEAN_KERNEL_NAME, backends=("cuda", "cpu"), **options)
    answers = spec.answers()
    first_op = {"name": answers["ops"][0]["name"], "kind": first}
    ops = [first_op | ({"schema": schemas[0]} if first == SCHEMA_KIND else {})]
    extra = [{"kind": kind} for kind in kinds if kind != SCHEMA_KIND]
    extra += [{"kind": SCHEMA_KIND, "schema": schema} for schema in schemas]
    for suffix, entry in zip("abcdefgh", extra, strict=False):
        ops.append({"name": OpName("a" * 19 + suffix).name, **entry})
    write_tree(render_files({**answers, "ops": ops}), tmp_path)
    assert_ruff_clean(tmp_path)


@pytest.mark.parametrize(
    "ops",
    [
        '"relu"',
        "[]",
        '[{"name": "relu", "kind": "gelu"}]',
        '[{"name": "relu", "kind": "relu"}, {"name": "relu", "kind": "relu"}]',
    ],
    ids=["not-a-list", "empty", "unknown-kind", "twice"],
)
def test_a_broken_ops_answer_is_refused_naming_the_file(project: Path, ops: str) -> None:
    answers = project / ".copier-answers.yml"
    text = answers.read_text()
    line = next(line for line in text.splitlines() if line.startswith("ops: "))
    answers.write_text(text.replace(line, f"ops: {ops}"))
    commit_all(project, ".", message="hand-edited answers")
    before = snapshot(project)
    # An entry the template cannot render is named by its key; a malformed list as a whole.
    expected = "ops\\[0\\]\\.kind is 'gelu'" if "gelu" in ops else "'ops' must list each op"
    with pytest.raises(NotAProjectError, match=rf"\.copier-answers\.yml: {expected}"):
        add_op(project, "scale", like="relu")
    assert snapshot(project) == before


def test_an_op_name_add_op_would_refuse_is_refused_in_the_answers(project: Path) -> None:
    """A hand-edited op name names files and namespaces: '../x' must not render outside csrc/."""
    answers = project / ".copier-answers.yml"
    text = answers.read_text()
    line = next(line for line in text.splitlines() if line.startswith("ops: "))
    answers.write_text(text.replace(line, 'ops: [{"name": "../x", "kind": "relu"}]'))
    commit_all(project, ".", message="hand-edited answers")
    before = snapshot(project)
    with pytest.raises(NotAProjectError, match=r"'ops': Invalid op name '\.\./x'"):
        add_op(project, "scale", like="relu")
    assert snapshot(project) == before
