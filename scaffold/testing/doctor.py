"""``kscaffold doctor``: will this project's build load and run on this machine?

It compares what the machine has (driver, toolkit, torch, GPUs, host compiler, tools; asked through
:mod:`scaffold.testing.probes`) with what ``build/`` holds (each variant's ``metadata.json``), and
reports one :class:`DoctorFinding` per fact: an error for what stops a kernel from building,
loading or running here, a warning for what may, ok and info for the rest. Without a GPU it says
so and checks everything else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from scaffold.compiler.archs import CudaArch
from scaffold.outputs.provenance import KERNELS_MINVER
from scaffold.testing.probes import Probes, SystemProbes, TorchInfo, parse_version
from scaffold.vocabulary import BUILD_DIR, BUILD_TOML

Level = Literal["error", "warning", "ok", "info"]


@dataclass(frozen=True)
class DoctorFinding:
    """One fact doctor established: how it stands, about what, and what to do."""

    level: Level
    topic: str
    message: str

    @property
    def is_error(self) -> bool:
        return self.level == "error"

    def __str__(self) -> str:
        return f"{self.level}: {self.topic}: {self.message}"


@dataclass(frozen=True)
class BuiltVariant:
    """One ``build/<variant>/`` folder and what its metadata.json records."""

    name: str
    backend: str
    archs: tuple[str, ...]


def _version(pair: tuple[int, int]) -> str:
    return f"{pair[0]}.{pair[1]}"


def built_variants(project: Path) -> list[BuiltVariant]:
    """The variants under ``build/`` with a readable metadata.json, by name."""
    build = project / BUILD_DIR
    found = []
    for metadata in sorted(build.glob("*/metadata.json")) if build.is_dir() else []:
        try:
            data = json.loads(metadata.read_text(encoding="utf-8"))
            backend = data["backend"]
            kind = str(backend["type"])
            archs = tuple(str(arch) for arch in backend.get("archs", []))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # `kscaffold check` reports unreadable metadata; here it loads nothing
        found.append(BuiltVariant(metadata.parent.name, kind, archs))
    return found


def runs_on(arch: CudaArch, capability: tuple[int, int]) -> str | None:
    """How code for ``arch`` runs on a GPU of ``capability``: "SASS x.y", "PTX x.y" or None.

    SASS runs on the same major at an equal or higher minor (arch-specific "a" code only on its
    own capability, family "f" code across its major); PTX is compiled by the driver for any
    capability at least its own ("a" PTX only on its own).
    """
    if arch.suffix == "a":
        sass = capability == arch.base
    else:
        sass = capability[0] == arch.major and capability[1] >= arch.minor
    if sass:
        return f"SASS {arch.major}.{arch.minor}{arch.suffix}"
    if arch.ptx and (capability == arch.base if arch.suffix == "a" else capability >= arch.base):
        return f"PTX {arch.major}.{arch.minor}{arch.suffix}"
    return None


def loads(variant: str, backend: str, torch: TorchInfo) -> bool:
    """Whether the ``kernels`` loader takes ``build/<variant>/`` for ``backend`` with ``torch``."""
    if variant in (f"torch-{backend}", "torch-universal"):
        return True  # pure-Python variants load with any torch
    wanted = torch.variants.get(backend)
    if wanted is None:
        return False
    if variant == wanted:
        return True
    # Stable-ABI variants load with the torch they name and every newer one.
    stable = re.fullmatch(r"torch-stable-abi(\d)(\d+)-(.+)", variant)
    tail = wanted.split("-", 2)[-1] if wanted.count("-") >= 2 else ""
    if stable and torch.major_minor is not None and tail:
        targets = (int(stable[1]), int(stable[2]))
        return targets <= torch.major_minor and stable[3] == tail
    return False


def _driver_findings(probes: Probes, torch: TorchInfo | None) -> list[DoctorFinding]:
    driver = probes.driver_cuda_version()
    toolkit = probes.toolkit()
    findings: list[DoctorFinding] = []
    if toolkit is None:
        findings.append(
            DoctorFinding(
                "info",
                "toolkit",
                "nvcc not found (CUDA_HOME, /usr/local/cuda, PATH): CUDA variants cannot be "
                "built here; install the CUDA toolkit or set CUDA_HOME to build them.",
            )
        )
    else:
        findings.append(
            DoctorFinding("ok", "toolkit", f"nvcc {_version(toolkit.version)} at {toolkit.nvcc}")
        )
    torch_cuda = torch.cuda_version if torch is not None else None
    if (
        toolkit is not None
        and torch is not None
        and torch_cuda is not None
        and toolkit.version[0] != torch_cuda[0]
    ):
        findings.append(
            DoctorFinding(
                "error",
                "toolkit",
                f"nvcc is CUDA {_version(toolkit.version)}, torch {torch.version} was built "
                f"with CUDA {torch.cuda}: kscaffold build refuses to mix them. Install a CUDA "
                f"{torch_cuda[0]}.x toolkit (CUDA_HOME) or a torch built for CUDA "
                f"{toolkit.version[0]}.",
            )
        )
    if driver is None:
        findings.append(
            DoctorFinding(
                "info",
                "driver",
                "no NVIDIA driver (libcuda.so.1 not found): CUDA kernels cannot run here.",
            )
        )
        return findings
    findings.append(
        DoctorFinding("ok", "driver", f"the NVIDIA driver supports CUDA up to {_version(driver)}")
    )
    needs: list[tuple[str, tuple[int, int], str]] = []
    if toolkit is not None:
        needs.append(
            (
                f"the CUDA {_version(toolkit.version)} toolkit ({toolkit.nvcc})",
                toolkit.version,
                "or build with an older toolkit (CUDA_HOME)",
            )
        )
    if torch is not None and torch_cuda is not None:
        needs.append(
            (
                f"torch {torch.version} (built for CUDA {_version(torch_cuda)})",
                torch_cuda,
                f"or install a torch built for CUDA {driver[0]}.x",
            )
        )
    for what, version, alternative in needs:
        if driver[0] < version[0]:
            findings.append(
                DoctorFinding(
                    "error",
                    "driver",
                    f"the driver supports CUDA {_version(driver)}, older than {what}: its "
                    f"kernels will not load. Update the NVIDIA driver to one for CUDA "
                    f"{_version(version)} or newer, {alternative}.",
                )
            )
        elif driver < version:
            # CUDA's minor-version compatibility: SASS of a newer minor loads on an older
            # driver of the same major; PTX JIT and newer driver APIs do not.
            findings.append(
                DoctorFinding(
                    "warning",
                    "driver",
                    f"the driver supports CUDA {_version(driver)}, older than {what}: SASS "
                    "loads through CUDA's minor-version compatibility, but PTX cannot be "
                    f"JIT-compiled. Update the NVIDIA driver to one for CUDA {_version(version)}.",
                )
            )
    return findings


def _gpu_findings(
    probes: Probes, variants: list[BuiltVariant], torch: TorchInfo | None
) -> list[DoctorFinding]:
    gpus = probes.gpus()
    if not gpus:
        return [
            DoctorFinding(
                "info",
                "gpu",
                "no CUDA GPU visible (torch.cuda.is_available() is False): the GPU checks "
                "are skipped, the rest is checked.",
            )
        ]
    findings = []
    cuda_variants = [
        v
        for v in variants
        if v.backend == "cuda" and (torch is None or loads(v.name, "cuda", torch))
    ]
    for gpu in gpus:
        cc = _version(gpu.capability)
        about = f"GPU {gpu.index} ({gpu.name}, compute capability {cc})"
        if not cuda_variants:
            findings.append(DoctorFinding("ok", "gpu", about))
            continue
        for variant in cuda_variants:
            parsed = []
            for text in variant.archs:
                try:
                    parsed.append(CudaArch.parse(text))
                except ValueError:
                    continue
            how = [way for arch in parsed if (way := runs_on(arch, gpu.capability))]
            if how:
                findings.append(
                    DoctorFinding("ok", "gpu", f"{about} runs build/{variant.name}/ ({how[0]})")
                )
            else:
                archs = ", ".join(variant.archs) or "no recorded arch"
                findings.append(
                    DoctorFinding(
                        "error",
                        "gpu",
                        f"{about}: build/{variant.name}/ holds code for {archs}, none of which "
                        f"runs on it. Build for it: kscaffold build --cuda-archs {cc}",
                    )
                )
    return findings


def _project_backends(project: Path) -> tuple[str, ...] | None:
    from scaffold.errors import KscaffoldError
    from scaffold.project.buildconfig import load_build_config

    try:
        return tuple(load_build_config(project).backends)
    except KscaffoldError:
        return None


def _variant_findings(
    project: Path, variants: list[BuiltVariant], torch: TorchInfo | None
) -> list[DoctorFinding]:
    if not (project / BUILD_TOML).is_file():
        return [
            DoctorFinding(
                "info", "project", f"no {BUILD_TOML} in {project}: only the machine is checked."
            )
        ]
    backends = _project_backends(project)
    if backends is None:
        return [
            DoctorFinding(
                "error",
                "project",
                f"{project / BUILD_TOML} cannot be read: run `kscaffold check` for the details.",
            )
        ]
    if not variants:
        return [
            DoctorFinding(
                "info", "build", f"nothing built in {project / BUILD_DIR} yet: run kscaffold build"
            )
        ]
    if torch is None:
        return []
    findings = []
    for backend in backends:
        built = [v.name for v in variants if v.backend == backend]
        if not built:
            findings.append(
                DoctorFinding(
                    "info",
                    "build",
                    f"no {backend} variant in build/ yet: kscaffold build --backend {backend} "
                    "(it says why, if it cannot)",
                )
            )
            continue
        loaded = [name for name in built if loads(name, backend, torch)]
        if loaded:
            findings.append(
                DoctorFinding(
                    "ok", "build", f"torch {torch.version} loads build/{loaded[0]}/ for {backend}"
                )
            )
            continue
        wanted = torch.variants.get(backend)
        if wanted is None:
            findings.append(
                DoctorFinding(
                    "warning",
                    "build",
                    f"build/ holds {', '.join(built)} for {backend}, but torch {torch.version} "
                    f"has no {backend} support: install a torch with {backend} to load it.",
                )
            )
            continue
        findings.append(
            DoctorFinding(
                "error",
                "build",
                f"no {backend} variant in build/ loads with torch {torch.version} (build/ has "
                f"{', '.join(built)}): build {wanted} with kscaffold build --backend {backend}",
            )
        )
    return findings


def _compiler_findings(probes: Probes) -> list[DoctorFinding]:
    cxx = probes.host_compiler()
    if cxx is None:
        return [
            DoctorFinding(
                "error", "compiler", "no C++ compiler found: install g++ or set CXX to one."
            )
        ]
    toolkit = probes.toolkit()
    if toolkit is None:
        return [DoctorFinding("ok", "compiler", f"{cxx.version} ({cxx.path})")]
    complaint = probes.host_compiler_rejected(toolkit.nvcc, cxx.path)
    if complaint is None:
        return [
            DoctorFinding(
                "ok",
                "compiler",
                f"{cxx.version} ({cxx.path}), accepted by nvcc {_version(toolkit.version)} "
                "as its host compiler",
            )
        ]
    return [
        DoctorFinding(
            "error",
            "compiler",
            f"nvcc {_version(toolkit.version)} rejects {cxx.path} ({cxx.version}) as its host "
            f"compiler: {complaint} Set CXX to a compiler it supports (e.g. an older g++).",
        )
    ]


def _tool_findings(probes: Probes) -> list[DoctorFinding]:
    findings = []
    ninja = probes.ninja()
    if ninja is None:
        findings.append(
            DoctorFinding(
                "error", "ninja", "ninja not found; kscaffold build needs it: pip install ninja"
            )
        )
    else:
        findings.append(DoctorFinding("ok", "ninja", str(ninja)))
    nix = probes.nix()
    findings.append(
        DoctorFinding(
            "info",
            "nix",
            f"{nix}: the release build (flake.nix) can run here"
            if nix
            else "not installed: needed only for the reproducible release build (flake.nix)",
        )
    )
    kernels = probes.kernels_version()
    if kernels is None:
        findings.append(
            DoctorFinding(
                "warning",
                "kernels",
                "not installed: the tests and users load builds through it: pip install kernels",
            )
        )
    elif (parse_version(kernels) or (0, 0)) < (parse_version(KERNELS_MINVER) or (0, 0)):
        findings.append(
            DoctorFinding(
                "error",
                "kernels",
                f"{kernels} is older than {KERNELS_MINVER}, the oldest that loads what kscaffold "
                f'builds: pip install "kernels>={KERNELS_MINVER}"',
            )
        )
    else:
        findings.append(DoctorFinding("ok", "kernels", kernels))
    return findings


def diagnose(project: Path, probes: Probes | None = None) -> list[DoctorFinding]:
    """Every finding about ``project`` on this machine (or the machine ``probes`` describe)."""
    probes = probes or SystemProbes()
    project = project.resolve()
    torch = probes.torch()
    findings: list[DoctorFinding] = []
    if torch is None:
        findings.append(DoctorFinding("error", "torch", "not installed: pip install torch"))
    else:
        where = f"CUDA {torch.cuda}" if torch.cuda else "CPU only"
        findings.append(DoctorFinding("ok", "torch", f"{torch.version} ({where})"))
    variants = built_variants(project)
    findings += _driver_findings(probes, torch)
    findings += _gpu_findings(probes, variants, torch)
    findings += _variant_findings(project, variants, torch)
    findings += _compiler_findings(probes)
    findings += _tool_findings(probes)
    return findings
