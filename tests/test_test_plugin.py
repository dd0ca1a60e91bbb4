"""`kscaffold test` runs any kernel-builder project's own tests, as kernel-builder's shell does.

The project here is a `[torch-noarch]` kernel (built by copying, no compiler): its package tells
which variant it was loaded from, so each test can see which build the suite got. Its tests are
written the way upstream suites are: by package name, by Hub repo id, by `get_local_kernel`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold.cli import app
from scaffold.compiler import build_project
from scaffold.testing import pytest_plugin
from scaffold.testing.project_tests import PLUGIN_MODULE
from scaffold.testing.pytest_plugin import SuiteTarget, find_target

runner = CliRunner()

BUILD_TOML = """\
[general]
name = "echo-kernel"
version = 1
license = "mit"
backends = ["cpu", "cuda"]

[general.hub]
repo-id = "some-org/echo-kernel"

[torch-noarch]

[kernel]
"""

# The variant folder's name is the only thing that differs between the copies in build/.
INIT_PY = """\
from pathlib import Path

VARIANT = Path(__file__).parent.name


def echo(x):
    return x
"""

LAYERS_PY = """\
import torch


class Echo(torch.nn.Module):
    def forward(self, x):
        return x
"""

UPSTREAM_STYLE_TESTS = """\
from pathlib import Path

import kernels
from kernels import get_kernel

import echo_kernel
from echo_kernel.layers import Echo

by_hub_id = get_kernel("some-org/echo-kernel", version=1)
by_upstream_id = kernels.get_kernel("kernels-community/echo-kernel", version=1)


def test_by_name():
    assert echo_kernel.VARIANT == EXPECTED
    assert Echo()(3) == 3


def test_by_hub_id_is_the_same_module():
    assert by_hub_id is echo_kernel
    assert by_upstream_id is echo_kernel


def test_local_kernel_without_backend():
    assert kernels.get_local_kernel(Path(__file__).parents[1]).VARIANT == EXPECTED
"""


def write_echo_project(root: Path, expected: str = "torch-cpu") -> Path:
    files = {
        "build.toml": BUILD_TOML,
        "torch-ext/echo_kernel/__init__.py": INIT_PY,
        "torch-ext/echo_kernel/layers.py": LAYERS_PY,
        "tests/test_upstream_style.py": f"EXPECTED = {expected!r}\n" + UPSTREAM_STYLE_TESTS,
    }
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def run_pytest(project: Path, **environment: str) -> subprocess.CompletedProcess[str]:
    """A plain `pytest` in the project, the plugin loaded explicitly (autoload off)."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **environment}
    env.pop(pytest_plugin.BACKEND_VARIABLE, None)
    env.update(environment)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", PLUGIN_MODULE, "tests"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.fixture
def built_echo(tmp_path: Path) -> Path:
    project = write_echo_project(tmp_path / "echo-kernel")
    results = build_project(project)
    assert {result.variant for result in results} == {"torch-cpu", "torch-cuda"}
    return project


def test_plain_pytest_imports_by_name_and_resolves_hub_ids(built_echo: Path) -> None:
    result = run_pytest(built_echo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout, result.stdout
    assert "kscaffold: echo_kernel imports build/torch-cpu/" in result.stdout


def test_cpu_run_never_loads_the_cuda_variant_built_beside_it(
    built_echo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A GPU machine: the default run takes the CUDA variant, --backend cpu the CPU one.
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pytest_plugin.default_backend(["cuda", "cpu"]) == "cuda"
    target = find_target(built_echo, backend="cpu")
    assert target is not None and target.variant_dir.name == "torch-cpu"
    cuda = find_target(built_echo)
    assert cuda is not None and cuda.variant_dir.name == "torch-cuda"

    result = run_pytest(built_echo, **{pytest_plugin.BACKEND_VARIABLE: "cpu"})
    assert result.returncode == 0, result.stdout + result.stderr


def test_kscaffold_test_says_tested_only_when_tests_ran_and_passed(built_echo: Path) -> None:
    result = runner.invoke(app, ["test", str(built_echo), "--backend", "cpu"])
    assert result.exit_code == 0, result.output
    assert "kscaffold test passed (3 passed). Tested: cpu (build/torch-cpu/)" in result.output


def test_kscaffold_test_names_the_variant_a_failure_ran_against(built_echo: Path) -> None:
    (built_echo / "tests" / "test_broken.py").write_text("def test_no():\n    assert False\n")
    result = runner.invoke(app, ["test", str(built_echo), "--backend", "cpu"])
    assert result.exit_code == 1, result.output
    assert "kscaffold test failed against build/torch-cpu/: 3 passed, 1 failed." in result.output
    assert "Tested:" not in result.output.splitlines()[-1].split(".", 1)[0]


def test_kscaffold_test_reports_a_collection_error(built_echo: Path) -> None:
    (built_echo / "tests" / "test_missing.py").write_text("import no_such_module_here\n")
    result = runner.invoke(app, ["test", str(built_echo), "--backend", "cpu"])
    assert result.exit_code != 0, result.output
    assert "the tests could not be collected (tests/test_missing.py)" in result.output
    assert "build/torch-cpu/" in result.output


def test_kscaffold_test_says_when_there_is_nothing_to_test(built_echo: Path) -> None:
    for test in (built_echo / "tests").iterdir():
        test.unlink()
    (built_echo / "tests").rmdir()
    result = runner.invoke(app, ["test", str(built_echo), "--backend", "cpu"])
    assert result.exit_code == 5, result.output
    assert "found no tests to run in echo-kernel (it has no tests/ folder)" in result.output

    (built_echo / "tests").mkdir()
    (built_echo / "tests" / "helpers.py").write_text("X = 1\n")
    result = runner.invoke(app, ["test", str(built_echo), "--backend", "cpu"])
    assert result.exit_code == 5, result.output
    assert "found no tests to run in echo-kernel: nothing was tested." in result.output


def test_plugin_does_nothing_outside_a_kernel_project(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_plain.py").write_text(
        "import importlib.util\n\n"
        "def test_no_finder():\n"
        "    assert importlib.util.find_spec('echo_kernel') is None\n"
    )
    result = run_pytest(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "kscaffold:" not in result.stdout


@pytest.mark.parametrize(
    ("repo_id", "owned"),
    [
        ("some-org/echo-kernel", True),
        ("kernels-community/echo-kernel", True),
        ("someone/echo-kernel", True),
        ("some-org/echo-kernel-2", False),
        ("echo-kernel", False),
        ("/echo-kernel", False),
        ("some-org/other", False),
    ],
)
def test_which_repo_ids_name_the_project(repo_id: str, owned: bool, tmp_path: Path) -> None:
    target = SuiteTarget(
        project=tmp_path,
        python_name="echo_kernel",
        kernel_name="echo-kernel",
        hub_repo_id="some-org/echo-kernel",
        backend="cpu",
        variant_dir=tmp_path / "build" / "torch-cpu",
    )
    assert target.owns(repo_id) is owned


def test_a_suite_of_skeleton_cases_only_is_named_as_such(built_echo: Path) -> None:
    for test in (built_echo / "tests").iterdir():
        test.unlink()
    (built_echo / "tests" / "test_skeleton.py").write_text(
        "import pytest\n\n\n@pytest.mark.xfail(reason='a skeleton')\ndef test_op():\n"
        "    raise NotImplementedError\n"
    )
    result = runner.invoke(app, ["test", str(built_echo), "--backend", "cpu"])
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("kscaffold test ran only the cases expected to fail (1 xfailed)"), last
    assert "Tested:" not in last
