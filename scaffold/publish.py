"""``kscaffold publish``: a release on the Hugging Face Hub, the way ``kernels`` resolves versions.

A kernel's major version is ``general.version`` in ``build.toml``; users pin it with
``get_kernel(repo_id, version=N)``, which reads the ``vN`` branch. A release uploads the sources,
the card (``README.md``) and ``build/`` to that branch and tags the commit ``vX.Y.Z``.
Everything is checked before the first call to the Hub, so a refused release changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaffold import gitutil
from scaffold.buildconfig import load_build_config
from scaffold.checks import check_project, has_errors
from scaffold.errors import PublishError

_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
# Never uploaded, whatever git says: local state, caches and IDE files.
_LOCAL_ONLY = (".git", ".kscaffold", "__pycache__", ".pytest_cache", "compile_commands.json")


@dataclass(frozen=True)
class ReleasePlan:
    """What a release will upload, and where."""

    repo_id: str
    branch: str
    tag: str
    files: tuple[str, ...]
    variants: tuple[str, ...]


def _parse_version(version: str, major: int) -> str:
    match = _VERSION.match(version.strip())
    if match is None:
        raise PublishError(f"Invalid release version '{version}': use X.Y.Z, e.g. {major}.0.0.")
    if int(match[1]) != major:
        raise PublishError(
            f"Release {version} does not match build.toml's version = {major}: release "
            f"{major}.Y.Z, or raise general.version for a new major version."
        )
    return f"v{match[1]}.{match[2]}.{match[3]}"


def _release_files(project: Path) -> list[str]:
    if gitutil.is_inside_work_tree(project):
        listed = gitutil.run_git(project, "ls-files", "-z", "--", ".").stdout.split("\0")
    else:
        listed = [p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()]
    build = [
        p.relative_to(project).as_posix() for p in (project / "build").rglob("*") if p.is_file()
    ]
    return sorted(
        path
        for path in {*filter(None, listed), *build}
        if not any(part in _LOCAL_ONLY for part in Path(path).parts) and not path.endswith(".pyc")
    )


def plan_release(project: Path, version: str, repo_id: str | None = None) -> ReleasePlan:
    """Check that ``project`` can be released as ``version`` and list what would be uploaded."""
    project = project.resolve()
    config = load_build_config(project)
    tag = _parse_version(version, config.version)
    repo = repo_id or config.hub_repo_id
    if not repo:
        raise PublishError(
            "No Hub repository: pass --repo-id ORG/NAME or set repo-id in [general.hub]."
        )
    if not _REPO_ID.match(repo):
        raise PublishError(
            f"Invalid Hub repository '{repo}': use ORG/NAME, e.g. my-org/{config.name}."
        )
    findings = check_project(project)
    if has_errors(findings):
        count = sum(1 for finding in findings if finding.severity == "error")
        raise PublishError(f"`kscaffold check` reports {count} error(s): fix them, then publish.")
    variants = tuple(sorted(p.parent.name for p in (project / "build").glob("*/metadata.json")))
    if not variants:
        raise PublishError(
            "build/ holds no variant: run `nix run .#build-and-copy -L` (every torch and CUDA "
            "version, for a release) or `kscaffold build`, then publish."
        )
    return ReleasePlan(repo, f"v{config.version}", tag, tuple(_release_files(project)), variants)


def publish(
    project: Path,
    version: str,
    *,
    repo_id: str | None = None,
    private: bool = False,
    dry_run: bool = False,
    api: Any = None,
) -> ReleasePlan:
    """Upload ``project`` to the Hub as release ``version``; with ``dry_run``, only plan it."""
    plan = plan_release(project, version, repo_id)
    if dry_run:
        return plan
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    from huggingface_hub.errors import HfHubHTTPError, LocalTokenNotFoundError

    try:
        api.create_repo(plan.repo_id, exist_ok=True, private=private)
        refs = api.list_repo_refs(plan.repo_id)
        if any(tag.name == plan.tag for tag in refs.tags):
            raise PublishError(
                f"{plan.repo_id} already has the tag {plan.tag}: release a higher version."
            )
        api.create_branch(plan.repo_id, branch=plan.branch, exist_ok=True)
        api.upload_folder(
            repo_id=plan.repo_id,
            folder_path=project.resolve(),
            revision=plan.branch,
            allow_patterns=list(plan.files),
            commit_message=f"Release {plan.tag}",
        )
        api.create_tag(plan.repo_id, tag=plan.tag, revision=plan.branch)
    except LocalTokenNotFoundError as error:
        raise PublishError(
            "Not logged in to the Hub: run `hf auth login` or set HF_TOKEN."
        ) from error
    except HfHubHTTPError as error:
        raise PublishError(f"The Hub refused the release: {error}") from error
    return plan
