"""Fast tier: render the template for every answer combination and check what comes out."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from scaffold.grow.template import kscaffold_version, render
from scaffold.project.flakepin import EDITION, pinned_input
from scaffold.project.spec import ProjectSpec
from scaffold.vocabulary import ANSWERS_FILE

BACKEND_CHOICES = [("cuda",), ("cpu",), ("cuda", "cpu")]
EXAMPLE_CHOICES = [None, "img2gray", "rms_norm"]
COMBINATIONS = list(itertools.product(BACKEND_CHOICES, EXAMPLE_CHOICES, [None, "my-org"]))
HEADER_SUFFIXES = (".h", ".hpp", ".cuh")


def _id(combination: tuple[tuple[str, ...], str | None, str | None]) -> str:
    backends, example, owner = combination
    return f"{'+'.join(backends)}-{example or 'default'}-{'owner' if owner else 'no-owner'}"


@pytest.fixture(scope="module", params=COMBINATIONS, ids=[_id(c) for c in COMBINATIONS])
def rendered(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[ProjectSpec, Path]:
    backends, example, owner = request.param
    spec = ProjectSpec.parse("my-kernel", backends=backends, example=example, owner=owner)
    destination = tmp_path_factory.mktemp("render") / "my-kernel"
    render(spec.answers(), destination)
    return spec, destination


def expected_files(spec: ProjectSpec) -> set[str]:
    op = spec.example or "relu"
    files = {
        ".copier-answers.yml",
        ".github/workflows/kernel.yml",
        ".gitattributes",
        ".gitignore",
        "README.md",
        "build.toml",
        "example.py",
        "flake.nix",
        "requirements-dev.txt",
        "ruff.toml",
        "benchmarks/benchmark.py",
        "benchmarks/harness.py",
        f"csrc/{op}.h",
        "tests/__init__.py",
        "tests/conftest.py",
        f"tests/test_{op}.py",
        "torch-ext/torch_binding.cpp",
        "torch-ext/torch_binding.h",
        "torch-ext/my_kernel/__init__.py",
        "torch-ext/my_kernel/layers.py",
    }
    if "cuda" in spec.backends:
        files.add(f"csrc/cuda/{op}.cu")
    if "cpu" in spec.backends:
        files.add(f"csrc/cpu/{op}.cpp")
    return files


def test_file_tree(rendered: tuple[ProjectSpec, Path]) -> None:
    spec, project = rendered
    actual = {p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()}
    assert actual == expected_files(spec)


def test_build_toml(rendered: tuple[ProjectSpec, Path]) -> None:
    spec, project = rendered
    config = tomllib.loads((project / "build.toml").read_text())
    general = config["general"]
    assert general["name"] == "my-kernel"
    assert general["version"] == 1 and isinstance(general["version"], int)
    assert general["license"] == "apache-2.0"
    assert general["edition"] == EDITION
    assert tuple(general["backends"]) == spec.backends
    if spec.owner:
        assert general["hub"] == {"repo-id": "my-org/my-kernel"}
    else:
        assert "hub" not in general

    kernels = config["kernel"]
    assert sorted(table["backend"] for table in kernels.values()) == sorted(spec.backends)
    for table in kernels.values():
        assert table["depends"] == ["torch"]
        assert (table["backend"] == "cuda") == ("cuda-capabilities" in table)
        for source in table["src"]:
            assert (project / source).is_file(), source

    # Nix copies only listed files: every source and every header must be in some src list.
    listed = set(config["torch"]["src"]) | {s for t in kernels.values() for s in t["src"]}
    on_disk = {
        p.relative_to(project).as_posix()
        for folder in ("csrc", "torch-ext")
        for p in (project / folder).rglob("*")
        if p.suffix in (*HEADER_SUFFIXES, ".cpp", ".cu")
    }
    assert on_disk <= listed
    assert all((project / source).is_file() for source in listed)


def test_build_toml_accepted_by_kernel_builder_parser(rendered: tuple[ProjectSpec, Path]) -> None:
    build_module = pytest.importorskip("kernels._rust", reason="kernels>=0.17.2 ships the parser")
    spec, project = rendered
    build = build_module.Build.open(str(project))
    assert list(build.general.backends) == list(spec.backends) or sorted(
        str(b).lower().split(".")[-1] for b in build.general.backends
    ) == sorted(spec.backends)


def test_flake_nix(rendered: tuple[ProjectSpec, Path]) -> None:
    _, project = rendered
    flake = (project / "flake.nix").read_text()
    assert f'kernel-builder.url = "{pinned_input(EDITION)}";' in flake
    assert "genKernelFlakeOutputs" in flake and "genFlakeOutputs" not in flake.replace(
        "genKernelFlakeOutputs", ""
    )
    nix = shutil.which("nix-instantiate")
    if nix is None:
        pytest.skip("nix-instantiate not installed (Debian package nix-bin)")
    result = subprocess.run(
        [nix, "--parse", str(project / "flake.nix")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_python_files_compile(rendered: tuple[ProjectSpec, Path]) -> None:
    _, project = rendered
    for path in project.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")


def test_answers_file_records_the_answers(rendered: tuple[ProjectSpec, Path]) -> None:
    spec, project = rendered
    answers = yaml.safe_load((project / ANSWERS_FILE).read_text())
    assert answers["_kscaffold_version"] == kscaffold_version()
    assert {k: answers[k] for k in spec.answers()} == spec.answers()
    assert "_src_path" not in answers  # machine-specific; would make renders differ


def test_gitignore_covers_build_outputs(rendered: tuple[ProjectSpec, Path]) -> None:
    _, project = rendered
    ignored = (project / ".gitignore").read_text().splitlines()
    for pattern in ("/build/", "/.kscaffold/", "__pycache__/", "/torch-ext/registration.h"):
        assert pattern in ignored
    assert "*.so filter=lfs" in (project / ".gitattributes").read_text()


def test_generated_python_is_lint_clean_and_formatted(rendered: tuple[ProjectSpec, Path]) -> None:
    """The user's first `ruff check` / `ruff format` of a fresh project changes nothing."""
    _, project = rendered
    ruff = [sys.executable, "-m", "ruff"]
    if subprocess.run([*ruff, "--version"], capture_output=True).returncode != 0:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    for command in (["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]):
        result = subprocess.run([*ruff, *command], cwd=project, capture_output=True, text=True)
        assert result.returncode == 0, f"ruff {' '.join(command)}:\n{result.stdout}{result.stderr}"
