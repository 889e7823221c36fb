"""``linbandit report DIR``: one results page for a sweep directory, in words first.

The page says what was run, what each metric means and which way is better, and which
configuration wins on each env (the least regret at every budget of time and of memory),
before the tables and the figures, whose captions say in words what each shows.

HTML (default) is self-contained: the PNG figures are embedded as base64, the tables are
inline, so the single file can be mailed or attached to an issue. Markdown links the figures
under ``DIR/plots`` by relative path.
"""

from __future__ import annotations

import base64
import html
import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import yaml

from ..records import (
    OutputError,
    check_output_dir,
    completeness,
    load_meta,
    load_runs,
    write_text_atomic,
)
from ..text import count, human_bytes, mean_spread, reported_bytes
from .config import ConfigError
from .figures import (
    env_settings,
    format_table,
    make_plots,
    markdown_table,
    read_captions,
    seeds_in_words,
    with_tuned,
)
from .sweep import read_sweep_config, run_warnings, summary_table, warning_lines

__all__ = ["METRIC_WORDS", "what_was_run", "winners_in_words", "write_report"]

_CSS = (
    "\n"
    "body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;"
    "margin:2em auto;padding:0 1em;color:#222}\n"
    "table{border-collapse:collapse;font-size:0.9em;margin:1em 0}th,td{border:1px solid #ccc;"
    "padding:3px 8px;text-align:right}\n"
    "th{background:#f0f0f0}td:nth-child(-n+3){text-align:left}img{max-width:100%;"
    "border:1px solid #eee;margin:0.5em 0}\n"
    "pre{background:#f7f7f7;padding:0.8em;overflow-x:auto;font-size:0.85em}"
    "h2{border-bottom:1px solid #ddd;padding-bottom:0.2em}\n"
    "figure{margin:1.5em 0}figcaption{font-size:0.9em;color:#444;max-width:900px}\n"
)


def _versions(out: Path, runs: pd.DataFrame) -> dict:
    if runs.empty:
        return {}
    meta = load_meta(out, runs["run_id"].iloc[0])
    info = dict(meta.get("versions", {}))
    info["device"] = meta.get("device")
    # the thread policy and the clock behind every ms/round of the report
    info["torch threads per run"] = meta.get("torch_threads")
    info["BLAS threads per run"] = meta.get("blas_threads")
    info["agent time"] = {
        "thread_cpu": "CPU time of the run's thread",
        "process_cpu": "CPU time of the process",
    }.get(meta.get("agent_clock"), "wall clock (older runs)")
    info["backends"] = ", ".join(sorted({str(b) for b in runs["backend"].dropna()}))
    return info


def _failed(out: Path) -> list[dict]:
    failed_dir = out / "failed"
    if not failed_dir.is_dir():
        return []
    items = []
    for path in sorted(failed_dir.glob("*.json")):
        items.append(_failure(path))
    return items


def _failure(path: Path) -> dict:
    """One row of the failed runs' table from ``failed/<id>.json``; a damaged one is listed as such
    (what it held is only a traceback: the sweep retries the run whatever it says)."""
    try:
        data = json.loads(path.read_text())
        spec = data.get("spec") or {}
        last = str(data.get("error") or "").strip().splitlines()
        return {
            "run": str(data.get("run_id")),
            "agent": str(spec.get("agent_label")),
            "env": str(spec.get("env_label")),
            "seed": str((spec.get("config") or {}).get("seed")),
            "error": last[-1] if last else "",
        }
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        return {
            "run": path.stem,
            "agent": "",
            "env": "",
            "seed": "",
            "error": f"{path} cannot be read ({type(exc).__name__}); the sweep retries this run",
        }


def _format_args(args: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in args.items())


