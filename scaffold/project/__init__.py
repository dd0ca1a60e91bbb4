"""Reading a kernel project: what its files declare, never how it is built or grown.

Owns: buildconfig (build.toml, every edition), schema (op schemas), preprocessor and
pyregistrations (registrations as the compiler and torch.library see them), names (validated
names: kernel, op, owner, license), spec (the options of a new project and its ops), answers
(.copier-answers.yml), flakepin (which kernel-builder release reads which edition), editions
(what separates editions 4, 5 and 6, and the backend of a kernel table in any of them),
signature (op schemas through torchgen, for the template), stableabi (stable-ABI versions),
layernames (an op's kernelize layer class), and the generated lists of names an op cannot take
(cxx_reserved, generated_names).
May import: scaffold.errors, scaffold.vocabulary, scaffold.support.
"""
