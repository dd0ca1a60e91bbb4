"""Grow or upgrade an existing project: ``kscaffold add-backend`` and ``kscaffold update``.

Design: a template change is merged as a diff between two renderings, never by re-rendering over
the user's files. The *before* rendering is the project's baseline: the pristine rendering kscaffold
last wrote, kept as a commit on the git ref ``refs/kscaffold/template`` (outside every branch, so it
never shows up in the user's history or work tree). Where that ref is missing (a project made with
``--no-git`` or freshly cloned), the baseline is re-rendered from the recorded answers, which is
exact when the installed kscaffold is the version that made the project. The *after* rendering is
the current template with the new answers. :mod:`scaffold.grow.merge` carries the difference
into the
user's files, and the *after* rendering becomes the new baseline.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import tomlkit

from scaffold.errors import DirtyTreeError, InvalidOptionError, KscaffoldError, MergeConflictError
from scaffold.grow.answers_drift import answers_drift
from scaffold.grow.merge import Conflict, plan_merge
from scaffold.grow.skeleton import render_skeleton, skeleton_path
from scaffold.grow.stableskeleton import render_stable_skeleton
from scaffold.grow.template import kscaffold_version, render_files
from scaffold.outputs.project_lock import holding_project_lock
from scaffold.project.answers import ProjectAnswers, load_answers
from scaffold.project.editions import kernel_table_backend
from scaffold.project.schema import OpSchema, find_schemas
from scaffold.support import gitutil
from scaffold.vocabulary import (
    ANSWERS_FILE,
    CSRC_DIR,
    SUPPORTED_BACKENDS,
    TORCH_EXT_DIR,
    TRITON_LANGUAGE,
)

#: The baseline's ref for a project at the top of its git repository.
BASELINE_REF = "refs/kscaffold/template"
#: Where the baselines of projects in subfolders of a larger repository live, one ref each.
_NESTED_BASELINES = "refs/kscaffold/templates/"


def baseline_ref(project: Path) -> str:
    """The git ref holding ``project``'s baseline.

    A project at the top of its repository uses :data:`BASELINE_REF`; one in a subfolder of a
    larger repository (made with ``--no-git`` there) gets a ref of its own, named after its path
    in the repository, so projects sharing a repository never share a baseline.
    """
    prefix = gitutil.run_git(project, "rev-parse", "--show-prefix").stdout.strip()
    if not prefix:
        return BASELINE_REF
    return _NESTED_BASELINES + hashlib.sha256(prefix.encode()).hexdigest()[:20]


@dataclass
class EvolveReport:
    """What an add-backend or update did to the project."""

    written: list[str] = field(default_factory=list)
    #: The files among ``written`` that did not exist before.
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    #: One-line remarks about what the command did (printed after the files).
    notes: list[str] = field(default_factory=list)


def record_baseline(project: Path, files: dict[str, bytes], message: str) -> None:
    """Keep ``files`` as the project's pristine rendering (only in git projects)."""
    if gitutil.is_inside_work_tree(project):
        gitutil.write_ref_files(project, baseline_ref(project), files, message)


def _stored_baseline(project: Path, answers_text: bytes) -> dict[str, bytes] | None:
    """The newest stored baseline rendered with the project's current answers, if any.

    Each add-backend or update appends a baseline to the ref's history. When the project was
    since rolled back with git (``git reset``, ``git revert``), its answers file is an older
    one again, and the baseline to merge from is the one recorded with those answers.
    """
    ref = baseline_ref(project)
    history = gitutil.run_git(project, "rev-list", "--max-count=200", ref, "--", check=False)
    for commit in history.stdout.split() if history.returncode == 0 else []:
        shown = gitutil.run_git(project, "show", f"{commit}:{ANSWERS_FILE}", check=False)
        if shown.returncode == 0 and shown.stdout.encode() == answers_text:
            return gitutil.read_ref_files(project, commit)
    return None


