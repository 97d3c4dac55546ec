"""Plugin registry over ``importlib.metadata`` entry points (the spec's SPI).

One entry-point group per factory kind. Each entry point names a zero-argument
callable (usually a class) that builds the component. Exactly one provider in a group
is the default; two or more are ambiguous unless the user chooses one, by passing the
component explicitly or by naming the entry point in the environment variable
``RAGLOOM_<KIND>`` (e.g. ``RAGLOOM_DOCUMENT_PARSER=tika``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

from ragloom.core.errors import PluginError

T = TypeVar("T")

DOCUMENT_PARSERS = "ragloom.document_parsers"
DOCUMENT_SPLITTERS = "ragloom.document_splitters"
EMBEDDING_MODELS = "ragloom.embedding_models"
CHAT_MODELS = "ragloom.chat_models"
SCORING_MODELS = "ragloom.scoring_models"

#: The distributions that provide each group's default, named when none is installed.
PROVIDERS = {
    DOCUMENT_PARSERS: ("ragloom-parser-auto",),
    DOCUMENT_SPLITTERS: ("ragloom-easy-rag",),
    EMBEDDING_MODELS: ("ragloom-embedding-onnx",),
    CHAT_MODELS: ("ragloom-chat-openai",),
    SCORING_MODELS: ("ragloom-scoring-cohere", "ragloom-scoring-http"),
}


def install_hint(group: str) -> str:
    """What to install for a default of ``group``: its known distributions, if any."""
    known = PROVIDERS.get(group)
    if not known:
        return "install a distribution that provides it"
    return "install one (e.g. " + " or ".join(known) + ")"


def env_var(group: str) -> str:
    """The environment variable that picks a provider of ``group``.

    ``ragloom.document_parsers`` -> ``RAGLOOM_DOCUMENT_PARSER``.
    """
    kind = group.removeprefix("ragloom.").upper()
    return "RAGLOOM_" + kind.removesuffix("S")


@cache
def providers(group: str) -> tuple[EntryPoint, ...]:
    """The entry points installed for ``group``, sorted by name (cached; see ``refresh``)."""
    return tuple(sorted(entry_points(group=group), key=lambda ep: (ep.name, ep.value)))


def refresh() -> None:
    """Forget cached discovery, e.g. after installing a distribution at run time."""
    providers.cache_clear()


def _describe(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else "<unknown distribution>"
    return f"'{ep.name}' from {dist} ({ep.value})"


def _instantiate(ep: EntryPoint, group: str) -> Any:
    try:
        factory: Callable[[], Any] = ep.load()
        return factory()
    except Exception as exc:
        raise PluginError(
            f"plugin {_describe(ep)} in group {group!r} failed to load: {exc}"
        ) from exc


def load(group: str, name: str) -> Any:
    """Build the provider named ``name`` in ``group``; PluginError lists what exists."""
    found = [ep for ep in providers(group) if ep.name == name]
    if not found:
        known = ", ".join(_describe(ep) for ep in providers(group)) or "none"
        raise PluginError(f"no plugin named {name!r} in group {group!r}; installed: {known}")
    if len(found) > 1:
        raise PluginError(
            f"plugin name {name!r} in group {group!r} is provided twice: "
            + " and ".join(_describe(ep) for ep in found)
            + "; uninstall one of the distributions"
        )
    return _instantiate(found[0], group)


def load_default(group: str, fallback: Callable[[], T] | None = None) -> Any:
    """Build the default provider of ``group``.

    The environment variable (see :func:`env_var`) wins; otherwise the single installed
    provider; with none, ``fallback()`` (or :class:`PluginError` without a fallback);
    with several, :class:`PluginError` naming them all and how to choose.
    """
    variable = env_var(group)
    chosen = os.environ.get(variable)
    if chosen:
        return load(group, chosen)
    found = providers(group)
    if len(found) == 1:
        return _instantiate(found[0], group)
    if not found:
        if fallback is not None:
            return fallback()
        raise PluginError(
            f"no plugin installed in group {group!r}; {install_hint(group)} "
            "or pass the component explicitly"
        )
    listed = " and ".join(_describe(ep) for ep in found)
    raise PluginError(
        f"{len(found)} plugins provide the default for {group!r}: {listed}; "
        f"choose one by passing it explicitly or by setting {variable}=<name> "
        f"(one of: {', '.join(ep.name for ep in found)})"
    )
