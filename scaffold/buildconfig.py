"""Read a project's ``build.toml`` (kernel-builder edition 5) into typed values.

Shared by ``kscaffold build``, ``clean`` and ``check``, so it knows nothing about compiling.
Every problem is a :class:`BuildConfigError` naming the key at fault, in the form
``build.toml: [kernel.relu_cuda] is missing 'src'``. Keys that edition 5 does not define are
refused rather than ignored, so a misspelt ``cuda-capabilites`` cannot silently do nothing.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from scaffold.errors import BuildConfigError, InvalidNameError, NotAProjectError
from scaffold.names import KernelName

BUILD_TOML = "build.toml"

#: Every backend edition 5 accepts in ``general.backends`` and ``[kernel.*] backend``.
KNOWN_BACKENDS: tuple[str, ...] = ("cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu")

_GENERAL_KEYS = {
    "name", "version", "license", "backends", "edition", "upstream", "source",
    "python-depends", "kernel-depends", "hub", "cuda", "xpu", "neuron", "tpu",
}  # fmt: skip
_HUB_KEYS = {"repo-id", "branch"}
_GENERAL_CUDA_KEYS = {"minver", "maxver", "python-depends", "kernel-depends"}
_TORCH_KEYS = {"src", "include", "pyext", "minver", "maxver", "cxx-flags", "stable-abi"}
_KERNEL_KEYS = {"backend", "depends", "src", "include", "cxx-flags"}
# Keys a kernel table may carry only for its own backend (a cpu kernel with cuda-flags is an error).
_KERNEL_BACKEND_KEYS: Mapping[str, set[str]] = {
    "cuda": {"cuda-capabilities", "cuda-flags", "cuda-minver"},
    "rocm": {"rocm-archs", "hip-flags"},
    "xpu": {"sycl-flags"},
}
_TOP_LEVEL_KEYS = {"general", "torch", "torch-noarch", "tvm-ffi", "kernel"}


@dataclass(frozen=True)
class KernelDependency:
    """A ``kernel-depends`` entry: another Hub kernel, pinned by version or revision."""

    repo_id: str
    version: int | None
    revision: str | None


@dataclass(frozen=True)
class TorchSection:
    """The ``[torch]`` table: the bindings compiled into every variant."""

    src: tuple[str, ...]
    include: tuple[str, ...]
    pyext: tuple[str, ...]
    cxx_flags: tuple[str, ...]


@dataclass(frozen=True)
class KernelSection:
    """One ``[kernel.<label>]`` table: sources compiled only into its backend's variant."""

    label: str
    backend: str
    depends: tuple[str, ...]
    src: tuple[str, ...]
    include: tuple[str, ...]
    cxx_flags: tuple[str, ...]
    cuda_flags: tuple[str, ...]
    #: ``None`` when the table has no ``cuda-capabilities`` (the build then picks the archs).
    cuda_capabilities: tuple[str, ...] | None


@dataclass(frozen=True)
class BuildConfig:
    """A parsed, validated ``build.toml``; paths in it are relative to :attr:`project`."""

    project: Path
    name: KernelName
    version: int
    license: str
    backends: tuple[str, ...]
    python_depends: tuple[str, ...]
    #: ``general.<backend>.python-depends`` (only ``[general.cuda]`` has one in edition 5).
    backend_python_depends: Mapping[str, tuple[str, ...]]
    kernel_depends: tuple[KernelDependency, ...]
    hub_repo_id: str | None
    torch: TorchSection
    kernels: tuple[KernelSection, ...]

    @property
    def python_name(self) -> str:
        return self.name.python_name

    @property
    def python_dir(self) -> Path:
        """``torch-ext/<python_name>/``, the kernel's Python package."""
        return self.project / "torch-ext" / self.python_name

    def kernels_for(self, backend: str) -> tuple[KernelSection, ...]:
        return tuple(kernel for kernel in self.kernels if kernel.backend == backend)

    def python_depends_for(self, backend: str) -> tuple[str, ...]:
        extra = self.backend_python_depends.get(backend, ())
        return self.python_depends + tuple(dep for dep in extra if dep not in self.python_depends)

    def source_files(self) -> tuple[str, ...]:
        """Every file named in a ``src`` list, in declaration order, without repeats."""
        listed = [*self.torch.src, *(path for kernel in self.kernels for path in kernel.src)]
        return tuple(dict.fromkeys(listed))

    def check_sources(self) -> None:
        """Fail, naming each path, if a ``src`` file or the Python package is missing."""
        missing = [
            f"  [{owner}] src: {path} ({self.project / path})"
            for owner, paths in (
                ("torch", self.torch.src),
                *((f"kernel.{kernel.label}", kernel.src) for kernel in self.kernels),
            )
            for path in paths
            if not (self.project / path).is_file()
        ]
        init = self.python_dir / "__init__.py"
        if not init.is_file():
            relative = init.relative_to(self.project)
            missing.append(f"  the kernel's Python package: {relative} ({init})")
        if missing:
            raise BuildConfigError(
                f"{BUILD_TOML}: files it names do not exist:\n" + "\n".join(missing)
            )


