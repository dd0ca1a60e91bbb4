"""The benchmark harness every op of this project shares; benchmark*.py hold the per-op parts.

For each workload it checks the kernel against the op's PyTorch reference first, then times, in
one process and the same way: the kernel, the reference in eager mode, the reference under
torch.compile, and a plain device copy that moves the same number of bytes (the memory-bandwidth
ceiling of a pass that reads its input and writes its output once). Each time comes from several
timed rounds after a warm-up: their median on a GPU, the fastest on the CPU (other processes only
ever add time there). On a GPU the inputs rotate over enough copies to leave the L2 cache, so
that large sizes measure memory, not cache.

On a GPU it also measures the host's share of a call at the smallest size: microseconds per call
launched from Python one after another, against the same calls replayed from a CUDA graph, for the
kernel and for a `clone` of the same input.

`--list` prints the op's workloads as JSON; `--profile N` runs each chosen workload's kernel N
times and times nothing, for a profiler such as Nsight Compute (`kscaffold profile` runs it so).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from kernels.benchmark import Benchmark

IMPLEMENTATIONS = ("kernel", "eager", "compile", "copy")


@dataclasses.dataclass(frozen=True)
class Workload:
    """One input size and dtype; `size` names the size alone ("1080p", "64x1080p")."""

    size: str
    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def name(self) -> str:
        return f"{str(self.dtype).removeprefix('torch.')} {self.size}"

    @property
    def key(self) -> str:
        """The name as a Python identifier, for `kernels benchmark`'s method names."""
        return "".join(c if c.isalnum() else "_" for c in self.name)

    @property
    def input_bytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


@dataclasses.dataclass(frozen=True)
class Op:
    """What the harness needs to know of one op; the rest is shared."""

    name: str
    workloads: Sequence[Workload]
    # The input of a workload, on a device (random, never all zeros).
    make_input: Callable[[Workload, torch.device], torch.Tensor]
    # An output tensor for an input, for the kernel's out= form.
    make_out: Callable[[torch.Tensor], torch.Tensor]
    # The op in plain PyTorch: what is checked against, and what eager and torch.compile run.
    reference: Callable[[torch.Tensor], torch.Tensor]
    # The kernel's out= form, and its allocating form.
    call_out: Callable[[ModuleType, torch.Tensor, torch.Tensor], object]
    call: Callable[[ModuleType, torch.Tensor], torch.Tensor]
    # Workloads `kernels benchmark` runs (by Workload.name): a few, so that it stays quick.
    hub_workloads: Sequence[str] = ()


class KernelsBenchmark(Benchmark):
    """The `kernels benchmark` class: a setup_/benchmark_/verify_ trio per hub workload.

    Subclass it in an op's benchmark*.py with `op = OP`; the methods are made from the op's
    workloads.
    """

    op: Op
    seed = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for workload in cls.op.workloads:
            if workload.name in cls.op.hub_workloads:
                _add_workload_methods(cls, workload)


def _add_workload_methods(cls: type[KernelsBenchmark], workload: Workload) -> None:
    def setup(self: KernelsBenchmark) -> None:
        self.x = self.op.make_input(workload, torch.device(self.device))
        self.out = self.op.make_out(self.x)

    def benchmark(self: KernelsBenchmark) -> None:
        self.op.call_out(self.kernel, self.x, self.out)

    def verify(self: KernelsBenchmark) -> torch.Tensor:
        return self.op.reference(self.x)

    setattr(cls, f"setup_{workload.key}", setup)
    setattr(cls, f"benchmark_{workload.key}", benchmark)
    setattr(cls, f"verify_{workload.key}", verify)


