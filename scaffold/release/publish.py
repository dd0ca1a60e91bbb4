"""``kscaffold publish``: a release on the Hugging Face Hub that ``kernels.get_kernel`` finds.

The layout is kernel-builder's upload: a repository of the Hub's ``kernel`` type; the build
variants (``build/<variant>/``) and ``benchmarks/benchmark*.py`` on the branch ``v<N>`` (``N`` =
``general.version``), in one commit that also deletes the files of the uploaded variants that the
new build no longer has (on a new branch, every inherited ``build/`` file); the card
(``README.md``) on ``main``; the tag ``vX.Y.Z`` on the ``v<N>`` commit. ``get_kernel(repo,
version=N)`` lists the repository's ``v*`` branches and downloads ``build/<variant>/``.

Everything is checked before the first call to the Hub, so a refused release uploads nothing:
the version and repository id, ``kscaffold check`` (ABI included), every variant's metadata
through the loader's own parser, its digest against the files, a dirty build, and a local
(non-Nix) build without ``allow_local_build``. Sources, tests and dotfiles are never uploaded.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scaffold.checks import check_project, has_errors
from scaffold.compiler.variant import noarch_variant_name
from scaffold.errors import InvalidNameError, PublishError
from scaffold.outputs.project_lock import holding_project_lock
from scaffold.outputs.release_gate import judge_build
from scaffold.project.buildconfig import load_build_config
from scaffold.project.flakepin import flake_variants
from scaffold.support import gitutil
from scaffold.vocabulary import BENCHMARKS_DIR, BUILD_DIR

#: The Hub's repository type for kernels (``huggingface_hub.constants.REPO_TYPE_KERNEL``).
REPO_TYPE = "kernel"
MAIN_BRANCH = "main"
CARD = "README.md"
#: Where kernel-builder asks for access to publish kernels.
ACCESS_URL = "https://huggingface.co/spaces/kernels-community/README/discussions/new"

_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")
_NEVER_UPLOADED = ("__pycache__",)
_NOT_LOGGED_IN = (
    "Not logged in to the Hub: run `hf auth login` with a write token, or set HF_TOKEN."
)


@dataclass(frozen=True)
class ReleasePlan:
    """What a release will upload, and where; computed without any call to the Hub."""

    repo_id: str
    #: ``v<N>``: the branch ``get_kernel(repo_id, version=N)`` reads.
    branch: str
    #: ``vX.Y.Z``, with the numbers normalised (``01.0.0`` is ``v1.0.0``).
    tag: str
    #: Files for ``branch``: ``build/<variant>/...`` and ``benchmarks/benchmark*.py``.
    build_files: tuple[str, ...]
    #: Files for ``main``: the card.
    main_files: tuple[str, ...]
    variants: tuple[str, ...]
    #: Variants the pinned Nix builder makes for the project's backends.
    flake_variants: tuple[str, ...]
    #: Variants built without Nix (by kscaffold).
    local_variants: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        return (*self.main_files, *self.build_files)

    @property
    def major(self) -> int:
        return int(self.branch.removeprefix("v"))

    @property
    def missing_variants(self) -> tuple[str, ...]:
        """What the flake would build that this release does not carry."""
        return tuple(v for v in self.flake_variants if v not in self.variants)


@dataclass(frozen=True)
class ReleaseResult:
    """What a release did on the Hub."""

    plan: ReleasePlan
    #: The exact line that loads the release.
    load_line: str
    trusted_publisher: bool
    pull_requests: tuple[str, ...] = field(default=())


def normalise_version(version: str, major: int) -> tuple[str, str]:
    """``(X.Y.Z, vX.Y.Z)`` for a release of ``major``, numbers without leading zeros."""
    match = _VERSION.match(version.strip())
    if match is None:
        raise PublishError(f"Invalid release version '{version}': use X.Y.Z, e.g. {major}.0.0.")
    numbers = tuple(int(part) for part in match.groups())
    if numbers[0] != major:
        raise PublishError(
            f"Release {version} does not match build.toml's version = {major}: release "
            f"{major}.Y.Z, or raise general.version for a new major version."
        )
    text = ".".join(str(number) for number in numbers)
    return text, f"v{text}"


def validate_repo_id(repo_id: str, name: str) -> str:
    """``ORG/NAME`` as the Hub accepts it (huggingface_hub's own rules), else one clear line."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import (  # type: ignore[attr-defined]
        validate_repo_id as hub_rules,
    )

    example = f"use ORG/NAME, e.g. my-org/{name}"
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise InvalidNameError(f"Invalid Hub repository {repo_id!r}: {example}.")
    try:
        hub_rules(repo_id)
    except HFValidationError:
        raise InvalidNameError(
            f"Invalid Hub repository {repo_id!r}: letters, digits, '-', '_' and '.', no '--' or "
            f"'..', not starting or ending with '-' or '.', no '.git' ending, at most 96 "
            f"characters; {example}."
        ) from None
    return repo_id


