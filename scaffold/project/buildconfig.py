"""Read a project's ``build.toml`` (kernel-builder editions 4, 5 and 6) into typed values.

Shared by ``kscaffold build``, ``clean`` and ``check``, so it knows nothing about compiling.
Every problem is a :class:`BuildConfigError` naming the key at fault, in the form
``build.toml: [kernel.relu_cuda] is missing 'src'``. Keys that the edition does not define are
refused rather than ignored, so a misspelt ``cuda-capabilites`` cannot silently do nothing.

Editions follow kernel-builder's parser: a file without ``general.edition`` is edition 4 (the
format most existing projects use; kernel-builder upgrades it in memory), ``edition = 5`` is the
one kernels 0.17.2 reads, and ``edition = 6`` the one kernel-builder's later builder demands.
Edition 4 lacks ``kernel-depends`` and ``[general.tpu]`` and takes ``stable-abi`` as one version
for every backend; edition 6 differs from 5 only in how a kernel table names its backend
(:mod:`scaffold.project.editions`). The three build the same variants from the same sources.
Any other edition is refused, as kernel-builder refuses it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from scaffold.errors import BuildConfigError, InvalidNameError, NotAProjectError
from scaffold.project.editions import (
    COMPILED_LANGUAGES,
    LANGUAGE_EDITION,
    LANGUAGE_KEYS,
    LANGUAGE_REQUIRED,
    LANGUAGES,
)
from scaffold.project.names import KernelName
from scaffold.support.safefs import has_control_character, leaves_project
from scaffold.vocabulary import BUILD_TOML, KNOWN_BACKENDS, TORCH_EXT_DIR

#: The editions kscaffold reads; a file without ``edition`` is edition 4.
EDITIONS: tuple[int, ...] = (4, 5, 6)
LEGACY_EDITION = 4

#: The framework tables a project declares exactly one of, and what kscaffold builds of them.
FRAMEWORKS: tuple[str, ...] = ("torch", "torch-noarch", "tvm-ffi")

_GENERAL_KEYS = {
    5: {
        "name", "version", "license", "backends", "edition", "upstream", "source",
        "python-depends", "kernel-depends", "hub", "cuda", "xpu", "neuron", "tpu",
    },
    4: {
        "name", "version", "license", "backends", "upstream", "source", "python-depends",
        "hub", "cuda", "xpu", "neuron",
    },
}  # fmt: skip
# Edition 6 keeps edition 5's [general] tables and keys (kernels-common config v6).
_GENERAL_KEYS[6] = _GENERAL_KEYS[5]
_HUB_KEYS = {"repo-id", "branch"}
_GENERAL_CUDA_KEYS = {
    5: {"minver", "maxver", "python-depends", "kernel-depends"},
    4: {"minver", "maxver", "python-depends"},
}
_GENERAL_CUDA_KEYS[6] = _GENERAL_CUDA_KEYS[5]
_GENERAL_OTHER_KEYS = {
    5: {
        "xpu": {"python-depends", "kernel-depends"},
        "neuron": {"python-depends", "kernel-depends"},
        "tpu": {"python-depends"},
    },
    4: {"xpu": {"python-depends"}, "neuron": {"python-depends"}},
}
_GENERAL_OTHER_KEYS[6] = _GENERAL_OTHER_KEYS[5]
_TORCH_KEYS = {"src", "include", "pyext", "minver", "maxver", "cxx-flags", "stable-abi"}
# kernel-builder spells these two with underscores, unlike every other key.
_NOARCH_KEYS = {"pyext", "cuda_capabilities", "rocm_archs"}
_TVM_FFI_KEYS = {"src", "include", "pyext", "cxx-flags"}
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
    """The framework table: ``[torch]``, the bindings compiled into every variant.

    A ``[torch-noarch]`` or ``[tvm-ffi]`` project fills in the fields its table has.
    """

    src: tuple[str, ...]
    include: tuple[str, ...]
    pyext: tuple[str, ...]
    cxx_flags: tuple[str, ...]
    #: ``minver``/``maxver``: the torch versions the kernel builds with, e.g. ``(2, 9)``.
    minver: tuple[int, ...] | None = None
    maxver: tuple[int, ...] | None = None
    #: ``stable-abi``: the torch version (major, minor) each backend's variant targets through
    #: torch's stable ABI; a backend not in it is built against the installed torch's own ABI.
    stable_abi: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    #: ``[torch-noarch]`` ``cuda_capabilities`` / ``rocm_archs``, recorded in metadata.json.
    noarch_archs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


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
    #: ``cuda-minver``: the oldest CUDA toolkit that builds the table, e.g. ``(12, 8)``.
    cuda_minver: tuple[int, ...] | None = None
    #: Edition 6's ``language`` (``cpp-cuda``, ``rust-cpu``, ...); None in editions 4 and 5.
    language: str | None = None


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
    #: ``general.<backend>.kernel-depends``, added to the general ones in that backend's variant.
    backend_kernel_depends: Mapping[str, tuple[KernelDependency, ...]] = field(default_factory=dict)
    #: 4 for a file without ``edition`` (kernel-builder's legacy format), else 5 or 6.
    edition: int = 5
    #: Which framework table the project has: ``torch``, ``torch-noarch`` or ``tvm-ffi``.
    framework: str = "torch"

    @property
    def is_noarch(self) -> bool:
        """A pure-Python kernel: nothing to compile, one ``torch-<backend>`` variant each."""
        return self.framework == "torch-noarch"

    @property
    def python_name(self) -> str:
        return self.name.python_name

    @property
    def python_dir(self) -> Path:
        """``torch-ext/<python_name>/``, the kernel's Python package."""
        return self.project / TORCH_EXT_DIR / self.python_name

    def kernels_for(self, backend: str) -> tuple[KernelSection, ...]:
        return tuple(kernel for kernel in self.kernels if kernel.backend == backend)

    def kernel_depends_for(self, backend: str) -> tuple[KernelDependency, ...]:
        """The Hub kernels ``backend``'s variant depends on: general ones, then its own."""
        return self.kernel_depends + self.backend_kernel_depends.get(backend, ())

    def python_depends_for(self, backend: str) -> tuple[str, ...]:
        extra = self.backend_python_depends.get(backend, ())
        return self.python_depends + tuple(dep for dep in extra if dep not in self.python_depends)

    def source_files(self) -> tuple[str, ...]:
        """Every file named in a ``src`` list, in declaration order, without repeats."""
        listed = [*self.torch.src, *(path for kernel in self.kernels for path in kernel.src)]
        return tuple(dict.fromkeys(listed))

    def check_sources(self) -> None:
        """Fail, naming each path, if a ``src`` file or the Python package is missing.

        A path with a control character is refused first: no build file can name it safely.
        """
        for owner, paths in (
            ("torch", self.torch.src),
            *((f"kernel.{kernel.label}", kernel.src) for kernel in self.kernels),
        ):
            for path in paths:
                if has_control_character(path):
                    raise BuildConfigError(
                        f"{BUILD_TOML}: [{owner}] src entry {path!r} holds a control "
                        "character (a newline, tab, ...): rename the file without it and list "
                        "the new path."
                    )
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
    if leaves_project(project, path):
        raise BuildConfigError(
            f"{BUILD_TOML} is a link that leads out of {project}, and kscaffold reads no file "
            "outside the project: replace it with the file itself."
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
    return _parse(project, data)


class _Table:
    """A TOML table with typed getters whose errors name the key's full path."""

    def __init__(
        self, path: str, data: Mapping[str, object], known: set[str] | None, edition: int = 5
    ) -> None:
        self.path = path
        self.data = data
        self.edition = edition
        unknown = sorted(set(data) - known) if known is not None else []
        if unknown:
            raise BuildConfigError(
                f"{BUILD_TOML}: {self._where()} has unknown key '{unknown[0]}' "
                f"(edition {edition}{_EDITION_4_NOTE if edition == LEGACY_EDITION else ''} "
                f"allows: {', '.join(sorted(known or ()))})"
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
        return _Table(f"{self.path}.{key}" if self.path else key, value, known, self.edition)

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

    def opt_version(self, key: str) -> tuple[int, ...] | None:
        """A ``major.minor[.patch]`` version string such as ``"2.9"``."""
        if key not in self.data:
            return None
        return _version(self.req_str(key), f"{self.path}.{key}")


_EDITION_4_NOTE = ", read so because [general] has no 'edition'"


def _version(text: str, key: str) -> tuple[int, ...]:
    parts = text.strip().split(".")
    if not 1 <= len(parts) <= 3 or not all(part.isdigit() for part in parts):
        raise BuildConfigError(
            f"{BUILD_TOML}: {key} must be a version such as \"2.9\", not '{text}'"
        )
    return tuple(int(part) for part in parts)


def _parse(project: Path, data: dict[str, object]) -> BuildConfig:
    general_data = data.get("general")
    edition_value = general_data.get("edition") if isinstance(general_data, dict) else None
    if edition_value is None:
        edition = LEGACY_EDITION
    elif isinstance(edition_value, bool) or not isinstance(edition_value, int):
        raise BuildConfigError(f"{BUILD_TOML}: general.edition must be an integer")
    elif edition_value not in EDITIONS or edition_value == LEGACY_EDITION:
        raise BuildConfigError(
            f"{BUILD_TOML}: general.edition is {edition_value}, which kscaffold cannot read: "
            "it reads edition = 5 and 6, and the legacy format (4) only when [general] has no "
            "edition key; set edition = 5, or move the file to 6 with "
            "`kscaffold update --edition 6 --kernel-builder REF`"
        )
    else:
        edition = edition_value
    top = _Table("", data, _TOP_LEVEL_KEYS, edition)
    general = top.req_table("general", _GENERAL_KEYS[edition])
    frameworks = [name for name in FRAMEWORKS if name in top.data]
    if len(frameworks) != 1:
        found = ", ".join(f"[{name}]" for name in frameworks) or "none"
        raise BuildConfigError(
            f"{BUILD_TOML}: needs exactly one of [torch], [torch-noarch] or [tvm-ffi] "
            f"(found {found})"
        )
    framework = frameworks[0]
    torch = _parse_framework(top, framework, edition)

    try:
        name = KernelName(general.req_str("name"))
    except InvalidNameError as error:
        raise BuildConfigError(f"{BUILD_TOML}: general.name: {error}") from error
    backends = general.req_str_list("backends")
    if not backends:
        raise BuildConfigError(f"{BUILD_TOML}: general.backends must list at least one backend")
    for backend in backends:
        _check_backend("general.backends", backend)
    for backend in torch.stable_abi:
        _check_backend("torch.stable-abi", backend)

    hub = general.opt_table("hub", _HUB_KEYS)
    cuda = general.opt_table("cuda", _GENERAL_CUDA_KEYS[edition])
    backend_depends: dict[str, tuple[str, ...]] = {}
    backend_kernels: dict[str, tuple[KernelDependency, ...]] = {}
    tables = {"cuda": cuda} if cuda is not None else {}
    for section, keys in _GENERAL_OTHER_KEYS[edition].items():
        table = general.opt_table(section, keys)
        if table is not None:
            tables[section] = table
    for section, table in tables.items():
        backend_depends[section] = table.opt_str_list("python-depends") or ()
        if "kernel-depends" in table.data:
            backend_kernels[section] = _kernel_depends_of(
                table.data["kernel-depends"], f"general.{section}.kernel-depends"
            )
    kernel_tables = top.data.get("kernel", {})
    if not isinstance(kernel_tables, dict):
        raise BuildConfigError(f"{BUILD_TOML}: kernel must be tables such as [kernel.my_op_cuda]")
    parse_kernel = _parse_kernel_v6 if edition >= LANGUAGE_EDITION else _parse_kernel
    return BuildConfig(
        project=project,
        name=name,
        version=general.req_int("version"),
        license=general.req_str("license"),
        backends=backends,
        python_depends=general.opt_str_list("python-depends") or (),
        backend_python_depends=backend_depends,
        kernel_depends=_parse_kernel_depends(general),
        backend_kernel_depends=backend_kernels,
        hub_repo_id=hub.opt_str("repo-id") if hub is not None else None,
        torch=torch,
        kernels=tuple(
            parse_kernel(label, data, backends, edition, framework)
            for label, data in kernel_tables.items()
        ),
        edition=edition,
        framework=framework,
    )


def _parse_framework(top: _Table, framework: str, edition: int) -> TorchSection:
    if framework == "torch-noarch":
        noarch = top.req_table(framework, _NOARCH_KEYS)
        archs = {
            backend: values
            for backend, key in (("cuda", "cuda_capabilities"), ("rocm", "rocm_archs"))
            if (values := noarch.opt_str_list(key)) is not None
        }
        return TorchSection(
            src=(),
            include=(),
            pyext=noarch.opt_str_list("pyext") or ("py", "pyi"),
            cxx_flags=(),
            noarch_archs=archs,
        )
    if framework == "tvm-ffi":
        tvm = top.req_table(framework, _TVM_FFI_KEYS)
        return TorchSection(
            # Edition 6 lets a Rust-only kernel leave out the C++ bindings' src.
            src=tvm.opt_paths("src") if edition >= LANGUAGE_EDITION else tvm.req_paths("src"),
            include=tvm.opt_paths("include"),
            pyext=tvm.opt_str_list("pyext") or ("py", "pyi"),
            cxx_flags=tvm.opt_str_list("cxx-flags") or (),
        )
    torch = top.req_table("torch", _TORCH_KEYS)
    return TorchSection(
        src=torch.opt_paths("src"),
        include=torch.opt_paths("include"),
        pyext=torch.opt_str_list("pyext") or ("py", "pyi"),
        cxx_flags=torch.opt_str_list("cxx-flags") or (),
        minver=torch.opt_version("minver"),
        maxver=torch.opt_version("maxver"),
        stable_abi=_parse_stable_abi(torch, edition),
    )


def _major_minor(text: str, key: str) -> tuple[int, int]:
    version = _version(text, key)
    return version[0], version[1] if len(version) > 1 else 0


def _parse_stable_abi(torch: _Table, edition: int) -> dict[str, tuple[int, int]]:
    """``stable-abi = "2.11"`` (every backend) or, from edition 5, ``{cuda = "2.11", ...}``."""
    key = "torch.stable-abi"
    value = torch.data.get("stable-abi")
    if value is None:
        return {}
    if isinstance(value, str):
        return dict.fromkeys(KNOWN_BACKENDS, _major_minor(value, key))
    if isinstance(value, dict) and edition >= 5:
        versions: dict[str, tuple[int, int]] = {}
        for backend, text in value.items():
            if not isinstance(text, str):
                raise BuildConfigError(f"{BUILD_TOML}: {key}.{backend} must be a version string")
            versions[backend] = _major_minor(text, f"{key}.{backend}")
        return versions
    expected = 'a version such as "2.11"' + (
        " or a table of them by backend" if edition >= 5 else " (edition 4)"
    )
    raise BuildConfigError(f"{BUILD_TOML}: {key} must be {expected}")


def _parse_kernel(
    label: str, data: object, backends: tuple[str, ...], edition: int, framework: str
) -> KernelSection:
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
    table = _Table(path, data, _KERNEL_KEYS | _KERNEL_BACKEND_KEYS.get(backend, set()), edition)
    return _kernel_section(label, backend, table)


def _parse_kernel_v6(
    label: str, data: object, backends: tuple[str, ...], edition: int, framework: str
) -> KernelSection:
    """An edition-6 table: ``language = "cpp-<backend>"`` names the backend and its keys."""
    path = f"kernel.{label}"
    if not isinstance(data, dict):
        raise BuildConfigError(f"{BUILD_TOML}: {path} must be a table")
    if "language" not in data and "backend" in data:
        raise BuildConfigError(
            f"{BUILD_TOML}: [{path}] has 'backend', which edition 6 replaced with "
            f'language = "cpp-<backend>" (`kscaffold update --edition 6` rewrites it)'
        )
    language = _Table(path, data, None).req_str("language")
    if language not in LANGUAGES:
        raise BuildConfigError(
            f"{BUILD_TOML}: {path}.language: '{language}' is not a kernel language of edition 6 "
            f"(use one of {', '.join(LANGUAGES)})"
        )
    if language not in COMPILED_LANGUAGES and framework != "tvm-ffi":
        # kernel-builder's own rule; kscaffold builds neither Rust kernels nor [tvm-ffi] ones.
        raise BuildConfigError(
            f'{BUILD_TOML}: [{path}] language = "{language}" needs a [tvm-ffi] kernel '
            "(kernel-builder refuses it elsewhere), and kscaffold does not build Rust kernels: "
            "build it with kernel-builder"
        )
    backend = LANGUAGES[language]
    if backend not in backends:
        raise BuildConfigError(
            f"{BUILD_TOML}: {path}.language is '{language}', whose backend '{backend}' "
            "general.backends does not list"
        )
    table = _Table(path, data, {"language", *LANGUAGE_KEYS[language]}, edition)
    for key in LANGUAGE_REQUIRED[language]:
        table._required(key)
    if language not in COMPILED_LANGUAGES:
        table.req_str("cargo-manifest")
    return _kernel_section(label, backend, table, language)


def _kernel_section(
    label: str, backend: str, table: _Table, language: str | None = None
) -> KernelSection:
    """A ``[kernel.*]`` table's keys, once its edition's rules have admitted them."""
    return KernelSection(
        label=label,
        backend=backend,
        depends=table.req_str_list("depends"),
        src=table.req_paths("src"),
        include=table.opt_paths("include"),
        cxx_flags=table.opt_str_list("cxx-flags") or (),
        cuda_flags=table.opt_str_list("cuda-flags") or (),
        cuda_capabilities=table.opt_str_list("cuda-capabilities"),
        cuda_minver=table.opt_version("cuda-minver"),
        language=language,
    )


def _parse_kernel_depends(general: _Table) -> tuple[KernelDependency, ...]:
    return _kernel_depends_of(general.data.get("kernel-depends", []), "general.kernel-depends")


def _kernel_depends_of(raw: object, key: str) -> tuple[KernelDependency, ...]:
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
