"""``build_project``: compile a kernel project into ``build/<variant>/`` for ``kernels``."""

from __future__ import annotations

import contextlib
import platform
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import filelock

from scaffold.compiler.archs import ArchPolicy, make_arch_policy
from scaffold.compiler.compdb import update_compile_commands
from scaffold.compiler.deps import resolve_dependencies
from scaffold.compiler.devarchs import development_archs
from scaffold.compiler.install import install_variant, python_files, remove_stale_libraries
from scaffold.compiler.ninjafile import write_if_changed, write_scratch_files
from scaffold.compiler.plan import Toolchain, VariantPlan, plan_variant
from scaffold.compiler.reporter import BuildReporter, BuildResult
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
from scaffold.compiler.variant import noarch_variant_name, ops_name, variant_name
from scaffold.errors import BuildConfigError, InvalidOptionError, ToolchainError
from scaffold.outputs.manifest import record_generated
from scaffold.project.buildconfig import BuildConfig, load_build_config
from scaffold.project.pyregistrations import refuse_unprefixed_registrations
from scaffold.vocabulary import (
    BUILD_DIR,
    BUILD_TOML,
    COMPDB_NAME,
    SCRATCH_DIR,
    SUPPORTED_BACKENDS,
    UNLOADABLE_NOARCH_BACKENDS,
)

#: The lock a build holds in SCRATCH_DIR, so concurrent builds of one project take turns.
LOCK_NAME = "build.lock"


def build_project(
    project: Path,
    *,
    backend: str | None = None,
    cuda_archs: Sequence[str] | None = None,
    jobs: int | None = None,
    reporter: BuildReporter | None = None,
    release: bool = False,
) -> list[BuildResult]:
    """Build every backend of ``project`` this machine can build, or only ``backend``.

    Without ``backend``, the CPU backend is always built and CUDA only when torch is a CUDA build
    and nvcc is found (otherwise it is skipped with a note). Asking for ``backend="cuda"`` or
    giving ``cuda_archs`` makes a missing CUDA toolchain an error. ``cuda_archs`` (``"9.0"``,
    ``"9.0a"``, ``"12.0+PTX"``) are the targets that each table's ``cuda-capabilities`` are
    narrowed to, as :class:`ArchPolicy` describes. Without them and without a visible GPU, a
    development build targets one arch per CUDA kernel
    (:func:`~scaffold.compiler.devarchs.development_archs`, said in a note); ``release`` targets
    every arch the release carries instead, whatever GPU is visible. A backend in
    ``torch.stable-abi`` builds the ``torch-stable-abi<NN>`` variant; a ``[torch-noarch]`` project
    compiles nothing and writes ``build/torch-<backend>/`` for each declared backend.
    Compiles incrementally in ``.kscaffold/build/<variant>/`` and writes ``build/<variant>/``,
    ``compile_commands.json`` and the record of generated files.
    """
    reporter = reporter or BuildReporter()
    project = project.resolve()
    if platform.system() != "Linux":
        raise ToolchainError(f"kscaffold build runs on Linux only, not on {platform.system()}.")
    if jobs is not None and jobs < 1:
        raise InvalidOptionError(f"--jobs must be at least 1, not {jobs}.")
    if release and cuda_archs is not None:
        raise InvalidOptionError(
            "Give --release or --cuda-archs, not both: --release compiles every arch the "
            "release carries, --cuda-archs exactly the archs listed."
        )
    config = load_build_config(project)
    if config.framework not in ("torch", "torch-noarch"):
        raise ToolchainError(
            f"{BUILD_TOML} declares a [{config.framework}] kernel, which kscaffold does not "
            "build (it builds [torch] and [torch-noarch] kernels): build it with kernel-builder."
        )
    config.check_sources()
    refuse_unprefixed_registrations(project)
    state = project / SCRATCH_DIR
    _usable_folder(project, project / BUILD_DIR, create=False)
    _usable_folder(project, state, create=True)
    with _build_lock(state, reporter):
        return _build_locked(
            project, config, state, backend, cuda_archs, jobs, reporter, release=release
        )


def _usable_folder(project: Path, folder: Path, *, create: bool) -> None:
    """Say why ``folder`` inside ``project`` cannot be kscaffold's; create it if asked."""
    relative = folder.relative_to(project)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise BuildConfigError(
            f"{folder} is in the way: kscaffold build writes the folder {relative}/ there. "
            "Move it aside (or delete it if it is not yours) and build again."
        )
    try:
        if create:
            folder.mkdir(exist_ok=True)
    except OSError as error:
        raise BuildConfigError(
            f"Cannot create {folder}: {error.strerror or error}. Make {project} writable and "
            "build again."
        ) from error


