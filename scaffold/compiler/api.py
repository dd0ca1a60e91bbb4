"""``build_project``: compile a kernel project into ``build/<variant>/`` for ``kernels``."""

from __future__ import annotations

import platform
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scaffold.buildconfig import BuildConfig, load_build_config
from scaffold.compiler.archs import ArchPolicy, make_arch_policy
from scaffold.compiler.compdb import update_compile_commands
from scaffold.compiler.deps import resolve_dependencies
from scaffold.compiler.install import install_variant, python_files, remove_stale_libraries
from scaffold.compiler.ninjafile import write_if_changed, write_scratch_files
from scaffold.compiler.plan import Toolchain, VariantPlan, plan_variant
from scaffold.compiler.reporter import BuildReporter
from scaffold.compiler.runner import compile_commands, run_ninja
from scaffold.compiler.toolchain import (
    CudaToolkit,
    TorchInstall,
    cuda_include_dirs,
    find_cuda_toolkit,
    find_cxx,
    find_ninja,
    find_torch,
    nvcc_supported_archs,
    python_include_dir,
    shared_cxx_runtime,
    visible_gpu_capabilities,
)
from scaffold.compiler.uid import project_uid
from scaffold.compiler.variant import ops_name, variant_name
from scaffold.errors import InvalidOptionError, ToolchainError
from scaffold.manifest import record_generated
from scaffold.vocabulary import BUILD_TOML, SUPPORTED_BACKENDS

#: kscaffold's own folder in a project: scratch builds, caches and the generated-files record.
STATE_DIR = ".kscaffold"


@dataclass(frozen=True)
class BuildResult:
    """One variant written to ``build/``."""

    backend: str
    variant: str
    variant_dir: Path
    ops_name: str
    #: CUDA archs compiled into the library, e.g. ``("8.0", "9.0+PTX")``; empty for CPU.
    archs: tuple[str, ...]
    #: Sources compiled by this build (project-relative); empty when all were up to date.
    compiled: tuple[str, ...]
    linked: bool

    @property
    def recompiled(self) -> bool:
        return bool(self.compiled) or self.linked


def build_project(
    project: Path,
    *,
    backend: str | None = None,
    cuda_archs: Sequence[str] | None = None,
    jobs: int | None = None,
    reporter: BuildReporter | None = None,
) -> list[BuildResult]:
    """Build every backend of ``project`` this machine can build, or only ``backend``.

    Without ``backend``, the CPU backend is always built and CUDA only when torch is a CUDA build
    and nvcc is found (otherwise it is skipped with a note). Asking for ``backend="cuda"`` or
    giving ``cuda_archs`` makes a missing CUDA toolchain an error. ``cuda_archs`` (``"9.0"``,
    ``"9.0a"``, ``"12.0+PTX"``) overrides the archs chosen as :class:`ArchPolicy` describes.
    Compiles incrementally in ``.kscaffold/build/<variant>/`` and writes ``build/<variant>/``,
    ``compile_commands.json`` and the record of generated files.
    """
    reporter = reporter or BuildReporter()
    project = project.resolve()
    if platform.system() != "Linux":
        raise ToolchainError(f"kscaffold build runs on Linux only, not on {platform.system()}.")
    if jobs is not None and jobs < 1:
        raise InvalidOptionError(f"--jobs must be at least 1, not {jobs}.")
    config = load_build_config(project)
    config.check_sources()
    state = project / STATE_DIR
    torch = find_torch(state)
    selected = _select_backends(config, torch, backend, cuda_archs, reporter)
    toolkit = selected.get("cuda")
    cxx = find_cxx()
    tools = Toolchain(
        torch=torch,
        cxx=cxx,
        python_include=python_include_dir(),
        cuda=toolkit,
        cuda_include_dirs=cuda_include_dirs(toolkit, torch) if toolkit is not None else (),
        cxx_runtime=shared_cxx_runtime(cxx),
    )
    ninja = find_ninja()
    archs = _arch_policy(toolkit, cuda_archs) if toolkit is not None else None

    sources = [project / BUILD_TOML, *(project / s for s in config.source_files())]
    uid = project_uid(project, [*sources, *python_files(config)], state)
    plans = [_plan(config, name, uid, tools, archs, reporter) for name in selected]
    # A folder git and tools should leave alone, whatever the project's .gitignore says.
    write_if_changed(state / ".gitignore", "*\n")

    results: list[BuildResult] = []
    commands: dict[Path, list[dict[str, str]]] = {}
    generated: list[Path] = []
    try:
        for plan in plans:
            write_scratch_files(plan, project)
            reporter.variant_started(plan.backend, plan.variant)
            run = run_ninja(ninja, plan.scratch, variant=plan.variant, jobs=jobs, reporter=reporter)
            remove_stale_libraries(plan.scratch, keep=plan.so_name)
            generated += install_variant(config, plan)
            commands[plan.scratch] = compile_commands(ninja, plan.scratch)
            result = BuildResult(
                backend=plan.backend,
                variant=plan.variant,
                variant_dir=project / "build" / plan.variant,
                ops_name=plan.ops_name,
                archs=tuple(str(arch) for arch in plan.archs),
                compiled=run.compiled,
                linked=run.linked,
            )
            reporter.variant_finished(result)
            results.append(result)
    finally:
        # Variants finished before a failure stay installed, so they must be on record too.
        if commands:
            generated.append(update_compile_commands(project, commands))
        if generated:
            record_generated(project, generated)
    return results


