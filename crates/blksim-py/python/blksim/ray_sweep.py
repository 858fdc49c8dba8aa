"""A sweep on a Ray cluster: each point is a Ray task that runs the simulation in the
blksim package on a worker; the driver appends each finished point to the same journal a
local sweep keeps and writes the same Parquet at the end.

    python -m blksim.ray_sweep SWEEP.toml [--address=auto|HOST:PORT] [--out=FILE.parquet]
                               [--csv=FILE] [--shard=K/N] [--max-in-flight=N] [--retries=N]
    blksim sweep SWEEP.toml --ray=auto        (the same, started by the blksim binary)

Workers need the blksim package installed; they need no files: the sweep goes to them as one
self-contained text (the job inlined). At most --max-in-flight points are submitted at once
(default: twice the cluster's CPUs), so a large grid does not flood the scheduler; a task
lost with its worker is retried --retries times (default 3; Ray's max_retries). A simulation
error is not retried (it would fail again) and stops the sweep; the points finished so far
stay in the journal, and running the sweep again resumes.
"""
import argparse
import sys
import time

from . import _blksim


def sweep_ray(path, address="auto", out=None, csv=None, shard=None, max_in_flight=None,
              retries=3, progress=None):
    """Run a sweep file on a Ray cluster; returns {points, ran, skipped, rows, parquet,
    seconds}."""
    import ray

    path = str(path)
    t0 = time.perf_counter()
    bundle = _blksim.sweep_bundle(path)
    journal, pending, total, done = _blksim.sweep_plan(path, out, shard)
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)

    @ray.remote(max_retries=retries)
    def point(bundle, index):
        from blksim import _blksim as native

        return native.sweep_point(bundle, index)

    ref = ray.put(bundle)
    limit = max_in_flight or 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))
    in_flight = {}
    todo = iter(pending)
    finished = done
    exhausted = False
    while True:
        while not exhausted and len(in_flight) < limit:
            i = next(todo, None)
            if i is None:
                exhausted = True
                break
            in_flight[point.remote(ref, i)] = i
        if not in_flight:
            break
        ready, _ = ray.wait(list(in_flight), num_returns=1)
        for r in ready:
            in_flight.pop(r)
            _blksim.sweep_append(journal, ray.get(r))
            finished += 1
            if progress:
                progress(finished, total)
    rows, parquet = _blksim.sweep_finish(path, out, csv, shard)
    return {"points": total, "ran": len(pending), "skipped": done, "rows": rows,
            "parquet": parquet, "seconds": time.perf_counter() - t0}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m blksim.ray_sweep")
    p.add_argument("sweep")
    p.add_argument("--address", default="auto")
    p.add_argument("--out")
    p.add_argument("--csv")
    p.add_argument("--shard")
    p.add_argument("--max-in-flight", type=int)
    p.add_argument("--retries", type=int, default=3)
    a = p.parse_args(argv)
    shard = None
    if a.shard:
        k, n = (int(x) for x in a.shard.split("/"))
        shard = (k, n)
    try:
        s = sweep_ray(a.sweep, a.address, a.out, a.csv, shard, a.max_in_flight, a.retries)
    except _blksim.NativeError as e:
        print(f"blksim: {e.args[1]}", file=sys.stderr)
        return 1
    print(f"sweep: {s['points']} points ({s['ran']} run now, {s['skipped']} from the journal), "
          f"{s['rows']} rows -> {s['parquet']}")
    if s["ran"]:
        print(f"  {s['seconds']:.1f} s on Ray at {a.address}, "
              f"{s['ran'] * 60 / max(s['seconds'], 1e-9):.0f} points per minute")
    return 0


if __name__ == "__main__":
    sys.exit(main())