@contextlib.contextmanager
def _build_lock(state: Path, reporter: BuildReporter) -> Iterator[None]:
    """Hold ``.kscaffold/build.lock``: one build of a project at a time, the others wait.

    The lock is an OS file lock, released when its process exits however it exits.
    """
    lock = filelock.FileLock(state / LOCK_NAME)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        reporter.note(f"Waiting for another kscaffold build of this project ({state / LOCK_NAME}).")
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _build_locked(
    project: Path,
    config: BuildConfig,
    state: Path,
    backend: str | None,
    cuda_archs: Sequence[str] | None,
    jobs: int | None,
    reporter: BuildReporter,
    *,
    release: bool,
) -> list[BuildResult]:
    if config.is_noarch:
        return _build_noarch(config, backend, cuda_archs, reporter)
    if backend is None and not set(config.backends) & set(SUPPORTED_BACKENDS):
        raise ToolchainError(
            f"Nothing to build: {BUILD_TOML} declares only {', '.join(config.backends)}, and "
            f"kscaffold builds {' and '.join(SUPPORTED_BACKENDS)} kernels on Linux "
            f"({'; '.join(_why_not(name) for name in config.backends)})."
        )
    torch = find_torch(state)
    _check_torch_bounds(config, torch)
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
    archs = (
        _arch_policy(config, toolkit, cuda_archs, release=release, reporter=reporter)
        if toolkit is not None
        else None
    )

    sources = [project / BUILD_TOML, *(project / s for s in config.source_files())]
    uid = project_uid(project, [*sources, *python_files(config)], state)
    plans = [_plan(config, name, uid, tools, archs, reporter) for name in selected]
    plans = _drop_empty_variants(config, plans, backend, reporter)
    for plan in plans:
        target = project / BUILD_DIR / plan.variant
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            raise BuildConfigError(
                f"{target} is in the way: kscaffold build writes the variant there and "
                "replaces it whole. Move it aside (or delete it if it is not yours) and rebuild."
            )
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
                variant_dir=project / BUILD_DIR / plan.variant,
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
            written = update_compile_commands(project, commands)
            if written is not None:
                generated.append(written)
            else:
                reporter.note(
                    f"{COMPDB_NAME} is not the one kscaffold wrote, so it stays as it is; the "
                    f"compile commands are in {SCRATCH_DIR}/build/<variant>/ (`ninja -t compdb`)."
                )
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
                reporter.backend_skipped(name, f"{_why_not(name)}.")
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
            selected[name] = toolkit = _cuda_toolchain(torch)
            if toolkit.from_pip:
                reporter.note(
                    f"CUDA {toolkit.version[0]}.{toolkit.version[1]}: the toolkit of NVIDIA's pip "
                    f"packages in {toolkit.home} (no CUDA_HOME, no nvcc on PATH)."
                )
        except ToolchainError as error:
            if requested == "cuda" or cuda_archs is not None or len(wanted) == 1:
                raise
            reporter.backend_skipped(name, str(error))
    return selected


#: Why kscaffold does not build a backend kernel-builder knows, for notes and errors.
_NOT_BUILT: dict[str, str] = {
    "metal": "Metal kernels need macOS and Apple's Metal compiler",
    "rocm": "ROCm kernels need a ROCm build of torch and hipcc",
    "xpu": "XPU kernels need Intel's oneAPI SYCL compiler",
}


def _why_not(backend: str) -> str:
    reason = _NOT_BUILT.get(backend, f"{backend} kernels are not built by kscaffold")
    return f"{reason}; build the {backend} variant with kernel-builder"


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def _check_torch_bounds(config: BuildConfig, torch: TorchInstall) -> None:
    """[torch] minver/maxver, and every stable-ABI version, against the installed torch."""
    installed = _version_tuple(torch.version)
    bounds = config.torch

    def shown(version: tuple[int, ...]) -> str:
        return ".".join(str(part) for part in version)

    def padded(version: tuple[int, ...]) -> tuple[int, ...]:
        return (version + (0, 0, 0))[:3]

    if bounds.minver is not None and padded(installed) < padded(bounds.minver):
        raise ToolchainError(
            f"torch {torch.version} is older than torch.minver {shown(bounds.minver)} in "
            f"{BUILD_TOML}: pip install 'torch>={shown(bounds.minver)}'."
        )
    if bounds.maxver is not None and padded(installed)[: len(bounds.maxver)] > bounds.maxver:
        raise ToolchainError(
            f"torch {torch.version} is newer than torch.maxver {shown(bounds.maxver)} in "
            f"{BUILD_TOML}: install torch {shown(bounds.maxver)}."
        )


def _stable_abi(config: BuildConfig, backend: str, torch: TorchInstall) -> tuple[int, int] | None:
    version = config.torch.stable_abi.get(backend)
    if version is not None and torch.major_minor < version:
        raise ToolchainError(
            f"{BUILD_TOML}: torch.stable-abi targets torch {version[0]}.{version[1]} for "
            f"{backend}, but the installed torch is {torch.version}: a stable-ABI build "
            f"needs torch {version[0]}.{version[1]} or newer."
        )
    return version


