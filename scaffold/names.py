"""Names validated once, up front, into small value objects that mirror the Hub's rules."""

from __future__ import annotations

import re
from dataclasses import dataclass

from scaffold.errors import InvalidNameError, InvalidOptionError
from scaffold.vocabulary import SUPPORTED_BACKENDS

#: The Hub's rule for kernel names (also enforced by the ``kernels`` loader on metadata.json);
#: matched against the whole name (``fullmatch``), so a trailing newline is never accepted.
KERNEL_NAME_PATTERN = re.compile(r"[a-z][-a-z0-9]*[a-z0-9]")
#: The Hub's longest repository name.
MAX_NAME_LENGTH = 96
_REPO_OWNER_PATTERN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")

#: License identifiers of the Hub's model-card metadata that a kernel is commonly released under.
KNOWN_LICENSES: tuple[str, ...] = (
    "apache-2.0",
    "mit",
    "bsd-2-clause",
    "bsd-3-clause",
    "bsl-1.0",
    "mpl-2.0",
    "lgpl-2.1",
    "lgpl-3.0",
    "gpl-2.0",
    "gpl-3.0",
    "agpl-3.0",
    "cc-by-4.0",
    "cc-by-sa-4.0",
    "cc-by-nc-4.0",
    "unlicense",
    "other",
)


def suggest_kernel_name(raw: str) -> str | None:
    """Turn a near-miss such as ``My_Kernel`` into a valid name (``my-kernel``), if one exists."""
    candidate = re.sub(r"[^a-z0-9]+", "-", raw.strip().lower()).strip("-")
    candidate = re.sub(r"^[^a-z]+", "", candidate)
    candidate = re.sub(r"-{2,}", "-", candidate)[:MAX_NAME_LENGTH].rstrip("-")
    return candidate if _valid_kernel_name(candidate) else None


def _valid_kernel_name(name: str) -> bool:
    return (
        KERNEL_NAME_PATTERN.fullmatch(name) is not None
        and "--" not in name
        and len(name) <= MAX_NAME_LENGTH
    )


@dataclass(frozen=True)
class KernelName:
    """A kernel's Hub name and the identifiers derived from it."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _valid_kernel_name(self.name):
            rule = (
                "lowercase letters, digits and single '-', starting with a letter and not ending "
                f"with '-', at most {MAX_NAME_LENGTH} characters (the Hub's limit)"
            )
            raw = str(self.name)
            suggestion = suggest_kernel_name(raw)
            hint = f"; try '{suggestion}'" if suggestion and suggestion != raw else ""
            shown = raw if len(raw) <= 120 else raw[:100] + f"... ({len(raw)} characters)"
            raise InvalidNameError(f"Invalid kernel name {shown!r}: use {rule}{hint}.")

    @property
    def python_name(self) -> str:
        """The import name: the kernel name with ``-`` replaced by ``_``."""
        return self.name.replace("-", "_")

    @property
    def class_name(self) -> str:
        """A CamelCase name for generated classes (``my-kernel`` → ``MyKernel``)."""
        return "".join(part.capitalize() for part in self.name.split("-"))

    def __str__(self) -> str:
        return self.name


def parse_repo_owner(owner: str) -> str:
    """Validate a Hub user or organisation name."""
    if (
        not isinstance(owner, str)
        or not _REPO_OWNER_PATTERN.fullmatch(owner)
        or ".." in owner
        or "--" in owner
    ):
        raise InvalidNameError(
            f"Invalid Hub owner {owner!r}: use letters, digits, '-', '_' or '.', "
            "as in 'my-org' (the part before '/' in 'my-org/my-kernel')."
        )
    return owner


def parse_backends(values: list[str] | str) -> tuple[str, ...]:
    """Parse ``cuda,cpu`` (or a list of such strings) into a canonical, de-duplicated tuple."""
    items = [values] if isinstance(values, str) else list(values)
    requested = {part.strip().lower() for item in items for part in item.split(",") if part.strip()}
    if not requested:
        raise InvalidOptionError(
            f"No backend given: choose one or more of {', '.join(SUPPORTED_BACKENDS)}."
        )
    unknown = sorted(requested - set(SUPPORTED_BACKENDS))
    if unknown:
        raise InvalidOptionError(
            f"Unsupported backend {', '.join(repr(u) for u in unknown)}: "
            f"supported backends are {', '.join(SUPPORTED_BACKENDS)}."
        )
    return tuple(b for b in SUPPORTED_BACKENDS if b in requested)


def parse_license(value: str) -> str:
    """Validate a license id against the Hub identifiers kscaffold knows."""
    license_id = value.strip().lower()
    if license_id not in KNOWN_LICENSES:
        raise InvalidOptionError(
            f"Unknown license '{value}': use a Hub license id ({', '.join(KNOWN_LICENSES)})."
        )
    return license_id
