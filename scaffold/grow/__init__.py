"""The template and growing a project: ``new``, ``add-op``, ``add-backend`` and ``update``.

Owns: template (rendering the copier template), create (``kscaffold new``), evolve (the three-way
update of a project from its baseline rendering), merge (merging one file), skeleton (backend
files generated from a project's own schemas), addop (``kscaffold add-op``), migrate
(``kscaffold update --edition``: build.toml and flake.nix moved to another edition),
stableskeleton (skeletons for stable-ABI projects), transaction (all files of one change or none),
answers_drift (hand edits of the answers file).
May import: scaffold.project, scaffold.outputs, scaffold.support and below; never
scaffold.compiler, scaffold.checks, scaffold.release, scaffold.testing or scaffold.cli.
"""
