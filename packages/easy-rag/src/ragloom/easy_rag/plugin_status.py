"""What ``ragloom plugins`` shows: each installed provider, which one is active, and
(with ``--check``) whether it loads — a doctor for a broken or half-configured install.

Active means "what Easy RAG uses now": every document parser (a dispatcher picks one per
file, ``RAGLOOM_DOCUMENT_PARSER`` names preferred ones); for the other default kinds the
provider ``RAGLOOM_<KIND>`` names, else the only one installed; a chat model only when the
environment configures one (else answers are extractive). Components (stores, loaders,
retrievers, ...) are never active: the caller picks one by name and configures it.

A check imports each provider and builds it (and calls its ``load()`` when it has one, so
an embedding model's weights are read). An import failure is ``broken``; a provider that
imports but cannot be built is ``broken`` where Easy RAG needs one (parsers, splitters,
embedding models) and ``not configured`` for chat and scoring models, which are optional
and configured from the environment; an active one that is not configured is a problem.
A component is only imported (building it needs configuration): ``broken`` when it cannot
be, is not a class or factory, or its name is provided twice in its group.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from typing import Any

from ragloom.core import PluginError, plugins
from ragloom.core.parsers.dispatch import DispatchingDocumentParser
from ragloom.easy_rag.assistant import CHAT_ENV_VARS

__all__ = [
    "GROUPS",
    "OPTIONAL",
    "Provider",
    "Group",
    "plugin_status",
    "format_status",
]

GROUPS = plugins.GROUPS
OPTIONAL = frozenset({plugins.CHAT_MODELS, plugins.SCORING_MODELS})
OK, BROKEN, NOT_CONFIGURED = "ok", "broken", "not configured"


@dataclass
class Provider:
    """One installed entry point and, after a check, how loading it went."""

    name: str
    distribution: str | None
    value: str
    active: bool
    status: str | None = None  # None: not checked
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k in ("name", "distribution", "value",
                "active") or v is not None}  # fmt: skip


@dataclass
class Group:
    """One entry-point group: its providers and a note on what is active and why."""

    group: str
    variable: str | None  # the environment variable choosing the default; None: components
    note: str
    providers: list[Provider] = field(default_factory=list)
    error: str | None = None  # a group-level problem (ambiguity, an unknown chosen name)

    @property
    def failed(self) -> bool:
        """A group-level error, a broken provider, or an active one that cannot be built."""
        return self.error is not None or any(
            p.status == BROKEN or (p.active and p.status not in (None, OK)) for p in self.providers
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"variable": self.variable, "note": self.note}
        if self.error is not None:
            data["error"] = self.error
        data["providers"] = [provider.to_dict() for provider in self.providers]
        return data


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    cause = exc.__cause__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({' '.join(str(cause).split())})"
    return text


def _active_names(group: str, found: tuple[EntryPoint, ...]) -> tuple[set[str], str, str | None]:
    """(active provider names, a note, a group-level error) for ``group``."""
    variable = plugins.env_var(group)
    chosen = os.environ.get(variable, "").strip()
    names = {ep.name for ep in found}
    if not found:
        return set(), "none installed", None
    if group in plugins.COMPONENT_GROUPS:
        return set(), "picked by name: plugins.create(group, name, **config)", None
    if group == plugins.DOCUMENT_PARSERS:
        wanted = [n.strip() for n in chosen.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if unknown:
            return names, "all dispatched per file", f"{variable} names {', '.join(unknown)}, " \
                f"not installed (installed: {', '.join(sorted(names))})"  # fmt: skip
        prefer = f"; {variable} prefers {', '.join(wanted)}" if wanted else ""
        return names, f"all used, one per file by type{prefer}", None
    if group == plugins.CHAT_MODELS and not any(os.environ.get(v) for v in CHAT_ENV_VARS):
        return (
            set(),
            (
                "none active: answers are extractive; set RAGLOOM_CHAT_BASE_URL and "
                "RAGLOOM_CHAT_MODEL_NAME, or OPENAI_API_KEY"
            ),
            None,
        )
    if chosen:
        if chosen not in names:
            return (
                set(),
                f"chosen by {variable}",
                (
                    f"{variable}={chosen} names no installed plugin (installed: "
                    f"{', '.join(sorted(names))})"
                ),
            )
        return {chosen}, f"chosen by {variable}", None
    if len(found) == 1:
        return names, "the only one installed", None
    default = plugins.default_provider(group)
    if default is not None:
        where = default.dist.name if default.dist is not None else default.name
        return {default.name}, f"the default ({where}); {variable}=<name> picks another", None
    if group in OPTIONAL:
        return set(), f"several installed, none active until {variable}=<name> picks one", None
    return (
        set(),
        "several installed",
        (
            f"{len(found)} providers and no choice: set {variable} to one of "
            f"{', '.join(sorted(names))}"
        ),
    )


def _check(ep: EntryPoint, group: str, active: bool) -> tuple[str, str | None]:
    """Import and build one provider: (status, one-line error or None). One that imports
    but cannot be built is "not configured" when it is optional or not the active one
    (chat-openai's embedding model beside the default ONNX one), else broken."""
    if group in plugins.COMPONENT_GROUPS:
        try:
            plugins.component(group, ep.name)  # imported, not built: it needs configuration
        except PluginError as exc:
            return BROKEN, _one_line(exc)
        return OK, None
    try:
        factory: Callable[[], Any] = ep.load()
    except Exception as exc:
        return BROKEN, f"cannot be imported: {_one_line(exc)}"
    if group == plugins.DOCUMENT_PARSERS:
        return OK, None  # the dispatcher builds parsers on first use; the import is the check
    try:
        component = factory()
        load = getattr(component, "load", None)
        if callable(load):
            load()
    except Exception as exc:
        status = NOT_CONFIGURED if group in OPTIONAL or not active else BROKEN
        return status, _one_line(exc)
    return OK, None


def plugin_status(check: bool = False) -> list[Group]:
    """The providers of every group Easy RAG uses; with ``check``, load each one."""
    plugins.refresh()
    result = []
    for group in GROUPS:
        found = plugins.providers(group)
        active, note, error = _active_names(group, found)
        variable = None if group in plugins.COMPONENT_GROUPS else plugins.env_var(group)
        entry = Group(group, variable, note, error=error)
        for ep in found:
            provider = Provider(
                ep.name, ep.dist.name if ep.dist else None, ep.value, ep.name in active
            )
            if check:
                provider.status, provider.error = _check(ep, group, provider.active)
            entry.providers.append(provider)
        if check and group == plugins.DOCUMENT_PARSERS and found and entry.error is None:
            try:
                DispatchingDocumentParser.from_plugins()
            except Exception as exc:  # two parsers claiming one type, nonsense declarations
                entry.error = _one_line(exc)
        result.append(entry)
    return result


def format_status(groups: list[Group]) -> str:
    """The table ``ragloom plugins`` prints: ``*`` marks the active providers; the name
    and distribution columns are as wide as their longest entry, across all groups."""
    providers = [p for group in groups for p in group.providers]
    name_width = max((len(p.name) for p in providers), default=0)
    dist_width = max((len(p.distribution or "?") for p in providers), default=0)
    lines = []
    for group in groups:
        how = (
            ""
            if group.variable is None or group.variable in group.note
            else f"; choose with {group.variable}=<name>"
        )
        lines.append(f"{group.group}  ({group.note}{how})")
        if group.error is not None:
            lines.append(f"  ! {group.error}")
        for p in group.providers:
            mark = "*" if p.active else " "
            line = (
                f"{mark} {p.name:<{name_width}}  {p.distribution or '?':<{dist_width}}  {p.value}"
            )
            if p.status is not None:
                line += f"  [{p.status}{': ' + p.error if p.error else ''}]"
            lines.append(line)
    lines.append("* = active")
    return "\n".join(lines)
