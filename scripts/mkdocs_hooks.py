"""MkDocs hooks: the packages' READMEs become site pages, so the guide's links to them work.

The guide links to ``../packages/<name>/README.md`` (right when read on a clone or a code
host). The site has no files outside ``docs/``, so each package README is added as the
page ``packages/<name>.md`` and those links are rewritten to it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
README_LINK = re.compile(r"\]\(\.\./packages/([a-z0-9-]+)/README\.md(#[^)]*)?\)")


def on_files(files: Files, config: Any) -> Files:
    """Add one page per package README."""
    for readme in sorted(ROOT.glob("packages/*/README.md")):
        files.append(
            File.generated(
                config,
                f"packages/{readme.parent.name}.md",
                content=readme.read_text(encoding="utf-8"),
            )
        )
    return files


def on_page_markdown(markdown: str, page: Page, config: Any, files: Files) -> str:
    """Point the guide's links to package READMEs at their pages in the site."""
    if page.file.src_uri.startswith("packages/"):
        return markdown
    return README_LINK.sub(lambda m: f"](packages/{m[1]}.md{m[2] or ''})", markdown)