def _regular_files(folder: Path, project: Path) -> Iterator[Path]:
    """Every regular file under ``folder``, bytecode left out.

    Anything else that is not a folder (a FIFO, a device, a link) is refused without being
    opened, so that nothing blocks or leaves the project.
    """
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _NEVER_UPLOADED)
        for entry in [*dirs, *names]:
            path = Path(root) / entry
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                kind = "a link" if stat.S_ISLNK(mode) else "not a regular file"
                raise PublishError(
                    f"{path.relative_to(project).as_posix()} is {kind}, and a release uploads "
                    "only regular files: remove it (or rebuild), then publish."
                )
        for name in sorted(names):
            if not name.endswith(".pyc"):
                yield Path(root) / name


def _benchmark_files(project: Path) -> list[str]:
    """``benchmarks/benchmark*.py``, as kernel-builder uploads them.

    In git, the tracked ones only; outside git, those the ignore rules do not exclude.
    """
    folder = project / BENCHMARKS_DIR
    if not folder.is_dir():
        return []
    found = [
        path.relative_to(project).as_posix()
        for path in _regular_files(folder, project)
        if path.parent == folder and path.name.startswith("benchmark") and path.suffix == ".py"
    ]
    return [path for path in found if path in set(upload_candidates(project, found))]


def upload_candidates(project: Path, paths: list[str]) -> list[str]:
    """The ``paths`` that git tracks (in git) or that the project's ignore rules allow (outside).

    Outside git, the rules are those of every ``.gitignore`` in the project, read by
    ``pathspec`` as git reads them, plus secrets and environments that are never uploaded.
    """
    if gitutil.is_inside_work_tree(project):
        tracked = gitutil.run_git(project, "ls-files", "-z", "--", *paths).stdout.split("\0")
        return [path for path in paths if path in set(tracked)]
    spec = ignore_spec(project, paths)
    return [path for path in paths if not spec.match_file(path)]


#: Never uploaded from a project outside git, whatever its .gitignore says.
ALWAYS_IGNORED = (
    ".git/",
    ".env",
    ".env.*",
    ".venv/",
    "venv/",
    "env/",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    ".netrc",
    ".pypirc",
    ".kscaffold/",
    "__pycache__/",
    "*.pyc",
)


def ignore_spec(project: Path, paths: list[str]) -> Any:
    """A ``pathspec`` matcher of what outside git is never uploaded among ``paths``.

    :data:`ALWAYS_IGNORED`, then every ``.gitignore`` that applies to ``paths`` (the project's
    and those of the folders on the way), read as git reads them.
    """
    import pathspec

    folders = sorted({parent for path in paths for parent in Path(path).parents})
    lines = list(ALWAYS_IGNORED)
    for folder in folders:
        gitignore = project / folder / ".gitignore"
        if gitignore.is_symlink() or not gitignore.is_file():
            continue
        base = folder.as_posix()
        for raw in gitignore.read_text(encoding="utf-8", errors="replace").splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if base != ".":  # git reads a nested .gitignore relative to its folder
                negate = "!" if line.startswith("!") else ""
                body = line.removeprefix("!")
                anchored = "/" in body.rstrip("/")
                body = body.lstrip("/")
                line = f"{negate}{base}/{body}" if anchored else f"{negate}{base}/**/{body}"
            lines.append(line)
    return pathspec.GitIgnoreSpec.from_lines(lines)


