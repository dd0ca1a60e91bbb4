"""What a build says about itself in ``metadata.json``, and how a release checks it.

``kscaffold build`` records, in the fields the ``kernels`` loader reads:

- ``provenance``: the kernel's git commit and whether the tree was dirty, and the builder. The
  loader's schema has one slot for the builder, ``kernel-builder``; kscaffold fills it with
  its own name and version (``"kscaffold 0.1.0"``) and no git state, so a reader can tell a
  kscaffold build from one made by kernel-builder.
- ``digest``: a hash of every file of the variant, computed by the ``kernels`` library itself
  (``Digest.hash_variant``), the digest ``kernels verify-signature`` checks.
- ``kernels-minver``: the oldest ``kernels`` release that reads this metadata.

A release refuses variants that are dirty or whose files no longer match their digest.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from scaffold._version import __version__
from scaffold.support.gitutil import git_available, run_git

#: The oldest ``kernels`` whose metadata schema has ``provenance``, ``digest`` and this field.
KERNELS_MINVER = "0.17.0"
#: How a kscaffold build names its builder in ``provenance``.
BUILDER = f"kscaffold {__version__}"
#: The suffix of a build id made from uncommitted sources (kernel-builder's convention).
DIRTY_SUFFIX = "_dirty"

_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def is_local_builder(builder: object) -> bool:
    """Whether ``provenance``'s builder means a build without Nix: kscaffold's, or none named."""
    return not isinstance(builder, str) or builder.startswith("kscaffold")


def head_commit(project: Path) -> str | None:
    """The full id of HEAD's commit, or None outside git or before the first commit."""
    if not git_available():
        return None
    result = run_git(project, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and _COMMIT.match(commit) else None


def provenance(project: Path, ops_name: str) -> dict[str, object]:
    """The ``provenance`` entry of a build whose op namespace is ``ops_name``."""
    record: dict[str, object] = {"kernel-builder": {"version": BUILDER}}
    commit = head_commit(project)
    if commit is not None:
        record["kernel"] = {"commit": commit, "dirty": ops_name.endswith(DIRTY_SUFFIX)}
    return record


def variant_digest(variant: Path) -> dict[str, object]:
    """The ``digest`` entry for the files now in ``variant``, hashed by ``kernels`` itself."""
    from kernels._rust import Digest, DigestAlgorithm

    digest = Digest.hash_variant(DigestAlgorithm.SHA256, variant)
    return {"algorithm": str(digest.algorithm), "files": dict(sorted(digest.files.items()))}


@dataclass(frozen=True)
class VariantStatus:
    """What a release needs to know about one ``build/<variant>/``."""

    variant: str
    #: ``name`` and ``version`` as the metadata records them.
    name: str
    version: int
    #: Built from uncommitted sources (or, outside git, sources changed since the first build).
    dirty: bool
    #: The builder named in ``provenance`` (None when the metadata has no provenance).
    builder: str | None
    #: Why the files do not match the recorded digest; empty when they do.
    digest_problems: tuple[str, ...]
    #: Whether ``metadata.json`` records a digest at all.
    has_digest: bool

    @property
    def local_build(self) -> bool:
        """Built without Nix: by kscaffold, or with no provenance to say otherwise."""
        return is_local_builder(self.builder)


def inspect_variant(variant: Path) -> VariantStatus:
    """Read ``variant``'s metadata through the loader's parser and re-check its digest."""
    from kernels._rust import Digest, DigestValidationError, Metadata

    metadata_file = variant / "metadata.json"
    metadata = Metadata.read_from_file(metadata_file)
    raw = json.loads(metadata_file.read_text(encoding="utf-8"))
    source = metadata.provenance
    dirty = str(raw.get("id", "")).endswith(DIRTY_SUFFIX) or bool(source and source.dirty)
    builder = source.kernel_builder.version if source is not None else None
    problems: tuple[str, ...] = ()
    if metadata.digest is not None:
        try:
            metadata.digest.validate(Digest.hash_variant(metadata.digest.algorithm, variant))
        except DigestValidationError as error:
            problems = tuple(str(violation) for violation in error.violations)
    return VariantStatus(
        variant.name,
        str(metadata.name),
        int(metadata.version),
        dirty,
        builder,
        problems,
        metadata.digest is not None,
    )
