#!/usr/bin/env python3
"""Training curves from gnn-train --metrics_file JSON lines, one line per run.

  /usr/bin/python3 scripts/plot_metrics.py run1.jsonl run2.jsonl -o curves.png \\
      --label "1 part" --label "2 parts"

Panels, per epoch: training loss and accuracy (the mean of the epoch's "step"
records), validation (solid) and test (dashed) accuracy ("eval"; the
ROC-AUC or RMSE of multi-label and regression runs), epoch time
("epoch"), and link AUC ("link_eval", when a run has it). The format follows
the output's extension (.png, .svg, .pdf). A resumed run's repeated epochs
count once (the last attempt). Bad input: one line naming the file and line,
exit 1. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import os
import sys

FORMATS = (".png", ".svg", ".pdf")

# The numeric fields each record type must carry to be plotted; other
# record types ("summary", ...) are skipped.
REQUIRED = {
    "step": ("epoch", "step", "loss", "train_acc"),
    "epoch": ("epoch", "epoch_time_s"),
    "eval": ("epoch", "val_acc", "test_acc"),
    "link_eval": ("epoch", "link_auc"),
}


class InputError(Exception):
    pass


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# Multi-label and regression runs name their figures after the metric
# (train_rmse; val_rocauc/test_rocauc, val_rmse/test_rmse): plotted in the
# accuracy panels, under the fields' accuracy names.
RENAMED = {
    "step": {"train_rmse": "train_acc"},
    "eval": {"val_rocauc": "val_acc", "test_rocauc": "test_acc",
             "val_rmse": "val_acc", "test_rmse": "test_acc"},
}


def parse_record(path, lineno, text):
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{lineno}: not JSON: {e.msg} (column {e.colno})")
    if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
        raise InputError(f'{path}:{lineno}: expected a JSON object with a "type"')
    for old, new in RENAMED.get(rec["type"], {}).items():
        if old in rec and new not in rec:
            rec[new] = rec.pop(old)
    for key in REQUIRED.get(rec["type"], ()):
        if not is_number(rec.get(key)):
            raise InputError(f'{path}:{lineno}: "{rec["type"]}" record needs a number "{key}"')
    return rec


class Run:
    """One metrics file's curves, keyed by epoch (1-based)."""

    def __init__(self, label):
        self.label = label
        self.steps = {}  # epoch -> [(loss, train_acc)]
        self.last_step = None
        self.by_epoch = {"epoch_time": {}, "val": {}, "test": {}, "link_auc": {}}

    def add(self, rec):
        kind, epoch = rec["type"], rec.get("epoch")
        if kind == "step":
            self.add_step(epoch, rec["step"], rec["loss"], rec["train_acc"])
        elif kind == "epoch":
            self.by_epoch["epoch_time"][epoch] = rec["epoch_time_s"]
        elif kind == "eval":
            self.by_epoch["val"][epoch] = rec["val_acc"]
            self.by_epoch["test"][epoch] = rec["test_acc"]
        elif kind == "link_eval":
            self.by_epoch["link_auc"][epoch] = rec["link_auc"]

    def add_step(self, epoch, step, loss, acc):
        # A step that does not follow the last one: the run was resumed from
        # a checkpoint and repeats epochs; keep only the new attempt.
        if self.last_step is not None and (epoch, step) <= self.last_step:
            for e in [e for e in self.steps if e >= epoch]:
                del self.steps[e]
        self.last_step = (epoch, step)
        self.steps.setdefault(epoch, []).append((loss, acc))

    def empty(self):
        return not self.steps and not any(self.by_epoch.values())

    def series(self, name):
        """(epochs, values) of one curve, in epoch order."""
        if name in ("loss", "train_acc"):
            i = 0 if name == "loss" else 1
            points = {e: sum(s[i] for s in v) / len(v) for e, v in self.steps.items()}
        else:
            points = self.by_epoch[name]
        epochs = sorted(points)
        return epochs, [points[e] for e in epochs]


def read_run(path, label):
    run = Run(label)
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    run.add(parse_record(path, lineno, line))
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text (is it a gnn-train --metrics_file?)")
    if run.empty():
        raise InputError(f"{path}: no step, epoch or eval records (is it a gnn-train --metrics_file?)")
    return run


# (curve names, title, y label); the link AUC panel only when a run has it.
PANELS = [
    (("loss",), "Training loss (mean per epoch)", "loss"),
    (("train_acc",), "Training accuracy (mean per epoch)", "accuracy"),
    (("val", "test"), "Validation (solid) and test (dashed) accuracy", "accuracy"),
    (("epoch_time",), "Epoch time", "seconds"),
    (("link_auc",), "Link prediction AUC", "AUC"),
]


def draw_panel(ax, runs, curves, title, ylabel):
    from matplotlib.ticker import MaxNLocator

    for i, run in enumerate(runs):
        color = f"C{i % 10}"
        for curve in curves:
            epochs, values = run.series(curve)
            style = "--" if curve == "test" else "-"
            label = run.label if curve == curves[0] else None
            ax.plot(epochs, values, style, color=color, marker=".", label=label)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def plot(runs, output):
    try:
        import matplotlib
    except ImportError:
        raise InputError("matplotlib is not installed (Debian: apt-get install python3-matplotlib)")
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text
    import matplotlib.pyplot as plt

    panels = [p for p in PANELS if any(r.series(c)[0] for r in runs for c in p[0])]
    rows = (len(panels) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(11, 3.6 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        draw_panel(ax, runs, *panel)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout()
    try:
        fig.savefig(output, dpi=100)
    except OSError as e:
        raise InputError(f"{output}: cannot write: {e.strerror}")


def default_labels(paths):
    names = [os.path.basename(p) for p in paths]
    return names if len(set(names)) == len(names) else list(paths)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", help="gnn-train --metrics_file outputs")
    p.add_argument("-o", "--output", required=True, help="picture to write (.png, .svg, .pdf)")
    p.add_argument("--label", action="append", default=[],
                   help="legend name of each file, in order (default: the file names)")
    args = p.parse_args(argv)
    if args.label and len(args.label) != len(args.files):
        p.error(f"{len(args.label)} --label for {len(args.files)} files: give one per file or none")
    if os.path.splitext(args.output)[1].lower() not in FORMATS:
        p.error(f"--output {args.output}: extension must be one of {', '.join(FORMATS)}")
    return args


def main(argv):
    args = parse_args(argv)
    labels = args.label or default_labels(args.files)
    try:
        runs = [read_run(path, label) for path, label in zip(args.files, labels)]
        plot(runs, args.output)
    except InputError as e:
        print(f"plot_metrics.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
