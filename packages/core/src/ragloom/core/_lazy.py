"""Lazy package exports (PEP 562): a package names what it exports and where each name
lives, and a name's module is imported on first access, so that importing one small module
(``ragloom.core.errors``) does not load everything its package re-exports."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], submodules: Collection[str] = ()
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps each exported
    name to the module (relative to ``package``) that defines it; ``submodules`` are
    exported modules of ``package`` itself. A resolved name is cached on the package."""

    def __getattr__(name: str) -> object:
        if name in exports:
            value: object = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports, *submodules})

    return __getattr__, __dir__