def find_project_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds a ``build.toml``, as git finds .git."""
    start = start.resolve()
    return next(
        (folder for folder in (start, *start.parents) if (folder / BUILD_TOML).is_file()), None
    )


def load_build_config(project: Path) -> BuildConfig:
    """Parse and validate ``<project>/build.toml``; does not check that source files exist."""
    path = project / BUILD_TOML
    if not path.is_file():
        raise NotAProjectError(
            f"{project} has no {BUILD_TOML}, so it is not a kernel project: "
            "run kscaffold in the project's folder, or create one with `kscaffold new`."
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise BuildConfigError(f"{BUILD_TOML}: not valid TOML: {error}") from error
    except UnicodeDecodeError as error:
        raise BuildConfigError(f"{BUILD_TOML}: not UTF-8 text: {error}") from error
    except RecursionError as error:
        raise BuildConfigError(
            f"{BUILD_TOML}: not valid TOML: arrays or tables nest too deeply to read."
        ) from error
    except OSError as error:
        raise BuildConfigError(f"Cannot read {path}: {error.strerror or error}.") from error
    return _parse(project, _Table("", data, _TOP_LEVEL_KEYS))


class _Table:
    """A TOML table with typed getters whose errors name the key's full path."""

    def __init__(self, path: str, data: Mapping[str, object], known: set[str] | None) -> None:
        self.path = path
        self.data = data
        unknown = sorted(set(data) - known) if known is not None else []
        if unknown:
            raise BuildConfigError(
                f"{BUILD_TOML}: {self._where()} has unknown key '{unknown[0]}' "
                f"(edition 5 allows: {', '.join(sorted(known or ()))})"
            )

    def _where(self) -> str:
        return f"[{self.path}]" if self.path else "the top level"

    def _fail(self, key: str, expected: str) -> BuildConfigError:
        full = f"{self.path}.{key}" if self.path else key
        return BuildConfigError(f"{BUILD_TOML}: {full} must be {expected}")

    def _required(self, key: str) -> object:
        if key not in self.data:
            raise BuildConfigError(f"{BUILD_TOML}: {self._where()} is missing '{key}'")
        return self.data[key]

    def req_str(self, key: str) -> str:
        value = self._required(key)
        if not isinstance(value, str):
            raise self._fail(key, "a string")
        return value

    def opt_str(self, key: str) -> str | None:
        return self.req_str(key) if key in self.data else None

    def req_int(self, key: str) -> int:
        value = self._required(key)
        # bool is an int subclass in Python but not an integer in TOML terms.
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._fail(key, "an integer")
        return value

    def req_str_list(self, key: str) -> tuple[str, ...]:
        value = self._required(key)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self._fail(key, "a list of strings")
        return tuple(value)

    def opt_str_list(self, key: str) -> tuple[str, ...] | None:
        return self.req_str_list(key) if key in self.data else None

    def req_table(self, key: str, known: set[str]) -> _Table:
        value = self._required(key)
        if not isinstance(value, dict):
            raise self._fail(key, "a table")
        return _Table(f"{self.path}.{key}" if self.path else key, value, known)

    def opt_table(self, key: str, known: set[str]) -> _Table | None:
        return self.req_table(key, known) if key in self.data else None

    def req_paths(self, key: str) -> tuple[str, ...]:
        """Project-relative POSIX paths; anything reaching outside the project is refused."""
        values = self.req_str_list(key)
        for value in values:
            pure = PurePosixPath(value)
            if not value.strip() or pure.is_absolute() or ".." in pure.parts:
                raise self._fail(key, f"paths inside the project, relative to it (not '{value}')")
        return values

    def opt_paths(self, key: str) -> tuple[str, ...]:
        return self.req_paths(key) if key in self.data else ()


