"""Shared by the peers' model-only benchmarks (issue #50: on few cores a peer's own advice for
throughput is often one single-threaded session per core): PROCESSES copies of a rate function,
each its own process and session, warmed up apart and started together, their rates summed.

rate_fn(*args, start) builds its session, warms up, calls start() (which waits for the others)
and returns its images per second; it must be a module-level function (spawned processes import
the script again: keep the script's work under `if __name__ == "__main__"`)."""
import multiprocessing as mp
import sys
import time


def timed_rate(step, images, seconds, start, warmup=3):
    """The img/s of calling step() (each call `images` images) for `seconds`, after `warmup` calls
    and start() (the rate functions' common loop)."""
    for _ in range(warmup):
        step()
    start()
    t0, n = time.time(), 0
    while time.time() - t0 < seconds:
        step()
        n += images
    return n / (time.time() - t0)


def _child(rate_fn, args, barrier, out):
    out.put(rate_fn(*args, barrier.wait))


def total_rate(rate_fn, args, processes, seconds, who):
    """The summed img/s of `processes` copies of rate_fn(*args, start); exits naming `who` when a copy fails."""
    if processes == 1:
        return rate_fn(*args, lambda: None)
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(processes), ctx.Queue()
    ps = [ctx.Process(target=_child, args=(rate_fn, args, barrier, out)) for _ in range(processes)]
    for p in ps:
        p.start()
    try:  # a process that fails puts nothing: do not wait for it forever
        rates = [out.get(timeout=seconds + 900) for _ in ps]
    except Exception:
        for p in ps:
            p.kill()
        sys.exit(f"{who}: a process gave no rate (it failed: see above)")
    for p in ps:
        p.join()
        if p.exitcode != 0:
            sys.exit(f"{who}: a process failed (exit {p.exitcode})")
    return sum(rates)
