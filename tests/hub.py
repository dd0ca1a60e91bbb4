"""A strict fake of the Hugging Face Hub for release tests: no network, real call signatures.

:func:`strict_hub` returns a ``create_autospec`` of the real ``HfApi``, so a method that does not
exist or an argument the real method does not take fails the test. Its side effects keep each
branch's files, the tags and pull requests, and refuse any call that does not name the
``kernel`` repository type. :func:`lay_out_hub_cache` then writes a branch as the Hub cache
holds it, for the real ``kernels`` loader to resolve offline.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import create_autospec

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
from huggingface_hub.file_download import repo_folder_name
from huggingface_hub.hf_api import CommitInfo, GitRefInfo, GitRefs, RepoUrl


@dataclass
class FakeRepo:
    """One kernel repository: files per branch, tags, and opened pull requests."""

    branches: dict[str, dict[str, bytes]] = field(default_factory=lambda: {"main": {}})
    tags: dict[str, str] = field(default_factory=dict)
    pull_requests: dict[str, dict[str, bytes]] = field(default_factory=dict)
    commits: int = 0

    def head(self, branch: str) -> str:
        files = sorted(self.branches[branch].items())
        return hashlib.sha1(repr((branch, files)).encode()).hexdigest()


@dataclass
class FakeHubState:
    repos: dict[str, FakeRepo] = field(default_factory=dict)
    #: Every call, by method name, in order.
    calls: list[str] = field(default_factory=list)
    #: Method name → exception the Hub raises there.
    failures: dict[str, BaseException] = field(default_factory=dict)
    trusted_owners: frozenset[str] = frozenset()
    #: Owners whose repositories exist already (the others do not until created).
    existing: frozenset[str] = frozenset()


def _kernel(repo_type: str | None) -> None:
    assert repo_type == "kernel", f"Hub call without repo_type='kernel' (got {repo_type!r})"


def strict_hub(state: FakeHubState) -> Any:
    """An autospecced ``HfApi`` backed by ``state``."""
    api = create_autospec(HfApi, instance=True, spec_set=True)

    def record(name: str) -> None:
        state.calls.append(name)
        if name in state.failures:
            raise state.failures[name]

    def repo(repo_id: str) -> FakeRepo:
        assert repo_id in state.repos, f"{repo_id} does not exist on the fake Hub"
        return state.repos[repo_id]

    def create_repo(repo_id: str, **kwargs: Any) -> RepoUrl:
        record("create_repo")
        _kernel(kwargs.get("repo_type"))
        state.repos.setdefault(repo_id, FakeRepo())
        return RepoUrl(f"https://huggingface.co/kernels/{repo_id}")

    def list_repo_refs(repo_id: str, **kwargs: Any) -> GitRefs:
        record("list_repo_refs")
        _kernel(kwargs.get("repo_type"))
        found = repo(repo_id)
        return GitRefs(
            branches=[
                GitRefInfo(name=b, ref=f"refs/heads/{b}", target_commit=found.head(b))
                for b in found.branches
            ],
            converts=[],
            tags=[
                GitRefInfo(name=t, ref=f"refs/tags/{t}", target_commit=c)
                for t, c in found.tags.items()
            ],
        )

    def create_branch(repo_id: str, *, branch: str, **kwargs: Any) -> None:
        record("create_branch")
        _kernel(kwargs.get("repo_type"))
        found = repo(repo_id)
        source = kwargs.get("revision") or "main"
        found.branches.setdefault(branch, dict(found.branches[source]))

    def list_repo_files(repo_id: str, **kwargs: Any) -> list[str]:
        record("list_repo_files")
        _kernel(kwargs.get("repo_type"))
        return sorted(repo(repo_id).branches[kwargs.get("revision") or "main"])

    def create_commit(repo_id: str, operations: Any, **kwargs: Any) -> CommitInfo:
        record("create_commit")
        _kernel(kwargs.get("repo_type"))
        found = repo(repo_id)
        branch = kwargs.get("revision") or "main"
        files = dict(found.branches[branch])
        for operation in operations:
            if isinstance(operation, CommitOperationAdd):
                source = operation.path_or_fileobj
                assert isinstance(source, (str, Path)), source
                files[operation.path_in_repo] = Path(source).read_bytes()
            else:
                assert isinstance(operation, CommitOperationDelete), operation
                assert operation.path_in_repo in files, f"deleting {operation.path_in_repo}"
                del files[operation.path_in_repo]
        found.commits += 1
        url = f"https://huggingface.co/kernels/{repo_id}/commit/{found.commits}"
        if kwargs.get("create_pr"):
            number = len(found.pull_requests) + 1
            found.pull_requests[f"{branch}#{number}"] = files
            pr_url = f"https://huggingface.co/kernels/{repo_id}/discussions/{number}"
            return CommitInfo(
                url,
                commit_message=kwargs["commit_message"],
                commit_description="",
                oid="0" * 40,
                pr_url=pr_url,
            )
        found.branches[branch] = files
        return CommitInfo(
            url, commit_message=kwargs["commit_message"], commit_description="", oid="0" * 40
        )

    def create_tag(repo_id: str, *, tag: str, **kwargs: Any) -> None:
        record("create_tag")
        _kernel(kwargs.get("repo_type"))
        found = repo(repo_id)
        found.tags[tag] = found.head(kwargs.get("revision") or "main")

    def get_organization_overview(organization: str, **kwargs: Any) -> Any:
        record("get_organization_overview")
        from huggingface_hub.hf_api import Organization

        trusted = organization in state.trusted_owners
        return Organization(name=organization, trustedKernelPublisher=trusted)

    api.create_repo.side_effect = create_repo
    api.list_repo_refs.side_effect = list_repo_refs
    api.create_branch.side_effect = create_branch
    api.list_repo_files.side_effect = list_repo_files
    api.create_commit.side_effect = create_commit
    api.create_tag.side_effect = create_tag
    api.get_organization_overview.side_effect = get_organization_overview
    return api


def lay_out_hub_cache(hf_home: Path, repo_id: str, branch: str, files: dict[str, bytes]) -> Path:
    """Write ``files`` as the Hub cache holds branch ``branch`` of kernel repo ``repo_id``."""
    folder = hf_home / "hub" / repo_folder_name(repo_id=repo_id, repo_type="kernel")
    commit = hashlib.sha1(repr(sorted(files.items())).encode()).hexdigest()
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / branch).write_text(commit)
    for path, data in files.items():
        target = folder / "snapshots" / commit / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return folder
