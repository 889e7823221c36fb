"""Plots read back from run records (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: the CLI and CI have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .records import atomic_path

__all__ = [
    "plot_cumulative_regret",
    "plot_pareto",
    "plot_fronts",
    "plot_scaling",
    "loglog_slope",
    "plot_spectral_exponent",
    "plot_sketch_size",
    "plot_param_effect",
    "plot_matrix_error",
    "save_figure",
    "write_figure",
    "check_formats",
    "lay_out",
    "line_styles",
    "family_styles",
    "point_numbers",
]

_COLORS = plt.get_cmap("tab10").colors
_DASHES = ["-", "--", "-.", ":"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]


def line_styles(n: int) -> list[dict]:
    """``n`` distinct (colour, line style, marker) combinations for ``ax.plot``.

    Colour, dash pattern and marker all change from one curve to the next; the marker also
    shifts once per colour cycle, so no two of the first 100 curves share all three. Curves
    that coincide (e.g. DBSLinUCB-FD and -RFD while neither sketch has shrunk) stay visible:
    a dashed curve over a solid one shows both.
    """
    return [
        {
            "color": _COLORS[i % len(_COLORS)],
            "linestyle": _DASHES[i % len(_DASHES)],
            "marker": _MARKERS[(i + i // len(_COLORS)) % len(_MARKERS)],
        }
        for i in range(n)
    ]


def _readable_log_axis(ax, axis: str = "x") -> None:
    """Log scale with ticks that do not collide: plain numbers at 1, 2, 5 x 10^k on short
    ranges, only the powers of ten on ranges over three decades, no minor-tick labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    getattr(ax, f"set_{axis}scale")("log")
    target = ax.xaxis if axis == "x" else ax.yaxis
    low, high = ax.get_xlim() if axis == "x" else ax.get_ylim()
    decades = np.log10(max(high, 1e-300) / max(low, 1e-300))
    subs = (1.0,) if decades > 3 else (1.0, 2.0, 5.0)
    target.set_major_locator(LogLocator(base=10.0, subs=subs))
    target.set_major_formatter(FuncFormatter(lambda v, _pos: _log_tick(v)))
    target.set_minor_formatter(NullFormatter())


def _log_tick(value: float) -> str:
    """``0.5``, ``20``, ``5000`` as plain numbers; ``10^6`` and ``2 x 10^6`` beyond."""
    if value <= 0:
        return ""
    k = int(np.floor(np.log10(value) + 1e-9))
    if -2 <= k <= 4:
        return f"{value:g}"
    mantissa = value / 10.0**k
    return rf"$10^{{{k}}}$" if abs(mantissa - 1) < 1e-6 else rf"${mantissa:g}\times 10^{{{k}}}$"


