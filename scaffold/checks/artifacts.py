"""Generated artifacts: none tracked by git, none left in the tree at release."""

from __future__ import annotations

from pathlib import PurePosixPath

from scaffold.checks.base import Context, Finding, error, warning
from scaffold.outputs.artifacts import Artifact
from scaffold.outputs.manifest import MANIFEST_PATH
from scaffold.vocabulary import BUILD_DIR


def check_artifacts(context: Context) -> list[Finding]:
    """Report generated files git tracks (errors) and those left in the work tree."""
    scan = context.artifacts
    findings: list[Finding] = []
    for kept in scan.kept:
        if kept.tracked_artifact:
            findings.append(
                error(
                    kept.path,
                    f"A generated file is tracked by git ({kept.origin}): it goes stale, and "
                    "kernel-builder's Nix build regenerates it and can refuse to overwrite it.",
                    f"git rm --cached {kept.path} && git commit (the file stays on disk; "
                    "`kscaffold clean` then removes it).",
                )
            )
        elif kept.kernel_builder_lookalike and _in_python_sources(kept.path):
            findings.append(
                error(
                    kept.path,
                    "A file named like kernel-builder's generated _ops.py is in the kernel's "
                    "sources: Nix copies every .py under torch-ext/, so the release would carry "
                    "it, and it may name a stale op namespace.",
                    f"Delete {kept.path} if a tool wrote it (`kscaffold clean` keeps it: it "
                    "cannot tell it from a file of yours).",
                )
            )
        elif kept.edited and PurePosixPath(kept.path).parts[0] != BUILD_DIR:
            findings.append(
                warning(
                    kept.path,
                    "kscaffold build wrote this file and it was edited since, so `kscaffold "
                    "clean` keeps it.",
                    f"Delete {kept.path} if the edit is not needed, or rebuild to replace it.",
                )
            )
    for artifact in scan.artifacts:
        if artifact.is_release_payload or _only_the_record(context, artifact):
            continue  # build/<variant>/ is the release payload, and the record proves it
        path = artifact.path + ("/" if artifact.kind == "folder" else "")
        if _in_python_sources(artifact.path):
            findings.append(
                error(
                    path,
                    f"Generated file in the kernel's sources ({artifact.reason}): Nix copies "
                    "every .py under torch-ext/, so the release would carry a stale copy.",
                    "Run `kscaffold clean` before releasing.",
                )
            )
        else:
            findings.append(
                warning(
                    path,
                    f"Development artifact left in the tree ({artifact.reason}).",
                    "Run `kscaffold clean` before releasing.",
                )
            )
    return findings


def _in_python_sources(path: str) -> bool:
    return path.startswith("torch-ext/") and path.endswith(".py")


def _only_the_record(context: Context, artifact: Artifact) -> bool:
    """The state folder holding nothing but the record of built files (clean keeps it)."""
    if artifact.path != MANIFEST_PATH.parts[0] or artifact.kind != "folder":
        return False
    names = {entry.name for entry in (context.project / artifact.path).iterdir()}
    return names <= {MANIFEST_PATH.name, ".gitignore"}
