"""Releasing and cleaning: ``kscaffold publish`` and ``kscaffold clean``.

Owns: publish (the Hub upload, gated by the checks), clean (removing only what kscaffold made).
May import: scaffold.checks, scaffold.compiler, scaffold.outputs, scaffold.project and below;
never scaffold.grow, scaffold.testing or scaffold.cli.
"""