def with_run_arguments(table: pd.DataFrame, directory: Path, runs: pd.DataFrame) -> pd.DataFrame:
    """``table`` (a formatted summary) with an ``arguments`` column after ``agent``: the agent
    arguments its runs were built with, read from each run's record, so ``tuned:`` overrides
    show (``beta=1.0`` where the config's ``args`` say 0.1)."""
    if table.empty:
        return table
    keys = ["env", "agent"] if "env" in table else ["agent"]
    by_row: dict[tuple, list[str]] = {}
    for row in runs.drop_duplicates(keys + ["run_id"]).itertuples(index=False):
        key = tuple(getattr(row, k) for k in keys)
        text = _format_args(load_meta(directory, row.run_id)["config"]["agent"]["args"])
        if text not in by_row.setdefault(key, []):
            by_row[key].append(text)
    column = ["; ".join(by_row.get(tuple(r), [])) for r in table[keys].itertuples(index=False)]
    out = table.copy()
    out.insert(list(out.columns).index("agent") + 1, "arguments", column)
    return out


#: What each metric of the summary means and which way is better: the report's "How to read it".
METRIC_WORDS = [
    (
        "final regret",
        "the cumulative (pseudo-)regret after the last round: summed over the rounds, the best "
        "arm's expected reward minus that of the arm played. Lower is better. The mean over the "
        "seeds, ± one standard deviation when there are several.",
    ),
    (
        "ms/round",
        "the agent's CPU time in act + update per round (CPU time (s): over the whole episode; "
        'wall ms/round: the same calls by the wall clock). Lower is better. "alone" times were '
        "measured with the run to itself, \"batch share\" times are a run's share of a batch's.",
    ),
    (
        "peak memory",
        "the most memory the agent reported holding (its memory_bytes(): sketch, matrices, "
        'vectors) at any round. Lower is better; "not reported" for an agent without '
        "memory_bytes().",
    ),
    (
        "final sketch size",
        "the rows the agent's sketch holds at the end (d once DBSLinUCB has gone exact).",
    ),
    (
        "tuned",
        (
            "the arguments the config's tuned: section (what linbandit tune chose) gives a "
            "row over its entry's args: a row tuned apart from its siblings (SOFUL l=20 with "
            "its own beta and lam) says so."
        ),
    ),
    (
        "exact updates",
        (
            "for an agent that may switch from its sketch to exact rank-1 updates "
            "(DBSLinUCB: when its next block would pass its block cap, or hold more "
            "memory or cost more time per round than OFUL's d x d inverse), the round "
            'from which it did ("from t=807"; a range over the seeds), or '
            '"never". From that round on it is OFUL, with OFUL\'s memory and time.'
        ),
    ),
    (
        "Pareto front",
        "the configurations that no other beats on both regret and cost: for every budget of "
        "time or memory, the least regret it buys.",
    ),
]


def what_was_run(directory: Path, runs: pd.DataFrame, raw: dict) -> str:
    """One sentence: how many configurations of which families on which envs, seeds and rounds."""
    settings = env_settings(directory, runs)
    configurations = runs.drop_duplicates(["env", "agent"]).shape[0]
    families = list(dict.fromkeys(runs["family"]))
    envs = []
    for label, values in settings.items():
        args = ", ".join(f"{k}={v}" for k, v in values.items() if k != "id")
        envs.append(
            f"{label} ({values['id']}{': ' + args if args else ''})"
            if label != values["id"] or args
            else label
        )
    rounds = int(runs["rounds"].max()) if "rounds" in runs else None
    task = "matrix-approximation" if raw.get("task") == "matrix-approx" else "bandit"
    return (
        f"{count(configurations, 'agent configuration')} of "
        f"{count(len(families), 'family', 'families')} "
        f"({', '.join(map(str, families))}) on {count(len(envs), 'env')}: {'; '.join(envs)}; "
        f"{seeds_in_words(runs)} each, {count(len(runs), 'finished run')}"
        + (f" of {rounds} {'rows' if task != 'bandit' else 'rounds'}" if rounds else "")
        + "."
    )


