"""The one byte-size rule (``linbandit_host.memory``): binary units, read by ``parse_bytes``
wherever a size is typed (``--batch-memory``, ``$LINBANDIT_MEMORY_LIMIT``) and written by
``format_bytes`` wherever one is printed (messages, summaries, reports)."""

from __future__ import annotations

import doctest
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from linbandit_gym.experiments import packing
from linbandit_gym.text import human_bytes
from linbandit_host import memory
from linbandit_host.memory import SIZE_UNITS, format_bytes, parse_bytes

POWERS = {"B": 0, "KiB": 1, "MiB": 2, "GiB": 3, "TiB": 4, "PiB": 5, "EiB": 6, "ZiB": 7, "YiB": 8}


def test_the_examples_of_the_rule_hold():
    assert doctest.testmod(memory, optionflags=doctest.ELLIPSIS).failed == 0


def test_every_spelling_of_a_unit_is_binary():
    for power, prefix in enumerate("KMGTPEZY", 1):
        for unit in (prefix, prefix + "B", prefix + "iB"):
            for text in (f"3{unit}", f"3 {unit.lower()}", f" 3{unit.upper()} "):
                assert parse_bytes(text) == 3 * 1024**power, text
    assert parse_bytes("2GB") == 2_147_483_648 and parse_bytes("1.5k") == 1536
    assert parse_bytes("2e9") == parse_bytes(2e9) == parse_bytes(2_000_000_000) == 2_000_000_000


def test_the_batch_budget_and_the_memory_limit_read_a_size_alike(monkeypatch):
    for text in ("2GB", "512M", "1.5g", "300KiB", "2e9"):
        monkeypatch.setenv(memory.MEMORY_LIMIT_ENV, text)
        assert memory.memory_limit_bytes() == parse_bytes(text)
        assert (
            packing.pack([], batch_memory=text) == []
        )  # the planner accepts it (and reads it the same way)
    assert packing.parse_bytes is parse_bytes


@pytest.mark.parametrize("bad", ["lots", "2 parsecs", "-1G", "1x", "", "2GBB", "1e+", None])
def test_what_is_not_a_size_is_refused_naming_the_forms(bad):
    with pytest.raises(
        ValueError, match=r"^--batch-memory=.* is not a memory size; .*e\.g\. 8GiB, 512M or 2e9"
    ):
        parse_bytes(bad, "--batch-memory")


@pytest.mark.parametrize("bad", [0, "0", "0.2", float("inf"), float("nan"), -5])
def test_a_size_is_at_least_one_byte(bad):
    with pytest.raises(
        ValueError, match=r"^size must be a positive size \(at least 1 byte\)|not a memory size"
    ):
        parse_bytes(bad)


@given(st.integers(min_value=0, max_value=2**90 - 2**80))  # below 1023.5 YiB, the largest unit
def test_a_formatted_size_reads_back_within_its_rounding(n):
    text = format_bytes(n)
    number, name = re.fullmatch(r"([0-9.]+) (\w+)", text).groups()
    assert name in POWERS
    value = float(number) * 1024 ** POWERS[name]
    assert abs(value - n) <= 0.005 * n + 0.5  # three significant digits
    assert float(number) < 1024 and (name == "B" or float(number) >= 1)
    if name != "B":
        assert parse_bytes(f"{number}{name}") == int(value)  # what is printed parses back


def test_sizes_past_every_unit_and_past_floats_stay_readable():
    assert format_bytes(1023 * 1024) == "1023 KiB" and format_bytes(1024**2) == "1 MiB"
    assert format_bytes(10**40) == "1e+40 bytes" and format_bytes(10**400) == "1.00e+400 bytes"


def test_a_recorded_memory_prints_with_the_same_formatter():
    assert human_bytes(1536) == format_bytes(1536) == "1.5 KiB"
    assert human_bytes(0) == "not reported" and human_bytes(float("nan")) == "not reported"


def test_the_units_table_is_binary():
    assert set(SIZE_UNITS.values()) == {1024**power for power in range(9)}