def plan_release(
    project: Path,
    version: str,
    repo_id: str | None = None,
    *,
    allow_local_build: bool = False,
) -> ReleasePlan:
    """Check that ``project`` can be released as ``version`` and list what would be uploaded."""
    project = project.resolve()
    config = load_build_config(project)
    _, tag = normalise_version(version, config.version)
    repo = repo_id if repo_id is not None else config.hub_repo_id
    if not repo:
        raise PublishError(
            "No Hub repository: pass --repo-id ORG/NAME or set repo-id in [general.hub]."
        )
    validate_repo_id(repo, config.name.name)
    build = project / BUILD_DIR
    variant_dirs = sorted(p.parent for p in build.glob("*/metadata.json")) if build.is_dir() else []
    if not variant_dirs:
        raise PublishError(
            "build/ holds no variant: run `nix run .#build-and-copy -L` (every torch and CUDA "
            "version, for a release) or `kscaffold build`, then publish."
        )
    has_card = _card_is_regular(project)  # a linked card is named as such, before all else
    verdicts = judge_build(project, config.name.name, config.version)
    for verdict in verdicts:
        if verdict.problems:
            raise PublishError(str(verdict.problems[0]))
    statuses = [verdict.status for verdict in verdicts if verdict.status is not None]
    local = tuple(status.variant for status in statuses if status.local_build)
    if local and not allow_local_build:
        builder = next(s.builder for s in statuses if s.local_build) or "no builder"
        raise PublishError(
            f"{', '.join(local)} not built by kernel-builder's Nix build (metadata.json names "
            f"{builder}), so only for this machine's torch and CUDA: pass --allow-local-build "
            "to release it anyway, or build every variant with `nix run .#build-and-copy -L`."
        )
    findings = check_project(project)
    if has_errors(findings):
        first = next(finding for finding in findings if finding.is_error)
        count = sum(1 for finding in findings if finding.is_error)
        raise PublishError(
            f"`kscaffold check` reports {count} error(s), first {first.location}: "
            f"{first.message} Fix them, then publish."
        )
    build_files = [
        path.relative_to(project).as_posix()
        for variant in variant_dirs
        for path in _regular_files(variant, project)
    ]
    card = [CARD] if has_card and upload_candidates(project, [CARD]) else []
    variants = tuple(variant.name for variant in variant_dirs)
    warnings = tuple(
        f"{finding.location}: {finding.message}"
        for finding in findings
        if not finding.is_error and finding.location.startswith("build/")
    )
    return ReleasePlan(
        repo_id=repo,
        branch=f"v{config.version}",
        tag=tag,
        build_files=tuple(sorted([*build_files, *_benchmark_files(project)])),
        main_files=tuple(card),
        variants=variants,
        # A pure-Python kernel: the flake builds one torch-<backend> variant per backend.
        flake_variants=tuple(sorted(noarch_variant_name(b) for b in config.backends))
        if config.is_noarch
        else flake_variants(config.backends),
        local_variants=local,
        warnings=warnings,
    )


def _card_is_regular(project: Path) -> bool:
    try:
        mode = (project / CARD).lstat().st_mode
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(mode):
        raise PublishError(
            f"{CARD} (the card for main) is a link or not a regular file: make it a plain "
            "file, then publish."
        )
    return True


def load_line(repo_id: str, major: int, trusted: bool) -> str:
    """The ``get_kernel`` call that loads the release, as the loader will accept it."""
    trust = "" if trusted else ", trust_remote_code=True"
    return f'get_kernel("{repo_id}", version={major}{trust})'


def publish(
    project: Path,
    version: str,
    *,
    repo_id: str | None = None,
    private: bool = False,
    dry_run: bool = False,
    create_pr: bool = False,
    allow_local_build: bool = False,
    api: Any = None,
) -> ReleasePlan | ReleaseResult:
    """Upload ``project`` to the Hub as release ``version``; with ``dry_run``, only plan it.

    The project's lock is held from the first check to the last upload, so that a build or an
    add-op cannot change what is checked before it is uploaded.
    """
    if not (project / BUILD_DIR).is_dir():  # nothing to lock, and nothing to release
        return _publish(
            project, version, repo_id, private, dry_run, create_pr, allow_local_build, api
        )
    with holding_project_lock(project.resolve(), "publish", PublishError):
        return _publish(
            project, version, repo_id, private, dry_run, create_pr, allow_local_build, api
        )


def _publish(
    project: Path,
    version: str,
    repo_id: str | None,
    private: bool,
    dry_run: bool,
    create_pr: bool,
    allow_local_build: bool,
    api: Any,
) -> ReleasePlan | ReleaseResult:
    plan = plan_release(project, version, repo_id, allow_local_build=allow_local_build)
    if dry_run:
        return plan
    from huggingface_hub import get_token

    if get_token() is None:
        raise PublishError(_NOT_LOGGED_IN)
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    try:
        return _upload(api, project.resolve(), plan, private=private, create_pr=create_pr)
    except PublishError:
        raise
    except Exception as error:  # noqa: BLE001 - every Hub failure becomes one line
        raise _hub_error(error, plan.repo_id) from None