def winners_in_words(table: pd.DataFrame) -> dict[str, list[str]]:
    """Per env, sentences naming the lowest final regret and, for each cost (CPU ms/round, peak
    memory), the configuration with the least regret at every budget: the cost-ordered Pareto
    front of all agents (``table``: :func:`~linbandit_gym.experiments.summary_table`)."""
    out: dict[str, list[str]] = {}
    if table.empty or "final_regret_mean" not in table:
        return out
    for env, group in table.groupby("env", sort=False):
        best = group.loc[group["final_regret_mean"].idxmin()]
        spread = mean_spread(
            best["final_regret_mean"], best["final_regret_std"], int(best["seeds"]), 1
        )
        lines = [f"Lowest final regret: {best['agent']} ({spread})."]
        for cost, shown, name in (
            ("ms_per_round", lambda v: f"{v:.3g} ms/round", "CPU time"),
            ("peak_memory_kib", lambda v: human_bytes(1024.0 * v), "memory"),
        ):
            if cost == "peak_memory_kib" and not group[cost].map(reported_bytes).all():
                lines.append("By memory: not every agent reports its memory, so no front is drawn.")
                continue
            steps = []
            for row in _front(group, cost).itertuples(index=False):
                steps.append(
                    f"from {shown(getattr(row, cost))}: {row.agent}, "
                    f"regret {row.final_regret_mean:.1f}"
                )
            shared = (
                " (some times are shares of batches)"
                if cost == "ms_per_round"
                and "timing" in group
                and (group["timing"] == "batch share").any()
                else ""
            )
            lines.append(
                f"Least regret for the {name} spent{shared}, "
                "cheapest first (each wins from its cost up to the next's): "
                + "; ".join(steps)
                + "."
            )
        out[str(env)] = lines
    return out


def _front(group: pd.DataFrame, cost: str) -> pd.DataFrame:
    """The rows of ``group`` on the Pareto front of final regret against ``cost``, cheapest first:
    each has less regret than every cheaper one (the winner from its cost up to the next's)."""
    ordered = group.sort_values([cost, "final_regret_mean"], kind="stable")
    keep, least = [], float("inf")
    for index, regret in zip(ordered.index, ordered["final_regret_mean"]):
        if regret < least:
            keep.append(index)
            least = regret
    return ordered.loc[keep]


def _figures(directory: Path) -> list[tuple[Path, str, str]]:
    """``(png, title, caption in words)`` of every figure of ``DIR/plots``, in the order they were
    drawn (a figure drawn before captions were written: its file name, at the end)."""
    captions = read_captions(directory)
    pngs = {png.stem: png for png in sorted((directory / "plots").glob("*.png"))}
    order = [stem for stem in captions if stem in pngs] + [
        stem for stem in pngs if stem not in captions
    ]
    out = []
    for stem in order:
        words = captions.get(stem) or {}
        name = stem.replace("_", " ")
        out.append((pngs[stem], words.get("title", name), words.get("caption", name)))
    return out


