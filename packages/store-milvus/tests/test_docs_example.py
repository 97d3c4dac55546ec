"""The first (runnable) example of docs/scaling-out.md runs; both stores print the same."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PAGE = Path(__file__).resolve().parents[3] / "docs" / "scaling-out.md"


def test_scaling_out_example_runs_and_both_stores_agree() -> None:
    code = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)[0]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "__docs__"})
    lines = output.getvalue().splitlines()
    assert len(lines) == 2
    memory, milvus = (line.split(":", 1)[1] for line in lines)
    assert memory == milvus
    assert "Milvus spreads collections" in memory
    assert "pgvector" not in memory  # tenant b is filtered out
