"""`depends = [..., "cutlass_X_Y"]`: the headers are found, used, or their absence explained."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold.compiler import build_project
from scaffold.compiler.deps import find_cutlass, resolve_dependencies
from scaffold.compiler.plan import Toolchain, plan_variant
from scaffold.compiler.toolchain import CudaToolkit
from scaffold.compiler.variant import ops_name, variant_name
from scaffold.errors import ToolchainError
from scaffold.project.buildconfig import KernelSection, load_build_config
from tests.test_build import CUDA_TORCH, RecordingReporter, load_and_call, write_project


def fake_cutlass(root: Path, version: tuple[int, int] = (3, 8), addend: float = 10.0) -> Path:
    """A CUTLASS tree as a release has it: include/cutlass/ and tools/util/include/cutlass/util/."""
    include = root / "include" / "cutlass"
    include.mkdir(parents=True)
    (include / "cutlass.h").write_text("#pragma once\n")
    (include / "version.h").write_text(
        f"#pragma once\n#define CUTLASS_MAJOR {version[0]}\n#define CUTLASS_MINOR {version[1]}\n"
        "#define CUTLASS_PATCH 0\n"
    )
    util = root / "tools" / "util" / "include" / "cutlass" / "util"
    util.mkdir(parents=True)
    (util / "addend.h").write_text(f"#pragma once\nconstexpr float kCutlassAddend = {addend}f;\n")
    return root


def kernel(*depends: str, label: str = "gemm") -> KernelSection:
    return KernelSection(label, "cuda", depends, ("csrc/gemm.cu",), (), (), (), None)


def no_package(name: str) -> Path | None:
    return None


def test_torch_alone_needs_nothing() -> None:
    resolved = resolve_dependencies([kernel("torch")], environ={}, find_package_dir=no_package)
    assert resolved.include_dirs == {"gemm": ()} and resolved.notes == ()


def test_cutlass_path_gives_the_include_folders(tmp_path: Path) -> None:
    root = fake_cutlass(tmp_path / "cutlass")
    resolved = resolve_dependencies(
        [kernel("torch", "cutlass_3_8")],
        environ={"CUTLASS_PATH": str(root)},
        find_package_dir=no_package,
    )
    assert resolved.include_dirs["gemm"] == (
        (root / "include").resolve(),
        (root / "tools" / "util" / "include").resolve(),
    )
    assert resolved.notes == ()


def test_the_nvidia_cutlass_package_is_found_without_cutlass_path(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "cutlass_library"
    fake_cutlass(package / "source", version=(4, 2))
    found = find_cutlass({}, lambda name: package if name == "cutlass_library" else None)
    assert found is not None and found.version == (4, 2)
    assert found.include_dirs[0] == (package / "source" / "include").resolve()


def test_another_version_is_used_with_a_note(tmp_path: Path) -> None:
    root = fake_cutlass(tmp_path / "cutlass", version=(4, 2))
    resolved = resolve_dependencies(
        [kernel("cutlass_3_8"), kernel("cutlass_3_8", label="other")],
        environ={"CUTLASS_PATH": str(root)},
        find_package_dir=no_package,
    )
    (note,) = resolved.notes  # one note per distinct problem, not per table
    assert "depends on cutlass_3_8, but CUTLASS 4.2 is what was found" in note
    assert "CUTLASS 3.8" in note


def test_missing_cutlass_says_how_to_provide_it() -> None:
    with pytest.raises(ToolchainError) as error:
        resolve_dependencies([kernel("cutlass_3_8")], environ={}, find_package_dir=no_package)
    message = str(error.value)
    assert "[kernel.gemm] depends on cutlass_3_8 (CUTLASS 3.8 headers)" in message
    assert "pip install 'nvidia-cutlass==3.8.*'" in message and "CUTLASS_PATH" in message


def test_cutlass_path_without_headers_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match=r"CUTLASS_PATH=.* holds no CUTLASS headers"):
        resolve_dependencies(
            [kernel("cutlass_3_8")],
            environ={"CUTLASS_PATH": str(tmp_path)},
            find_package_dir=no_package,
        )


def test_a_dependency_only_nix_provides_is_refused_by_name() -> None:
    with pytest.raises(ToolchainError, match=r"\[kernel.gemm\] depends on 'sycl_tla'"):
        resolve_dependencies([kernel("torch", "sycl_tla")], environ={}, find_package_dir=no_package)


def test_only_the_dependent_kernel_gets_the_folders(tmp_path: Path) -> None:
    project = write_project(tmp_path / "add-one", cuda=True)
    config = load_build_config(project)
    toolkit = CudaToolkit(home=Path("/opt/cuda"), version=(13, 0))
    tools = Toolchain(CUDA_TORCH, Path("/usr/bin/g++"), Path("/py/include"), toolkit)
    cutlass = tmp_path / "cutlass" / "include"
    plan = plan_variant(
        config,
        backend="cpu",
        variant=variant_name(CUDA_TORCH, "cpu"),
        ops_name=ops_name("add_one", "cpu", "abc1234"),
        scratch=project / ".kscaffold" / "build" / "cpu",
        tools=tools,
        archs=None,
        dependency_dirs={"add_one_cpu": (cutlass,)},
    )
    flags = {step.source: " ".join(step.flags) for step in plan.steps}
    assert f"-isystem {cutlass}" in flags["csrc/cpu/add_one.cpp"]
    assert str(cutlass) not in flags["torch-ext/torch_binding.cpp"]


@pytest.mark.slow
def test_a_kernel_builds_against_the_cutlass_it_depends_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write_project(tmp_path / "add-one")
    build_toml = project / "build.toml"
    build_toml.write_text(
        build_toml.read_text().replace('depends = ["torch"]', 'depends = ["torch", "cutlass_3_8"]')
    )
    source = project / "csrc" / "cpu" / "add_one.cpp"
    source.write_text(
        source.read_text()
        .replace('#include "cpu/addend.h"', "#include <cutlass/util/addend.h>")
        .replace("+ kAddend", "+ kCutlassAddend")
    )
    monkeypatch.setenv("CUTLASS_PATH", str(fake_cutlass(tmp_path / "cutlass", version=(3, 9))))
    reporter = RecordingReporter()

    build_project(project, backend="cpu", reporter=reporter)

    assert load_and_call(project) == [10.0, 11.0, 12.0, 13.0]
    assert any("CUTLASS 3.9 is what was found" in note for note in reporter.notes), reporter.notes
