"""What kscaffold writes beside the sources, and how it is recognised again.

Owns: artifacts (the build/ tree and stray build products), manifest (.kscaffold/generated.json,
the record of files kscaffold generated), provenance (metadata.json's provenance and digest),
release_gate (whether a built variant may be released: fresh, intact, built from HEAD),
project_lock (one build, publish or merge at a time).
May import: scaffold.project and everything below it.
"""
