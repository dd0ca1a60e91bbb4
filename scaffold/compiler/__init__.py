"""Build a kernel project into ``build/<variant>/`` without Nix or CMake.

The public entry point is :func:`build_project`; a :class:`BuildReporter` subclass receives its
progress. The modules beneath hold one concern each: the toolchain found, the variant's name,
the op namespace's uid, CUDA archs, the compile plan, build.ninja, running ninja, installing the
variant and the compile database.

May import: scaffold.outputs, scaffold.project, scaffold.support and below.
"""

from scaffold.compiler.api import build_project
from scaffold.compiler.archs import ArchPolicy
from scaffold.compiler.reporter import BuildReporter, BuildResult

__all__ = ["ArchPolicy", "BuildReporter", "BuildResult", "build_project"]