def plot_cumulative_regret(
    records: pd.DataFrame, path: str | Path | None = None, *, band: str = "std", ax=None
):
    """Cumulative regret against round: the mean over seeds and a band, one line per (agent, env).

    Args:
        records: per-round records from :func:`linbandit_gym.run`.
        path: where to save (PNG/PDF by suffix); ``None`` leaves the figure open.
        band: ``"std"`` (mean +- one standard deviation over seeds), ``"se"`` (standard error)
            or ``"minmax"``.
        ax: draw into this axes instead of a new figure.

    Returns:
        The matplotlib Figure.
    """
    if band not in ("std", "se", "minmax"):
        raise ValueError(f"band must be 'std', 'se' or 'minmax', got {band!r}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    multi_env = records["env"].nunique() > 1
    groups = list(records.groupby(["agent", "env"], sort=False))
    for ((agent, env), group), style in zip(groups, line_styles(len(groups))):
        curves = group.pivot_table(index="t", columns="seed", values="cumulative_regret")
        mean = curves.mean(axis=1)
        if band == "minmax":
            low, high = curves.min(axis=1), curves.max(axis=1)
        else:
            spread = curves.std(axis=1).fillna(0.0)
            if band == "se":
                spread = spread / np.sqrt(curves.shape[1])
            low, high = mean - spread, mean + spread
        label = f"{agent} ({env})" if multi_env else str(agent)
        (line,) = ax.plot(
            mean.index,
            mean.values,
            label=label,
            markevery=_mark_every(len(mean), len(groups), style),
            ms=4,
            **style,
        )
        if curves.shape[1] > 1:
            ax.fill_between(mean.index, low.values, high.values, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative regret")
    n_seeds = records["seed"].nunique()
    title_env = records["env"].iloc[0] if not multi_env else "several envs"
    ax.set_title(
        f"{title_env}: T = {int(records['t'].max())}, "
        + (f"mean over {n_seeds} seeds, band = {band}" if n_seeds > 1 else "1 seed")
    )
    ax.grid(alpha=0.3)
    if len(groups) > _LEGEND_INSIDE_AT_MOST and fig is not None and len(fig.axes) == 1:
        _legend_below(
            fig, *ax.get_legend_handles_labels(), fontsize=8, ncol=3 if len(groups) > 20 else 2
        )
    else:
        ax.legend(fontsize=9)
        fig.tight_layout()
    if path is not None:
        write_figure(fig, path)
        plt.close(fig)
    return fig


#: Curves a legend may name inside the axes; more go in a legend below them.
_LEGEND_INSIDE_AT_MOST = 8


def _mark_every(points: int, curves: int, style: dict) -> tuple[int, int]:
    """About 10 markers per curve, staggered between curves so coinciding curves show each
    marker."""
    step = max(1, points // 10)
    return (_MARKERS.index(style["marker"]) * max(1, step // max(curves, 1)) % step, step)


# -- experiment figures (Wen et al., 2025, Fig. 1c, 3a-3d, 4; used by `linbandit plot`) -------


def lay_out(fig) -> None:
    """Lay ``fig`` out again (titles are usually set after the plotting function returns); a
    legend below the panels keeps the room it was given."""
    fig.tight_layout(rect=getattr(fig, "_layout_rect", (0, 0, 1, 1)))


def check_formats(formats) -> tuple[str, ...]:
    """``formats`` as a tuple if matplotlib can write each (``png``, ``pdf``, ``svg``, ...),
    else a ``ValueError`` naming those it cannot and those it can."""
    formats = tuple(formats)
    known = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    unknown = [f for f in formats if f not in known]
    if not formats or unknown:
        named = ", ".join(map(repr, unknown)) or "none given"
        raise ValueError(f"figure format(s) {named}: matplotlib writes {', '.join(sorted(known))}")
    return formats


def write_figure(
    fig, path: str | Path, fmt: str | None = None, root: str | Path | None = None
) -> Path:
    """Write ``fig`` to ``path`` (format ``fmt``, default ``path``'s suffix) atomically, inside
    the output directory ``root`` (default ``path``'s directory; a symbolic link out of it is
    refused: :func:`linbandit_gym.records.atomic_path`)."""
    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower() or "png"
    with atomic_path(path, root) as tmp:
        fig.savefig(tmp, format=fmt, dpi=120)
    return path


def save_figure(
    fig, path: str | Path, formats=("png", "pdf"), root: str | Path | None = None
) -> list[Path]:
    """Save ``fig`` as ``path`` with each suffix in ``formats`` (e.g. PNG and PDF), inside the
    output directory ``root`` (:func:`write_figure`), and close it."""
    path = Path(path)
    written = []
    lay_out(fig)
    try:
        for fmt in formats:
            written.append(write_figure(fig, path.with_suffix("." + fmt), fmt, root))
    finally:
        plt.close(fig)
    return written


def _pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Points no other point beats in both x and y (both minimised)."""
    keep = np.ones(len(x), dtype=bool)
    for i in range(len(x)):
        dominated = (x <= x[i]) & (y <= y[i]) & ((x < x[i]) | (y < y[i]))
        keep[i] = not dominated.any()
    return keep


_COST_NAMES = {
    "time_s": "total agent CPU time (s)",
    "ms_per_round": "agent CPU ms / round",
    "peak_memory_kib": "peak memory (KiB)",
}
#: The cost columns as the key beside a Pareto figure heads them.
_COST_UNITS = {"time_s": "CPU s", "ms_per_round": "ms/round", "peak_memory_kib": "KiB"}

#: What the stepped line through a family's points is, as its legend entry says.
FRONT_LINE_LABEL = "line: a family's Pareto front (least regret at each cost)"
#: Marker areas (points^2) of the smallest and largest value of a family's varied argument,
#: of every point of a family whose grid varies several arguments, and of a family of one.
_SIZE_RANGE = (28.0, 190.0)
_GRID_SIZE = 70.0
_SINGLE_SIZE = 170.0

#: Colour and marker of the project's agent families: the same in every figure, so that a
#: family is found by its shape alone (OFUL a star, SOFUL a square, ...). Keys in lower case.
FAMILY_STYLES = {
    "oful": {"color": _COLORS[0], "marker": "*"},
    "soful": {"color": _COLORS[1], "marker": "s"},
    "cbscfd": {"color": _COLORS[2], "marker": "^"},
    "dbslinucb": {"color": _COLORS[3], "marker": "D"},
    "dbslinucb-fd": {"color": _COLORS[3], "marker": "D"},
    "dbslinucb-rfd": {"color": _COLORS[4], "marker": "P"},
}
#: What a family without a style of its own is drawn with, chosen by its name.
_OTHER_COLORS = _COLORS[5:]
_OTHER_MARKERS = ["o", "v", "X", "<", ">", "h", "p", "8"]


def family_styles(families: list[str]) -> dict[str, dict]:
    """Colour and marker per family: :data:`FAMILY_STYLES` for the project's families, and for
    any other one a pair chosen by a hash of its name (the same in every figure), moved on to the
    next free pair where two families of one figure would otherwise share it."""
    import zlib

    styles, taken = {}, set()
    for family in families:
        style = FAMILY_STYLES.get(str(family).lower())
        if style is not None and (style["color"], style["marker"]) not in taken:
            styles[family] = dict(style)
        else:
            pairs = [(c, m) for m in _OTHER_MARKERS for c in _OTHER_COLORS]
            start = zlib.crc32(str(family).encode()) % len(pairs)
            color, marker = next(
                pairs[(start + k) % len(pairs)]
                for k in range(len(pairs))
                if pairs[(start + k) % len(pairs)] not in taken
            )
            styles[family] = {"color": color, "marker": marker}
        taken.add((styles[family]["color"], styles[family]["marker"]))
    return styles


def varied_arguments(group: pd.DataFrame) -> list[str]:
    """The numeric agent arguments (``arg.NAME`` columns) that vary within ``group`` (one
    family's rows) and that its labels name (``l=`` in ``"SOFUL l=20"``; tuned ``beta`` or
    ``lam`` they do not), most distinct values first, then in the order the labels name them."""
    found = []
    labels = [str(a) for a in group["agent"]]
    for column in (c for c in group.columns if str(c).startswith("arg.")):
        values = group[column].dropna()
        if values.empty or not all(
            isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values
        ):
            continue
        name = column[4:]
        short = f"{_short_arg(name)}="
        named = [
            label.find(short) if short in label else label.find(f"{name}=") for label in labels
        ]
        if values.nunique() > 1 and min(named) >= 0:
            found.append((-values.nunique(), named[0], name))
    return [name for *_, name in sorted(found)]


def _short_arg(name: str) -> str:
    from .specs import SHORT_ARG_NAMES

    return SHORT_ARG_NAMES.get(name, name)


def _sizes_and_labels(table: pd.DataFrame) -> tuple[dict[str, float], dict[str, str]]:
    """Per agent the marker area and per family its legend label. A family whose labels vary
    one argument draws it as the marker size (a larger value, a larger marker:
    ``"SOFUL (marker size: l = 10 to 600)"``); one whose grid varies several draws one size and
    names them (``"DBSLinUCB-FD (6 configurations: l0 x eps)"``): a size can say only one; a
    family of one is drawn larger (a star's size)."""
    sizes, labels = {}, {}
    for family in dict.fromkeys(table["family"]):
        group = table[table["family"] == family].drop_duplicates("agent")
        varied = varied_arguments(group)
        if len(group) == 1:
            sizes[group["agent"].iloc[0]] = _SINGLE_SIZE
            labels[family] = str(family)
            continue
        if len(varied) != 1:
            sizes.update({agent: _GRID_SIZE for agent in group["agent"]})
            first = str(group["agent"].iloc[0])  # the order its label names them in
            ordered = sorted(varied, key=lambda a: first.find(f"{_short_arg(a)}="))
            what = " x ".join(_short_arg(a) for a in ordered) if varied else "as labelled"
            labels[family] = f"{family} ({len(group)} configurations: {what})"
            continue
        values = group[f"arg.{varied[0]}"].astype(float)
        distinct = np.unique(values.dropna())
        position = {v: i / max(len(distinct) - 1, 1) for i, v in enumerate(distinct)}
        for agent, value in zip(group["agent"], values):
            low, high = _SIZE_RANGE
            sizes[agent] = low + position.get(value, 0.5) * (high - low)
        labels[family] = (
            f"{family} (marker size: {_short_arg(varied[0])} = {distinct[0]:g} to {distinct[-1]:g})"
        )
    return sizes, labels


def _point_text(agent: str, family: str) -> str:
    """What a labelled point says: its label without the family's name (``"l=141"``)."""
    text = str(agent)
    return (
        text[len(str(family)) :].strip(" :,-")
        if text.startswith(str(family)) and text != str(family)
        else text
    )


def point_numbers(table: pd.DataFrame) -> dict[str, int]:
    """The number each configuration (agent label) of ``table`` carries on a Pareto figure and in
    its key: 1, 2, ... in the order of the rows (families in turn)."""
    order = []
    for family in dict.fromkeys(table["family"]):
        order += list(dict.fromkeys(table.loc[table["family"] == family, "agent"]))
    return {agent: i + 1 for i, agent in enumerate(dict.fromkeys(order))}


def _draw_families(
    ax, table: pd.DataFrame, x: str, y: str, styles: dict, sizes: dict
) -> tuple[list, list]:
    """Each family's points (colour and marker of the family, size of the varied argument) and
    the stepped line of its Pareto front. Returns the front points worth a label, ``(x, y,
    text, colour, area)`` of the families of several configurations, and every point drawn,
    ``(x, y, area, agent)``."""
    front_points, drawn = [], []
    for family in dict.fromkeys(table["family"]):
        group = table[table["family"] == family]
        xs, ys = group[x].to_numpy(dtype=float), group[y].to_numpy(dtype=float)
        style = styles[family]
        single = group["agent"].nunique() == 1
        ax.scatter(
            xs,
            ys,
            s=[sizes[a] for a in group["agent"]],
            c=[style["color"]],
            marker=style["marker"],
            edgecolors="k",
            linewidths=0.5,
            alpha=0.85,
            zorder=3,
        )
        mask = _pareto_mask(xs, ys)
        order = np.argsort(xs[mask])
        if mask.sum() > 1:
            ax.step(
                xs[mask][order],
                ys[mask][order],
                where="post",
                color=style["color"],
                alpha=0.7,
                lw=1.3,
                zorder=2,
            )
        drawn += [(xi, yi, sizes[a], a) for a, xi, yi in zip(group["agent"], xs, ys)]
        if not single:
            front_points += [
                (xi, yi, _point_text(a, family), style["color"], sizes[a])
                for a, xi, yi in zip(group["agent"].to_numpy()[mask], xs[mask], ys[mask])
            ]
    ax.margins(0.06, 0.09)  # the largest markers stay inside the axes
    return front_points, drawn


def _family_handles(table: pd.DataFrame, styles: dict, labels: dict) -> tuple[list, list[str]]:
    """One legend entry per family (its marker, and its front's line where it has one), and one
    for what the stepped lines are."""
    from matplotlib.lines import Line2D

    handles, texts, any_front = [], [], False
    for family in dict.fromkeys(table["family"]):
        single = table.loc[table["family"] == family, "agent"].nunique() == 1
        any_front |= not single
        style = styles[family]
        handles.append(
            Line2D(
                [],
                [],
                color=style["color"],
                marker=style["marker"],
                ms=11 if style["marker"] == "*" else 8,
                mec="k",
                mew=0.5,
                ls="none" if single else "-",
                lw=1.3,
            )
        )
        texts.append(labels[family])
    if any_front:
        handles.append(Line2D([], [], color="0.35", lw=1.3, drawstyle="steps-post"))
        texts.append(FRONT_LINE_LABEL)
    return handles, texts


def _legend_below(
    fig, handles: list, texts: list[str], *, fontsize: float = 9, ncol: int | None = None
) -> None:
    """The legend centred below the panels, inside the figure, the panels laid out above it."""
    ncol = ncol or (1 if len(texts) <= 3 else 2)
    legend = fig.legend(
        handles,
        texts,
        loc="lower center",
        bbox_to_anchor=(0.5, 0.005),
        ncol=ncol,
        fontsize=fontsize,
        frameon=False,
        handlelength=2.2,
        columnspacing=1.5,
    )
    fig.canvas.draw()
    height = legend.get_window_extent().height / fig.bbox.height
    right = getattr(fig, "_layout_rect", (0, 0, 1, 1))[2]  # a key beside the panels keeps its room
    # save_figure lays out above the legend again
    fig._layout_rect = (0, min(0.6, height + 0.015), right, 1)
    fig.tight_layout(rect=fig._layout_rect)


def _label_points(ax, points: list[tuple], drawn: list[tuple], fontsize: float = 7) -> None:
    """Name the given points (``(x, y, text, colour, area)``) next to them, each where its text
    stays inside the axes and covers no other label and no marker (``drawn``: ``(x, y, area,
    agent)``); a point with no such place stays unnamed (the legend still names its family)."""
    from matplotlib.transforms import Bbox

    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    pixels = fig.dpi / 72.0

    def marker_box(xi, yi, area, *_):
        cx, cy = ax.transData.transform((xi, yi))
        r = 0.5 * np.sqrt(area) * pixels
        return Bbox.from_extents(cx - r, cy - r, cx + r, cy + r)

    placed = [marker_box(*point) for point in drawn]
    for xi, yi, text, color, area in sorted(points, key=lambda p: p[1]):
        gap = 0.5 * np.sqrt(area) + 1.0  # points: clear of its own marker
        for dx, dy, ha, va in (
            (gap, gap, "left", "bottom"),
            (gap, -gap, "left", "top"),
            (-gap, gap, "right", "bottom"),
            (-gap, -gap, "right", "top"),
        ):
            note = ax.annotate(
                text,
                (xi, yi),
                xytext=(dx, dy),
                textcoords="offset points",
                ha=ha,
                va=va,
                fontsize=fontsize,
                color=color,
                zorder=4,
            )
            note.set_in_layout(False)
            box = note.get_window_extent(renderer)
            fits = (
                inside.x0 <= box.x0
                and box.x1 <= inside.x1
                and inside.y0 <= box.y0
                and box.y1 <= inside.y1
            )
            if fits and not any(box.overlaps(other) for other in placed):
                placed.append(box)
                break
            note.remove()


def _number_points(
    axes_points: list[tuple], numbers: dict[str, int], fontsize: float = 7.5
) -> None:
    """Write each drawn point's number (:func:`point_numbers`) beside it, on every axes of
    ``axes_points`` (``(ax, drawn)``, ``drawn`` as :func:`_draw_families` returns it). Points
    whose markers overlap share one label (``"3,7,9"``): every point carries its number. A label
    goes where it stays inside its axes and covers no other text, first where it covers no
    marker either, a leader line joining it to its point."""
    from matplotlib.transforms import Bbox

    fig = axes_points[0][0].figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pixels = fig.dpi / 72.0
    # every text a label may not cover: the tick labels drawn on every axes (a neighbouring
    # panel's sit beside this one's edge), then each label placed so far
    texts: list = [
        label.get_window_extent(renderer)
        for ax in fig.axes
        for label in ax.get_xticklabels() + ax.get_yticklabels()
        if label.get_visible() and label.get_text().strip()
    ]
    for ax, drawn in axes_points:
        inside = ax.get_window_extent(renderer)
        centres = [
            (ax.transData.transform((xi, yi)), 0.5 * np.sqrt(area) * pixels, agent)
            for xi, yi, area, agent in drawn
        ]
        markers = [Bbox.from_extents(c[0] - r, c[1] - r, c[0] + r, c[1] + r) for c, r, _ in centres]
        for cluster in _overlapping(centres):
            label = ",".join(str(n) for n in sorted(numbers[centres[i][2]] for i in cluster))
            cx = float(np.mean([centres[i][0][0] for i in cluster]))
            cy = float(np.mean([centres[i][0][1] for i in cluster]))
            reach = max(
                np.hypot(centres[i][0][0] - cx, centres[i][0][1] - cy) + centres[i][1]
                for i in cluster
            )
            anchor = ax.transData.inverted().transform((cx, cy))
            _place_label(
                ax, label, anchor, reach / pixels + 1.5, inside, markers, texts, renderer, fontsize
            )


def _overlapping(centres: list[tuple]) -> list[list[int]]:
    """Groups of the points whose markers overlap (``(centre, radius, agent)`` in pixels), by
    transitive closure, in order."""
    parent = list(range(len(centres)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, (ci, ri, _) in enumerate(centres):
        for j in range(i):
            cj, rj, _ = centres[j]
            if np.hypot(ci[0] - cj[0], ci[1] - cj[1]) < 0.8 * (ri + rj):
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(centres)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _place_label(ax, label, anchor, reach, inside, markers, texts, renderer, fontsize) -> None:
    """``label`` at the first place around ``anchor`` (data coordinates; ``reach``: points from
    it to the edge of its markers), nearest first, where it stays inside the axes and covers no
    other label, preferring places that cover no marker, a leader line joining it to its markers."""
    from matplotlib.transforms import Bbox

    pixels = ax.figure.dpi / 72.0
    probe = ax.annotate(label, anchor, fontsize=fontsize)
    size = probe.get_window_extent(renderer)
    width, height = size.width, size.height
    probe.remove()
    cx, cy = ax.transData.transform(anchor)
    angles = np.deg2rad(np.arange(45.0, 405.0, 22.5))  # the four diagonals first, then around
    candidates = []
    for distance in reach + 1.0 + 5.0 * np.arange(14):  # points out from the markers' edge
        for angle in angles:
            dx, dy = distance * np.cos(angle), distance * np.sin(angle)
            # the label's corner (or edge middle) nearest the point sits at the offset
            x0 = cx + dx * pixels - (0 if dx > 1e-9 else width if dx < -1e-9 else width / 2)
            y0 = cy + dy * pixels - (0 if dy > 1e-9 else height if dy < -1e-9 else height / 2)
            candidates.append(((dx, dy), Bbox.from_bounds(x0, y0, width, height)))

    def inside_axes(box) -> bool:
        return (
            inside.x0 <= box.x0
            and box.x1 <= inside.x1
            and inside.y0 <= box.y0
            and box.y1 <= inside.y1
        )

    chosen = None
    for avoid_markers in (True, False):
        for offset, box in candidates:
            if (
                inside_axes(box)
                and not any(box.overlaps(t) for t in texts)
                and not (avoid_markers and any(box.overlaps(m) for m in markers))
            ):
                chosen = offset, box
                break
        if chosen:
            break
    if chosen is None:  # nowhere free: the nearest place inside the axes
        chosen = next(((o, b) for o, b in candidates if inside_axes(b)), candidates[0])
    (dx, dy), box = chosen
    note = ax.annotate(
        label,
        anchor,
        xytext=(dx, dy),
        textcoords="offset points",
        fontsize=fontsize,
        color="k",
        zorder=5,
        ha="left" if dx > 1e-9 else "right" if dx < -1e-9 else "center",
        va="bottom" if dy > 1e-9 else "top" if dy < -1e-9 else "center",
    )
    # the leader: a line without text, from the label's side to the markers' edge
    line = {"arrowstyle": "-", "color": "0.45", "lw": 0.6, "shrinkA": 0, "shrinkB": 0.8 * reach}
    leader = ax.annotate(
        "", anchor, xytext=(dx, dy), textcoords="offset points", zorder=4, arrowprops=line
    )
    for artist in (note, leader):
        artist.set_in_layout(False)
    texts.append(note.get_window_extent(renderer))


def _key_text(table: pd.DataFrame, numbers: dict[str, int], x: str | None, y: str) -> str:
    """The key beside a Pareto figure: one line per configuration, ``#  label`` and, for one
    panel, its regret and cost (``x``), the front's points marked ``*``."""
    rows = table.drop_duplicates("agent").set_index("agent")
    width = max(len(str(a)) for a in numbers)
    if x is None:
        lines = [f"{'#':>3}  configuration"]
        lines += [f"{n:>3}  {agent}" for agent, n in numbers.items()]
        return "\n".join(lines)
    front = set()
    for family in dict.fromkeys(table["family"]):
        group = table[table["family"] == family]
        mask = _pareto_mask(group[x].to_numpy(dtype=float), group[y].to_numpy(dtype=float))
        front |= set(group["agent"].to_numpy()[mask]) if len(group) > 1 else set()
    lines = [f"{'#':>3}  {'configuration':<{width}}  {'regret':>7}  {_COST_UNITS.get(x, x):>8}"]
    cost_format = "{:>8,.0f}" if x == "peak_memory_kib" else "{:>8.3g}"
    for agent, n in numbers.items():
        mark = "*" if agent in front else " "
        lines.append(
            f"{n:>3}{mark} {str(agent):<{width}}  {rows.loc[agent, y]:>7.1f}  "
            + cost_format.format(rows.loc[agent, x])
        )
    lines.append("* on its family's front")
    return "\n".join(lines)


def _with_key(panels_width: float, height: float, key: str, columns: int = 1, rows: int = 1):
    """A figure of ``rows`` x ``columns`` panels and, to their right, ``key`` in a column of its
    own; returns ``(figure, axes array)``. The figure grows with the key's lines."""
    lines = key.count("\n") + 1
    widest = max(len(line) for line in key.splitlines())
    key_width = 0.3 + widest * 7.0 * 0.6 / 72.0  # monospace at 7 points: ~0.6 em a character
    height = max(height, 1.9 + lines * 7.0 * 1.25 / 72.0)
    fig = plt.figure(figsize=(panels_width + key_width, height))
    widths = [panels_width / columns] * columns + [key_width]
    grid = fig.add_gridspec(rows, columns + 1, width_ratios=widths)
    axes = np.empty((rows, columns), dtype=object)
    for r in range(rows):
        for c in range(columns):
            shared = axes[0, 0] if (r, c) != (0, 0) else None
            axes[r, c] = fig.add_subplot(grid[r, c], sharey=shared)
    side = fig.add_subplot(grid[:, -1])
    side.axis("off")
    side.text(
        0.0,
        1.0,
        key,
        family="monospace",
        fontsize=7.0,
        va="top",
        ha="left",
        transform=side.transAxes,
    )
    return fig, axes


def plot_pareto(
    table: pd.DataFrame,
    x: str = "time_s",
    *,
    y: str = "final_regret_mean",
    ax=None,
    legend: bool = True,
    label_front: bool = True,
    title: str | None = None,
):
    """Final regret against a cost (time or memory), one colour and marker per agent family (Fig.
    3c/3d).

    Each point is one agent configuration (mean over seeds), in its family's colour and marker
    (:func:`family_styles`: the same in every figure). A family whose labels vary one argument
    (e.g. the sketch size) draws it as the marker size, larger for a larger value; one whose grid
    varies several draws one size. The stepped line joins the family's Pareto-optimal points (the
    least regret at each cost) and has its own legend entry. ``table`` is
    :func:`linbandit_gym.experiments.summary_table` for one env, with columns ``agent``,
    ``family``, ``x``, ``y`` and optionally ``arg.*``. The legend sits below the axes, inside the
    figure; ``title`` is set before the layout. Log axes (when the values span > 5x) get tick
    labels that do not collide.

    In a figure of its own, every point carries a number (points drawn over each other share
    one label), and the key beside the axes gives each number its configuration, regret and
    cost: every point can be found, however the grid crowds. Drawn into a given ``ax``, the
    front's points are named beside them where the name fits (``label_front``).
    """
    own_figure = ax is None
    numbers = point_numbers(table)
    if own_figure:
        fig, axes = _with_key(7.5, 5.4, _key_text(table, numbers, x, y))
        ax = axes[0, 0]
    else:
        fig = ax.figure
    families = list(dict.fromkeys(table["family"]))
    styles = family_styles(families)
    sizes, labels = _sizes_and_labels(table)
    front, drawn = _draw_families(ax, table, x, y, styles, sizes)
    ax.set_xlabel(_COST_NAMES.get(x, x))
    ax.set_ylabel("final cumulative regret" if y == "final_regret_mean" else y)
    if _wants_log(table[x]):
        _readable_log_axis(ax, "x")
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    handles, texts = _family_handles(table, styles, labels)
    if legend and own_figure:
        _legend_below(fig, handles, texts)
    elif legend:
        ax.legend(handles, texts, fontsize=8)
    if own_figure:
        lay_out(fig)  # where the axes end up: the labels are placed in their final pixels
        _number_points([(ax, drawn)], numbers)
    elif label_front:
        _label_points(ax, front, drawn)
    return fig


def plot_fronts(
    tables: dict[str, pd.DataFrame],
    *,
    y: str = "final_regret_mean",
    costs=("time_s", "peak_memory_kib"),
    titles: dict[str, str] | None = None,
    title: str | None = None,
):
    """Pareto fronts side by side: one column per env (e.g. per d), one row per cost.

    ``tables`` maps an env label to its :func:`summary_table`. Every panel shares one regret axis,
    so the panels compare at a glance; the families keep their colour and marker and the agents
    their marker size and number across panels, and are named once, in a legend below the panels
    (one entry per family, and one for the front lines) and in the key beside them (each
    number's configuration). A panel that lacks configurations others have says which, below
    its title (``"not run here: OFUL"``). ``title`` goes above the panels.
    """
    envs = list(tables)
    everyone = pd.concat(list(tables.values()), ignore_index=True)
    numbers = point_numbers(everyone)
    fig, axes = _with_key(
        3.3 * len(envs) + 0.6,
        3.0 * len(costs) + 1.8,
        _key_text(everyone, numbers, None, y),
        columns=len(envs),
        rows=len(costs),
    )
    styles = family_styles(list(dict.fromkeys(everyone["family"])))
    sizes, labels = _sizes_and_labels(everyone)  # one size per agent across every panel
    panels = []
    for col, env in enumerate(envs):
        missing = [a for a in numbers if a not in set(tables[env]["agent"])]
        for row, cost in enumerate(costs):
            ax = axes[row, col]
            _, drawn = _draw_families(ax, tables[env], cost, y, styles, sizes)
            panels.append((ax, drawn))
            if _wants_log(tables[env][cost]):
                _readable_log_axis(ax, "x")
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=8)
            if row == 0:
                heading = (titles or {}).get(env, env)
                lacks = f"\nnot run here: {_names(missing)}" if missing else ""
                ax.set_title(heading + lacks, fontsize=9)
            ax.set_xlabel(_COST_NAMES.get(cost, cost), fontsize=8)
            if col == 0:
                ax.set_ylabel(
                    "final cumulative regret" if y == "final_regret_mean" else y, fontsize=8
                )
            else:
                ax.tick_params(labelleft=False)
    if title:
        fig.suptitle(title, fontsize=10)
    handles, texts = _family_handles(everyone, styles, labels)
    _legend_below(fig, handles, texts, ncol=min(3, max(1, len(texts) // 2)))
    lay_out(fig)
    _number_points(panels, numbers)
    return fig


def _names(agents: list[str], at_most: int = 3) -> str:
    """``"OFUL"``, ``"OFUL, SOFUL l=8 and 2 more"``."""
    shown = ", ".join(map(str, agents[:at_most]))
    return shown + (f" and {len(agents) - at_most} more" if len(agents) > at_most else "")


def _wants_log(values: pd.Series) -> bool:
    """A cost axis is logarithmic when its values are positive and span more than 5x."""
    return (
        bool(len(values))
        and bool((values > 0).all())
        and values.max() / max(values.min(), 1e-12) > 5
    )


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x`` (nan with fewer than 2 distinct x)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    if np.unique(x[ok]).size < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def plot_scaling(
    points: pd.DataFrame,
    *,
    x: str = "d",
    metrics=(
        ("ms_per_round", "agent CPU ms / round"),
        ("peak_memory_bytes", "peak memory (bytes)"),
    ),
):
    """Cost against a problem size on log-log axes, one line per agent, slope in the legend.

    ``points`` has one row per (agent, ``x``) with the columns ``agent`` and each metric
    (means over seeds). The legend gives every agent's fitted slope (``log y`` on ``log x``)
    over all its points and, in brackets, over its upper half of ``x`` (where fixed per-call
    costs no longer hide the asymptotic one); two grey guides of slope 1 and 2 through the
    panel's lowest first point show O(d l) and O(d^2).

    Returns ``(figure, slopes)`` with ``slopes`` a frame: agent, metric, slope, upper-half
    slope, points, x range.
    """
    fig, axes = plt.subplots(1, len(metrics), figsize=(6.0 * len(metrics), 5.6), squeeze=False)
    agents = list(dict.fromkeys(points["agent"]))
    styles = dict(zip(agents, line_styles(len(agents))))
    rows = []
    for ax, (metric, name) in zip(axes[0], metrics):
        for agent in agents:
            sub = points[points["agent"] == agent].sort_values(x)
            slope = loglog_slope(sub[x], sub[metric])
            upper = sub[sub[x] >= np.median(sub[x].unique())]
            upper_slope = (
                loglog_slope(upper[x], upper[metric])
                if 2 <= upper[x].nunique() < sub[x].nunique()
                else slope
            )
            rows.append(
                {
                    "agent": agent,
                    "metric": metric,
                    "slope": slope,
                    "upper-half slope": upper_slope,
                    "points": len(sub),
                    f"{x} range": f"{sub[x].min():g}-{sub[x].max():g}",
                }
            )
            if not np.isfinite(slope):
                label = f"{agent}: one point"
            elif upper_slope != slope and np.isfinite(upper_slope):
                label = f"{agent}: slope {slope:.2f} ({upper_slope:.2f} upper half)"
            else:
                label = f"{agent}: slope {slope:.2f}"
            ax.plot(sub[x], sub[metric], label=label, ms=6, **styles[agent])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ylim = ax.get_ylim()
        xs = np.sort(points[x].unique()).astype(float)
        first = points[points[x] == xs[0]][metric]
        if len(xs) > 1 and (first > 0).any():
            y0 = float(first[first > 0].min())
            for power, text in ((1, "slope 1"), (2, "slope 2")):
                guide = y0 * (xs / xs[0]) ** power
                ax.plot(xs, guide, color="0.6", lw=0.8, ls=(0, (1, 3)), zorder=0)
                inside = np.flatnonzero(
                    guide <= ylim[1]
                )  # label the guide where it leaves the data's range
                ax.annotate(
                    text,
                    (xs[inside[-1]], guide[inside[-1]]),
                    fontsize=7,
                    color="0.4",
                    xytext=(-4, 2),
                    textcoords="offset points",
                    ha="right",
                    va="bottom",
                )
            ax.set_ylim(ylim)  # the guides do not stretch the axes
        _readable_log_axis(ax, "x")
        _readable_log_axis(ax, "y")
        ax.set_xlabel(x)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3, which="both")
        # below the panel: the legend covers neither the lines nor the guides' labels
        ax.legend(
            fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False
        )
    fig.tight_layout()
    return fig, pd.DataFrame(rows)


def plot_spectral_exponent(series: pd.DataFrame, *, ax=None, reference: float = 1.0 / 3.0):
    """``log(Delta_t) / log t`` against ``t`` with the line ``y = 1/3`` (Wen et al., 2025, Fig. 1c).

    ``series`` has columns ``agent``, ``seed``, ``t``, ``l`` (sketch size) and ``delta``
    (``Delta_t = min_k ||X_t - [X_t]_k||_F^2 / (l - k)``); one line per (agent, l), mean over seeds.
    Above 1/3, SOFUL's bound ``(1 + Delta_T)^{3/2} sqrt(T)`` is no longer sublinear.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    # Delta_t is exactly 0 while the stream has rank < l; eigensolver noise (~1e-12 t) would
    # show as a spurious large negative exponent, so such points are left out.
    data = series[(series["t"] > 1) & (series["delta"] > 1e-9 * series["t"])].copy()
    data["exponent"] = np.log(data["delta"]) / np.log(data["t"])
    multi_agent = data["agent"].nunique() > 1
    groups = list(data.groupby(["agent", "l"], sort=False))
    for ((agent, l), group), style in zip(groups, line_styles(len(groups))):
        mean = group.groupby("t")["exponent"].mean()
        label = f"l = {l}" + (f" ({agent})" if multi_agent else "")
        ax.plot(
            mean.index,
            mean.values,
            label=label,
            ms=4,
            markevery=_mark_every(len(mean), len(groups), style),
            **style,
        )
    ax.axhline(reference, color="k", ls="--", lw=1, label="y = 1/3")
    ax.set_xlabel("round t")
    ax.set_ylabel(r"$\log(\Delta_t) / \log t$")
    ax.set_title("spectral error exponent")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_sketch_size(records: pd.DataFrame, *, ax=None):
    """Sketch size (rows held) against round, mean over seeds, one line per agent."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    groups = list(records.groupby("agent", sort=False))
    for (agent, group), style in zip(groups, line_styles(len(groups))):
        mean = group.groupby("t")["sketch_size"].mean()
        # distinct dash patterns and staggered markers: identical curves (e.g. DBSLinUCB-FD and
        # -RFD before either sketch shrinks) stay distinguishable
        ax.plot(
            mean.index,
            mean.values,
            label=str(agent),
            drawstyle="steps-post",
            ms=5,
            markevery=_mark_every(len(mean), len(groups), style),
            **style,
        )
    ax.set_xlabel("round t")
    ax.set_ylabel("sketch size (rows)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_param_effect(runs: pd.DataFrame, x: str, group: str | None = None, *, metrics=None):
    """Final regret and total time against one agent argument, a line per value of another (Fig.
    3a/3b).

    ``runs`` holds one row per run (:func:`linbandit_gym.experiments.load_runs`) with argument
    columns ``arg.<name>``; values are averaged over seeds.
    """
    metrics = metrics or [
        ("final_regret", "final cumulative regret"),
        ("agent_time_s", "total agent CPU time (s)"),
    ]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 4.2))
    axes = np.atleast_1d(axes)
    xcol = f"arg.{x}"
    gcol = f"arg.{group}" if group else None
    keys = [gcol, xcol] if gcol else [xcol]
    mean = runs.groupby(keys)[[m for m, _ in metrics]].mean().reset_index()
    for ax, (metric, name) in zip(axes, metrics):
        if gcol:
            groups = list(mean.groupby(gcol))
            for (value, sub), style in zip(groups, line_styles(len(groups))):
                sub = sub.sort_values(xcol)
                shown = int(value) if isinstance(value, float) and value.is_integer() else value
                ax.plot(sub[xcol], sub[metric], label=f"{group} = {shown}", **style)
            ax.legend(fontsize=8)
        else:
            sub = mean.sort_values(xcol)
            ax.plot(sub[xcol], sub[metric], "o-")
        ax.set_xlabel(x)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_matrix_error(records: pd.DataFrame, *, ax=None, bound: bool = True):
    """``||A_t^T A_t - S_t^T S_t||_2`` against rows ``t`` (Wen et al., 2025, Fig. 4), bounds
    dashed."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    for agent, group in records.groupby("agent", sort=False):
        mean = group.groupby("t")[["spectral_error", "error_bound"]].mean()
        (line,) = ax.plot(mean.index, mean["spectral_error"], label=f"{agent}")
        if bound and mean["error_bound"].notna().any():
            ax.plot(
                mean.index,
                mean["error_bound"],
                ls="--",
                color=line.get_color(),
                alpha=0.8,
                label=f"{agent}: bound",
            )
    ax.set_xlabel("rows t")
    ax.set_ylabel(r"$\|A_t^\top A_t - S_t^\top S_t\|_2$")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