# --- timing --------------------------------------------------------------------------------------


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _elapsed_ms(run: Callable[[], None], device: torch.device) -> float:
    """Milliseconds `run` takes: CUDA events on a GPU, the wall clock on the CPU."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(device)
        start.record()
        run()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))
    begin = time.perf_counter()
    run()
    return (time.perf_counter() - begin) * 1e3


def time_us(
    fns: dict[str, Callable[[int], object]],
    device: torch.device,
    *,
    round_ms: float = 20.0,
) -> dict[str, float]:
    """Microseconds per call of each `fn(i)` (i counts calls), called back to back.

    Each timed round makes enough calls to last about `round_ms`, so that timer resolution and the
    start of a round do not count; on a GPU the time per call is the larger of the host's and the
    device's, as it is in a program that calls the kernel in a loop. The rounds of the functions
    take turns, so that a machine that slows down or speeds up during the run shifts every
    function alike and leaves their ratios alone. A GPU gives the median of 7 rounds; the CPU the
    fastest of 15, since other processes on the machine only ever add time.
    """
    counter = iter(range(1 << 62))

    def loop(fn: Callable[[int], object], calls: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(calls):
                fn(next(counter))

        return run

    rounds: dict[str, tuple[Callable[[], None], int]] = {}
    for name, fn in fns.items():
        loop(fn, 3)()  # Warm-up: lazy loading, allocator, compilation.
        _synchronize(device)
        once = max(_elapsed_ms(loop(fn, 1), device), 1e-3)
        calls = max(1, min(10_000, int(round_ms / once)))
        rounds[name] = (loop(fn, calls), calls)
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(7 if device.type == "cuda" else 15):
        for name, (run, calls) in rounds.items():
            times[name].append(_elapsed_ms(run, device) * 1e3 / calls)
    pick = statistics.median if device.type == "cuda" else min
    return {name: pick(values) for name, values in times.items()}


#: How many calls one CUDA graph replays in the host-overhead row.
GRAPH_CALLS = 50


def graph_replay(fn: Callable[[int], object], device: torch.device) -> Callable[[int], object]:
    """A function that replays GRAPH_CALLS calls of `fn` captured in a CUDA graph: no host work."""
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for i in range(3):
            fn(i)
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(GRAPH_CALLS):
            fn(i)
    return lambda _: graph.replay()


# --- one run -------------------------------------------------------------------------------------


@dataclasses.dataclass
class Row:
    workload: str
    size: str
    dtype: str
    shape: list[int]
    bytes: int  # read and written by one call
    us: dict[str, float]  # per implementation

    def gbps(self, implementation: str) -> float:
        return self.bytes / self.us[implementation] / 1e3


def _input_sets(op: Op, workload: Workload, device: torch.device) -> int:
    """How many copies of the input to rotate over: enough to leave a GPU's L2 cache."""
    if device.type != "cuda":
        return 1
    l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
    per_set = 2 * workload.input_bytes  # about: input and output
    return max(1, min(64, math.ceil(4 * l2_bytes / per_set)))


def _check(op: Op, kernel: ModuleType, x: torch.Tensor) -> None:
    """The kernel's out= and allocating forms against the reference, before anything is timed."""
    expected = op.reference(x)
    out = op.make_out(x)
    if out.is_floating_point():
        out.fill_(float("nan"))  # Poisoned: an element the kernel does not write cannot pass.
    else:
        out.fill_(0x5A)
    op.call_out(kernel, x, out)
    for got in (out, op.call(kernel, x)):
        if x.is_floating_point():
            torch.testing.assert_close(got, expected)
        else:
            torch.testing.assert_close(got, expected, rtol=0, atol=0)


