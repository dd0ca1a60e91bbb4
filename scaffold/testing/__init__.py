"""Production validation of a kernel project: ``doctor``, ``sanitize`` and ``profile``."""
