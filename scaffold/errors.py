"""The one error hierarchy of kscaffold.

Every failure a user can act on is a :class:`KscaffoldError` whose message says what was wrong and
what to do next. The CLI turns these into a one-line red message and a non-zero exit; anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations


class KscaffoldError(Exception):
    """Base class of every error kscaffold reports to a user."""

    #: Process exit status the CLI uses for this kind of error.
    exit_code: int = 1


class InvalidNameError(KscaffoldError):
    """A kernel name, repo id or other identifier breaks the Hub's rules."""

    exit_code = 2


class InvalidOptionError(KscaffoldError):
    """An option value (backend, license, arch, ...) is not one kscaffold accepts."""

    exit_code = 2


class DestinationError(KscaffoldError):
    """The destination of a new project cannot be used as it is."""


class NotAProjectError(KscaffoldError):
    """A folder is not a kernel project kscaffold can work on."""


class AnswersError(NotAProjectError):
    """``.copier-answers.yml`` holds an answer ``kscaffold new`` would refuse."""


class SchemaError(InvalidOptionError):
    """An op schema the dispatcher would refuse, or one kscaffold cannot generate code for."""


class BuildConfigError(KscaffoldError):
    """``build.toml`` is malformed or refers to files that do not exist."""


class ToolchainError(KscaffoldError):
    """The installed torch, compiler or CUDA toolkit cannot build what was asked."""


class CompileError(KscaffoldError):
    """The compiler or linker failed; its own output has been shown."""


class MergeConflictError(KscaffoldError):
    """A three-way merge of template changes met a change of the user's on the same lines."""


class DirtyTreeError(KscaffoldError):
    """The project has uncommitted changes where the operation needs a clean tree."""


class PublishError(KscaffoldError):
    """Publishing to the Hugging Face Hub cannot go ahead."""
