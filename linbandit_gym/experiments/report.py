"""``linbandit report DIR``: one results page for a sweep directory.

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

from .figures import format_table, make_plots, markdown_table
from .sweep import load_meta, load_runs, read_sweep_config, summary_table

__all__ = ["write_report"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:0.9em;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f0f0f0}td:nth-child(-n+3){text-align:left}img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
pre{background:#f7f7f7;padding:0.8em;overflow-x:auto;font-size:0.85em}h2{border-bottom:1px solid #ddd;padding-bottom:0.2em}
figure{margin:1em 0}figcaption{font-size:0.85em;color:#555}
"""


def _versions(out: Path, runs: pd.DataFrame) -> dict:
    if runs.empty:
        return {}
    meta = load_meta(out, runs["run_id"].iloc[0])
    info = dict(meta.get("versions", {}))
    info["device"] = meta.get("device")
    # the thread policy and the clock behind every ms/round of the report
    info["torch threads per run"] = meta.get("torch_threads")
    info["BLAS threads per run"] = meta.get("blas_threads")
    info["agent time"] = {"thread_cpu": "CPU time of the run's thread", "process_cpu": "CPU time of the process"}.get(
        meta.get("agent_clock"), "wall clock (older runs)")
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
        return {"run": str(data.get("run_id")), "agent": str(spec.get("agent_label")),
                "env": str(spec.get("env_label")), "seed": str((spec.get("config") or {}).get("seed")), "error": last[-1] if last else ""}
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        return {"run": path.stem, "agent": "", "env": "", "seed": "",
                "error": f"{path} cannot be read ({type(exc).__name__}); the sweep retries this run"}


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


def write_report(out_dir: str | Path, *, fmt: str = "html", out: str | Path | None = None, replot: bool = True) -> Path:
    """Write the report of a sweep directory; returns its path (default ``DIR/report.html|md``)."""
    if fmt not in ("html", "md"):
        raise ValueError(f"format must be 'html' or 'md', got {fmt!r}")
    directory = Path(out_dir)
    runs = load_runs(directory)
    if runs.empty:
        raise FileNotFoundError(f"{directory} has no finished runs yet: run the sweep first")
    if replot or not (directory / "plots").is_dir():
        make_plots(directory, formats=("png", "pdf"))
    raw = read_sweep_config(directory) or {}
    table = with_run_arguments(format_table(summary_table(runs)), directory, runs)
    pngs = sorted((directory / "plots").glob("*.png"))
    versions = _versions(directory, runs)
    failed = _failed(directory)
    title = f"linbandit sweep report: {raw.get('name', directory.name)}"
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    target = Path(out) if out else directory / f"report.{fmt}"
    config_text = yaml.safe_dump(raw, sort_keys=False, allow_unicode=True)  # "Δ_t", not "\u0394_t"
    n_runs, n_seeds = len(runs), runs["seed"].nunique()
    if fmt == "md":
        parts = [f"# {title}", "", f"Generated {stamp} from `{directory}`: {n_runs} finished runs, {n_seeds} seed(s).", ""]
        if raw.get("description"):
            parts += [str(raw["description"]).strip(), ""]
        parts += ["## Summary", "", markdown_table(table), ""]
        parts += ["## Figures", ""]
        for png in pngs:
            rel = png.relative_to(target.parent) if png.is_relative_to(target.parent) else png
            parts += [f"![{png.stem}]({rel.as_posix()})", ""]
        if failed:
            parts += ["## Failed runs", "", markdown_table(pd.DataFrame(failed)), ""]
        parts += ["## Environment", "", markdown_table(pd.DataFrame([versions])), ""]
        parts += ["## Config", "", "```yaml", config_text.rstrip(), "```", ""]
        target.write_text("\n".join(parts), encoding="utf-8")
        return target
    body = [f"<h1>{html.escape(title)}</h1>",
            f"<p>Generated {stamp} from <code>{html.escape(str(directory))}</code>: {n_runs} finished runs, "
            f"{n_seeds} seed(s).</p>"]
    if raw.get("description"):
        body.append(f"<p>{html.escape(str(raw['description']).strip())}</p>")
    body += ["<h2>Summary</h2>", table.to_html(index=False, escape=True, border=0)]
    body.append("<h2>Figures</h2>")
    for png in pngs:
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        body.append(f'<figure><img alt="{html.escape(png.stem)}" src="data:image/png;base64,{data}">'
                    f"<figcaption>{html.escape(png.stem)}</figcaption></figure>")
    if failed:
        body += ["<h2>Failed runs</h2>", pd.DataFrame(failed).to_html(index=False, escape=True, border=0)]
    body += ["<h2>Environment</h2>", pd.DataFrame([versions]).to_html(index=False, escape=True, border=0)]
    body += ["<h2>Config</h2>", f"<pre>{html.escape(config_text)}</pre>"]
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>")
    target.write_text(page, encoding="utf-8")
    return target
