"""The ``kscaffold`` command line: each command parses its options and makes one library call."""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperCommand

from scaffold._version import __version__
from scaffold.checks import check_project, has_errors
from scaffold.cli.hints import next_steps, tool_commands
from scaffold.cli.reports import print_clean_report, print_findings
from scaffold.cli.streams import make_streams_safe
from scaffold.errors import InvalidOptionError, KscaffoldError
from scaffold.grow.addop import add_op
from scaffold.grow.create import create_project
from scaffold.grow.evolve import EvolveReport, add_backend, update_project
from scaffold.grow.migrate import update_edition
from scaffold.project.buildconfig import find_project_root
from scaffold.project.names import KNOWN_LICENSES
from scaffold.project.spec import EXAMPLES, ProjectSpec
from scaffold.project.stableabi import DEFAULT_STABLE_ABI
from scaffold.release.clean import clean_project
from scaffold.testing.sanitize import DEFAULT_TIMEOUT_S
from scaffold.vocabulary import (
    CPP_LANGUAGE,
    DEFAULT_BACKENDS,
    LIKE_KINDS,
    SUPPORTED_BACKENDS,
    TRITON_LANGUAGE,
)


def examples(*commands: str) -> str:
    """A command's help epilog: the examples its --help ends with, one paragraph each."""
    return "Examples:\n\n" + "\n\n".join(f"  $ {command}" for command in commands)


