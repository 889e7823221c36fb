"""The README's Python examples run as written, in order (so the README stays true)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run_in_order():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2
    namespace: dict = {}  # later blocks may reuse earlier blocks' names, as a reader would
    for index, block in enumerate(blocks):
        try:
            exec(compile(block, f"README.md python block {index}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            raise AssertionError(f"README python block {index} failed: {exc!r}\n{block}") from exc
