"""blksim: a deterministic simulator of the Linux block I/O path for flash storage.

    import blksim
    r = blksim.run(job="[a]\\nrw=randread\\nsize=64m\\nruntime=1\\n", device="emmc-hbg4a2",
                   set={"host.queue": "hsq"}, seed=1)
    r["jobs"][0]["read"]["iops"]          # fio's JSON output, as a dict
    blksim.to_frame(r)                    # one row per job and direction (pandas)

The simulation runs with the interpreter lock released: threads simulate in parallel.
"""
import json as _json

from . import _blksim

__version__ = _blksim.__version__

__all__ = [
    "run", "devices", "params", "sweep", "sweep_ray", "rows", "to_frame",
    "BlksimError", "JobError", "DeviceError", "SetError", "RunError",
]


class BlksimError(Exception):
    """An error of blksim; `str(e)` says what and where."""


class JobError(BlksimError):
    """A job file or fio option: `file`, `line` (the argument's position for options) and
    `option` (the rejected option, or None)."""

    def __init__(self, message, file, line, option):
        super().__init__(message)
        self.file, self.line, self.option = file, line, option


class DeviceError(BlksimError):
    """The device profile: `device` names it."""

    def __init__(self, message, device):
        super().__init__(message)
        self.device = device


class SetError(BlksimError):
    """A `set` value: `key` names it."""

    def __init__(self, message, key):
        super().__init__(message)
        self.key = key


class RunError(BlksimError):
    """The simulation (a runaway bound) or a sweep."""


def _raise(e):
    kind, message, file, line, option, key = e.args
    if kind == "job":
        raise JobError(message, file, line, option) from None
    if kind == "device":
        raise DeviceError(message, key) from None
    if kind == "set":
        raise SetError(message, key) from None
    raise RunError(message) from None


def _options(options):
    out = []
    for k, v in (options or {}).items():
        k = k.lstrip("-")
        out.append(f"--{k}" if v is None or v is True else f"--{k}={v}")
    return out


def run(job, device=None, set=None, seed=None, options=None, plus=False, max_events=None,
        keep_files=False, blktrace=None):
    """Run fio jobs on a simulated device and return fio's JSON output as a dict.

    job: job-file text, or the path of a job file.
    device: a bundled profile (blksim.devices()) or a profile TOML file.
    set: profile values, {"host.queue": "hsq", "queue.iosched.fifo_batch": 8}.
    seed: the root seed (the same inputs and seed give the same result).
    options: fio options over every job, {"runtime": "1", "time_based": None}.
    plus: json+ (latency histogram bins) instead of json.
    max_events: a bound on simulated events (default 10**10).
    keep_files: keep the files the run writes (fio logs, write_iolog, blktrace) in memory and
        return (result, {path: bytes}); nothing is written to disk.
    blktrace: with keep_files, a folder name for blktrace's per-CPU files.
    """
    sets = [f"{k}={v}" for k, v in (set or {}).items()]
    if blktrace is not None and not keep_files:
        raise ValueError("blktrace= needs keep_files=True (blksim run --blktrace writes to disk)")
    try:
        text, files = _blksim.run_json(str(job), device, sets, seed, _options(options), plus,
                                       max_events, keep_files, blktrace)
    except _blksim.NativeError as e:
        _raise(e)
    if keep_files:
        return _json.loads(text), dict(files)
    return _json.loads(text)


def devices():
    """The bundled device profiles: {name: description}."""
    return dict(_blksim.devices())


def params():
    """Every model parameter: a list of dicts (key, table, unit, default, min, max, doc,
    source)."""
    keys = ("key", "table", "unit", "default", "min", "max", "doc", "source")
    return [dict(zip(keys, p)) for p in _blksim.params()]


def sweep(path, out=None, csv=None, shard=None, threads=None):
    """Run a sweep file on all local cores (see README, "Grids of runs"); returns
    {points, ran, skipped, rows, parquet}."""
    try:
        p, ran, skipped, rows, parquet = _blksim.sweep(str(path), out, csv, shard, threads)
    except _blksim.NativeError as e:
        _raise(e)
    return {"points": p, "ran": ran, "skipped": skipped, "rows": rows, "parquet": parquet}


def sweep_ray(path, address="auto", out=None, csv=None, shard=None, max_in_flight=None,
              retries=3):
    """The sweep on a Ray cluster (pip install ray); the same rows as `sweep`. See
    blksim.ray_sweep."""
    from .ray_sweep import sweep_ray as run_on_ray

    try:
        return run_on_ray(path, address, out, csv, shard, max_in_flight, retries)
    except _blksim.NativeError as e:
        _raise(e)


_DDIRS = ("read", "write", "trim")


def rows(result):
    """One dict per job and direction that moved data: jobname, groupid, ddir, io_bytes,
    total_ios, iops, bw_kib, the latency means in µs and every clat percentile in µs
    (columns "p99.000000" etc.)."""
    out = []
    for j in result.get("jobs", []):
        for d in _DDIRS:
            s = j.get(d) or {}
            if not s.get("io_bytes"):
                continue
            r = {
                "jobname": j.get("jobname"), "groupid": j.get("groupid"), "ddir": d,
                "io_bytes": s["io_bytes"], "total_ios": s.get("total_ios"),
                "iops": s.get("iops"), "bw_kib": s.get("bw"),
                "lat_mean_us": s.get("lat_ns", {}).get("mean", 0) / 1e3,
                "clat_mean_us": s.get("clat_ns", {}).get("mean", 0) / 1e3,
            }
            for q, v in (s.get("clat_ns", {}).get("percentile") or {}).items():
                r["p" + q] = v / 1e3
            out.append(r)
    return out


def to_frame(result):
    """`rows(result)` as a pandas DataFrame (pip install pandas)."""
    import pandas as pd

    return pd.DataFrame(rows(result))
