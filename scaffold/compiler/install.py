"""Assemble ``build/<variant>/`` exactly as the ``kernels`` loader reads it, and swap it in whole.

The folder is staged next to the old one and renamed into place, so a failed or interrupted
build leaves the previous variant (or none), never a half-written one. Files of earlier builds,
such as a library named after an older uid, go with the folder they were in.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from scaffold.compiler.plan import VariantPlan
from scaffold.compiler.stubs import noarch_ops_py, ops_py
from scaffold.outputs.provenance import KERNELS_MINVER, provenance, variant_digest
from scaffold.project.buildconfig import BuildConfig
from scaffold.vocabulary import BUILD_DIR

_GENERATED_NAMES = frozenset({"_ops.py", "metadata.json"})


def variant_metadata(config: BuildConfig, plan: VariantPlan) -> dict[str, object]:
    """metadata.json: what the loader requires, the CUDA archs actually compiled, provenance.

    The ``digest`` is added by :func:`install_variant` once every other file is in place.
    """
    backend: dict[str, object] = {"type": plan.backend}
    if plan.archs:
        backend["archs"] = [str(arch) for arch in plan.archs]
    metadata: dict[str, object] = {
        "name": config.name.name,
        "id": plan.ops_name,
        "version": config.version,
        "license": config.license,
        "python-depends": list(config.python_depends_for(plan.backend)),
        "backend": backend,
    }
    if config.kernel_depends_for(plan.backend):
        metadata["kernel-depends"] = [
            {"repo-id": dep.repo_id, **_pin(dep.version, dep.revision)}
            for dep in config.kernel_depends_for(plan.backend)
        ]
    metadata["kernels-minver"] = KERNELS_MINVER
    metadata["provenance"] = provenance(config.project, plan.ops_name)
    return metadata


def _pin(version: int | None, revision: str | None) -> dict[str, object]:
    return {"version": version} if version is not None else {"revision": revision}


def python_files(config: BuildConfig) -> list[Path]:
    """The kernel's Python files (``pyext`` suffixes) under ``torch-ext/<python_name>/``.

    A ``[torch-noarch]`` kernel ships every file there (kernel-builder copies them all).
    """
    suffixes = {f".{ext.lstrip('.')}" for ext in config.torch.pyext}
    return sorted(
        path
        for path in config.python_dir.rglob("*")
        if path.is_file()
        and (config.is_noarch or path.suffix in suffixes)
        and path.suffix != ".pyc"
        and "__pycache__" not in path.parts
        # A stale CMake _ops.py in the sources would name an old namespace; ours replaces it.
        and path.relative_to(config.python_dir).as_posix() not in _GENERATED_NAMES
    )


def install_variant(config: BuildConfig, plan: VariantPlan) -> list[Path]:
    """Write ``build/<variant>/`` from the scratch library; returns the files written."""
    build_dir = config.project / BUILD_DIR
    build_dir.mkdir(exist_ok=True)
    for leftover in build_dir.glob(f".{plan.variant}.*"):
        shutil.rmtree(leftover, ignore_errors=True)  # staging from an interrupted build
    staging = Path(tempfile.mkdtemp(prefix=f".{plan.variant}.", dir=build_dir))
    try:
        for source in python_files(config):
            destination = staging / source.relative_to(config.python_dir)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
        native = not config.is_noarch
        stub = ops_py(plan.ops_name) if native else noarch_ops_py(plan.ops_name)
        (staging / "_ops.py").write_text(stub, encoding="utf-8")
        if native:
            shutil.copy(plan.scratch / plan.so_name, staging / plan.so_name)
        content = variant_metadata(config, plan)
        if plan.backend in config.torch.noarch_archs:
            backend = content["backend"]
            assert isinstance(backend, dict)
            backend["archs"] = list(config.torch.noarch_archs[plan.backend])
        # The digest covers every file but metadata.json, so it is written last.
        content = {**content, "digest": variant_digest(staging)}
        metadata = json.dumps(content, indent=2) + "\n"
        (staging / "metadata.json").write_text(metadata, encoding="utf-8")
        staging.chmod(0o755)  # mkdtemp makes it private; the variant is meant to be shared
        target = build_dir / plan.variant
        _replace_dir(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sorted(path for path in target.rglob("*") if path.is_file())


def _replace_dir(staging: Path, target: Path) -> None:
    # A directory cannot be renamed over a non-empty one, so the old one steps aside first.
    retired = None
    if target.exists():
        retired = staging.with_name(staging.name + ".old")
        target.rename(retired)
    staging.rename(target)
    if retired is not None:
        shutil.rmtree(retired)


def remove_stale_libraries(scratch: Path, keep: str) -> None:
    """Delete libraries linked under earlier op names; ninja no longer knows about them."""
    for library in scratch.glob("*.abi3.so"):
        if library.name != keep:
            library.unlink()