app = typer.Typer(
    name="kscaffold",
    help="Create, build, check and publish Hugging Face kernel-builder projects.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    epilog=examples("kscaffold new my-kernel", "kscaffold test my-kernel"),
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


@app.command(
    epilog=examples(
        "kscaffold new my-kernel",
        "kscaffold new img2gray --example img2gray --owner my-org --stable-abi 2.11",
    )
)
@reports_errors
def new(
    name: Annotated[str, typer.Argument(help="Kernel name on the Hub, e.g. my-kernel.")],
    # `--stable-abi [VERSION]`: the option is a flag and its optional value the second argument
    # (typer has no option whose value may be left out).
    stable_abi_version: Annotated[
        str | None,
        typer.Argument(
            metavar="VERSION",
            help="With --stable-abi: the oldest torch the build loads on, e.g. 2.11.",
            show_default=False,
        ),
    ] = None,
    dest: Annotated[Path | None, typer.Option(help="Folder to create (default: ./NAME).")] = None,
    backends: Annotated[
        str, typer.Option(help=f"Comma-separated backends: {', '.join(SUPPORTED_BACKENDS)}.")
    ] = ",".join(DEFAULT_BACKENDS),
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
    triton: Annotated[
        bool,
        typer.Option(
            "--triton",
            help="Write the ops in Triton (CUDA) and PyTorch (CPU): a pure-Python [torch-noarch] "
            "kernel, nothing to compile.",
        ),
    ] = False,
    stable_abi: Annotated[
        bool,
        typer.Option(
            "--stable-abi",
            help="Write the ops against torch's stable ABI: one build (torch-stable-abi<NN>) "
            "loads on torch VERSION and every later one (VERSION after the option, default "
            f"{DEFAULT_STABLE_ABI}: the oldest torch the template's ops support there).",
        ),
    ] = False,
    schema: Annotated[str | None, typer.Option(help=SCHEMA_HELP)] = None,
    git: Annotated[bool, typer.Option(help="git init and commit the new project.")] = True,
    force: Annotated[bool, typer.Option(help="Write into an existing non-empty folder.")] = False,
) -> None:
    """Create a new kernel project from kscaffold's template."""
    if stable_abi_version is not None and not stable_abi:
        raise InvalidOptionError(
            f"Unexpected argument '{stable_abi_version}': a torch version follows --stable-abi "
            f"(kscaffold new {name} --stable-abi {stable_abi_version})."
        )
    spec = ProjectSpec.parse(
        name,
        backends=backends,
        example=example,
        owner=owner,
        license=license,
        version=version,
        language=TRITON_LANGUAGE if triton else CPP_LANGUAGE,
        stable_abi=(stable_abi_version or DEFAULT_STABLE_ABI) if stable_abi else None,
        schema=schema,
    )
    project = create_project(spec, dest if dest is not None else Path(name), force=force, git=git)
    console.print(Text.assemble("Created ", (str(spec.name), "bold"), f" in {project}"))
    console.print(f"Next: {next_steps(project, cuda='cuda' in spec.backends)}")


SCHEMA_HELP = (
    "The op's schema, '(Tensor x, float eps=1e-6) -> Tensor' (any the dispatcher accepts): "
    "kscaffold generates its skeletons, wrapper, fake, tests and benchmark from it."
)

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
        verb = "added" if path in report.added else "updated"
        console.print(f"  {verb:<8} {path}")
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


@app.command(
    "add-backend",
    epilog=examples("kscaffold add-backend cpu", "kscaffold add-backend cuda --conflict-markers"),
)
@reports_errors
def add_backend_command(
    backend: Annotated[str, typer.Argument(help=f"One of {', '.join(SUPPORTED_BACKENDS)}.")],
    path: ProjectPath = None,
    conflict_markers: ConflictMarkers = False,
) -> None:
    """Add a backend to a project, keeping every edit you made."""
    report = add_backend(_project(path), backend, markers=conflict_markers)
    _print_evolve_report(report)
    for note in report.notes:
        console.print(note, style="dim", markup=False)
    _, kscaffold = tool_commands()
    console.print(f"Added the {backend} backend. Next: {kscaffold} test", markup=False)


@app.command(
    "add-op",
    epilog=examples(
        "kscaffold add-op to_gray --like img2gray",
        "kscaffold add-op rms_norm --schema '(Tensor x, Tensor weight, float eps=1e-6) -> Tensor'",
    ),
)
@reports_errors
def add_op_command(
    name: Annotated[str, typer.Argument(help="The new op's name, e.g. scale (snake_case).")],
    path: ProjectPath = None,
    like: Annotated[
        str | None,
        typer.Option(
            help=f"Start from a working op of the template ({', '.join(LIKE_KINDS)}); "
            "without it, every backend gets a skeleton that raises until written."
        ),
    ] = None,
    schema: Annotated[str | None, typer.Option(help=SCHEMA_HELP)] = None,
    conflict_markers: ConflictMarkers = False,
) -> None:
    """Add an op to every backend of a project, keeping every edit you made."""
    report = add_op(_project(path), name, like=like, schema=schema, markers=conflict_markers)
    _print_evolve_report(report)
    _, kscaffold = tool_commands()
    console.print(f"Added the {name} op. Next: {kscaffold} test")


@app.command(
    epilog=examples(
        "kscaffold update",
        "kscaffold update --edition 6 --kernel-builder 03dd3532d47037340a77a5bf23684d6d0394b73d",
    )
)
@reports_errors
def update(
    path: ProjectPath = None,
    conflict_markers: ConflictMarkers = False,
    edition: Annotated[
        int | None,
        typer.Option(
            help="Move build.toml to this edition (6), key by key, keeping comments and keys; "
            "works on projects kscaffold did not write too."
        ),
    ] = None,
    kernel_builder: Annotated[
        str | None,
        typer.Option(
            "--kernel-builder",
            metavar="REF",
            help="The github:huggingface/kernels revision the flake builds with (a commit, tag "
            "or branch); needed with --edition 6, which no release builds yet.",
        ),
    ] = None,
) -> None:
    """Merge the installed kscaffold's template changes into a project."""
    if edition is None:
        if kernel_builder is not None:
            raise InvalidOptionError(
                "--kernel-builder moves the flake with the build.toml edition: add --edition 6."
            )
        report = update_project(_project(path), markers=conflict_markers)
    else:
        moved = update_edition(_project(path), edition, kernel_builder, markers=conflict_markers)
        report = moved.report
        for note in moved.notes:
            console.print(note, markup=False)
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


@app.command(epilog=examples("kscaffold build --backend cpu", "kscaffold build --release --jobs 8"))
@reports_errors
def build(
    path: ProjectPath = None,
    backend: Annotated[
        str | None, typer.Option(help="Build only this backend (cpu or cuda).")
    ] = None,
    cuda_archs: Annotated[
        str | None,
        typer.Option(
            help="CUDA archs to compile, e.g. 8.0,9.0,12.0+PTX (default: the visible GPU's; "
            "without a GPU, the oldest arch of the release set)."
        ),
    ] = None,
    release: Annotated[
        bool,
        typer.Option(
            "--release",
            help="Compile CUDA for every arch the release carries (build.toml's "
            "cuda-capabilities, else kernel-builder's list), whatever GPU is visible.",
        ),
    ] = False,
    jobs: Annotated[
        int | None, typer.Option(help="Parallel compile jobs (default: ninja's).")
    ] = None,
) -> None:
    """Compile the project without Nix into build/<variant>/, as `kernels` loads it."""
    from scaffold.cli.build_progress import ConsoleBuildReporter
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
            release=release,
        )
    finally:
        reporter.close()
    load = f"kernels.get_local_kernel(Path({str(project)!r}))"
    console.print(f"Built {len(results)} variant(s). Load with {load}", soft_wrap=True)


