"""Low-level helpers every layer may use: reading files safely and running git.

Owns: safefs (reads that refuse links and special files), gitutil (git as a subprocess).
May import: scaffold.errors, scaffold.vocabulary. Nothing else of kscaffold.
"""
