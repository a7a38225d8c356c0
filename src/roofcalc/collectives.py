"""Measuring the links between ranks: all-reduce, all-gather and all-to-all over message sizes.

``roofcalc measure --collectives`` starts ``nproc`` processes with torch.distributed (NCCL on GPUs,
gloo on CPU processes), times each collective at each size (the median of ``repeats`` runs after a
warm-up, every run between barriers) and reports nccl-tests' bus bandwidth: for an all-reduce of a
buffer of S bytes, busbw = S/t · 2(n−1)/n; for an all-gather and an all-to-all, S is the whole
output (n × the per-rank input) and busbw = S/t · (n−1)/n. The link's rate in a profile is the best
all-reduce bus bandwidth over the sizes (what the step model divides a collective's link bytes by),
the latency the median time of the smallest all-reduce.
"""

from __future__ import annotations

import os
import socket
import statistics
import time

from .errors import RoofcalcError

SIZES = tuple(1 << k for k in range(12, 25, 2))  # 4 KiB ... 16 MiB
OPS = ("all_reduce", "all_gather", "all_to_all")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, backend: str, sizes, repeats: int, queue) -> None:
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(backend, rank=rank, world_size=world)
    device = torch.device(f"cuda:{rank}") if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    sync = torch.cuda.synchronize if backend == "nccl" else (lambda: None)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor  # the older name is deprecated
    out: dict[str, list] = {}
    try:
        for op in OPS:
            rows = []
            for size in sizes:
                per_rank = size // world if op != "all_reduce" else size  # all-gather/all-to-all: S is the output
                n = max(world, per_rank // 4 // world * world)
                x = torch.ones(n, dtype=torch.float32, device=device)
                full = torch.empty(n * world, dtype=torch.float32, device=device)
                y = torch.empty_like(x)

                def run():
                    if op == "all_reduce":
                        dist.all_reduce(x)
                    elif op == "all_gather":
                        gather(full, x)
                    else:
                        dist.all_to_all_single(y, x)

                run()
                times = []
                for _ in range(repeats):
                    dist.barrier()
                    sync()
                    t0 = time.perf_counter()
                    run()
                    sync()
                    times.append(time.perf_counter() - t0)
                nbytes = n * 4 * (world if op != "all_reduce" else 1)
                rows.append([nbytes, statistics.median(times)])
            out[op] = rows
        if rank == 0:
            queue.put(out)
    finally:
        dist.destroy_process_group()


def bus_bandwidth(op: str, nbytes: int, seconds: float, world: int) -> float:
    factor = 2 * (world - 1) / world if op == "all_reduce" else (world - 1) / world
    return nbytes / seconds * factor


def measure_collectives(nproc: int = 2, device: str = "cpu", repeats: int = 5, sizes=SIZES) -> dict:
    """{'backend', 'nproc', op: [[bytes, seconds], ...], 'bus_bytes_per_s': best all-reduce busbw,
    'latency_s': the smallest all-reduce}; processes are spawned here and joined before it returns."""
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        raise RoofcalcError("measuring collectives needs PyTorch: pip install '.[torch]' in roofcalc's checkout") from None
    if not 2 <= nproc <= 64:
        raise RoofcalcError(f"--nproc {nproc}: collectives need 2 to 64 processes")
    backend = "nccl" if device == "cuda" else "gloo"
    if backend == "nccl" and torch.cuda.device_count() < nproc:
        raise RoofcalcError(f"--nproc {nproc} needs {nproc} GPUs; this machine has {torch.cuda.device_count()}")
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, nproc, port, backend, tuple(sizes), repeats, queue))
             for r in range(nproc)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
    if any(p.exitcode != 0 for p in procs) or queue.empty():
        for p in procs:
            if p.is_alive():
                p.kill()
        raise RoofcalcError(f"the {backend} collectives run failed (exit codes "
                            f"{', '.join(str(p.exitcode) for p in procs)})")
    result = queue.get()
    best = max(bus_bandwidth("all_reduce", b, t, nproc) for b, t in result["all_reduce"])
    return {"backend": backend, "nproc": nproc, **result, "bus_bytes_per_s": best,
            "latency_s": result["all_reduce"][0][1]}


def report_lines(c: dict) -> list[str]:
    lines = [f"collectives  {c['backend']}, {c['nproc']} processes; bus bandwidth (nccl-tests' convention) by size:"]
    for op in OPS:
        cells = ", ".join(f"{b / 1024:.0f} KiB {bus_bandwidth(op, b, t, c['nproc']) / 1e9:.3g} GB/s"
                          for b, t in c[op])
        lines.append(f"  {op:11s} {cells}")
    lines.append(f"  link        {c['bus_bytes_per_s'] / 1e9:.3g} GB/s (the best all-reduce bus bandwidth), latency "
                 f"{c['latency_s'] * 1e6:.3g} us (the smallest all-reduce): written as the profile's link")
    return lines