def _drop_empty_variants(
    config: BuildConfig, plans: list[VariantPlan], requested: str | None, reporter: BuildReporter
) -> list[VariantPlan]:
    """Leave out a variant that would hold only the bindings: it has no kernel to run."""
    kept: list[VariantPlan] = []
    for plan in plans:
        if config.kernels_for(plan.backend):
            kept.append(plan)
            continue
        reason = (
            f"general.backends lists {plan.backend}, but no [kernel.*] table has "
            f'backend = "{plan.backend}" (kscaffold add-backend {plan.backend} writes one)'
        )
        if requested is not None or len(plans) == 1:
            raise BuildConfigError(f"{BUILD_TOML}: {reason}.")
        reporter.note(f"Skipping the {plan.backend} backend: {reason}.")
    return kept


def _build_noarch(
    config: BuildConfig,
    requested: str | None,
    cuda_archs: Sequence[str] | None,
    reporter: BuildReporter,
) -> list[BuildResult]:
    """Build a ``[torch-noarch]`` kernel: nothing is compiled.

    Its Python package goes into ``build/torch-<backend>/`` for each backend of
    ``general.backends`` (or only ``requested``), as kernel-builder lays it out.
    """
    if cuda_archs is not None:
        raise InvalidOptionError(
            f"--cuda-archs does not apply: {BUILD_TOML} declares a [torch-noarch] kernel, "
            "which is not compiled (list its archs in [torch-noarch] cuda_capabilities)."
        )
    backends = list(config.backends)
    if requested is not None:
        requested = requested.strip().lower()
        if requested not in config.backends:
            raise InvalidOptionError(
                f"{BUILD_TOML} declares backends {', '.join(config.backends)}, not {requested}."
            )
        backends = [requested]
    for name in [name for name in backends if name in UNLOADABLE_NOARCH_BACKENDS]:
        reason = UNLOADABLE_NOARCH_BACKENDS[name]
        if requested is not None or len(backends) == 1:
            raise ToolchainError(f"Cannot build the {name} variant: {reason}.")
        reporter.backend_skipped(name, f"{reason}.")
        backends.remove(name)
    state = config.project / SCRATCH_DIR
    uid = project_uid(config.project, [config.project / BUILD_TOML, *python_files(config)], state)
    write_if_changed(state / ".gitignore", "*\n")
    results: list[BuildResult] = []
    generated: list[Path] = []
    try:
        for name in backends:
            variant = noarch_variant_name(name)
            plan = VariantPlan(
                backend=name,
                variant=variant,
                ops_name=ops_name(config.python_name, name, uid),
                scratch=state / "build" / variant,
                cxx=Path(),
                nvcc=None,
                steps=(),
                link_flags=(),
                archs=(),
            )
            reporter.variant_started(name, variant)
            generated += install_variant(config, plan)
            result = BuildResult(
                backend=name,
                variant=variant,
                variant_dir=config.project / BUILD_DIR / variant,
                ops_name=plan.ops_name,
                archs=config.torch.noarch_archs.get(name, ()),
                compiled=(),
                linked=False,
                native=False,
            )
            reporter.variant_finished(result)
            results.append(result)
    finally:
        if generated:
            record_generated(config.project, generated)
    return results


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


def _arch_policy(
    config: BuildConfig,
    toolkit: CudaToolkit,
    requested: Sequence[str] | None,
    *,
    release: bool,
    reporter: BuildReporter,
) -> ArchPolicy:
    supported = nvcc_supported_archs(toolkit.nvcc)
    # A release ignores the visible GPU; a development build without one requests one arch.
    gpus: tuple[tuple[int, int], ...] = ()
    if requested is None and not release:
        gpus = visible_gpu_capabilities()
        if not gpus:
            development = development_archs(
                config.kernels_for("cuda"), supported=supported, cuda_version=toolkit.version
            )
            if development is not None:
                requested = development.requested
                reporter.note(development.describe())
    return make_arch_policy(
        requested, supported=supported, cuda_version=toolkit.version, visible_gpus=lambda: gpus
    )


def _plan(
    config: BuildConfig,
    backend: str,
    uid: str,
    tools: Toolchain,
    archs: ArchPolicy | None,
    reporter: BuildReporter,
) -> VariantPlan:
    stable_abi = _stable_abi(config, backend, tools.torch)
    variant = variant_name(tools.torch, backend, stable_abi=stable_abi)
    dependencies = resolve_dependencies(config.kernels_for(backend))
    for note in dependencies.notes:
        reporter.note(note)
    plan = plan_variant(
        config,
        backend=backend,
        variant=variant,
        ops_name=ops_name(config.python_name, backend, uid),
        scratch=config.project / SCRATCH_DIR / "build" / variant,
        tools=tools,
        archs=archs if backend == "cuda" else None,
        dependency_dirs=dependencies.include_dirs,
        stable_abi=stable_abi,
    )
    for note in plan.notes:
        reporter.note(note)
    return plan
