"""Device memory: kernel sources take memory from PyTorch's caching allocator and stay on streams.

``cudaMalloc`` and ``cudaFree`` in a kernel cost a device-wide synchronisation per call, hide the
memory from PyTorch (which then cannot reuse it, nor count it) and cannot be captured in a CUDA
graph; ``cudaMallocAsync`` is stream-ordered but draws from a pool of its own beside PyTorch's.
``cudaDeviceSynchronize`` stalls every stream of the process. Each call is a warning at its line:
code may have reasons (a one-off setup), but a per-call use is almost always a mistake.
"""

from __future__ import annotations

import re

from scaffold.checks.base import Context, Finding, warning
from scaffold.checks.ops import _sources_to_scan
from scaffold.project.schema import _read_source

_ALLOCATOR_FIX = (
    "Allocate with at::empty / torch::empty (PyTorch's caching allocator, on the current "
    "stream): a scratch buffer is a tensor that lives for the call and goes back to the pool "
    "when it goes out of scope."
)
_FREE_FIX = (
    "Hold the memory in an at::Tensor (at::empty) and let it go out of scope: the caching "
    "allocator takes it back, ordered on its stream."
)
_SYNC_FIX = (
    "Queue the work on the current stream (at::cuda::getCurrentCUDAStream()) and let PyTorch "
    "order it; if the host must wait for a result, synchronise that stream only "
    "(cudaStreamSynchronize(stream)), never the whole device."
)

#: Each flagged runtime call: what is wrong with it in a kernel, and the fix.
FLAGGED_CALLS: dict[str, tuple[str, str]] = {
    "cudaMalloc": (
        "allocates outside PyTorch's caching allocator and may synchronise the device",
        _ALLOCATOR_FIX,
    ),
    "cudaMallocManaged": ("allocates outside PyTorch's caching allocator", _ALLOCATOR_FIX),
    "cudaMallocPitch": ("allocates outside PyTorch's caching allocator", _ALLOCATOR_FIX),
    "cudaMallocAsync": (
        "allocates from a CUDA memory pool beside PyTorch's, which cannot reuse or count it",
        _ALLOCATOR_FIX,
    ),
    "cudaFree": ("synchronises the whole device on every call", _FREE_FIX),
    "cudaFreeAsync": ("returns memory to a pool beside PyTorch's", _FREE_FIX),
    "cudaDeviceSynchronize": (
        "waits for every stream of the process (and breaks CUDA graph capture)",
        _SYNC_FIX,
    ),
}

_CALL = re.compile(r"(?<![\w.:>])(?:::)?(" + "|".join(FLAGGED_CALLS) + r")\s*\(")


def check_device_memory(context: Context) -> list[Finding]:
    """A cudaMalloc / cudaFree / cudaDeviceSynchronize (and kin) in a source is a warning."""
    findings: list[Finding] = []
    for path in _sources_to_scan(context):
        source = _read_source(path)
        if source is None:
            continue
        for match in _CALL.finditer(source.masked):  # comments and strings are blanked
            name = match.group(1)
            problem, fix = FLAGGED_CALLS[name]
            findings.append(
                warning(
                    f"{context.relative(path)}:{source.line_of(match.start(1))}",
                    f"{name} in a kernel source {problem}.",
                    fix,
                )
            )
    return findings
