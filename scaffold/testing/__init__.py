"""Running a built project on this machine: ``kscaffold test`` and what proves it holds.

Owns: project_tests (build, then the project's own tests against build/).
May import: scaffold.compiler, scaffold.checks, scaffold.outputs, scaffold.project and below;
never scaffold.grow, scaffold.release or scaffold.cli.
"""
