"""The structured suite's plot for the HTML report: a picture of the keyword matrix, not a
verdict.
"""

from __future__ import annotations

from collections.abc import Callable

from ..reporting.plots import figure, svg

KEYWORD_COLOURS = {
    "valid": "#2e7d32",
    "truncated": "#f9a825",
    "rejected": "#90a4ae",
    "error": "#ef6c00",
    "invalid": "#c62828",
    "none": "#eeeeee",
}


def keyword_heatmap(
    matrix: dict[str, dict[str, dict[str, int]]],
    status: Callable[[dict[str, int]], str],
    label: Callable[[str], str],
) -> str:
    """Keyword x target, coloured by each cell's ``status`` (the table's worst outcome class),
    annotated with the counts."""
    ids = list(dict.fromkeys(t for cells in matrix.values() for t in cells))
    keywords = list(matrix)
    classes = list(KEYWORD_COLOURS)  # "none" last: a class without a colour is drawn as none
    grid = [
        [
            classes.index(s) if (s := status(matrix[k].get(t, {}))) in classes else len(classes) - 1
            for t in ids
        ]
        for k in keywords
    ]
    fig = figure(1.8 + 1.9 * len(ids), 1.0 + 0.32 * len(keywords))
    # lazy: matplotlib is an extra; figure() names it where missing
    from matplotlib.colors import ListedColormap

    ax = fig.add_subplot()
    ax.imshow(
        grid,
        cmap=ListedColormap([KEYWORD_COLOURS[c] for c in classes]),
        vmin=0,
        vmax=len(classes) - 1,
        aspect="auto",
    )
    ax.set_xticks(range(len(ids)), [label(t) for t in ids], fontsize="small")
    ax.set_yticks(range(len(keywords)), keywords, fontsize="small")
    for y, k in enumerate(keywords):
        for x, t in enumerate(ids):
            counts = matrix[k].get(t, {})
            text = " ".join(f"{o[0]}{n}" for o, n in counts.items() if n)
            ax.text(
                x,
                y,
                text or "-",
                ha="center",
                va="center",
                fontsize="x-small",
                color="white" if counts else "black",
            )
    ax.set_title(
        "structured output: keyword x outcome (v=valid, i=invalid, r=rejected, t=truncated, "
        "e=error)",
        fontsize="small",
    )
    return svg(fig)
