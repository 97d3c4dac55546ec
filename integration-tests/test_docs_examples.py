"""Every Python block of README.md and docs/*.md runs, one test per block (``file:line``).

The blocks of one page share a namespace and run in page order, as a reader types them:
a test runs the blocks above its own first (once per page), so ``-k`` can pick any block.
Blocks run from the repository root, with a local OpenAI-wire server
(``ragloom.chat_models.openai.testing``) configured as the chat model through the
documented environment variables, so "the chat model from the environment" is a real
HTTP model here and no key is needed.
Every block runs; none is skipped (an example that needs a server uses a local one).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ragloom.chat_models.openai.testing import CHAT_MODEL, WireServer

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced ```python block of a page."""

    page: Path
    line: int  # 1-based line of the opening fence
    source: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def python_blocks(page: Path) -> Iterator[Block]:
    """The ```python / ```py blocks of a Markdown page, in order."""
    lines = page.read_text(encoding="utf-8").split("\n")
    opening: tuple[int, str, str] | None = None  # (line index, fence, info)
    body: list[str] = []
    for index, line in enumerate(lines):
        match = FENCE.match(line)
        if opening is None:
            if match:
                opening = (index, match["fence"], match["info"].strip().split(" ")[0])
                body = []
        elif match and match["fence"].startswith(opening[1]) and not match["info"].strip():
            if opening[2] in ("python", "py"):
                yield Block(page, opening[0] + 1, "\n".join(body) + "\n")
            opening = None
        else:
            body.append(line)
    if opening is not None:
        raise AssertionError(f"{page.relative_to(ROOT)}:{opening[0] + 1}: unclosed code fence")


BLOCKS = [block for page in PAGES for block in python_blocks(page)]


@dataclass
class PageRun:
    """The shared namespace of one page and how far it has run."""

    namespace: dict[str, Any] = field(default_factory=lambda: {"__name__": "__docs__"})
    done: int = 0  # blocks of the page already run
    failed_at: str | None = None


@pytest.fixture(scope="session")
def chat_server() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.fixture(scope="session")
def page_runs() -> dict[Path, PageRun]:
    return {}


def _run(block: Block, namespace: dict[str, Any]) -> None:
    """Run a block so that tracebacks name the page and its line numbers."""
    code = compile("\n" * block.line + block.source, str(block.page), "exec")
    exec(code, namespace)


@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_doc_block_runs(
    block: Block,
    chat_server: WireServer,
    page_runs: dict[Path, PageRun],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert "ragloom.testkit" not in block.source, (
        f"{block.name}: a user's example imports the testkit (contributors' tooling)"
    )
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGLOOM_CHAT_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAGLOOM_CHAT_BASE_URL", chat_server.url)
    monkeypatch.setenv("RAGLOOM_CHAT_MODEL_NAME", CHAT_MODEL)
    monkeypatch.chdir(ROOT)
    run = page_runs.setdefault(block.page, PageRun())
    if run.failed_at is not None:
        pytest.fail(f"an earlier block of the page failed: {run.failed_at}")
    page_blocks = [b for b in BLOCKS if b.page == block.page]
    position = page_blocks.index(block)
    assert run.done <= position, f"{block.name} already ran as part of its page"
    for current in page_blocks[run.done : position + 1]:
        run.done += 1
        try:
            _run(current, run.namespace)
        except Exception:
            run.failed_at = current.name
            raise


def test_blocks_are_found() -> None:
    """The collector sees the pages' blocks (a broken fence parser would run nothing)."""
    assert len(BLOCKS) >= 20
    assert {block.page.name for block in BLOCKS} >= {"README.md", "ai-services.md"}