def measure(
    op: Op,
    kernel: ModuleType,
    workload: Workload,
    compiled: Callable[[torch.Tensor], torch.Tensor],
    device: torch.device,
) -> Row:
    torch.manual_seed(0)
    sets = _input_sets(op, workload, device)
    xs = [op.make_input(workload, device) for _ in range(sets)]
    outs = [op.make_out(x) for x in xs]
    _check(op, kernel, xs[0])
    moved = xs[0].nbytes + outs[0].nbytes
    # The copy moves the same bytes: half of them read, half written.
    sources = [torch.empty(moved // 2, dtype=torch.uint8, device=device) for _ in range(sets)]
    targets = [torch.empty_like(s) for s in sources]
    us = time_us(
        {
            "kernel": lambda i: op.call_out(kernel, xs[i % sets], outs[i % sets]),
            "eager": lambda i: op.reference(xs[i % sets]),
            "compile": lambda i: compiled(xs[i % sets]),
            "copy": lambda i: targets[i % sets].copy_(sources[i % sets]),
        },
        device,
    )
    return Row(
        workload.name,
        workload.size,
        str(workload.dtype).removeprefix("torch."),
        list(workload.shape),
        moved,
        us,
    )


def host_overhead(
    op: Op, kernel: ModuleType, workload: Workload, device: torch.device
) -> dict[str, float]:
    """Per-call microseconds at one size: launched from Python, and replayed from a CUDA graph."""
    torch.manual_seed(0)
    x = op.make_input(workload, device)
    out = op.make_out(x)
    calls: dict[str, Callable[[int], object]] = {
        "kernel": lambda _: op.call(kernel, x),
        "kernel_out": lambda _: op.call_out(kernel, x, out),
        "clone": lambda _: x.clone(),
    }
    launched = time_us(calls, device)
    replayed = time_us({name: graph_replay(call, device) for name, call in calls.items()}, device)
    return {f"{name}_us": us for name, us in launched.items()} | {
        f"{name}_graph_us": us / GRAPH_CALLS for name, us in replayed.items()
    }


def machine(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {torch.get_num_threads()} threads"


# --- output --------------------------------------------------------------------------------------

COLUMNS = ("workload", "µs", "GB/s", "% of copy", "× eager", "× compile")


def _cells(row: Row) -> list[str]:
    kernel_us = row.us["kernel"]
    return [
        row.workload,
        f"{kernel_us:.1f}",
        f"{row.gbps('kernel'):.1f}",
        f"{100 * row.us['copy'] / kernel_us:.0f}",
        f"{row.us['eager'] / kernel_us:.2f}",
        f"{row.us['compile'] / kernel_us:.2f}",
    ]


def _overhead_line(name: str, overhead: dict[str, Any]) -> str:
    def pair(key: str) -> str:
        return f"{overhead[key + '_us']:.1f} µs ({overhead[key + '_graph_us']:.1f} in a CUDA graph)"

    return (
        f"Per call at {overhead['workload']}: {name}(x) {pair('kernel')}, "
        f"{name}(x, out=out) {pair('kernel_out')}, x.clone() {pair('clone')}; "
        f"{name}(x) / clone {overhead['kernel_us'] / overhead['clone_us']:.2f}, "
        f"{name}(x, out=out) / clone {overhead['kernel_out_us'] / overhead['clone_us']:.2f}."
    )


def table(results: dict[str, Any], *, markdown: bool = False) -> str:
    rows = [Row(**row) for row in results["rows"]]
    body = [_cells(row) for row in rows]
    if markdown:
        lines = [
            f"{results['op']} on {results['machine']} (torch {results['torch']}, "
            f"{results['date']})",
            "",
            "| " + " | ".join(COLUMNS) + " |",
            "| " + " | ".join("---" for _ in COLUMNS) + " |",
            *("| " + " | ".join(cells) + " |" for cells in body),
        ]
    else:
        widths = [max(len(c[i]) for c in [list(COLUMNS), *body]) for i in range(len(COLUMNS))]
        lines = [f"{results['op']} on {results['machine']} (torch {results['torch']})"]
        for cells in [list(COLUMNS), *body]:
            lines.append(
                "  ".join(
                    c.ljust(w) if i == 0 else c.rjust(w)
                    for i, (c, w) in enumerate(zip(cells, widths, strict=True))
                )
            )
    lines.append("")
    lines.append(
        "µs: per call, back to back (GPU: median of rounds; CPU: fastest round). "
        "GB/s: bytes read and written per second. "
        "% of copy: a device copy of the same bytes' time over the kernel's. "
        "× eager, × compile: the reference's time over the kernel's."
    )
    if results.get("host_overhead"):
        lines.append("")
        lines.append(_overhead_line(results["op"], results["host_overhead"]))
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    """GB/s against bytes moved per call, one line per implementation, one panel per dtype."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit('--plot needs matplotlib: pip install matplotlib (or "kernels[benchmark]")')
    rows = [Row(**row) for row in results["rows"]]
    dtypes = list(dict.fromkeys(row.dtype for row in rows))
    figure, axes = plt.subplots(1, len(dtypes), figsize=(5 * len(dtypes), 4), squeeze=False)
    for axis, dtype in zip(axes[0], dtypes, strict=True):
        of_dtype = sorted((r for r in rows if r.dtype == dtype), key=lambda r: r.bytes)
        for implementation in IMPLEMENTATIONS:
            label = {"kernel": results["op"], "compile": "torch.compile"}.get(
                implementation, implementation
            )
            axis.plot(
                [r.bytes for r in of_dtype],
                [r.gbps(implementation) for r in of_dtype],
                marker="o",
                label=label,
            )
        axis.set_xscale("log")
        axis.set_xticks([r.bytes for r in of_dtype], [r.size for r in of_dtype], rotation=45)
        axis.minorticks_off()
        axis.set_title(dtype)
        axis.set_xlabel("image size (bytes moved per call)")
        axis.set_ylabel("GB/s")
        axis.grid(alpha=0.3)
    axes[0][0].legend()
    figure.suptitle(f"{results['op']} on {results['machine']}, torch {results['torch']}")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


# --- command line --------------------------------------------------------------------------------


def _set_recompile_limit(limit: int) -> None:
    # One compiled reference serves every workload: one specialization per shape and dtype.
    import torch._dynamo

    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, limit)


def run(
    op: Op,
    kernel: ModuleType,
    workloads: Sequence[Workload],
    device: torch.device,
    *,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    _set_recompile_limit(4 * len(workloads) + 8)
    compiled = torch.compile(op.reference, dynamic=False)
    rows = []
    for workload in workloads:
        row = measure(op, kernel, workload, compiled, device)
        echo(f"  {workload.name}: {row.us['kernel']:.1f} µs")
        rows.append(dataclasses.asdict(row))
    results: dict[str, Any] = {
        "op": op.name,
        "device": device.type,
        "machine": machine(device),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "rows": rows,
    }
    if device.type == "cuda":
        smallest = min(workloads, key=lambda w: w.input_bytes)
        results["host_overhead"] = {
            "workload": smallest.name,
            **host_overhead(op, kernel, smallest, device),
        }
    return results


def main(op: Op, argv: Sequence[str] | None = None) -> None:
    """The command line of an op's benchmark*.py: run it with `--help`."""
    parser = argparse.ArgumentParser(
        description=f"Benchmark {op.name} against eager PyTorch, torch.compile and a device copy."
    )
    parser.add_argument(
        "--backend",
        choices=["cuda", "cpu"],
        default="cuda" if torch.cuda.is_available() else "cpu",
        help="the build to benchmark (default: cuda when a GPU is visible, else cpu)",
    )
    sizes = list(dict.fromkeys(w.size for w in op.workloads))
    dtypes = list(dict.fromkeys(str(w.dtype).removeprefix("torch.") for w in op.workloads))
    parser.add_argument("--sizes", help=f"comma-separated, of {','.join(sizes)} (default: all)")
    parser.add_argument("--dtypes", help=f"comma-separated, of {','.join(dtypes)} (default: all)")
    parser.add_argument(
        "--max-mib",
        type=float,
        help="skip workloads whose input is larger (default: 256 on the CPU, none on a GPU)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON")
    parser.add_argument(
        "--plot", type=Path, metavar="PATH", help="write a PNG of GB/s by size (needs matplotlib)"
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        metavar="PATH",
        help="also write the table as Markdown, naming machine, torch version and date",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        metavar="PATH",
        help="print (and --plot, --markdown) earlier results instead of running",
    )
    parser.add_argument(
        "--list", action="store_true", help="print the op and its workloads as JSON, then exit"
    )
    parser.add_argument(
        "--profile",
        type=int,
        metavar="N",
        help="only call the kernel (out=) N times per workload, for a profiler; no timing",
    )
    args = parser.parse_args(argv)

    if args.list:
        listed = [
            {"name": w.name, "size": w.size, "dtype": str(w.dtype).removeprefix("torch.")}
            for w in op.workloads
        ]
        print(json.dumps({"op": op.name, "workloads": listed}))
        return
    if args.profile is not None:
        _profile_from_args(op, args, sizes, dtypes)
        return
    if args.from_json is not None:
        results = json.loads(args.from_json.read_text())
    else:
        results = _run_from_args(op, args, sizes, dtypes)
    print(table(results), end="")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    if args.markdown is not None:
        args.markdown.write_text(table(results, markdown=True))
    if args.plot is not None:
        plot(results, args.plot)


def _pick(given: str | None, known: list[str], what: str) -> list[str]:
    if given is None:
        return known
    picked = [item.strip() for item in given.split(",") if item.strip()]
    unknown = [item for item in picked if item not in known]
    if unknown:
        sys.exit(f"unknown {what} {', '.join(unknown)}: choose from {', '.join(known)}")
    return picked


def _profile_from_args(
    op: Op, args: argparse.Namespace, sizes: list[str], dtypes: list[str]
) -> None:
    """Call the kernel `args.profile` times per workload, each workload in an NVTX range."""
    from kernels import get_local_kernel

    if not torch.cuda.is_available():
        sys.exit("--profile needs a CUDA GPU: torch.cuda.is_available() is False")
    device = torch.device("cuda")
    workloads = _chosen_workloads(op, args, sizes, dtypes, device)
    kernel = get_local_kernel(Path(__file__).resolve().parents[1], backend="cuda")
    for workload in workloads:
        torch.manual_seed(0)
        x = op.make_input(workload, device)
        out = op.make_out(x)
        torch.cuda.synchronize(device)
        torch.cuda.nvtx.range_push(workload.name)
        for _ in range(args.profile):
            op.call_out(kernel, x, out)
        torch.cuda.synchronize(device)
        torch.cuda.nvtx.range_pop()
        print(f"profiled {workload.name}: {args.profile} calls")


def _chosen_workloads(
    op: Op, args: argparse.Namespace, sizes: list[str], dtypes: list[str], device: torch.device
) -> list[Workload]:
    picked_sizes = _pick(args.sizes, sizes, "sizes")
    picked_dtypes = _pick(args.dtypes, dtypes, "dtypes")
    max_mib = args.max_mib if args.max_mib is not None else (256 if device.type == "cpu" else None)
    workloads = []
    for workload in op.workloads:
        if workload.size not in picked_sizes:
            continue
        if str(workload.dtype).removeprefix("torch.") not in picked_dtypes:
            continue
        if max_mib is not None and workload.input_bytes > max_mib * 2**20:
            print(f"skipping {workload.name}: its input is over {max_mib:g} MiB (--max-mib)")
            continue
        workloads.append(workload)
    if not workloads:
        sys.exit("no workload left to run: widen --sizes, --dtypes or --max-mib")
    return workloads


def _run_from_args(
    op: Op, args: argparse.Namespace, sizes: list[str], dtypes: list[str]
) -> dict[str, Any]:
    from kernels import get_local_kernel

    device = torch.device(args.backend)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("--backend cuda needs a CUDA GPU: torch.cuda.is_available() is False")
    workloads = _chosen_workloads(op, args, sizes, dtypes, device)
    project = Path(__file__).resolve().parents[1]
    kernel = get_local_kernel(project, backend=device.type)
    print(f"{op.name}: {len(workloads)} workloads on {machine(device)}, each checked, then timed")
    return run(op, kernel, workloads, device)
