"""Figures as inline SVG (matplotlib, no pyplot state, no JavaScript): the drawing primitives suites
use.

SVG text is drawn as paths, so a report renders the same offline, in any
browser, without fonts or scripts.
"""

from __future__ import annotations

import io

from ..outcomes import optional_module


def figure(width: float = 6.4, height: float = 3.6):
    matplotlib_figure = optional_module("matplotlib.figure", "plots", "the reports' plots")
    return matplotlib_figure.Figure(figsize=(width, height), layout="constrained")


def svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _finish(ax, title: str) -> None:
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def cdf(series: list[tuple[str, str, list[float]]], title: str) -> str:
    """Empirical CDFs: ``[(label, x-axis name, sorted values)]``, one line each."""
    fig = figure()
    ax = fig.add_subplot()
    for label, key, values in series:
        n = len(values)
        ax.step(values, [(i + 1) / n for i in range(n)], where="post", label=label)
        ax.set_xlabel(key)
    ax.set_ylabel("share of requests")
    _finish(ax, title)
    return svg(fig)


def lines(
    series: dict[str, list[tuple[float, float]]], xlabel: str, ylabel: str, title: str
) -> str:
    """One line per label through its (x, y) points."""
    fig = figure()
    ax = fig.add_subplot()
    for label, xy in series.items():
        xy = sorted(xy)
        ax.plot([x for x, _ in xy], [y for _, y in xy], marker="o", label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    _finish(ax, title)
    return svg(fig)


def trend(versions: list[str], series: dict[str, list[float | None]], metric: str) -> str:
    """One metric across versions (history), one line per series (target framework and load
    point).
    """
    fig = figure()
    ax = fig.add_subplot()
    for label, values in series.items():
        xs = [i for i, v in enumerate(values) if v is not None]
        ax.plot(xs, [values[i] for i in xs], marker="o", label=label)
    ax.set_xticks(range(len(versions)), versions, rotation=30, fontsize="small")
    ax.set_ylabel(metric)
    _finish(ax, f"{metric} across versions")
    return svg(fig)
