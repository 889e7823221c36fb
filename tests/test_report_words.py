"""Reports and figures a reader understands: what was run, what the metrics mean, who wins at
each cost, captions in words; figures that scale to a paper's grid (the shipped mnist config's
49 configurations), share their regret axis where panels are compared and name every line.
Checked on the matplotlib objects, not on pixels."""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from linbandit_gym import plots as P
from linbandit_gym.cli import main
from linbandit_gym.experiments.config import parse_config
from linbandit_gym.experiments.figures import make_plots, read_captions
from linbandit_gym.experiments.report import winners_in_words, write_report
from linbandit_gym.experiments.sweep import sweep
from linbandit_gym.records import lock_output_dir

SYNTH = "LinBandit-Synthetic-v0"


def mnist_rows(seed: int = 0) -> pd.DataFrame:
    """One synthetic summary row per configuration of the shipped ``mnist`` config (its 49 labels,
    families and arguments), costs and regret made up: what its Pareto figure draws."""
    config = parse_config(
        Path(str(resources.files("linbandit_gym") / "configs" / "mnist.yaml")), validate_args=False
    )
    rows: dict[str, dict] = {}
    for spec in config.runs:
        args = spec.config["agent"]["args"]
        rows.setdefault(
            spec.agent_label,
            {
                "env": spec.env_label,
                "agent": spec.agent_label,
                "family": spec.family,
                **{f"arg.{k}": v for k, v in args.items() if isinstance(v, (int, float))},
            },
        )
    table = pd.DataFrame(list(rows.values()))
    rng = np.random.default_rng(seed)
    size = table["arg.sketch_size"].fillna(4 * table["arg.l0"]).fillna(784.0)
    table["time_s"] = 0.1 + size / 300 * rng.uniform(0.8, 1.2, len(table))
    table["peak_memory_kib"] = 20 + 6.1 * size
    table["final_regret_mean"] = 30 + 2000 / (size + 20) * rng.uniform(0.8, 1.2, len(table))
    return table


def _inside(box, outer, slack: float = 1.0) -> bool:
    return (
        box.x0 >= outer.x0 - slack
        and box.x1 <= outer.x1 + slack
        and box.y0 >= outer.y0 - slack
        and box.y1 <= outer.y1 + slack
    )


# -- the Pareto figure of the mnist config: 49 configurations ------------------------------


@pytest.mark.parametrize(
    "cost", [pytest.param("time_s", marks=pytest.mark.slow), "peak_memory_kib"]
)
def test_the_mnist_pareto_figure_names_every_family_inside_the_figure(cost):
    table = mnist_rows()
    assert len(table) == 49
    fig = P.plot_pareto(
        table, cost, title="mnist: regret vs cost\nLinBandit-MNIST-v0: T=2000, 20 seeds"
    )
    try:
        P.lay_out(fig)  # as save_figure does
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legend = fig.legends[0]
        texts = [t.get_text() for t in legend.get_texts()]
        # one entry per family, its varied argument and range named (a grid of two arguments: both,
        # no marker size that would speak of one only); one for the front lines
        assert texts == [
            "OFUL",
            "SOFUL (marker size: l = 10 to 600)",
            "CBSCFD (marker size: l = 10 to 600)",
            "DBSLinUCB-FD (15 configurations: l0 x eps)",
            "DBSLinUCB-RFD (10 configurations: l0 x eps)",
            P.FRONT_LINE_LABEL,
        ]
        assert _inside(legend.get_window_extent(renderer), fig.bbox)  # nothing runs off the figure
        assert all(t.get_fontsize() >= 8 for t in legend.get_texts())
        ax = fig.axes[0]
        assert _inside(ax.get_window_extent(renderer), fig.bbox)
        assert not legend.get_window_extent(renderer).overlaps(ax.get_tightbbox(renderer))
        # marker size follows the varied argument: SOFUL l=600 is drawn larger than SOFUL l=10
        soful = next(c for c in ax.collections if len(c.get_offsets()) == 13)
        sizes = dict(
            zip(table.loc[table["family"] == "SOFUL", "arg.sketch_size"], soful.get_sizes())
        )
        assert sizes[600] > sizes[272] > sizes[10]
        # every point carries its number, inside the axes, no label over another; the key beside
        # the axes gives each number its configuration
        # (the leader lines are texts without text)
        notes = [t for t in ax.texts if t.get_visible() and t.get_text()]
        assert all(_inside(t.get_window_extent(renderer), ax.bbox) for t in notes)
        numbered = sorted(int(n) for t in notes for n in t.get_text().split(","))
        assert numbered == list(range(1, 50))
        boxes = [t.get_window_extent(renderer) for t in notes]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
        [key] = fig.axes[1].texts
        numbers = P.point_numbers(table)
        for agent, number in numbers.items():
            row = rf"^ *{number}\*? +{re.escape(agent)} "
            assert re.search(row, key.get_text(), re.MULTILINE), agent
        assert _inside(key.get_window_extent(renderer), fig.bbox)
    finally:
        P.plt.close(fig)


