"""Figures of the results model as inline SVG (matplotlib, no pyplot state, no JavaScript).

SVG text is drawn as paths, so a report renders the same offline, in any
browser, without fonts or scripts. Each function returns ``None`` when the
results hold nothing to plot, so the page says so instead of showing an empty axis.
"""
from __future__ import annotations

import io

from ..results.model import SessionResults
from ..results.views import KEYWORD_CLASSES, keyword_matrix, keyword_status, slo_points, target_label

KEYWORD_COLOURS = {"valid": "#2e7d32", "truncated": "#f9a825", "rejected": "#90a4ae", "error": "#ef6c00", "invalid": "#c62828", "none": "#eeeeee"}


def _figure(width: float = 6.4, height: float = 3.6):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # a dependency; say which if an environment lacks it
        raise RuntimeError(f"the HTML report's plots need matplotlib ({exc}): pip install matplotlib") from exc
    return Figure(figsize=(width, height), layout="constrained")


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _label(results: SessionResults, tid: str) -> str:
    return target_label(results.targets[tid]) if tid in results.targets else tid


def _find(metrics: dict[str, float], *names: str) -> tuple[str, float] | None:
    for want in names:
        for name, value in metrics.items():
            if name == want or name.startswith(f"{want}_"):
                return name, value
    return None


def ttft_cdf(results: SessionResults) -> str | None:
    """Empirical CDF of per-request TTFT, one line per target and load point."""
    series = []
    for point in slo_points(results):
        key = next((k for k in point.samples if k.startswith("ttft") and point.samples[k]), None)
        if key is not None:
            series.append((f"{_label(results, point.target)} {point.name}", key, sorted(point.samples[key])))
    if not series:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    for label, key, values in series:
        n = len(values)
        ax.step(values, [(i + 1) / n for i in range(n)], where="post", label=label)
        ax.set_xlabel(key)
    ax.set_ylabel("share of requests")
    ax.set_title("TTFT, cumulative distribution")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return _svg(fig)


def against_concurrency(results: SessionResults, names: tuple[str, ...], title: str) -> str | None:
    """A figure against concurrency (closed-loop load points), one line per target."""
    series: dict[str, list[tuple[float, float]]] = {}
    ylabel = ""
    for point in slo_points(results):
        found = _find(point.metrics, *names)
        if point.concurrency is None or found is None:
            continue
        ylabel = found[0]
        series.setdefault(_label(results, point.target), []).append((point.concurrency, found[1]))
    if not series:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    for label, xy in series.items():
        xy.sort()
        ax.plot([x for x, _ in xy], [y for _, y in xy], marker="o", label=label)
    ax.set_xlabel("concurrent streams")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return _svg(fig)


def keyword_heatmap(results: SessionResults) -> str | None:
    """Keyword x target, coloured by the worst outcome class, annotated with the counts."""
    matrix = keyword_matrix(results)
    if not matrix:
        return None
    ids = list(dict.fromkeys(t for cells in matrix.values() for t in cells))
    keywords = list(matrix)
    from matplotlib.colors import ListedColormap

    classes = [*KEYWORD_CLASSES, "none"]
    grid = [[classes.index(keyword_status(matrix[k].get(t, {}))) if keyword_status(matrix[k].get(t, {})) in classes else len(classes) - 1 for t in ids] for k in keywords]
    fig = _figure(1.8 + 1.9 * len(ids), 1.0 + 0.32 * len(keywords))
    ax = fig.add_subplot()
    ax.imshow(grid, cmap=ListedColormap([KEYWORD_COLOURS[c] for c in classes]), vmin=0, vmax=len(classes) - 1, aspect="auto")
    ax.set_xticks(range(len(ids)), [_label(results, t) for t in ids], fontsize="small")
    ax.set_yticks(range(len(keywords)), keywords, fontsize="small")
    for y, k in enumerate(keywords):
        for x, t in enumerate(ids):
            counts = matrix[k].get(t, {})
            text = " ".join(f"{o[0]}{n}" for o, n in counts.items() if n)
            ax.text(x, y, text or "-", ha="center", va="center", fontsize="x-small", color="white" if counts else "black")
    ax.set_title("structured output: keyword x outcome (v=valid, i=invalid, r=rejected, t=truncated, e=error)", fontsize="small")
    return _svg(fig)


def trend(versions: list[str], series: dict[str, list[float | None]], metric: str) -> str:
    """One metric across versions (history), one line per series (target framework and load point)."""
    fig = _figure()
    ax = fig.add_subplot()
    for label, values in series.items():
        xs = [i for i, v in enumerate(values) if v is not None]
        ax.plot(xs, [values[i] for i in xs], marker="o", label=label)
    ax.set_xticks(range(len(versions)), versions, rotation=30, fontsize="small")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} across versions")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return _svg(fig)
