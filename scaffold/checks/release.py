"""Every ``build/<variant>/`` that ``publish`` would refuse is an error here too."""

from __future__ import annotations

from scaffold.checks.base import Context, Finding, error
from scaffold.outputs.release_gate import judge_build
from scaffold.vocabulary import BUILD_DIR


def check_release_builds(context: Context) -> list[Finding]:
    """Report each variant publish refuses: unreadable or foreign metadata, tampered, stale."""
    name = context.name
    version = context.general.get("version", 1)
    if name is None or isinstance(version, bool) or not isinstance(version, int):
        return []  # build.toml's own findings say why; nothing to compare the builds with
    findings: list[Finding] = []
    for verdict in judge_build(context.project, name, version):
        for problem in verdict.problems:
            fix = problem.fix.replace(", then publish", "")
            findings.append(
                error(
                    f"{BUILD_DIR}/{verdict.variant}/",
                    f"{problem.what}; `kscaffold publish` refuses this build.",
                    f"{fix[:1].upper()}{fix[1:]}.",
                )
            )
    return findings