def test_every_stepped_front_line_is_drawn_in_the_legend():
    fig = P.plot_pareto(mnist_rows(1), "time_s")
    try:
        steps = [line for line in fig.axes[0].get_lines() if line.get_drawstyle() == "steps-post"]
        assert len(steps) == 4  # the four families of several configurations (not OFUL)
        handles = fig.legends[0].legend_handles
        family_lines = [h for h in handles[:-1] if h.get_linestyle() == "-"]
        assert {h.get_color() for h in family_lines} == {line.get_color() for line in steps}
        assert handles[-1].get_drawstyle() == "steps-post"
    finally:
        P.plt.close(fig)


def test_fronts_panels_share_their_regret_axis_and_one_legend():
    tables = {}
    for i, d in enumerate((300, 1000, 3000)):
        table = mnist_rows(i)
        table["final_regret_mean"] = (
            3.8 + 0.3 * (table["final_regret_mean"] - 30) / 70
            if i == 0
            else table["final_regret_mean"] * (1 + i)
        )
        tables[f"d={d}"] = table
    fig = P.plot_fronts(
        tables, titles={k: k for k in tables}, title="fronts\nLinBandit-HeavyTail-v0: K=100"
    )
    try:
        P.lay_out(fig)
        fig.canvas.draw()
        limits = {ax.get_ylim() for ax in fig.axes[:-1]}  # the last: the key beside the panels
        assert len(limits) == 1  # a 3.8-4.1 panel is drawn on the 0-200 scale of its neighbours
        low, high = limits.pop()
        assert low <= 3.8 and high >= max(t["final_regret_mean"].max() for t in tables.values())
        assert len(fig.legends) == 1 and _inside(fig.legends[0].get_window_extent(), fig.bbox)
        assert [ax.get_title() for ax in fig.axes[:3]] == list(tables)
    finally:
        P.plt.close(fig)


def test_many_regret_curves_get_a_legend_below_inside_the_figure():
    t = np.arange(1, 51)
    records = pd.concat(
        [
            pd.DataFrame(
                {
                    "agent": f"SOFUL l={l}",
                    "env": SYNTH,
                    "seed": 0,
                    "t": t,
                    "cumulative_regret": np.sqrt(t) * (1 + l / 100),
                }
            )
            for l in range(10, 260, 10)
        ]
    )
    fig = P.plot_cumulative_regret(records)
    try:
        fig.canvas.draw()
        legend = fig.legends[0]
        assert len(legend.get_texts()) == 25 and _inside(legend.get_window_extent(), fig.bbox)
        assert not fig.axes[0].get_legend()
        assert fig.axes[0].get_title() == f"{SYNTH}: T = 50, 1 seed"
    finally:
        P.plt.close(fig)


# -- the report of a sweep ---------------------------------------------------------------


@pytest.fixture(scope="module")
def one_seed_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    config = {
        "name": "words",
        "seeds": 1,
        "description": "Two agents on a small synthetic env.",
        "envs": [{"id": SYNTH, "args": {"d": 20, "n_arms": 4, "horizon": 40}, "label": "small"}],
        "agents": [
            {"name": "OFUL", "args": {"beta": 0.1}},
            {
                "name": "SOFUL",
                "args": {"beta": 0.1},
                "grid": {"sketch_size": [2, 4]},
                "label": "SOFUL l={sketch_size}",
            },
        ],
        "plots": [{"kind": "regret", "name": "fig1a_regret"}, {"kind": "pareto", "name": "fig3cd"}],
    }
    assert sweep(config, out, log=None).ok
    return out