def _baseline(project: Path, answers: ProjectAnswers, in_git: bool) -> dict[str, bytes]:
    if in_git:
        stored = _stored_baseline(project, (project / ANSWERS_FILE).read_bytes())
        if stored is not None:
            return stored
        # No baseline was recorded with these answers: they were edited by hand since the last
        # one, which is then the rendering they replaced. Merging from it applies the edit, as
        # copier re-renders from changed answers.
        latest = gitutil.read_ref_files(project, baseline_ref(project))
        if latest is not None:
            return latest
    if answers.kscaffold_version == kscaffold_version():
        return render_files(answers.values)
    raise KscaffoldError(
        f"{project} was made by kscaffold {answers.kscaffold_version} and has no stored baseline "
        f"({BASELINE_REF}): install kscaffold {answers.kscaffold_version} to add a backend, "
        "or re-create the project with the current kscaffold."
    )


def _schemas_of(files: dict[str, bytes]) -> list[OpSchema]:
    with tempfile.TemporaryDirectory(prefix="kscaffold-schemas-") as scratch:
        for relative, data in files.items():
            if relative.startswith(f"{TORCH_EXT_DIR}/"):
                path = Path(scratch) / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        return find_schemas(Path(scratch))


def _with_skeletons(
    project: Path,
    python_name: str,
    before: dict[str, bytes],
    after: dict[str, bytes],
    backends: set[str],
) -> dict[str, bytes]:
    """Fit a rendering to ops the user wrote: skeletons where the template has no implementation.

    For each of ``backends``, the template's implementation is kept only if every op it
    implements is still declared; the user's own ops get a generated skeleton, listed in that
    backend's ``[kernel.*]`` table. Ops the template gains in this change (``add-op``) keep
    their own sources and tables.
    """
    user_ops = find_schemas(project)
    before_ops = _schemas_of(before)
    template_names = {op.name for op in before_ops}
    added = {op.base_name for op in _schemas_of(after)} - {op.base_name for op in before_ops}
    user_names = {op.name for op in user_ops}
    keep_template = template_names <= user_names
    # An op declared as `def("name", fn)` carries its kernel for every backend already.
    pending = [
        op
        for op in user_ops
        if not op.inferred and (not keep_template or op.name not in template_names)
    ]
    if not pending or not backends:
        return after
    adjusted = dict(after)
    build_toml = tomlkit.parse(adjusted["build.toml"].decode())
    for backend in sorted(backends):
        template_sources = [
            p
            for p in adjusted
            if p.startswith(f"{CSRC_DIR}/{backend}/") and PurePosixPath(p).stem not in added
        ]
        skeleton = skeleton_path(python_name, backend)
        # The project's ABI for this backend, as build.toml's [torch] stable-abi declares it.
        stable = build_toml.get("torch", {}).get("stable-abi")
        render = (
            render_stable_skeleton
            if isinstance(stable, str) or (isinstance(stable, dict) and backend in stable)
            else render_skeleton
        )
        adjusted[skeleton] = render(python_name, backend, pending).encode()
        for table_name, table in build_toml.get("kernel", {}).items():
            if kernel_table_backend(table) == backend and table_name not in {
                f"{op}_{backend}" for op in added
            }:
                sources = [] if not keep_template else [str(s) for s in table["src"]]
                table["src"] = [*sources, skeleton]
        if not keep_template:
            for path in template_sources:
                del adjusted[path]
    adjusted["build.toml"] = tomlkit.dumps(build_toml).encode()
    return adjusted


def evolve(
    project: Path,
    answers: ProjectAnswers,
    new_values: ProjectAnswers,
    *,
    markers: bool,
    what: str,
    skeleton_backends: set[str] | None = None,
    rewrite: Mapping[str, Callable[[bytes], bytes]] | None = None,
) -> EvolveReport:
    """Merge the template change from ``answers`` to ``new_values`` into ``project``.

    Nothing is written when the merge meets a conflict, unless ``markers`` asks for conflict
    markers in the files concerned. ``rewrite`` maps a file to a change made to it first, both
    in the baseline and in the user's copy (an edition's new keys), so the template change is
    merged onto the rewritten file and the rewrite is written even where the template has none.
    """
    with holding_project_lock(project, what, create=False):
        return _evolve(project, answers, new_values, markers, what, skeleton_backends, rewrite)


