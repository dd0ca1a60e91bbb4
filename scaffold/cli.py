"""The ``kscaffold`` command line: each command parses its options and makes one library call."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from scaffold._version import __version__
from scaffold.buildconfig import find_project_root
from scaffold.checks import check_project, has_errors
from scaffold.clean import clean_project
from scaffold.create import EXAMPLES, ProjectSpec, create_project
from scaffold.errors import KscaffoldError
from scaffold.evolve import EvolveReport, add_backend, update_project
from scaffold.names import KNOWN_LICENSES, SUPPORTED_BACKENDS
from scaffold.reports import print_clean_report, print_findings

app = typer.Typer(
    name="kscaffold",
    help="Create, build, check and publish Hugging Face kernel-builder projects.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Messages are text, never markup: a path with "[/x]" or a table name like "[general]" prints as is.
# Styling goes through Text objects and ``style=``, never through square brackets in a string.
console = Console(soft_wrap=True, markup=False, highlight=False, emoji=False)
error_console = Console(stderr=True, soft_wrap=True, markup=False, highlight=False, emoji=False)

P = ParamSpec("P")
R = TypeVar("R")

#: Set this variable to see the traceback behind an error message.
DEBUG_VARIABLE = "KSCAFFOLD_DEBUG"


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn a KscaffoldError into one red line on stderr and the error's exit status."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except KscaffoldError as error:
            if os.environ.get(DEBUG_VARIABLE):
                raise
            _print_error(str(error))
            raise typer.Exit(error.exit_code) from None
        except OSError as error:
            # The boundary for what the library did not foresee: a read-only folder, a full
            # disk, a name too long. One line, as for every other error.
            if os.environ.get(DEBUG_VARIABLE):
                raise
            _print_error(_describe_os_error(error))
            raise typer.Exit(1) from None

    return wrapper


def _print_error(message: str) -> None:
    # One line: a message with newlines (a path, git's output) is folded.
    line = " ".join(message.split("\n")).strip()
    error_console.print(Text.assemble(("Error:", "bold red"), " ", line))


def _describe_os_error(error: OSError) -> str:
    what = error.strerror or type(error).__name__
    where = f" ({error.filename})" if error.filename else ""
    return f"{what}{where}. Check that the folder exists, is writable and has room, then try again."


def _print_version(requested: bool) -> None:
    if requested:
        console.print(f"kscaffold {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Create, build, check and publish Hugging Face kernel-builder projects."""


@app.command()
@reports_errors
def new(
    name: Annotated[str, typer.Argument(help="Kernel name on the Hub, e.g. my-kernel.")],
    dest: Annotated[Path | None, typer.Option(help="Folder to create (default: ./NAME).")] = None,
    backends: Annotated[
        str, typer.Option(help=f"Comma-separated backends: {', '.join(SUPPORTED_BACKENDS)}.")
    ] = "cuda",
    example: Annotated[
        str | None, typer.Option(help=f"Start from a worked example: {', '.join(EXAMPLES)}.")
    ] = None,
    owner: Annotated[
        str | None, typer.Option(help="Hub user or organisation that will publish the kernel.")
    ] = None,
    license: Annotated[
        str, typer.Option(help=f"License id ({', '.join(KNOWN_LICENSES[:4])}, ...).")
    ] = "apache-2.0",
    version: Annotated[int, typer.Option(help="Major version of the kernel's API.")] = 1,
    git: Annotated[bool, typer.Option(help="git init and commit the new project.")] = True,
    force: Annotated[bool, typer.Option(help="Write into an existing non-empty folder.")] = False,
) -> None:
    """Create a new kernel project from kscaffold's template."""
    spec = ProjectSpec.parse(
        name, backends=backends, example=example, owner=owner, license=license, version=version
    )
    project = create_project(spec, dest if dest is not None else Path(name), force=force, git=git)
    console.print(Text.assemble("Created ", (str(spec.name), "bold"), f" in {project}"))
    console.print(f"Next: cd {project} && kscaffold build && python -m pytest tests")


ProjectPath = Annotated[
    Path | None,
    typer.Argument(
        help="The kernel project (default: the folder holding build.toml, here or above).",
        show_default=False,
    ),
]


def _project(path: Path | None) -> Path:
    """``path`` if given; else the project around the current folder, named when not the cwd."""
    if path is not None:
        return path
    root = find_project_root(Path.cwd())
    if root is None or root == Path.cwd().resolve():
        return Path(".")  # without a project, the command's own error says so
    console.print(f"Project: {root}", style="dim")
    return root


ConflictMarkers = Annotated[
    bool,
    typer.Option(
        "--conflict-markers",
        help="On a conflict, write <<<<<<< markers into the files instead of stopping.",
    ),
]