def test_the_report_says_what_was_run_what_the_metrics_mean_and_who_wins(one_seed_dir):
    md = write_report(one_seed_dir, fmt="md").read_text(encoding="utf-8")
    head = md.split("## Summary")[0]
    assert "Two agents on a small synthetic env." in head
    assert (
        "3 agent configurations of 2 families (OFUL, SOFUL) on 1 env: "
        "small (LinBandit-Synthetic-v0: d=20, "
        "horizon=40, n_arms=4); 1 seed each, 3 finished runs of 40 rounds."
    ) in head
    for metric in ("final regret", "ms/round", "peak memory"):
        line = next(line for line in head.splitlines() if line.startswith(f"- **{metric}**"))
        assert "Lower is better" in line
    wins = head.split("## Who wins")[1]
    assert "Lowest final regret:" in wins and "Least regret for the CPU time spent" in wins
    assert "Least regret for the memory spent" in wins
    assert "± 0.0" not in md  # one seed: no spread to show


def test_figure_captions_are_words_not_file_names(one_seed_dir):
    page = write_report(one_seed_dir, replot=False).read_text(encoding="utf-8")
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page)
    assert len(captions) == 3 and not any(re.search(r"fig\d|_", c) for c in captions)
    assert any(c.startswith("Cumulative regret against the round t on small") for c in captions)
    assert any("Pareto front" in c and "Lower and further left is better" in c for c in captions)
    assert set(read_captions(one_seed_dir)) == {"fig1a_regret", "fig3cd_time", "fig3cd_memory"}


def test_the_winner_at_each_cost_is_the_cost_ordered_front():
    table = pd.DataFrame(
        {
            "env": "e",
            "agent": ["cheap", "dominated", "middle", "exact"],
            "family": "f",
            "seeds": 2,
            "final_regret_mean": [50.0, 60.0, 30.0, 20.0],
            "final_regret_std": 1.0,
            "ms_per_round": [0.1, 0.5, 0.4, 2.0],
            "peak_memory_kib": [1.0, 2.0, 3.0, 4.0],
        }
    )
    lines = winners_in_words(table)["e"]
    assert lines[0] == "Lowest final regret: exact (20.0 ± 1.0)."
    assert lines[1].endswith(
        "from 0.1 ms/round: cheap, regret 50.0; from 0.4 ms/round: middle, regret 30.0; "
        "from 2 ms/round: exact, regret 20.0."
    )
    assert "dominated" not in lines[1]


def test_make_plots_titles_name_the_env_id(one_seed_dir):
    make_plots(one_seed_dir, formats=("png",))
    captions = read_captions(one_seed_dir)
    assert all(SYNTH in c["caption"] for c in captions.values())


def test_points_drawn_over_each_other_are_each_named_and_listed_with_their_values():
    # five configurations that went exact hold OFUL's memory: one spot, five numbers, five key rows
    table = mnist_rows(2)
    exact = table["agent"].isin(
        [
            "OFUL",
            "DBSLinUCB-FD l0=50 eps=2",
            "DBSLinUCB-FD l0=50 eps=4",
            "DBSLinUCB-FD l0=100 eps=2",
            "DBSLinUCB-RFD l0=50 eps=2",
        ]
    )
    # at 60 no other point is near
    table.loc[exact, ["peak_memory_kib", "final_regret_mean"]] = [4814.2, 60.0]
    fig = P.plot_pareto(table, "peak_memory_kib")
    try:
        P.lay_out(fig)
        numbers = P.point_numbers(table)
        labels = [t.get_text() for t in fig.axes[0].texts if t.get_text()]
        shared = next(text for text in labels if str(numbers["OFUL"]) in text.split(","))
        together = sorted(numbers[a] for a in table.loc[exact, "agent"])
        assert sorted(int(n) for n in shared.split(",")) == together
        key = fig.axes[1].texts[0].get_text()
        assert len(re.findall(r"60\.0 +4,814$", key, re.MULTILINE)) == 5
        every = sorted(int(n) for text in labels for n in text.split(","))
        assert every == sorted(numbers.values())  # each point named, once
    finally:
        P.plt.close(fig)


def test_a_family_has_one_marker_in_every_figure():
    first = mnist_rows(0)
    # the same families in another order and with others missing: each keeps its shape and colour
    second = pd.concat(
        [first[first["family"] == "DBSLinUCB-RFD"], first[first["family"] == "OFUL"]]
    )
    styles = [P.family_styles(list(dict.fromkeys(t["family"]))) for t in (first, second)]
    for family in ("OFUL", "DBSLinUCB-RFD"):
        assert styles[0][family] == styles[1][family]
    shapes = {s["marker"] for s in styles[0].values()}
    assert len(shapes) == len(styles[0])  # no two families of a figure share a shape
    drawn = []
    for table in (first, second):
        fig = P.plot_pareto(table, "time_s")
        rfd = fig.axes[0].collections[list(dict.fromkeys(table["family"])).index("DBSLinUCB-RFD")]
        drawn.append(rfd.get_paths()[0].vertices)
        P.plt.close(fig)
    np.testing.assert_array_equal(*drawn)


