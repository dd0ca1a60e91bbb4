"""kscaffold doctor: each mismatch between machine and build, reported through fake probes."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold.cli import app
from scaffold.compiler.archs import CudaArch
from scaffold.testing.doctor import DoctorFinding, diagnose, loads, runs_on
from scaffold.testing.probes import (
    CompilerInfo,
    GpuInfo,
    SystemProbes,
    ToolkitInfo,
    TorchInfo,
    nvcc_complaint,
)

runner = CliRunner()

TORCH = TorchInfo(
    "2.14.1+cu130",
    "13.0",
    {"cpu": "torch214-cxx11-cpu-x86_64-linux", "cuda": "torch214-cxx11-cu130-x86_64-linux"},
)
H200 = GpuInfo(0, "NVIDIA H200", (9, 0))


@dataclasses.dataclass
class FakeProbes:
    """A healthy GPU machine; each test changes the one answer it is about."""

    driver: tuple[int, int] | None = (13, 0)
    cuda_toolkit: ToolkitInfo | None = ToolkitInfo(Path("/cuda/bin/nvcc"), (13, 0))
    torch_info: TorchInfo | None = TORCH
    visible: tuple[GpuInfo, ...] = (H200,)
    cxx: CompilerInfo | None = CompilerInfo(Path("/usr/bin/g++"), "g++ (GCC) 13.3.0")
    rejection: str | None = None
    ninja_path: Path | None = Path("/usr/bin/ninja")
    nix_path: Path | None = None
    kernels: str | None = "0.17.2"

    def driver_cuda_version(self) -> tuple[int, int] | None:
        return self.driver

    def toolkit(self) -> ToolkitInfo | None:
        return self.cuda_toolkit

    def torch(self) -> TorchInfo | None:
        return self.torch_info

    def gpus(self) -> list[GpuInfo]:
        return list(self.visible)

    def host_compiler(self) -> CompilerInfo | None:
        return self.cxx

    def host_compiler_rejected(self, nvcc: Path, cxx: Path) -> str | None:
        return self.rejection

    def ninja(self) -> Path | None:
        return self.ninja_path

    def nix(self) -> Path | None:
        return self.nix_path

    def kernels_version(self) -> str | None:
        return self.kernels


def _built(project: Path, variant: str, backend: str, archs: list[str] | None = None) -> None:
    folder = project / "build" / variant
    folder.mkdir(parents=True)
    kind: dict[str, object] = {"type": backend}
    if archs is not None:
        kind["archs"] = archs
    (folder / "metadata.json").write_text(json.dumps({"name": "k", "backend": kind}))


@pytest.fixture
def built(project: Path) -> Path:
    """A fresh CUDA+CPU project, as if built for torch 2.14 with CUDA 9.0 code."""
    _built(project, TORCH.variants["cuda"], "cuda", ["9.0"])
    _built(project, TORCH.variants["cpu"], "cpu")
    return project


def _only(findings: list[DoctorFinding], level: str) -> list[str]:
    return [f"{f.topic}: {f.message}" for f in findings if f.level == level]


def test_a_healthy_gpu_machine_has_no_error_or_warning(built: Path) -> None:
    findings = diagnose(built, FakeProbes())
    assert _only(findings, "error") == [] and _only(findings, "warning") == [], findings
    oks = "\n".join(_only(findings, "ok"))
    assert "GPU 0 (NVIDIA H200, compute capability 9.0) runs build/torch214" in oks
    assert "(SASS 9.0)" in oks
    assert "loads build/torch214-cxx11-cpu-x86_64-linux/ for cpu" in oks


def test_driver_older_than_the_toolkit(built: Path) -> None:
    toolkit = ToolkitInfo(Path("/cuda/bin/nvcc"), (13, 0))
    torch = dataclasses.replace(TORCH, cuda="12.8")
    findings = diagnose(built, FakeProbes(driver=(12, 8), cuda_toolkit=toolkit, torch_info=torch))
    mixed, error = _only(findings, "error")
    assert "nvcc is CUDA 13.0, torch 2.14.1+cu130 was built with CUDA 12.8" in mixed
    assert "driver supports CUDA 12.8, older than the CUDA 13.0 toolkit (/cuda/bin/nvcc)" in error
    assert "Update the NVIDIA driver to one for CUDA 13.0 or newer" in error


def test_driver_older_than_torch(built: Path) -> None:
    # No toolkit here (a machine that only runs kernels): torch alone needs the newer driver.
    findings = diagnose(built, FakeProbes(driver=(12, 4), cuda_toolkit=None))
    (error,) = _only(findings, "error")
    assert "CUDA 12.4, older than torch 2.14.1+cu130 (built for CUDA 13.0)" in error
    assert "or install a torch built for CUDA 12.x" in error


def test_driver_one_minor_behind_warns_of_minor_version_compatibility(built: Path) -> None:
    toolkit = ToolkitInfo(Path("/cuda/bin/nvcc"), (13, 1))
    findings = diagnose(built, FakeProbes(cuda_toolkit=toolkit))
    assert _only(findings, "error") == []
    (warning,) = _only(findings, "warning")
    assert "13.0, older than the CUDA 13.1 toolkit" in warning and "PTX" in warning


def test_gpu_arch_not_built(built: Path) -> None:
    blackwell = GpuInfo(1, "NVIDIA B200", (10, 0))
    findings = diagnose(built, FakeProbes(visible=(H200, blackwell)))
    (error,) = _only(findings, "error")
    assert "GPU 1 (NVIDIA B200, compute capability 10.0)" in error
    assert "holds code for 9.0, none of which runs on it" in error
    assert error.endswith("kscaffold build --cuda-archs 10.0")


def test_ptx_of_an_older_arch_runs_on_a_newer_gpu(built: Path) -> None:
    metadata = built / "build" / TORCH.variants["cuda"] / "metadata.json"
    metadata.write_text(json.dumps({"backend": {"type": "cuda", "archs": ["8.0+PTX"]}}))
    findings = diagnose(built, FakeProbes())
    assert _only(findings, "error") == []
    assert any("(PTX 8.0)" in line for line in _only(findings, "ok"))


def test_runs_on_follows_cuda_binary_compatibility() -> None:
    assert runs_on(CudaArch.parse("8.0"), (8, 6)) == "SASS 8.0"
    assert runs_on(CudaArch.parse("8.6"), (8, 0)) is None
    assert runs_on(CudaArch.parse("8.0"), (9, 0)) is None
    assert runs_on(CudaArch.parse("9.0a"), (9, 0)) == "SASS 9.0a"
    assert runs_on(CudaArch.parse("10.0a"), (10, 3)) is None
    assert runs_on(CudaArch.parse("10.0f"), (10, 3)) == "SASS 10.0f"
    assert runs_on(CudaArch.parse("12.0+PTX"), (12, 1)) == "SASS 12.0"
    assert runs_on(CudaArch.parse("9.0+PTX"), (12, 0)) == "PTX 9.0"


def test_no_variant_this_torch_loads(built: Path) -> None:
    older = dataclasses.replace(
        TORCH,
        version="2.11.0+cu130",
        variants={k: v.replace("torch214", "torch211") for k, v in TORCH.variants.items()},
    )
    findings = diagnose(built, FakeProbes(torch_info=older))
    errors = _only(findings, "error")
    assert len(errors) == 2, findings
    assert (
        "no cuda variant in build/ loads with torch 2.11.0+cu130 (build/ has "
        "torch214-cxx11-cu130-x86_64-linux): build torch211-cxx11-cu130-x86_64-linux with "
        "kscaffold build --backend cuda"
    ) in errors[0]
    assert "build torch211-cxx11-cpu-x86_64-linux" in errors[1]


def test_stable_abi_and_noarch_variants_load_with_newer_torch() -> None:
    assert loads("torch-stable-abi211-cu130-x86_64-linux", "cuda", TORCH)
    assert not loads("torch-stable-abi215-cu130-x86_64-linux", "cuda", TORCH)
    assert not loads("torch-stable-abi211-cu128-x86_64-linux", "cuda", TORCH)
    assert loads("torch-cuda", "cuda", TORCH)
    assert not loads("torch214-cxx11-cu130-x86_64-linux", "cpu", TORCH)


def test_unsupported_host_compiler(built: Path) -> None:
    probes = FakeProbes(
        cxx=CompilerInfo(Path("/usr/bin/g++-16"), "g++ (GCC) 16.1.0"),
        rejection="unsupported GNU version! gcc versions later than 15 are not supported!",
    )
    (error,) = _only(diagnose(built, probes), "error")
    assert "nvcc 13.0 rejects /usr/bin/g++-16 (g++ (GCC) 16.1.0) as its host compiler" in error
    assert "gcc versions later than 15 are not supported! Set CXX" in error


def test_nvcc_complaint_is_the_error_directive() -> None:
    output = (
        "/cuda/include/crt/host_config.h:137:2: error: #error -- unsupported GNU version! gcc "
        "versions later than 15 are not supported! The nvcc flag '-allow-unsupported-compiler' "
        "can be used to override this version check\n"
    )
    assert nvcc_complaint(output) == (
        "unsupported GNU version! gcc versions later than 15 are not supported!"
    )


def test_missing_ninja(built: Path) -> None:
    (error,) = _only(diagnose(built, FakeProbes(ninja_path=None)), "error")
    assert error == "ninja: ninja not found; kscaffold build needs it: pip install ninja"


def test_old_or_missing_kernels(built: Path) -> None:
    (error,) = _only(diagnose(built, FakeProbes(kernels="0.10.1")), "error")
    assert "0.10.1 is older than" in error
    (warning,) = _only(diagnose(built, FakeProbes(kernels=None)), "warning")
    assert "pip install kernels" in warning


def test_without_a_gpu_it_says_so_and_checks_the_rest(built: Path) -> None:
    findings = diagnose(built, FakeProbes(driver=None, visible=(), ninja_path=None))
    infos = "\n".join(_only(findings, "info"))
    assert "no NVIDIA driver" in infos and "no CUDA GPU visible" in infos
    assert _only(findings, "error") == [
        "ninja: ninja not found; kscaffold build needs it: pip install ninja"
    ]


def test_nix_is_only_information(built: Path) -> None:
    findings = diagnose(built, FakeProbes(nix_path=Path("/nix/bin/nix")))
    assert "nix: /nix/bin/nix: the release build (flake.nix) can run here" in _only(
        findings, "info"
    )


def test_the_real_probes_on_this_machine_pass_a_fresh_project(project: Path) -> None:
    # Whatever this machine has (GPU or not), a fresh unbuilt project is no error to doctor.
    result = runner.invoke(app, ["doctor", str(project)])
    assert result.exit_code == 0, result.output
    assert "torch:" in result.output and "ninja:" in result.output
    if not SystemProbes().gpus():
        assert "no CUDA GPU visible" in result.output


def test_the_command_exits_1_on_an_error(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scaffold.testing.doctor.SystemProbes", lambda: FakeProbes(ninja_path=None))
    result = runner.invoke(app, ["doctor", str(built)])
    assert result.exit_code == 1, result.output
    assert "error   ninja: ninja not found" in result.output
    assert "1 error." in result.output


def test_toolkit_and_torch_of_different_cuda_majors(built: Path) -> None:
    toolkit = ToolkitInfo(Path("/cuda/bin/nvcc"), (12, 9))
    (error,) = _only(diagnose(built, FakeProbes(cuda_toolkit=toolkit)), "error")
    assert error.startswith("toolkit: nvcc is CUDA 12.9, torch 2.14.1+cu130 was built with CUDA")
    assert "Install a CUDA 13.x toolkit (CUDA_HOME) or a torch built for CUDA 12." in error


def test_a_backend_not_built_yet_is_information(built: Path) -> None:
    shutil.rmtree(built / "build" / TORCH.variants["cuda"])
    findings = diagnose(built, FakeProbes())
    assert _only(findings, "error") == []
    assert (
        "build: no cuda variant in build/ yet: kscaffold build --backend cuda (it says why, "
        "if it cannot)" in _only(findings, "info")
    )
