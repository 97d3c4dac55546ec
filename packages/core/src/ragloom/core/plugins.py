"""Plugin registry over ``importlib.metadata`` entry points (the spec's SPI).

One entry-point group per kind of component, of two sorts:

- Default groups (:data:`DEFAULT_GROUPS`: parsers, splitters, embedding, chat and scoring
  models). Each entry point names a zero-argument callable (usually a class) that builds
  the component. The only provider in a group is the default; of several, the one from
  the distribution that makes the group's default (:data:`PROVIDERS`: the ONNX
  embedding model wins over chat-openai's, which needs a server); otherwise two or more
  are ambiguous unless the user chooses one, by passing the component explicitly or by
  naming the entry point in the environment variable ``RAGLOOM_<KIND>``
  (e.g. ``RAGLOOM_DOCUMENT_PARSER=tika``).
- Component groups (:data:`COMPONENT_GROUPS`: stores, loaders, retrievers, ...). These
  need configuration (URLs, credentials, tables), so there is no default: an entry point
  names the component class (or its documented factory), :func:`component` finds it by
  name and :func:`create` builds it with the caller's configuration.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar, cast

from ragloom.core.errors import PluginError

__all__ = [
    "DOCUMENT_PARSERS",
    "DOCUMENT_SPLITTERS",
    "EMBEDDING_MODELS",
    "CHAT_MODELS",
    "SCORING_MODELS",
    "EMBEDDING_STORES",
    "DOCUMENT_LOADERS",
    "DOCUMENT_TRANSFORMERS",
    "CONTENT_RETRIEVERS",
    "WEB_SEARCH_ENGINES",
    "EMBEDDING_STORE_INGESTORS",
    "DEFAULT_GROUPS",
    "COMPONENT_GROUPS",
    "GROUPS",
    "PROVIDERS",
    "install_hint",
    "env_var",
    "providers",
    "refresh",
    "load",
    "component",
    "create",
    "default_provider",
    "load_default",
]

T = TypeVar("T")

DOCUMENT_PARSERS = "ragloom.document_parsers"
DOCUMENT_SPLITTERS = "ragloom.document_splitters"
EMBEDDING_MODELS = "ragloom.embedding_models"
CHAT_MODELS = "ragloom.chat_models"
SCORING_MODELS = "ragloom.scoring_models"

EMBEDDING_STORES = "ragloom.embedding_stores"
DOCUMENT_LOADERS = "ragloom.document_loaders"
DOCUMENT_TRANSFORMERS = "ragloom.document_transformers"
CONTENT_RETRIEVERS = "ragloom.content_retrievers"
WEB_SEARCH_ENGINES = "ragloom.web_search_engines"
EMBEDDING_STORE_INGESTORS = "ragloom.embedding_store_ingestors"

#: Groups with one default provider each, built without arguments (:func:`load_default`).
DEFAULT_GROUPS = (DOCUMENT_PARSERS, DOCUMENT_SPLITTERS, EMBEDDING_MODELS, CHAT_MODELS,
                  SCORING_MODELS)  # fmt: skip
#: Groups of configured components, picked by name (:func:`component`, :func:`create`).
COMPONENT_GROUPS = (
    EMBEDDING_STORES,
    DOCUMENT_LOADERS,
    DOCUMENT_TRANSFORMERS,
    CONTENT_RETRIEVERS,
    WEB_SEARCH_ENGINES,
    EMBEDDING_STORE_INGESTORS,
)
GROUPS = DEFAULT_GROUPS + COMPONENT_GROUPS

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


def _failed(ep: EntryPoint, group: str, what: str, exc: Exception) -> PluginError:
    return PluginError(f"plugin {_describe(ep)} in group {group!r} {what}: {exc}")


def _import(ep: EntryPoint, group: str) -> Any:
    try:
        return ep.load()
    except Exception as exc:
        raise _failed(ep, group, "failed to load", exc) from exc


def _instantiate(ep: EntryPoint, group: str) -> Any:
    factory: Callable[[], Any] = _import(ep, group)
    try:
        return factory()
    except Exception as exc:
        raise _failed(ep, group, "failed to load", exc) from exc


def _find(group: str, name: str) -> EntryPoint:
    """The one entry point named ``name`` in ``group``; PluginError lists what exists."""
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
    return found[0]


def _callable(ep: EntryPoint, group: str) -> Callable[..., Any]:
    target = _import(ep, group)
    if not callable(target):
        raise PluginError(
            f"plugin {_describe(ep)} in group {group!r} names a {type(target).__name__}, "
            "not a class or factory"
        )
    return cast(Callable[..., Any], target)


def load(group: str, name: str) -> Any:
    """Build the provider named ``name`` in ``group``; PluginError lists what exists."""
    return _instantiate(_find(group, name), group)


def component(group: str, name: str) -> Callable[..., Any]:
    """The class (or factory) named ``name`` in ``group``, imported but not called.

    For the component groups, whose members need configuration: e.g.
    ``component(EMBEDDING_STORES, "pgvector")`` is ``PgVectorEmbeddingStore``.
    """
    return _callable(_find(group, name), group)


def create(group: str, name: str, /, **config: Any) -> Any:
    """Build the component named ``name`` in ``group``, ``config`` as keyword arguments.

    A failure names the plugin and the configuration keys (never their values, which
    may be credentials).
    """
    ep = _find(group, name)
    factory = _callable(ep, group)
    try:
        return factory(**config)
    except Exception as exc:
        keys = "with " + ", ".join(sorted(config)) if config else "without configuration"
        raise _failed(ep, group, f"failed to build {keys}", exc) from exc


def _distribution(ep: EntryPoint) -> str:
    return ep.dist.name.replace("_", "-").lower() if ep.dist is not None else ""


def default_provider(group: str) -> EntryPoint | None:
    """The provider :func:`load_default` builds when the environment picks none: the
    only one installed, else the only one from a distribution of :data:`PROVIDERS`
    (others, e.g. a model that needs a server's URL, are used when named); ``None`` when
    none is installed or the choice is ambiguous."""
    found = providers(group)
    if len(found) == 1:
        return found[0]
    preferred = [ep for ep in found if _distribution(ep) in PROVIDERS.get(group, ())]
    return preferred[0] if len(preferred) == 1 else None


def load_default(group: str, fallback: Callable[[], T] | None = None) -> Any:
    """Build the default provider of ``group``.

    The environment variable (see :func:`env_var`) wins; otherwise the
    :func:`default_provider`; with none installed, ``fallback()`` (or
    :class:`PluginError` without a fallback); with several and no default among them,
    :class:`PluginError` naming them all and how to choose.
    """
    variable = env_var(group)
    chosen = os.environ.get(variable)
    if chosen:
        return load(group, chosen)
    default = default_provider(group)
    if default is not None:
        return _instantiate(default, group)
    found = providers(group)
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
