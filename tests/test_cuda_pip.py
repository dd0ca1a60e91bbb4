"""CUDA from pip: `build` finds the toolkit NVIDIA's wheels install, and says so.

Fast: the search order (CUDA_HOME, then nvcc on PATH, then pip's, then /usr/local/cuda) on fake
toolkits, and the hint that names the pip line. Slow: the worked example's CUDA variant compiled
with only pip's packages (installed once into a cached folder), CUDA_HOME unset and no nvcc on
PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import scaffold.cli.hints as hints
from scaffold.compiler.pipcuda import PIP_PACKAGES, pip_install_line, pip_requirements
from scaffold.compiler.toolchain import find_cuda_toolkit, torch_cuda_version
from scaffold.errors import ToolchainError

REPO = Path(__file__).resolve().parent.parent


def fake_toolkit(home: Path, version: str = "13.0") -> Path:
    (home / "bin").mkdir(parents=True)
    (home / "include").mkdir()
    (home / "lib").mkdir()
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {version}, V{version}.88'\n")
    nvcc.chmod(0o755)
    (home / "include" / "cuda_runtime.h").write_text("")
    (home / "lib" / "libcudart.so.13").write_text("")
    return home


@pytest.fixture
def no_system_nvcc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """CUDA_HOME and CUDA_PATH unset, no nvcc on PATH; returns a folder to put on sys.path."""
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(variable, raising=False)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(str(site))
    return site


def test_pip_toolkit_is_found_without_cuda_home_or_nvcc_on_path(no_system_nvcc: Path) -> None:
    home = fake_toolkit(no_system_nvcc / "nvidia" / "cu13")
    toolkit = find_cuda_toolkit()
    assert toolkit.from_pip and toolkit.home == home.resolve() and toolkit.version == (13, 0)
    # pip's runtime is libcudart.so.13 only: linked by that name.
    assert toolkit.cudart_flag == "-l:libcudart.so.13"


def test_cuda_home_still_wins(
    no_system_nvcc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_toolkit(no_system_nvcc / "nvidia" / "cu13")
    system = fake_toolkit(tmp_path / "system-cuda", "13.1")
    (system / "lib" / "libcudart.so").write_text("")
    monkeypatch.setenv("CUDA_HOME", str(system))
    toolkit = find_cuda_toolkit()
    assert not toolkit.from_pip and toolkit.home == system.resolve()
    assert toolkit.cudart_flag == "-lcudart"


def test_pip_line_pins_every_package_to_torchs_cuda_minor() -> None:
    line = pip_install_line("13.0")
    assert line.startswith("pip install ")
    assert [f'"{name}==13.0.*"' for name in PIP_PACKAGES] == line.split()[2:]
    assert {"nvidia-cuda-nvcc", "nvidia-cuda-runtime", "nvidia-cuda-cccl"} <= set(PIP_PACKAGES)


@pytest.mark.parametrize("gpu", [True, False])
def test_new_hint_installs_the_compiler_on_a_gpu_machine_without_toolkit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gpu: bool
) -> None:
    def missing() -> None:
        raise ToolchainError("nvcc was not found")

    monkeypatch.setattr(hints, "gpu_present", lambda: gpu)
    monkeypatch.setattr(hints, "torch_cuda_version", lambda: "13.0")
    monkeypatch.setattr(hints, "find_cuda_toolkit", missing)
    line = hints.next_steps(tmp_path, cuda=True)
    pins = " ".join(pip_requirements("13.0"))
    assert (pins in line) is gpu, line
    assert pins not in hints.next_steps(tmp_path, cuda=False)


def _cached_pip_toolkit(cuda: str) -> Path:
    """NVIDIA's CUDA packages for torch's CUDA, installed once with --target into a cache folder."""
    cache = Path(os.environ.get("KSCAFFOLD_TEST_CACHE", Path.home() / ".cache" / "kscaffold-tests"))
    target = cache / f"cuda-pip-{cuda}"
    if not (target / "nvidia").is_dir():
        partial = cache / f"cuda-pip-{cuda}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(partial)]
        result = subprocess.run(
            [*command, *(r.strip('"') for r in pip_requirements(cuda))],
            capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    return target


@pytest.mark.slow
def test_example_cuda_variant_builds_with_only_pips_toolkit(tmp_path: Path) -> None:
    cuda = torch_cuda_version()
    if cuda is None:
        pytest.skip("needs a CUDA build of torch (torch.version.cuda is None)")
    packages = _cached_pip_toolkit(cuda)
    project = tmp_path / "img2gray"
    shutil.copytree(REPO / "examples" / "img2gray", project)
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    # /usr/local/cuda (and any other nvcc) off PATH.
    env["PATH"] = os.pathsep.join(
        folder
        for folder in env.get("PATH", "").split(os.pathsep)
        if folder and not (Path(folder) / "nvcc").exists() and "cuda" not in folder
    )
    env["PYTHONPATH"] = os.pathsep.join(
        [str(packages), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    command = [sys.executable, "-m", "scaffold", "build", "--backend", "cuda"]
    command += ["--cuda-archs", "7.5"]
    result = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    home = packages / "nvidia" / f"cu{cuda.split('.')[0]}"
    assert f"the toolkit of NVIDIA's pip packages in {home.resolve()}" in " ".join(output.split())
    (variant,) = (project / "build").glob("torch*-cu*")
    (library,) = variant.glob("*.abi3.so")
    assert library.stat().st_size > 0
