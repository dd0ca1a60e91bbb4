"""How the CLI shows the reports of ``clean`` and ``check`` (rich text, nothing else)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from scaffold.checks import Finding
from scaffold.release.clean import CleanReport

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow"}


def _say(console: Console, *parts: str | tuple[str, str]) -> None:
    # Never wrap: one finding, one line, whatever the terminal's width (grep-able, testable).
    # Parts are plain text or (text, style): never markup, so "[general]" survives.
    console.print(Text.assemble(*parts), soft_wrap=True, markup=False, highlight=False)


def print_clean_report(console: Console, report: CleanReport) -> None:
    """List what clean removed (or would remove), what it skipped and why."""
    verb = "Would remove" if report.dry_run else "Removed"
    if report.removed:
        _say(console, f"{verb}:")
        for removal in report.removed:
            suffix = "/" if removal.kind == "folder" else ""
            _say(console, f"  {removal.path}{suffix}  ", (f"({removal.reason})", "dim"))
    if report.skipped:
        _say(console, "Skipped (kept):")
        for skip in report.skipped:
            _say(console, f"  {skip.path}  ", (f"({skip.reason})", "dim"))
    if report.kept_build:
        count = len(report.kept_build)
        _say(
            console,
            f"Kept build/ ({count} file{'s' if count != 1 else ''} kscaffold built, the release "
            "payload): pass --all to remove them too.",
        )
    if not report.removed:
        _say(console, "Nothing to clean.")
    elif report.dry_run:
        _say(console, "Dry run: nothing was changed.")


def print_findings(console: Console, findings: list[Finding]) -> None:
    """One line per finding with its severity and location, then how to fix it, then a tally."""
    for finding in findings:
        style = _SEVERITY_STYLE[finding.severity]
        _say(console, (finding.severity, style), f" {finding.location}: {finding.message}")
        _say(console, "    ", ("fix:", "dim"), f" {finding.fix}")
    errors = sum(finding.is_error for finding in findings)
    warnings = len(findings) - errors
    if not findings:
        _say(console, ("No problems found.", "green"), " Ready to release.")
    else:
        _say(
            console,
            f"{errors} error{'s' if errors != 1 else ''}, "
            f"{warnings} warning{'s' if warnings != 1 else ''}."
            + (" Fix the errors before releasing." if errors else ""),
        )