#: Where the ``test`` command keeps the arguments given after ``--``, for pytest.
_PYTEST_ARGS = "kscaffold.pytest_args"


class _PassThroughCommand(TyperCommand):
    """Parses the arguments before ``--`` as usual and keeps those after it for pytest."""

    # Typer hands its commands a typer.Context; the base class names its private click's.
    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        if "--" in args:
            split = args.index("--")
            ctx.meta[_PYTEST_ARGS] = args[split + 1 :]
            args = args[:split]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]
        return [*super().collect_usage_pieces(ctx), "[-- PYTEST_ARGS]"]


@app.command(
    "test",
    cls=_PassThroughCommand,
    epilog=examples("kscaffold test", "kscaffold test path/to/my-kernel -- -x -k out"),
)
@reports_errors
def test_command(
    ctx: typer.Context,
    path: ProjectPath = None,
    backend: Annotated[
        str | None, typer.Option(help="Build and test only this backend (cpu or cuda).")
    ] = None,
) -> None:
    """Build what changed, then run the project's tests against build/ (pytest args after --)."""
    from scaffold.cli.build_progress import ConsoleBuildReporter
    from scaffold.testing.project_tests import prepare_project_tests

    reporter = ConsoleBuildReporter(console, error_console)
    try:
        tests = prepare_project_tests(
            _project(path),
            pytest_args=ctx.meta.get(_PYTEST_ARGS, []),
            backend=backend,
            reporter=reporter,
        )
    finally:
        reporter.close()
    python, _ = tool_commands()
    console.print(tests.describe(), markup=False, highlight=False, soft_wrap=True)
    console.print(f"$ {python} {shlex.join(tests.command[1:])}", markup=False, highlight=False)
    console.file.flush()
    run = tests.run()
    console.print(run.verdict(), markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(run.exit_code)


@app.command(
    cls=_PassThroughCommand,
    epilog=examples(
        "kscaffold sanitize", "kscaffold sanitize --tool memcheck,initcheck -- -x -k out"
    ),
)
@reports_errors
def sanitize(
    ctx: typer.Context,
    path: ProjectPath = None,
    tool: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated tools (default: memcheck,racecheck,initcheck,synccheck)."
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            min=1,
            help="Seconds each tool may run before it is stopped and the test it hung in named.",
        ),
    ] = DEFAULT_TIMEOUT_S,
) -> None:
    """Build, then run the CUDA tests under each compute-sanitizer tool; exit 1 on any finding."""
    from scaffold.cli.build_progress import ConsoleBuildReporter
    from scaffold.testing.sanitize import parse_tools, sanitize_project, sanitize_table

    tools = parse_tools(tool)
    reporter = ConsoleBuildReporter(console, error_console)

    def echo(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    try:
        runs = sanitize_project(
            _project(path),
            tools=tools,
            pytest_args=ctx.meta.get(_PYTEST_ARGS, []),
            reporter=reporter,
            echo=echo,
            timeout_s=timeout,
        )
    finally:
        reporter.close()
    console.print("")
    console.print(sanitize_table(runs))
    dirty = [run.tool for run in runs if not run.clean]
    if dirty:
        console.print(f"Not clean under {', '.join(dirty)}.")
        raise typer.Exit(1)
    console.print("Clean under every tool.")


@app.command(
    epilog=examples("kscaffold profile", "kscaffold profile --op img2gray --json profile.json")
)
@reports_errors
def profile(
    path: ProjectPath = None,
    op: Annotated[
        str | None, typer.Option(help="Profile only this op (default: every op).")
    ] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Also write the results as JSON to this file.")
    ] = None,
    sizes: Annotated[
        str | None, typer.Option(help="Only these workload sizes, comma-separated (e.g. 8K).")
    ] = None,
    dtypes: Annotated[
        str | None, typer.Option(help="Only these dtypes, comma-separated (e.g. uint8).")
    ] = None,
) -> None:
    """Profile the op's benchmark workloads under Nsight Compute: what bounds each kernel."""
    from scaffold.cli.build_progress import ConsoleBuildReporter
    from scaffold.testing.profiling import profile_json, profile_project, profile_table

    reporter = ConsoleBuildReporter(console, error_console)
    try:
        profiles = profile_project(
            _project(path),
            op=op,
            sizes=[s.strip() for s in sizes.split(",")] if sizes else (),
            dtypes=[d.strip() for d in dtypes.split(",")] if dtypes else (),
            reporter=reporter,
            echo=lambda line: console.print(line),
        )
    finally:
        reporter.close()
    console.print(profile_table(profiles), soft_wrap=True)
    if json_path is not None:
        json_path.write_text(profile_json(profiles), encoding="utf-8")
        console.print(f"Wrote {json_path}")


