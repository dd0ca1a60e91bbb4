"""kscaffold: create, build, check and publish Hugging Face kernel-builder projects.

The library comes first; the ``kscaffold`` command line is a thin layer over these functions.
"""

from scaffold.create import ProjectSpec, create_project
from scaffold.errors import KscaffoldError
from scaffold.names import KernelName

__all__ = ["KernelName", "KscaffoldError", "ProjectSpec", "create_project"]