def test_a_fronts_panel_says_which_configurations_it_lacks():
    small, large = mnist_rows(0), mnist_rows(1)
    large = large[large["agent"] != "OFUL"]  # OFUL not run at the large d
    fig = P.plot_fronts(
        {"d=300": small, "d=16384": large}, titles={"d=300": "d = 300", "d=16384": "d = 16384"}
    )
    try:
        titles = [ax.get_title() for ax in fig.axes[:2]]
        assert titles == ["d = 300", "d = 16384\nnot run here: OFUL"]
        key = fig.axes[-1].texts[0].get_text()
        assert all(agent in key for agent in small["agent"])
    finally:
        P.plt.close(fig)


def test_a_row_tuned_apart_from_its_siblings_says_so(tmp_path):
    from linbandit_gym.experiments.figures import write_tables

    config = {
        "name": "tuned",
        "seeds": 1,
        "envs": [{"id": SYNTH, "args": {"d": 8, "n_arms": 4, "horizon": 20}, "label": "small"}],
        "agents": [
            {
                "name": "OFUL",
                "args": {"lam": 0.2, "beta": 0.01},
                "grid": {"beta": [0.01, 0.02]},
                "label": "OFUL b={beta}",
            }
        ],
        "tuned": {"small": {"OFUL b=0.02": {"lam": 2.0}}},
    }
    sweep(config, tmp_path, log=None)
    table, _ = write_tables(tmp_path)
    tuned = table.set_index("agent")["tuned"].to_dict()
    assert tuned == {"OFUL b=0.01": "", "OFUL b=0.02": "lam=2.0"}
    summary = (tmp_path / "summary.md").read_text()
    assert re.search(r"\| OFUL b=0\.02 +\| lam=2\.0 +\|", summary)
    write_report(tmp_path)
    assert "<th>tuned</th>" in (tmp_path / "report.html").read_text()


# -- tables and figures say what they hold ---------------------------------------------------


@pytest.fixture
def two_agents_dir(tmp_path):
    out = tmp_path / "out"
    env = {"id": SYNTH, "args": {"d": 4, "n_arms": 3, "horizon": 20}}
    config = {
        "name": "six",
        "seeds": 3,
        "envs": [env],
        "agents": [{"name": "OFUL", "grid": {"beta": [0.1, 1.0]}}],
    }
    assert sweep(config, out, log=None).ok
    return out


def test_a_deleted_run_is_not_counted_by_captions_and_the_tables_say_so(two_agents_dir, capsys):
    """One run JSON deleted of 6: the captions do not claim 3 seeds over the 2 a curve averages,
    and ``plot``, ``summary.md`` and the report say the tables hold 5 of the 6 runs."""
    out = two_agents_dir
    metas = {p: json.loads(p.read_text()) for p in (out / "runs").glob("*.json")}
    victim = next(
        p
        for p, meta in metas.items()
        if meta["agent_label"] == "OFUL beta=0.1" and meta["seed"] == 2
    )
    victim.unlink()
    assert main(["plot", str(out), "--formats", "png"]) == 0
    err = capsys.readouterr().err
    assert "partial: 1 of the 6 runs of the config" in err and "rerun the sweep" in err, err
    assert "3 seeds (OFUL beta=0.1: 2)" in read_captions(out)["regret"]["caption"]
    assert "partial: 1 of the 6 runs" in (out / "summary.md").read_text()
    md = write_report(out, fmt="md", replot=False).read_text(encoding="utf-8")
    assert "3 seeds (OFUL beta=0.1: 2) each" in md and "partial: 1 of the 6 runs" in md


def test_plot_during_a_live_sweep_says_its_tables_are_partial(two_agents_dir, capsys):
    out = two_agents_dir
    with lock_output_dir(out, "sweep"):  # a sweep writing the directory now
        assert main(["plot", str(out), "--formats", "png"]) == 0
    err = capsys.readouterr().err
    assert f"partial: a sweep (pid {os.getpid()})" in err and "still writing" in err, err
    assert "still writing" in (out / "summary.md").read_text()
    assert main(["plot", str(out), "--formats", "png"]) == 0  # done: nothing to say
    assert "partial" not in capsys.readouterr().err
    assert "partial" not in (out / "summary.md").read_text()