def _select_backends(
    config: BuildConfig,
    torch: TorchInstall,
    requested: str | None,
    cuda_archs: Sequence[str] | None,
    reporter: BuildReporter,
) -> dict[str, CudaToolkit | None]:
    """The backends to build, each with its CUDA toolkit (None for CPU), in canonical order."""
    declared = ", ".join(config.backends)
    if requested is not None:
        requested = requested.strip().lower()
        if requested not in SUPPORTED_BACKENDS:
            raise InvalidOptionError(
                f"Cannot build backend '{requested}': kscaffold builds "
                f"{' and '.join(SUPPORTED_BACKENDS)}."
            )
        if requested not in config.backends:
            raise InvalidOptionError(
                f"{BUILD_TOML} declares backends {declared}, not {requested}: add it to "
                "general.backends (with its kernels) or build one of those."
            )
        wanted = [requested]
    else:
        wanted = [name for name in SUPPORTED_BACKENDS if name in config.backends]
        for name in config.backends:
            if name not in SUPPORTED_BACKENDS:
                reporter.note(f"Skipping the {name} backend: kscaffold cannot build it.")
    if cuda_archs is not None and "cuda" not in wanted:
        raise InvalidOptionError(
            f"CUDA archs were given, but this build has no cuda backend ({BUILD_TOML} declares "
            f"{declared}{f'; asked for {requested}' if requested else ''})."
        )

    selected: dict[str, CudaToolkit | None] = {}
    for name in wanted:
        if name != "cuda":
            selected[name] = None
            continue
        try:
            selected[name] = _cuda_toolchain(torch)
        except ToolchainError as error:
            if requested == "cuda" or cuda_archs is not None or len(wanted) == 1:
                raise
            reporter.note(f"Skipping the cuda backend: {error}")
    return selected


def _cuda_toolchain(torch: TorchInstall) -> CudaToolkit:
    if torch.cuda is None:
        release = re.sub(r"\+.*$", "", torch.version)
        raise ToolchainError(
            f"torch {torch.version} is a CPU-only build, which cannot build CUDA kernels: "
            f"pip install torch=={release} (a CUDA build; PyPI's Linux x86_64 wheels are)."
        )
    toolkit = find_cuda_toolkit()
    torch_major = int(torch.cuda.split(".")[0])
    if toolkit.version[0] != torch_major:
        found = f"{toolkit.version[0]}.{toolkit.version[1]}"
        raise ToolchainError(
            f"nvcc in {toolkit.home} is CUDA {found}, but torch {torch.version} was built with "
            f"CUDA {torch.cuda}: install a CUDA {torch_major}.x toolkit (and set CUDA_HOME to it) "
            f"or a torch built for CUDA {toolkit.version[0]}."
        )
    return toolkit


def _arch_policy(toolkit: CudaToolkit, requested: Sequence[str] | None) -> ArchPolicy:
    return make_arch_policy(
        requested,
        supported=nvcc_supported_archs(toolkit.nvcc),
        cuda_version=toolkit.version,
        visible_gpus=visible_gpu_capabilities,
    )


def _plan(
    config: BuildConfig,
    backend: str,
    uid: str,
    tools: Toolchain,
    archs: ArchPolicy | None,
    reporter: BuildReporter,
) -> VariantPlan:
    variant = variant_name(tools.torch, backend)
    dependencies = resolve_dependencies(config.kernels_for(backend))
    for note in dependencies.notes:
        reporter.note(note)
    return plan_variant(
        config,
        backend=backend,
        variant=variant,
        ops_name=ops_name(config.python_name, backend, uid),
        scratch=config.project / STATE_DIR / "build" / variant,
        tools=tools,
        archs=archs if backend == "cuda" else None,
        dependency_dirs=dependencies.include_dirs,
    )
