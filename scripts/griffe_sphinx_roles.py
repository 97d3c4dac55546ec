"""Griffe extension for the docs site: Sphinx cross-reference roles become links.

The docstrings name other objects the Sphinx way (``:class:`~ragloom.core.Document```,
``:meth:`save```), which mkdocstrings-python renders as raw text. This rewrites each role
into an optional autorefs cross-reference, resolved in the docstring's scope as Python
would (members, then imports, then the enclosing objects): a link when the target is on
the site, its name in code otherwise (so the strict build never fails on a private or
external target). Loaded by mkdocs.yml's mkdocstrings options; the docstrings stay as
they are.
"""

from __future__ import annotations

import html
import re
from typing import Any

from griffe import Extension, Module, Object

__all__ = ["SphinxRoles", "rewrite_roles"]

# :class:`Name`, :meth:`~a.b.C.m`, :py:func:`f()`, :class:`title <a.b.C>`
ROLE = re.compile(
    r":(?:py:)?(?P<role>class|meth|func|data|attr|mod|exc|obj|const|type)"
    r":`(?P<body>[^`<>]+?|[^`<]*<[^`>]+>)`"
)
EXPLICIT = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^>]+)>$")


def _resolve(scope: Object, target: str) -> str:
    """The full path of ``target`` seen from ``scope``, or ``target`` itself."""
    head, _, rest = target.partition(".")
    current: Object | None = scope
    while current is not None:
        try:
            path = current.resolve(head)
        except Exception:  # griffe's NameResolutionError, or an unresolvable alias
            current = current.parent
            continue
        return f"{path}.{rest}" if rest else path
    return target


def rewrite_roles(text: str, scope: Object) -> str:
    """``text`` with each Sphinx role replaced by an optional autorefs cross-reference."""

    def replace(match: re.Match[str]) -> str:
        body = match["body"].strip()
        explicit = EXPLICIT.match(body)
        if explicit:
            title, target = explicit["title"], explicit["target"].strip()
        else:
            target = body.lstrip("~").removesuffix("()")
            title = target.rsplit(".", 1)[-1] if body.startswith("~") else target
        if match["role"] in ("meth", "func") and not title.endswith(")"):
            title += "()"
        identifier = html.escape(_resolve(scope, target.lstrip(".")), quote=True)
        code = f"<code>{html.escape(title)}</code>"
        return f'<autoref identifier="{identifier}" optional>{code}</autoref>'

    return ROLE.sub(replace, text)


def _objects(obj: Object) -> list[Object]:
    """``obj`` and every object defined under it (aliases are rewritten where defined)."""
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            found.extend(_objects(member))  # type: ignore[arg-type]
    return found


class SphinxRoles(Extension):
    """Rewrites the roles of every docstring once a package is loaded."""

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        for obj in _objects(pkg):
            if obj.docstring is not None and ":" in obj.docstring.value:
                obj.docstring.value = rewrite_roles(obj.docstring.value, obj)