def _evolve(
    project: Path,
    answers: ProjectAnswers,
    new_values: ProjectAnswers,
    markers: bool,
    what: str,
    skeleton_backends: set[str] | None,
    rewrite: Mapping[str, Callable[[bytes], bytes]] | None,
) -> EvolveReport:
    in_git = gitutil.is_inside_work_tree(project)
    if in_git and gitutil.has_uncommitted_changes(project):
        raise DirtyTreeError(
            f"{project} has uncommitted changes: commit or stash them first, so that the merge "
            "can be reviewed and undone with git."
        )
    before = _baseline(project, answers, in_git)
    python_name = str(answers.values["name"]).replace("-", "_")
    if skeleton_backends is None:  # keep the skeletons an earlier add-backend wrote
        skeleton_backends = {
            b for b in new_values.backends if skeleton_path(python_name, b) in before
        }
    after = _with_skeletons(
        project, python_name, before, render_files(new_values.values), skeleton_backends
    )
    overrides: dict[str, bytes] = {}
    for relative, change in (rewrite or {}).items():
        if relative in before:
            before = {**before, relative: change(before[relative])}
        if (project / relative).is_file():
            overrides[relative] = change((project / relative).read_bytes())
    plan = plan_merge(project, before, after, overrides)
    if plan.conflicts and not markers:
        listing = "; ".join(conflict.describe() for conflict in plan.conflicts)
        raise MergeConflictError(
            f"{what} stopped, nothing was changed: {listing}. Resolve by hand, or run again with "
            "--conflict-markers to write standard <<<<<<< markers into those files."
        )
    unmarked = [c.describe() for c in plan.conflicts if c.path not in plan.marked]
    if markers and unmarked:  # never report markers that were not written
        raise MergeConflictError(
            f"{what} stopped, nothing was changed: kscaffold cannot write conflict markers for "
            f"{'; '.join(unmarked)}. Resolve by hand, then run the command again."
        )
    added = sorted(path for path in plan.writes if not (project / path).exists())
    plan.apply(
        project,
        markers=markers,
        what=what,
        then=lambda: record_baseline(project, after, f"kscaffold {kscaffold_version()}: {what}"),
    )
    return EvolveReport(
        written=sorted(plan.writes) + sorted(plan.marked if markers else {}),
        added=added,
        deleted=plan.deletes,
        kept=plan.kept,
        conflicts=plan.conflicts,
    )


def add_backend(project: Path, backend: str, *, markers: bool = False) -> EvolveReport:
    """Add ``backend`` to the project the way the template would have generated it."""
    if backend not in SUPPORTED_BACKENDS:
        raise InvalidOptionError(
            f"Unsupported backend '{backend}': supported backends are "
            f"{', '.join(SUPPORTED_BACKENDS)}."
        )
    project = project.resolve()
    answers = load_answers(project)
    if backend in answers.backends:
        raise InvalidOptionError(f"{project.name} already has the {backend} backend.")
    backends = [b for b in SUPPORTED_BACKENDS if b in (*answers.backends, backend)]
    report = evolve(
        project,
        answers,
        answers.with_values(backends=backends),
        markers=markers,
        what=f"add the {backend} backend",
        skeleton_backends={backend},
    )
    if answers.language == TRITON_LANGUAGE:
        package = str(answers.values["name"]).replace("-", "_")
        report.notes.append(
            f"{project.name} is a Triton ([torch-noarch]) project: each op's "
            f"{TORCH_EXT_DIR}/{package}/_<op>_triton.py already holds its Triton (cuda) and "
            f"PyTorch (cpu) paths, so only build.toml, the card and the tests now name {backend}."
        )
    return report


def _has_baseline(project: Path) -> bool:
    if not gitutil.is_inside_work_tree(project):
        return False
    ref = baseline_ref(project)
    return (
        gitutil.run_git(project, "rev-parse", "--verify", "--quiet", ref, check=False).returncode
        == 0
    )


def update_project(project: Path, *, markers: bool = False) -> EvolveReport:
    """Re-render the project with the installed template and merge the change in."""
    project = project.resolve()
    answers = load_answers(project)
    report = evolve(project, answers, answers, markers=markers, what="update the template")
    if not (report.written or report.deleted or report.conflicts) and not _has_baseline(project):
        drift = answers_drift(project, render_files(answers.values).get("build.toml", b""))
        if drift is not None:
            raise KscaffoldError(
                f"Nothing was updated, but {ANSWERS_FILE} and build.toml disagree ({drift}): "
                f"a hand edit of the answers is applied only from the baseline kscaffold keeps "
                f"in git ({BASELINE_REF}), which this project lacks. Make the change with "
                f"`kscaffold add-backend` or `kscaffold add-op`, or restore {ANSWERS_FILE}."
            )
    return report
