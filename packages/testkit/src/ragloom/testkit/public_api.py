"""check_public_api: a package's ``__all__`` is exactly the pinned list, every name in it
imports, and every error it exports is a :class:`~ragloom.core.errors.RagloomError`.

Each package pins its public names in one test, so a name added or dropped by accident
shows up in review::

    def test_public_api() -> None:
        check_public_api(ragloom.stores.pgvector, ["PgVectorEmbeddingStore", ...])
"""

from __future__ import annotations

from types import ModuleType

from ragloom.core.errors import RagloomError

__all__ = ["check_public_api"]


def check_public_api(package: ModuleType, expected: list[str]) -> None:
    """Assert that ``package.__all__`` is ``expected`` (in any order), importable, and that
    its exported exceptions are ragloom errors."""
    assert sorted(package.__all__) == sorted(expected), (
        f"{package.__name__}.__all__ changed: added "
        f"{sorted(set(package.__all__) - set(expected))}, "
        f"removed {sorted(set(expected) - set(package.__all__))}"
    )
    namespace: dict[str, object] = {}
    exec(f"from {package.__name__} import *", namespace)
    missing = sorted(set(expected) - set(namespace))
    assert not missing, f"{package.__name__} does not export {missing}"
    exported = [namespace[name] for name in expected]
    errors = [v for v in exported if isinstance(v, type) and issubclass(v, BaseException)]
    foreign = [e.__name__ for e in errors if not issubclass(e, RagloomError)]
    assert not foreign, f"{package.__name__} exports errors outside RagloomError: {foreign}"
