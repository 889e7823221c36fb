"""How far two sweeps of the same runs in different precisions agree, run by run.

A float32 sweep (``dtype: float32``, ``--dtype float32``) plays the same episodes as its
float64 reference: the same envs and seeds, the same agents but for their ``dtype``. Rounding
makes their scores differ in the last bits, and where two arms' scores are that close the
agents may choose differently, after which the episodes part. :func:`agreement` pairs the runs
of two sweep directories whose configs are the same once the agents' ``dtype`` and ``device``
are set aside, and reports per configuration (agent label, env label): the share of rounds in
which both chose the same arm, the first round where they parted, and the final regrets of
both with their difference. ``linbandit agreement REFERENCE OTHER`` prints it.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..records import read_records
from .config import canonical_json
from .sweep import load_meta, load_runs

__all__ = ["Agreement", "agreement"]

#: Agent arguments that say where and in what precision an agent computes, not what it is.
PLACEMENT_ARGS = ("dtype", "device")


@dataclass
class Agreement:
    """Per configuration: ``table`` (see :func:`agreement`); ``unmatched``: the runs of either
    directory without a counterpart in the other."""

    table: pd.DataFrame
    matched: int
    unmatched_reference: int
    unmatched_other: int

    def lines(self) -> list[str]:
        """The whole in words: runs paired, identical choices, the largest regret difference."""
        if self.table.empty:
            return ["no run of one directory has a counterpart in the other"]
        rounds = self.table["rounds"] * self.table["seeds"]
        same = float((self.table["identical_choices"] * rounds).sum() / rounds.sum())
        worst = self.table.loc[self.table["regret_difference"].abs().idxmax()]
        return textwrap.wrap(
            f"{self.matched} runs paired ({self.unmatched_reference} of the reference and "
            f"{self.unmatched_other} of the other without a counterpart): the same arm chosen in "
            f"{same:.1%} of their rounds; the mean final regret of a configuration differs by at "
            f"most {abs(worst['regret_difference']):.3g} ({worst['agent']} on {worst['env']})",
            width=96,
            subsequent_indent="  ",
        )


def _key(config: dict) -> str:
    """What two runs that differ only in precision share: the config without the placement args."""
    agent = config.get("agent") or {}
    args = {k: v for k, v in (agent.get("args") or {}).items() if k not in PLACEMENT_ARGS}
    return canonical_json({**config, "agent": {**agent, "args": args}})


def agreement(reference: str | Path, other: str | Path) -> Agreement:
    """Pair the runs of sweep directories ``reference`` and ``other`` that differ only in their
    agents' ``dtype``/``device`` and compare them.

    Returns an :class:`Agreement` whose ``table`` has one row per configuration of the
    reference (``env``, ``agent`` labels) with a counterpart: ``seeds`` paired, ``rounds``,
    ``identical_choices`` (the share of rounds, over those seeds, in which both chose the same
    arm), ``first_parting`` (the earliest round at which a pair chose differently; NaN if none
    did), ``regret_reference`` and ``regret_other`` (mean final regrets), ``regret_difference``
    (other minus reference, mean over the seeds) and ``regret_difference_max`` (the largest
    absolute difference of one seed).

    Raises ``ValueError`` when no run has a counterpart.
    """
    reference, other = Path(reference), Path(other)
    ref_runs, other_runs = load_runs(reference), load_runs(other)
    if ref_runs.empty or other_runs.empty:
        raise ValueError(
            f"{reference if ref_runs.empty else other} holds no finished run to compare"
        )
    if "final_regret" not in ref_runs or "final_regret" not in other_runs:
        raise ValueError(
            "agreement compares bandit sweeps (their choices and regrets); a matrix-approximation "
            "sweep has neither"
        )
    metas = {rid: load_meta(reference, rid) for rid in ref_runs["run_id"]}
    other_metas = {rid: load_meta(other, rid) for rid in other_runs["run_id"]}
    other_by_key = {_key(meta["config"]): rid for rid, meta in other_metas.items()}
    pairs = []
    for rid, agent, env, seed in zip(
        ref_runs["run_id"], ref_runs["agent"], ref_runs["env"], ref_runs["seed"]
    ):
        match = other_by_key.pop(_key(metas[rid]["config"]), None)
        if match is not None:
            pairs.append((rid, match, agent, env, int(seed)))
    if not pairs:
        raise ValueError(
            f"no run of {reference} has a counterpart in {other}: the two sweeps must run the same "
            "agents (but for their dtype), envs and seeds"
        )
    rows = []
    for rid, match, agent, env, seed in pairs:
        a, b = _records(reference, metas[rid]), _records(other, other_metas[match])
        rounds = min(len(a), len(b))
        same = a["action"].to_numpy()[:rounds] == b["action"].to_numpy()[:rounds]
        parting = int(np.argmin(same)) + 1 if not same.all() else np.nan
        rows.append(
            {
                "env": env,
                "agent": agent,
                "seed": seed,
                "rounds": rounds,
                "same": int(same.sum()),
                "parting": parting,
                "regret_reference": float(a["cumulative_regret"].iloc[-1]),
                "regret_other": float(b["cumulative_regret"].iloc[-1]),
            }
        )
    per_run = pd.DataFrame(rows)
    per_run["difference"] = per_run["regret_other"] - per_run["regret_reference"]
    grouped = per_run.groupby(["env", "agent"], sort=False)
    table = grouped.agg(
        seeds=("seed", "nunique"),
        rounds=("rounds", "max"),
        same=("same", "sum"),
        total=("rounds", "sum"),
        first_parting=("parting", "min"),
        regret_reference=("regret_reference", "mean"),
        regret_other=("regret_other", "mean"),
        regret_difference=("difference", "mean"),
        regret_difference_max=("difference", lambda d: float(np.abs(d).max())),
    )
    table.insert(2, "identical_choices", table.pop("same") / table.pop("total"))
    return Agreement(table.reset_index(), len(pairs), len(ref_runs) - len(pairs), len(other_by_key))


def _records(out: Path, meta: dict) -> pd.DataFrame:
    """The records of the run ``meta`` describes (checked by :func:`load_runs`), in round order."""
    return read_records(out / "runs" / meta["records"]["file"]).sort_values("t")
