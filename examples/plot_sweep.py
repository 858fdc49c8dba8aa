"""Read a `blksim sweep` Parquet file and plot IOPS against jobs, one line per device and
host path, the mean over seeds; print the table the plot is drawn from.

    python3 examples/plot_sweep.py sweep-hsq.parquet [out.png]

Needs pyarrow and matplotlib (scripts/test.sh installs both in target/pyenv).
"""
import sys
from collections import defaultdict

import pyarrow.parquet as pq


def main():
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else path.rsplit(".", 1)[0] + ".png"
    rows = pq.read_table(path).to_pylist()
    # (device, path) -> numjobs -> [iops over seeds]
    series = defaultdict(lambda: defaultdict(list))
    for r in rows:
        host = r["host.queue"]
        label = host if host == "legacy" else f"hsq/{r['host.hsq_next_tag']}"
        series[(r["device"], label)][r["numjobs"]].append(r["iops"])
    print(f"{'device':<16} {'path':<10} " + " ".join(f"{n:>9}" for n in sorted({n for s in series.values() for n in s})))
    for (dev, label), by_n in sorted(series.items()):
        means = [sum(v) / len(v) for _, v in sorted(by_n.items())]
        print(f"{dev:<16} {label:<10} " + " ".join(f"{m:>9.0f}" for m in means))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len({d for d, _ in series}), figsize=(10, 4), sharey=False)
    if not hasattr(axes, "__len__"):
        axes = [axes]
    devices = sorted({d for d, _ in series})
    for ax, dev in zip(axes, devices):
        for (d, label), by_n in sorted(series.items()):
            if d != dev:
                continue
            ns = sorted(by_n)
            ax.plot(ns, [sum(by_n[n]) / len(by_n[n]) for n in ns], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("psync jobs (4k random reads)")
        ax.set_ylabel("IOPS (mean over seeds)")
        ax.set_title(dev)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    print(f"plot: {out} ({sum(len(a.get_lines()) for a in axes)} lines)")


if __name__ == "__main__":
    main()