def _print_evolve_report(report: EvolveReport) -> None:
    for path in report.written:
        console.print(f"  updated  {path}")
    for path in report.deleted:
        console.print(f"  removed  {path}")
    for path in report.kept:
        console.print(f"  kept     {path} (you changed it; the template no longer has it)")
    if report.conflicts:
        error_console.print(
            Text.assemble(("Conflicts", "bold yellow"), " (markers written; resolve, then commit):")
        )
        for conflict in report.conflicts:
            error_console.print(f"  {conflict.describe()}")


@app.command("add-backend")
@reports_errors
def add_backend_command(
    backend: Annotated[str, typer.Argument(help=f"One of {', '.join(SUPPORTED_BACKENDS)}.")],
    path: ProjectPath = None,
    conflict_markers: ConflictMarkers = False,
) -> None:
    """Add a backend to a project, keeping every edit you made."""
    report = add_backend(_project(path), backend, markers=conflict_markers)
    _print_evolve_report(report)
    console.print(f"Added the {backend} backend. Next: kscaffold build && python -m pytest tests")


@app.command()
@reports_errors
def update(path: ProjectPath = None, conflict_markers: ConflictMarkers = False) -> None:
    """Merge the installed kscaffold's template changes into a project."""
    report = update_project(_project(path), markers=conflict_markers)
    _print_evolve_report(report)
    console.print("Updated." if report.written or report.deleted else "Already up to date.")


def _parse_archs(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [
        arch.strip()
        for arch in value.replace(";", ",").replace(" ", ",").split(",")
        if arch.strip()
    ]


@app.command()
@reports_errors
def build(
    path: ProjectPath = None,
    backend: Annotated[
        str | None, typer.Option(help="Build only this backend (cpu or cuda).")
    ] = None,
    cuda_archs: Annotated[
        str | None,
        typer.Option(
            help="CUDA archs to compile, e.g. 8.0,9.0,12.0+PTX (default: the visible GPU's, "
            "else build.toml's cuda-capabilities, else kernel-builder's list)."
        ),
    ] = None,
    jobs: Annotated[
        int | None, typer.Option(help="Parallel compile jobs (default: ninja's).")
    ] = None,
) -> None:
    """Compile the project without Nix into build/<variant>/, as `kernels` loads it."""
    from scaffold.build_progress import ConsoleBuildReporter
    from scaffold.compiler import build_project

    project = _project(path)
    reporter = ConsoleBuildReporter(console, error_console)
    try:
        results = build_project(
            project,
            backend=backend,
            cuda_archs=_parse_archs(cuda_archs),
            jobs=jobs,
            reporter=reporter,
        )
    finally:
        reporter.close()
    load = f"kernels.get_local_kernel(Path({str(project)!r}))"
    console.print(f"Built {len(results)} variant(s). Load with {load}", soft_wrap=True)


@app.command()
@reports_errors
def clean(
    path: ProjectPath = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only list what would be removed.")
    ] = False,
    all_: Annotated[
        bool,
        typer.Option("--all", help="Also remove what kscaffold built in build/ (the release)."),
    ] = False,
) -> None:
    """Remove generated files; never files git tracks or that kscaffold cannot prove it made."""
    report = clean_project(_project(path), dry_run=dry_run, include_build=all_)
    print_clean_report(console, report)


@app.command()
@reports_errors
def check(path: ProjectPath = None) -> None:
    """Check that a project is ready to release; exit 1 if anything must be fixed first."""
    findings = check_project(_project(path))
    print_findings(console, findings)
    if has_errors(findings):
        raise typer.Exit(1)


@app.command()
@reports_errors
def publish(
    version: Annotated[
        str, typer.Argument(help="Release version X.Y.Z (X = build.toml's version).")
    ],
    path: ProjectPath = None,
    repo_id: Annotated[
        str | None, typer.Option(help="Hub repository (default: [general.hub] repo-id).")
    ] = None,
    private: Annotated[bool, typer.Option(help="Create the repository as private.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check and list what would be uploaded.")
    ] = False,
) -> None:
    """Release the project on the Hugging Face Hub: branch vX, tag vX.Y.Z, card and build/."""
    from scaffold.publish import publish as publish_release

    plan = publish_release(
        _project(path), version, repo_id=repo_id, private=private, dry_run=dry_run
    )
    verb = "Would upload" if dry_run else "Uploaded"
    console.print(f"{verb} {len(plan.files)} files to {plan.repo_id}@{plan.branch}, tag {plan.tag}")
    console.print(f"Variants: {', '.join(plan.variants)}")
    if not dry_run:
        major = plan.branch.removeprefix("v")
        console.print(f'Load with: get_kernel("{plan.repo_id}", version={major})')


def main() -> None:
    """Console-script entry point."""
    app()
