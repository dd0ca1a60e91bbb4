"""The ``kscaffold`` command line: parsing options, one library call each, and what it prints.

Owns: app (the Typer commands), hints (the next step a command suggests), reports (tables of
findings and cleanups), build_progress (a build's progress on the terminal), streams (output
any locale can encode).
May import: every other part of kscaffold; nothing imports it.
"""

from scaffold.cli.app import app, main

__all__ = ["app", "main"]
