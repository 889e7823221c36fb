"""Figures a paper can use: no overlapping text, readable log ticks, identical curves
distinguishable."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from matplotlib.text import Text

from linbandit_gym import plots as P


def _texts(fig):
    """Bounding boxes (display units) of every visible, non-empty text of the figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ticks, drawn = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update({id(tick.label1), id(tick.label2)})
            drawn += [
                t.label1 for t in axis._update_ticks()
            ]  # the ticks inside the view: what is drawn
    boxes, seen = [], set()
    for text in [t for t in fig.findobj(Text) if id(t) not in ticks] + drawn:
        if id(text) in seen or not (text.get_visible() and text.get_text().strip()):
            continue
        seen.add(id(text))
        boxes.append((text.get_text(), text.get_window_extent(renderer)))
    return boxes


def _overlaps(boxes):
    return [
        (a, b)
        for (a, ba), (b, bb) in itertools.combinations(boxes, 2)
        if ba.overlaps(bb) and ba.width > 0 and bb.width > 0
    ]


def _mnist_like_table(costs):
    """Labels and costs shaped as the MNIST sweep's, whose labels crowd one another."""
    rows = [
        ("OFUL", "OFUL"),
        ("SOFUL l=20", "SOFUL"),
        ("SOFUL l=100", "SOFUL"),
        ("SOFUL l=150", "SOFUL"),
        ("CBSCFD l=20", "CBSCFD"),
        ("CBSCFD l=150", "CBSCFD"),
    ]
    rows += [
        (f"DBSLinUCB l0={l0} eps={eps}", "DBSLinUCB-FD") for eps in (2, 8, 25) for l0 in (50, 100)
    ]
    table = pd.DataFrame(rows, columns=["agent", "family"])
    table["final_regret_mean"] = np.linspace(80, 300, len(table))[::-1]
    table["time_s"] = costs[: len(table)]
    table["peak_memory_kib"] = costs[: len(table)]
    return table


@pytest.mark.slow  # 16 figures drawn; test_log_tick_labels_do_not_collide_on_any_range draws five
@settings(
    max_examples=8, deadline=None, phases=[Phase.explicit, Phase.generate]
)  # drawing is slow: no shrinking
@given(low=st.floats(1.0, 1e4), span=st.floats(1.5, 1e5), seed=st.integers(0, 2**31 - 1))
# a number placed against its panel's right edge once covered the next panel's tick label
@example(low=6112.688315610257, span=51253.31652742167, seed=1211100)
def test_pareto_text_never_overlaps(low, span, seed):
    costs = low * np.exp(np.random.default_rng(seed).uniform(0, np.log(span), 12))
    table = _mnist_like_table(costs)
    for x in ("time_s", "peak_memory_kib"):
        fig = P.plot_pareto(
            table, x, title="mnist: regret vs cost\nLinBandit-MNIST-v0: T=2000, 2 seeds"
        )
        try:
            legend = fig.legends[0]
            families = list(dict.fromkeys(table["family"]))
            texts = [t.get_text() for t in legend.get_texts()]
            assert [t.split(" (")[0] for t in texts[:-1]] == families and texts[
                -1
            ] == P.FRONT_LINE_LABEL
            boxes = _texts(fig)
            assert not _overlaps(boxes), _overlaps(boxes)[:3]
        finally:
            P.plt.close(fig)


def test_log_tick_labels_do_not_collide_on_any_range():
    for low, high in [(150, 5000), (0.9, 3.0), (1e2, 1e7), (40, 60), (3e-3, 2e2)]:
        table = _mnist_like_table(np.geomspace(low, high, 12))
        fig = P.plot_pareto(table, "peak_memory_kib")
        ax = fig.axes[0]
        if ax.get_xscale() == "log":
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            labels = [t for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
            lo, hi = ax.get_xlim()
            labels = [t for t in labels if lo <= t.get_position()[0] <= hi]
            assert labels, (low, high)
            extents = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
            for a, b in zip(extents, extents[1:]):
                assert a.x1 <= b.x0, f"tick labels collide on [{low}, {high}]"
        P.plt.close(fig)


@pytest.mark.parametrize("n", [2, 5, 12, 41])
def test_curves_get_distinct_styles(n):
    styles = P.line_styles(n)
    keys = {(s["color"], s["linestyle"], s["marker"]) for s in styles}
    assert len(keys) == n
    # neighbours (the usual case of two identical curves) differ in every attribute
    for a, b in zip(styles, styles[1:]):
        assert (
            a["color"] != b["color"]
            and a["linestyle"] != b["linestyle"]
            and a["marker"] != b["marker"]
        )


def test_identical_sketch_size_curves_stay_distinguishable():
    t = np.arange(1, 401)
    size = np.minimum(10 * 2 ** np.floor(np.log2(1 + t / 50)), 80)
    records = pd.concat(
        [
            pd.DataFrame({"agent": a, "env": "e", "seed": 0, "t": t, "sketch_size": size})
            for a in ("DBSLinUCB-FD l0=10 eps=8", "DBSLinUCB-RFD l0=10 eps=8")
        ]
    )
    fig = P.plot_sketch_size(records)
    lines = [l for l in fig.axes[0].get_lines() if l.get_label().startswith("DBS")]
    assert len(lines) == 2
    np.testing.assert_array_equal(lines[0].get_ydata(), lines[1].get_ydata())  # the same curve...
    a, b = lines
    assert (
        a.get_linestyle() != b.get_linestyle() and a.get_marker() != b.get_marker()
    )  # ...drawn two ways
    marks = [set(np.asarray(t)[l.get_markevery()[0] :: l.get_markevery()[1]]) for l in lines]
    assert not marks[0] & marks[1]  # the markers sit at different rounds, so both show
    P.plt.close(fig)


def test_scaling_fits_the_slopes_it_draws():
    d = np.array([256, 1024, 4096, 16384])
    points = pd.concat(
        [
            pd.DataFrame(
                {
                    "agent": "quadratic",
                    "d": d,
                    "ms_per_round": 1e-6 * d**2,
                    "peak_memory_bytes": 8.0 * d**2,
                }
            ),
            pd.DataFrame(
                {
                    "agent": "linear",
                    "d": d,
                    "ms_per_round": 0.1 + 1e-4 * d,
                    "peak_memory_bytes": 8.0 * 20 * d,
                }
            ),
        ]
    )
    fig, slopes = P.plot_scaling(points)
    got = slopes.set_index(["agent", "metric"])["slope"]
    assert got["quadratic", "ms_per_round"] == pytest.approx(2.0)
    assert got["quadratic", "peak_memory_bytes"] == pytest.approx(2.0)
    assert got["linear", "peak_memory_bytes"] == pytest.approx(1.0)
    assert 0.3 < got["linear", "ms_per_round"] < 1.0  # the fixed 0.1 ms flattens the small-d end
    upper = slopes.set_index(["agent", "metric"])["upper-half slope"]
    assert got["linear", "ms_per_round"] < upper["linear", "ms_per_round"] <= 1.0
    assert all(ax.get_xscale() == ax.get_yscale() == "log" for ax in fig.axes)
    assert not _overlaps(_texts(fig))
    P.plt.close(fig)
