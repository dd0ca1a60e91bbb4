"""Running a built project on this machine, and proving it holds in production.

Owns: project_tests (``kscaffold test``: build, then the project's own tests against build/),
pytest_plugin (the built variant importable by package name and Hub repo id in a test run)
and run_report (what the two share, free of pytest),
doctor (driver, toolkit, GPU archs, torch and host compiler against the build), sanitize
(compute-sanitizer over the CUDA tests), profiling (Nsight Compute over the benchmark
workloads) and the probes they read the machine through.
May import: scaffold.compiler, scaffold.checks, scaffold.outputs, scaffold.project and below;
never scaffold.grow, scaffold.release or scaffold.cli.
"""
