"""check_error_pickles: a ragloom error survives a pickle round trip.

Ray ingestion, multiprocessing and the server's workers move errors between processes by
pickling them; an error that cannot be unpickled (Exception's default calls
``cls(*args)``, which fails when ``__init__`` takes other arguments) reaches the other
side as a confusing ``TypeError`` instead of itself. Each package's test walks its error
classes::

    import_modules(ragloom.core)
    for cls in error_classes("ragloom.core"):
        check_error_pickles(sample_error(cls))
"""

from __future__ import annotations

import enum
import importlib
import inspect
import pickle
import types
import typing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragloom.core.errors import RagloomError

__all__ = ["check_error_pickles", "error_classes", "import_modules", "sample_error"]


def import_modules(package: types.ModuleType) -> list[str]:
    """Import every module under ``package`` (private ones and namespace packages included,
    ``__main__`` not, which runs a program) and return their names, so the error classes
    they define exist."""
    names = []
    for root in package.__path__:
        for path in sorted(Path(root).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts and parts[-1] == "__main__":
                continue
            names.append(".".join([package.__name__, *parts]))
    for name in names:
        importlib.import_module(name)
    return names


def error_classes(prefix: str) -> list[type[RagloomError]]:
    """:class:`RagloomError` and its subclasses defined in the imported modules named
    ``prefix`` or under it, ordered by module and name."""
    found: set[type[RagloomError]] = set()
    pending: list[type[RagloomError]] = [RagloomError]
    while pending:
        cls = pending.pop()
        if cls in found:
            continue
        found.add(cls)
        pending.extend(cls.__subclasses__())
    return sorted(
        (
            cls
            for cls in found
            if cls.__module__ == prefix or cls.__module__.startswith(prefix + ".")
        ),
        key=lambda cls: (cls.__module__, cls.__qualname__),
    )


def sample_error(cls: type[RagloomError]) -> RagloomError:
    """An instance of ``cls`` with a representative value for every ``__init__`` parameter
    whose type is a str, int, float, bool, enum or datetime (or ``X | None`` of one), those
    with defaults included, so the attributes they set differ from the defaults; a
    required parameter of another type fails, naming it."""
    init = cls.__init__
    if not inspect.isfunction(init):  # Exception's own: a message is all it takes
        return cls(f"{cls.__name__}: sample message")
    hints = typing.get_type_hints(init)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    parameters = list(inspect.signature(init).parameters.values())[1:]
    for number, parameter in enumerate(parameters, start=3):
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        value = _sample(hints.get(parameter.name), parameter.name, number)
        if value is _NONE:
            if parameter.default is parameter.empty:
                raise AssertionError(
                    f"{cls.__module__}.{cls.__qualname__}: no sample value for parameter "
                    f"{parameter.name!r} of type {hints.get(parameter.name)!r}; "
                    "extend ragloom.testkit.error_pickling._sample"
                )
            continue
        if parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = value
        else:
            args.append(value)
    return cls(*args, **kwargs)


_NONE = object()


def _sample(hint: Any, name: str, number: int) -> Any:
    """A value of type ``hint`` (``number`` keeps the ints of one call apart)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        for member in typing.get_args(hint):
            value = _sample(member, name, number)
            if value is not _NONE:
                return value
        return _NONE
    if hint is str:
        return f"sample {name}"
    if hint is bool:
        return True
    if hint is int:
        return number
    if hint is float:
        return number + 0.5
    if hint is datetime:
        return datetime(2026, 1, 2, 3, 4, number, tzinfo=UTC)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return list(hint)[-1]
    return _NONE


def check_error_pickles(error: BaseException) -> None:
    """Assert that ``error`` comes back from ``pickle.loads(pickle.dumps(error))`` with its
    type, ``args``, message and attributes (``vars``: ``kind``, ``url``, counts...)."""
    where = f"{type(error).__module__}.{type(error).__qualname__}"
    try:
        restored = pickle.loads(pickle.dumps(error))
    except Exception as exc:
        raise AssertionError(f"{where} does not survive pickling: {exc!r}") from exc
    assert type(restored) is type(error), f"{where} came back as {type(restored)!r}"
    assert restored.args == error.args, f"{where}: args {restored.args!r} != {error.args!r}"
    assert str(restored) == str(error), f"{where}: message {str(restored)!r} != {str(error)!r}"
    assert vars(restored) == vars(error), (
        f"{where}: attributes {vars(restored)!r} != {vars(error)!r}"
    )
