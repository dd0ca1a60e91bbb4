"""``kscaffold check``: the release gate.

Each rule is a small function from a :class:`Context` to a list of :class:`Finding`; a finding
says how bad the problem is, where it is, and how to fix it. :func:`check_project` runs them all.

May import: scaffold.compiler (toolchain and arch rules), scaffold.outputs, scaffold.project,
scaffold.support and below.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from scaffold.checks.abi import check_abi
from scaffold.checks.archs import check_cuda_capabilities
from scaffold.checks.artifacts import check_artifacts
from scaffold.checks.base import Context, Finding, Severity
from scaffold.checks.config import (
    check_build_rules,
    check_headers_listed,
    check_python_depends,
    check_schema,
    check_sources_exist,
)
from scaffold.checks.device_memory import check_device_memory
from scaffold.checks.flake import check_flake
from scaffold.checks.layers import check_layers
from scaffold.checks.ops import check_ops, check_python_registrations
from scaffold.checks.release import check_release_builds
from scaffold.errors import NotAProjectError
from scaffold.vocabulary import BUILD_TOML

__all__ = ["RULES", "Context", "Finding", "Severity", "check_project", "has_errors"]

Rule = Callable[[Context], list[Finding]]

#: Every rule, in the order findings are reported.
RULES: tuple[Rule, ...] = (
    check_schema,
    check_sources_exist,
    check_build_rules,
    check_headers_listed,
    check_python_depends,
    check_cuda_capabilities,
    check_flake,
    check_ops,
    check_python_registrations,
    check_device_memory,
    check_layers,
    check_artifacts,
    check_abi,
    check_release_builds,
)


def check_project(project: Path) -> list[Finding]:
    """Run every release check on ``project``; errors first, each group in rule order."""
    if not (project / BUILD_TOML).is_file():
        raise NotAProjectError(
            f"{project} has no {BUILD_TOML}, so it is not a kernel project: run kscaffold check "
            "in the project's folder or pass its path."
        )
    context = Context(project.resolve())
    findings = [finding for rule in RULES for finding in rule(context)]
    return sorted(findings, key=lambda finding: not finding.is_error)


def has_errors(findings: list[Finding]) -> bool:
    """Whether any finding is an error (the release must not go ahead)."""
    return any(finding.is_error for finding in findings)
