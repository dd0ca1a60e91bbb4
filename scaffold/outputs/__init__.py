"""What kscaffold writes beside the sources, and how it is recognised again.

Owns: artifacts (the build/ tree and stray build products), manifest (.kscaffold/generated.json,
the record of files kscaffold generated), provenance (metadata.json's provenance and digest).
May import: scaffold.project and everything below it.
"""