def _hub_error(error: Exception, repo_id: str) -> PublishError:
    from huggingface_hub.errors import HfHubHTTPError, LocalTokenNotFoundError

    owner = repo_id.split("/")[0]
    if isinstance(error, LocalTokenNotFoundError):
        return PublishError(_NOT_LOGGED_IN)
    if isinstance(error, HfHubHTTPError):
        status = error.response.status_code if error.response is not None else None
        if status == 401:
            return PublishError(
                "The Hub did not accept your token (401): run `hf auth login` with a write "
                "token, or set HF_TOKEN to one."
            )
        if status == 403:
            return PublishError(
                f"The Hub refused to let you write kernel repos under '{owner}' (403): "
                f"publishing kernels needs approval, ask for it at {ACCESS_URL}, or publish "
                "with --create-pr to a repository that already exists."
            )
        return PublishError(f"The Hub refused the release ({status}): {_first_line(error)}")
    return PublishError(
        f"Cannot reach the Hugging Face Hub ({type(error).__name__}: {_first_line(error)}): "
        "check the network (or HF_ENDPOINT / HF_HUB_OFFLINE), then publish again."
    )


def _first_line(error: Exception) -> str:
    """The first line of ``error``'s message, or its type's name when it has none."""
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


def _tag_numbers(name: str) -> tuple[int, ...] | None:
    match = _VERSION.match(name)
    return tuple(int(part) for part in match.groups()) if match else None


def _upload(
    api: Any, project: Path, plan: ReleasePlan, *, private: bool, create_pr: bool
) -> ReleaseResult:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    repo = plan.repo_id
    if not create_pr:  # a pull request needs an existing repository, and no write access
        api.create_repo(repo, repo_type=REPO_TYPE, private=private, exist_ok=True)
    refs = api.list_repo_refs(repo, repo_type=REPO_TYPE)
    wanted = _tag_numbers(plan.tag)
    if any(_tag_numbers(tag.name) == wanted for tag in refs.tags):
        raise PublishError(f"{repo} already has the tag {plan.tag}: release a higher version.")
    newer = sorted(
        (numbers, tag.name)
        for tag in refs.tags
        if (numbers := _tag_numbers(tag.name)) is not None
        and wanted is not None
        and numbers[0] == wanted[0]
        and numbers > wanted
    )
    if newer:
        raise PublishError(
            f"{repo} already has the tag {newer[-1][1]}, newer than {plan.tag} of the same major "
            f"version: release a version above {newer[-1][1].lstrip('v')}."
        )
    new_branch = not any(branch.name == plan.branch for branch in refs.branches)
    if new_branch:
        if create_pr:
            raise PublishError(
                f"A pull request needs the branch {plan.branch} to exist on {repo}: ask a "
                "maintainer to create it, or publish without --create-pr."
            )
        api.create_branch(repo, branch=plan.branch, repo_type=REPO_TYPE, exist_ok=True)
    existing = api.list_repo_files(repo, revision=plan.branch, repo_type=REPO_TYPE)
    uploaded = set(plan.build_files)
    stale_prefixes = (
        ("build/",) if new_branch else tuple(f"build/{variant}/" for variant in plan.variants)
    )
    deletions = [
        CommitOperationDelete(path_in_repo=path)
        for path in sorted(existing)
        if path not in uploaded
        and (
            path.startswith(stale_prefixes)
            or (path.startswith(f"{BENCHMARKS_DIR}/") and Path(path).name.startswith("benchmark"))
        )
    ]
    additions = [
        CommitOperationAdd(path_in_repo=path, path_or_fileobj=str(project / path))
        for path in plan.build_files
    ]
    pull_requests: list[str] = []
    for branch, operations in (
        (plan.branch, [*deletions, *additions]),
        (
            MAIN_BRANCH,
            [
                CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(project / p))
                for p in plan.main_files
            ],
        ),
    ):
        if not operations:
            continue
        info = api.create_commit(
            repo,
            operations,
            commit_message=f"Release {plan.tag} (uploaded with kscaffold)",
            revision=branch,
            repo_type=REPO_TYPE,
            create_pr=create_pr,
        )
        if create_pr and getattr(info, "pr_url", None):
            pull_requests.append(str(info.pr_url))
    if not create_pr:  # the tag marks the merged release; a pull request is not one yet
        api.create_tag(repo, tag=plan.tag, revision=plan.branch, repo_type=REPO_TYPE)
    trusted = _trusted_publisher(api, repo)
    return ReleaseResult(plan, load_line(repo, plan.major, trusted), trusted, tuple(pull_requests))


def _trusted_publisher(api: Any, repo_id: str) -> bool:
    """As the loader decides: the owner's Hub overview has ``trustedKernelPublisher`` set."""
    try:
        overview = api.get_organization_overview(repo_id.split("/")[0])
    except Exception:  # noqa: BLE001 - a user or an unknown owner is simply not trusted
        return False
    return bool(getattr(overview, "trustedKernelPublisher", False))