def _parse(project: Path, top: _Table) -> BuildConfig:
    for other in ("torch-noarch", "tvm-ffi"):
        if other in top.data:
            raise BuildConfigError(
                f"{BUILD_TOML}: [{other}] projects are not supported: "
                "kscaffold builds [torch] kernels"
            )
    general = top.req_table("general", _GENERAL_KEYS)
    torch = top.req_table("torch", _TORCH_KEYS)

    if general.req_int("edition") != 5:
        raise BuildConfigError(
            f"{BUILD_TOML}: general.edition must be 5 (the edition kscaffold reads)"
        )
    try:
        name = KernelName(general.req_str("name"))
    except InvalidNameError as error:
        raise BuildConfigError(f"{BUILD_TOML}: general.name: {error}") from error
    backends = general.req_str_list("backends")
    if not backends:
        raise BuildConfigError(f"{BUILD_TOML}: general.backends must list at least one backend")
    for backend in backends:
        _check_backend("general.backends", backend)

    hub = general.opt_table("hub", _HUB_KEYS)
    cuda = general.opt_table("cuda", _GENERAL_CUDA_KEYS)
    kernel_tables = top.data.get("kernel", {})
    if not isinstance(kernel_tables, dict):
        raise BuildConfigError(f"{BUILD_TOML}: kernel must be tables such as [kernel.my_op_cuda]")
    return BuildConfig(
        project=project,
        name=name,
        version=general.req_int("version"),
        license=general.req_str("license"),
        backends=backends,
        python_depends=general.opt_str_list("python-depends") or (),
        backend_python_depends=(
            {"cuda": cuda.opt_str_list("python-depends") or ()} if cuda is not None else {}
        ),
        kernel_depends=_parse_kernel_depends(general),
        hub_repo_id=hub.opt_str("repo-id") if hub is not None else None,
        torch=TorchSection(
            src=torch.req_paths("src"),
            include=torch.opt_paths("include"),
            pyext=torch.opt_str_list("pyext") or ("py", "pyi"),
            cxx_flags=torch.opt_str_list("cxx-flags") or (),
        ),
        kernels=tuple(
            _parse_kernel(label, data, backends) for label, data in kernel_tables.items()
        ),
    )


def _parse_kernel(label: str, data: object, backends: tuple[str, ...]) -> KernelSection:
    path = f"kernel.{label}"
    if not isinstance(data, dict):
        raise BuildConfigError(f"{BUILD_TOML}: {path} must be a table")
    # Which keys are allowed depends on the backend, so read it before checking the rest.
    backend = _Table(path, data, None).req_str("backend")
    _check_backend(f"{path}.backend", backend)
    if backend not in backends:
        raise BuildConfigError(
            f"{BUILD_TOML}: {path}.backend is '{backend}', which general.backends does not list"
        )
    table = _Table(path, data, _KERNEL_KEYS | _KERNEL_BACKEND_KEYS.get(backend, set()))
    return KernelSection(
        label=label,
        backend=backend,
        depends=table.req_str_list("depends"),
        src=table.req_paths("src"),
        include=table.opt_paths("include"),
        cxx_flags=table.opt_str_list("cxx-flags") or (),
        cuda_flags=table.opt_str_list("cuda-flags") or (),
        cuda_capabilities=table.opt_str_list("cuda-capabilities"),
    )


def _parse_kernel_depends(general: _Table) -> tuple[KernelDependency, ...]:
    key = "general.kernel-depends"
    raw = general.data.get("kernel-depends", [])
    if not isinstance(raw, list) or not all(isinstance(entry, dict) for entry in raw):
        raise BuildConfigError(f"{BUILD_TOML}: {key} must be a list of tables")
    depends = []
    for index, entry in enumerate(raw):
        table = _Table(f"{key}[{index}]", entry, {"repo-id", "version", "revision"})
        version = table.req_int("version") if "version" in entry else None
        revision = table.opt_str("revision")
        if (version is None) == (revision is None):
            raise BuildConfigError(
                f"{BUILD_TOML}: {key}[{index}] needs exactly one of 'version' or 'revision'"
            )
        depends.append(KernelDependency(table.req_str("repo-id"), version, revision))
    return tuple(depends)


def _check_backend(key: str, backend: str) -> None:
    if backend not in KNOWN_BACKENDS:
        raise BuildConfigError(
            f"{BUILD_TOML}: {key}: '{backend}' is not a backend "
            f"(use one of {', '.join(KNOWN_BACKENDS)})"
        )
