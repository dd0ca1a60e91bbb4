"""kscaffold: create, build, check and publish Hugging Face kernel-builder projects.

The library comes first; the ``kscaffold`` command line is a thin layer over these functions.
The package is laid out by concern, each sub-package importing only those below it:

- ``errors``, ``vocabulary``: the error hierarchy and the words every layer shares;
- ``support``: safe file reads and git;
- ``project``: reading a kernel project (build.toml, schemas, registrations, names, answers);
- ``outputs``: what kscaffold writes beside the sources (build/, the manifest, provenance);
- ``compiler``: ``build``; ``checks``: ``check``;
- ``grow``: the template, ``new``, ``add-op``, ``add-backend``, ``update``;
- ``release``: ``publish``, ``clean``; ``testing``: ``test``;
- ``cli``: the command line.

The entry points below are imported on first use, so ``import scaffold`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scaffold.checks import check_project as check_project
    from scaffold.compiler import build_project as build_project
    from scaffold.errors import KscaffoldError as KscaffoldError
    from scaffold.grow.addop import add_op as add_op
    from scaffold.grow.create import create_project as create_project
    from scaffold.grow.evolve import add_backend as add_backend
    from scaffold.grow.evolve import update_project as update_project
    from scaffold.project.names import KernelName as KernelName
    from scaffold.project.names import OpName as OpName
    from scaffold.project.spec import ProjectSpec as ProjectSpec
    from scaffold.release.clean import clean_project as clean_project
    from scaffold.release.publish import publish as publish
    from scaffold.testing.project_tests import prepare_project_tests as prepare_project_tests

#: Public name -> the module that defines it.
_PUBLIC = {
    "KernelName": "scaffold.project.names",
    "KscaffoldError": "scaffold.errors",
    "OpName": "scaffold.project.names",
    "ProjectSpec": "scaffold.project.spec",
    "add_backend": "scaffold.grow.evolve",
    "add_op": "scaffold.grow.addop",
    "build_project": "scaffold.compiler",
    "check_project": "scaffold.checks",
    "clean_project": "scaffold.release.clean",
    "create_project": "scaffold.grow.create",
    "prepare_project_tests": "scaffold.testing.project_tests",
    "publish": "scaffold.release.publish",
    "update_project": "scaffold.grow.evolve",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'scaffold' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