def write_report(
    out_dir: str | Path, *, fmt: str = "html", out: str | Path | None = None, replot: bool = True
) -> Path:
    """Write the report of a sweep directory; returns its path (default ``DIR/report.html|md``).

    It opens with what was run, what each metric means and which way is better, and, per env,
    the lowest regret and the configuration with the least regret at every cost; then the
    summary table, the warnings of the runs (each once), the figures with captions in words, any
    failed runs, the library versions and the config.
    """
    if fmt not in ("html", "md"):
        raise ValueError(f"format must be 'html' or 'md', got {fmt!r}")
    directory = check_output_dir(out_dir)
    target = Path(out) if out else directory / f"report.{fmt}"
    if not target.parent.is_dir():
        raise OutputError(
            f"{target.parent} is not a directory: create it, or name a report file "
            "in an existing directory (--out)"
        )
    root = directory if target.parent.resolve() == directory.resolve() else target.parent
    runs = load_runs(directory)
    if runs.empty:
        raise FileNotFoundError(f"{directory} has no finished runs yet: run the sweep first")
    partial = completeness(directory).note()
    if replot or not (directory / "plots").is_dir():
        make_plots(directory, formats=("png", "pdf"))
    raw = read_sweep_config(directory) or {}
    if not isinstance(raw.get("description", ""), (str, type(None))):
        raise ConfigError(
            f"{directory / 'config.yaml'}: description: expected free text (a "
            f"string), got {type(raw['description']).__name__}"
        )
    summary = with_tuned(summary_table(runs), raw)
    table = with_run_arguments(format_table(summary), directory, runs)
    figures = _figures(directory)
    versions = _versions(directory, runs)
    failed = _failed(directory)
    warnings = warning_lines(run_warnings(directory, runs))
    title = f"linbandit sweep report: {raw.get('name', directory.name)}"
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    config_text = yaml.safe_dump(raw, sort_keys=False, allow_unicode=True)  # "Δ_t", not "\u0394_t"
    ran = what_was_run(directory, runs, raw)
    winners = winners_in_words(summary)
    metrics = (
        METRIC_WORDS
        if "final_regret_mean" in summary
        else [
            (
                "final error",
                "the spectral-norm error ||A^T A - S^T S||_2 of the sketch after the last row; "
                "lower is better, and it stays under the final bound the sketch guarantees.",
            ),
            ("ms/row", "the CPU time of one row's update; lower is better."),
            ("peak memory", "the most memory the sketch held; lower is better."),
        ]
    )
    if fmt == "md":
        parts = [f"# {title}", "", f"Generated {stamp} from `{directory}`.", ""]
        parts += ["## What was run", ""]
        if raw.get("description"):
            parts += [str(raw["description"]).strip(), ""]
        parts += [ran, ""] + ([f"**{partial}**", ""] if partial else []) + ["## How to read it", ""]
        parts += [f"- **{name}**: {text}" for name, text in metrics] + [""]
        if winners:
            parts += ["## Who wins", ""]
            for env, lines in winners.items():
                parts += [f"**{env}**", ""] + [f"- {line}" for line in lines] + [""]
        parts += ["## Summary", "", markdown_table(table), ""]
        if warnings:
            parts += ["## Warnings", "", "What the runs warned of, each once:", ""]
            parts += [f"- {line}" for line in warnings] + [""]
        parts += ["## Figures", ""]
        for png, name, caption in figures:
            rel = png.relative_to(target.parent) if png.is_relative_to(target.parent) else png
            parts += [f"![{name}]({rel.as_posix()})", "", f"*{caption}*", ""]
        if failed:
            parts += ["## Failed runs", "", markdown_table(pd.DataFrame(failed)), ""]
        parts += ["## Environment", "", markdown_table(pd.DataFrame([versions])), ""]
        parts += ["## Config", "", "```yaml", config_text.rstrip(), "```", ""]
        write_text_atomic("\n".join(parts), target, root)
        return target
    esc = html.escape
    body = [
        f"<h1>{esc(title)}</h1>",
        f"<p>Generated {stamp} from <code>{esc(str(directory))}</code>.</p>",
        "<h2>What was run</h2>",
    ]
    if raw.get("description"):
        body.append(f"<p>{esc(str(raw['description']).strip())}</p>")
    body += [f"<p>{esc(ran)}</p>"] + ([f"<p><b>{esc(partial)}</b></p>"] if partial else [])
    body += ["<h2>How to read it</h2>", "<ul>"]
    body += [f"<li><b>{esc(name)}</b>: {esc(text)}</li>" for name, text in metrics] + ["</ul>"]
    if winners:
        body.append("<h2>Who wins</h2>")
        for env, lines in winners.items():
            body += [
                f"<p><b>{esc(env)}</b></p>",
                "<ul>",
                *[f"<li>{esc(line)}</li>" for line in lines],
                "</ul>",
            ]
    body += ["<h2>Summary</h2>", table.to_html(index=False, escape=True, border=0)]
    if warnings:
        body += [
            "<h2>Warnings</h2>",
            "<p>What the runs warned of, each once:</p>",
            "<ul>",
            *[f"<li>{esc(line)}</li>" for line in warnings],
            "</ul>",
        ]
    body.append("<h2>Figures</h2>")
    for png, name, caption in figures:
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        body.append(
            f'<figure><img alt="{esc(name)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>"
        )
    if failed:
        body += [
            "<h2>Failed runs</h2>",
            pd.DataFrame(failed).to_html(index=False, escape=True, border=0),
        ]
    body += [
        "<h2>Environment</h2>",
        pd.DataFrame([versions]).to_html(index=False, escape=True, border=0),
    ]
    body += ["<h2>Config</h2>", f"<pre>{esc(config_text)}</pre>"]
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
        f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>"
    )
    write_text_atomic(page, target, root)
    return target