@app.command(epilog=examples("kscaffold clean --dry-run", "kscaffold clean --all"))
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


@app.command(epilog=examples("kscaffold check", "kscaffold check path/to/my-kernel"))
@reports_errors
def check(path: ProjectPath = None) -> None:
    """Check that a project is ready to release; exit 1 if anything must be fixed first."""
    findings = check_project(_project(path))
    print_findings(console, findings)
    if has_errors(findings):
        raise typer.Exit(1)


_LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "ok": "green", "info": "dim"}


@app.command(epilog=examples("kscaffold doctor", "kscaffold doctor path/to/my-kernel"))
@reports_errors
def doctor(path: ProjectPath = None) -> None:
    """Check that this machine can build, load and run the project; exit 1 on an error."""
    from scaffold.testing.doctor import diagnose

    findings = diagnose(_project(path))
    for finding in findings:
        console.print(
            Text.assemble(
                (f"{finding.level:<7}", _LEVEL_STYLE[finding.level]),
                f" {finding.topic}: {finding.message}",
            )
        )
    errors = sum(finding.is_error for finding in findings)
    if errors:
        console.print(f"{errors} error{'s' if errors != 1 else ''}.")
        raise typer.Exit(1)


@app.command(
    epilog=examples(
        "kscaffold publish 1.0.0 --dry-run", "kscaffold publish 1.2.0 --repo-id my-org/my-kernel"
    )
)
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
        bool, typer.Option("--dry-run", help="Check and list every file that would be uploaded.")
    ] = False,
    create_pr: Annotated[
        bool,
        typer.Option("--create-pr", help="Open pull requests instead of committing directly."),
    ] = False,
    allow_local_build: Annotated[
        bool,
        typer.Option(
            "--allow-local-build",
            help="Release variants built by `kscaffold build` (this machine's torch/CUDA only).",
        ),
    ] = False,
) -> None:
    """Release build/ on the Hub's kernel repo: variants to branch vX, card to main, tag vX.Y.Z."""
    from scaffold.release.publish import ReleasePlan
    from scaffold.release.publish import publish as publish_release

    outcome = publish_release(
        _project(path),
        version,
        repo_id=repo_id,
        private=private,
        dry_run=dry_run,
        create_pr=create_pr,
        allow_local_build=allow_local_build,
    )
    plan = outcome if isinstance(outcome, ReleasePlan) else outcome.plan

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    say(f"Release {plan.tag} of {plan.repo_id} (kernel repository)")
    covered = ", ".join(plan.variants)
    say(f"Variants: {covered}" + (" (built without Nix)" if plan.local_variants else ""))
    foreign = [variant for variant in plan.variants if variant not in plan.flake_variants]
    if foreign:
        say(f"Not among the variants the pinned flake builds: {', '.join(foreign)}")
    if plan.missing_variants:
        say(
            f"Not covered ({len(plan.missing_variants)} of the {len(plan.flake_variants)} the "
            f"flake builds): {', '.join(plan.missing_variants)}"
        )
    for warning in plan.warnings:
        say(f"warning: {warning}")
    verb = "Would upload" if isinstance(outcome, ReleasePlan) else "Uploaded"
    say(f"{verb} {len(plan.build_files)} file(s) to branch {plan.branch}:")
    for file in plan.build_files:
        say(f"  {file}")
    say(f"{verb} {len(plan.main_files)} file(s) to branch main:")
    for file in plan.main_files:
        say(f"  {file}")
    if isinstance(outcome, ReleasePlan):
        return
    for url in outcome.pull_requests:
        say(f"Pull request: {url}")
    if not create_pr:
        say(f"Tagged {plan.tag}.")
    say(f"Load with: from kernels import get_kernel; {outcome.load_line}")


def main() -> None:
    """Console-script entry point."""
    make_streams_safe()
    app()
