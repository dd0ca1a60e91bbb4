"""One validation of an op name: it must not break the generated C++, Python or another op."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from scaffold.errors import KscaffoldError
from scaffold.grow.addop import add_op
from scaffold.project.answers import load_answers
from scaffold.project.cxx_reserved import CXX_RESERVED
from scaffold.project.generated_names import (
    GENERATED_HEADERS,
    GENERATED_IDENTIFIERS,
    GENERATED_MODULE_NAMES,
)
from scaffold.project.names import OpName, check_op_name_free, defined_names
from scaffold.vocabulary import TRITON_LANGUAGE
from tests.cxx_names import (
    derive_generated_names,
    derive_reserved_names,
    render_generated_module,
    render_module,
)
from tests.helpers import snapshot
from tests.projects import commit_all

ROOT = Path(__file__).resolve().parents[1]


def test_the_generated_names_are_those_of_the_template() -> None:
    names = derive_generated_names()
    assert (names.patterns, frozenset(names.modules), frozenset(names.headers)) == (
        list(GENERATED_IDENTIFIERS),
        GENERATED_MODULE_NAMES,
        GENERATED_HEADERS,
    )
    committed = (ROOT / "scaffold/project/generated_names.py").read_text(encoding="utf-8")
    assert committed == render_generated_module(names)


@pytest.mark.slow
def test_the_reserved_cxx_names_are_those_of_the_headers() -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    names = derive_reserved_names()
    assert frozenset(names) == CXX_RESERVED, (
        f"regenerate scaffold/project/cxx_reserved.py: added {sorted(set(names) - CXX_RESERVED)}"
        f", gone {sorted(CXX_RESERVED - set(names))}"
    )
    committed = (ROOT / "scaffold/project/cxx_reserved.py").read_text(encoding="utf-8")
    assert committed == render_module(names)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("scale\n", "use lowercase letters"),
        ("scale\r", "use lowercase letters"),
        ("scale ", "use lowercase letters"),
        ("tanh", "C/C++ headers"),
        ("exp", "C/C++ headers"),
        ("printf", "C/C++ headers"),
        ("free", "C/C++ headers"),
        ("index", "C/C++ headers"),
        ("rsqrt", "C/C++ headers"),  # CUDA's runtime, included by nvcc in every .cu file
        ("stdin", "C/C++ headers"),  # a macro
        ("std", "generated C++ or Python already uses it"),
        ("str", "Python builtin"),
        ("len", "Python builtin"),
        ("sorted", "Python builtin"),
        ("reference", "generated Python module imports or defines it"),
        ("math", "generated Python module imports or defines it"),
        ("supported", "would generate SUPPORTED_DTYPES"),
        ("kernels", "would generate KernelsBenchmark"),
        ("co_await", "keyword"),
        ("match", "keyword"),
        ("registration", "in place of the generated code's own registration.h"),
        ("torch_binding", "in place of the generated code's own torch_binding.h"),
    ],
)
def test_op_names_that_break_the_generated_code_are_refused(name: str, why: str) -> None:
    with pytest.raises(KscaffoldError, match="Invalid op name") as caught:
        OpName(name)
    assert why in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["scale", "my_op", "gelu", "silu", "rms_norm", "img2gray2"])
def test_ordinary_op_names_are_accepted(name: str) -> None:
    assert OpName(name).name == name


@pytest.mark.parametrize("name", ["norm", "sin", "stdin", "index", "delete", "std", "registration"])
def test_names_only_cxx_takes_are_free_in_a_triton_project(name: str) -> None:
    with pytest.raises(
        KscaffoldError, match="C/C[+][+] headers|C[+][+] keyword|already uses it|own registration"
    ):
        OpName(name)
    assert OpName(name, TRITON_LANGUAGE).name == name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("str", "Python builtin"),
        ("class", "Python keyword"),
        ("torch", "already uses it"),
        ("eager", "generated Python module imports or defines it"),  # the Triton module's
    ],
)
def test_python_names_stay_taken_in_a_triton_project(name: str, why: str) -> None:
    with pytest.raises(KscaffoldError, match=why):
        OpName(name, TRITON_LANGUAGE)


@pytest.mark.parametrize(
    ("name", "others", "shared"),
    [
        ("add_kernel", ["add"], "add_kernel"),  # add's CUDA kernel function
        ("add", ["add_value"], "add_value"),  # add's formula
        ("add_cpu", ["add"], "add_cpu"),
        ("a_out_cpu", ["a"], "a_out_cpu"),
    ],
)
def test_ops_whose_generated_identifiers_collide_are_refused(
    name: str, others: list[str], shared: str
) -> None:
    with pytest.raises(KscaffoldError, match=f"generate {shared}, which the op"):
        check_op_name_free(OpName(name), package="pkg", other_ops=others)


def test_the_packages_own_name_is_refused() -> None:
    with pytest.raises(KscaffoldError, match="package's own name"):
        check_op_name_free(OpName("my_kernel"), package="my_kernel")


def test_defined_names_reads_the_top_level() -> None:
    source = (
        "import os.path\nfrom x import y as z\ndef helper(): pass\nclass K: pass\n"
        "A, (b, c) = 1, (2, 3)\nd: int = 4\nif True:\n    hidden = 1\n"
    )
    assert defined_names(source) == {"os", "z", "helper", "K", "A", "b", "c", "d"}
    assert defined_names("def (:") == frozenset()


@pytest.mark.parametrize(
    ("user_code", "op", "taken"),
    [
        ("def helper(x):\n    return x\n", "helper", "helper"),
        ("SCALE_DTYPES = ()\n", "scale", "SCALE_DTYPES"),
        ("def _gelu_check_input(x):\n    pass\n", "gelu", "_gelu_check_input"),
        ("from math import gamma as blend\n", "blend", "blend"),
    ],
)
def test_add_op_never_shadows_a_name_the_user_defines(
    project: Path, user_code: str, op: str, taken: str
) -> None:
    init = project / "torch-ext" / "my_kernel" / "__init__.py"
    init.write_text(init.read_text() + "\n\n" + user_code)
    commit_all(project, "torch-ext")
    before = snapshot(project)
    with pytest.raises(KscaffoldError, match=f"already defines {taken}, which the op") as caught:
        add_op(project, op)
    assert "torch-ext/my_kernel/__init__.py" in str(caught.value)
    assert snapshot(project) == before


@pytest.mark.parametrize("name", ["tanh", "len", "relu_kernel", "my_kernel", "scale\n"])
def test_add_op_refuses_before_writing(project: Path, name: str) -> None:
    before = snapshot(project)
    with pytest.raises(KscaffoldError, match="Invalid op name"):
        add_op(project, name)
    assert snapshot(project) == before


@pytest.mark.parametrize("name", ["tanh", "len", "relu_kernel", "my_kernel", "str"])
def test_answers_naming_such_an_op_are_refused(project: Path, name: str) -> None:
    answers = project / ".copier-answers.yml"
    text = answers.read_text()
    old = '{"name": "relu", "kind": "relu"}'
    answers.write_text(text.replace(old, f'{old}, {{"name": "{name}", "kind": "skeleton"}}', 1))
    assert f'"name": "{name}"' in answers.read_text()
    with pytest.raises(KscaffoldError, match="'ops': Invalid op name '"):
        load_answers(project)
