"""Unpickling ragloom errors (``RagloomError.__reduce__``, 84603c4) and where ragloom
unpickles at all.

Pickle runs whatever callable a stream names, so ragloom must never unpickle data from
outside: no module of any ragloom distribution calls an unpickler (or another loader that
runs code: marshal, shelve, unsafe YAML, ``np.load(allow_pickle=True)``, ``torch.load``)
except the testkit's round trip of an error it pickled itself. And the reduce's rebuild
function makes ragloom error classes only, so it adds no gadget to a crafted stream.
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
from pathlib import Path

import pytest

from ragloom.core.errors import EmbeddingStoreError, InvalidArgumentError, RagloomError

ROOT = Path(__file__).resolve().parents[2]
UNPICKLING = re.compile(
    r"\b(?:c?pickle|dill|cloudpickle|joblib|torch)\.(?:loads?|Unpickler)\b|\bUnpickler\(|"
    r"\bmarshal\.loads?\b|\bshelve\.open\b|\byaml\.(?:load|unsafe_load|full_load)\(|"
    r"allow_pickle\s*=\s*True"
)
ALLOWED = {  # a round trip of the error it has just pickled itself
    "packages/testkit/src/ragloom/testkit/error_pickling.py": 2,  # its docstring, its call
}


def test_no_ragloom_module_unpickles_data_from_outside() -> None:
    found: dict[str, int] = {}
    for path in sorted(ROOT.glob("packages/*/src/ragloom/**/*.py")):
        hits = UNPICKLING.findall(path.read_text(encoding="utf-8"))
        if hits:
            found[str(path.relative_to(ROOT))] = len(hits)
    assert found == ALLOWED
    text = (ROOT / next(iter(ALLOWED))).read_text(encoding="utf-8")
    assert "pickle.loads(pickle.dumps(error))" in text  # only what it made


class Gadget:
    """A crafted stream: the errors' rebuild function called on another class."""

    def __init__(self, cls: object, *args: object) -> None:
        self.cls, self.args = cls, args

    def __reduce__(self) -> tuple[object, ...]:
        rebuild = EmbeddingStoreError("x").__reduce__()[0]
        return (rebuild, (self.cls, *self.args))


@pytest.mark.parametrize(
    "cls", [subprocess.Popen, os.system, Path, dict, ValueError, "ragloom.core.errors.RagloomError"]
)
def test_the_rebuild_function_makes_ragloom_errors_only(cls: object) -> None:
    stream = pickle.dumps(Gadget(cls, "argument"))
    with pytest.raises(TypeError, match="is not a ragloom error class"):
        pickle.loads(stream)


def test_ragloom_errors_still_round_trip() -> None:
    error = InvalidArgumentError("max_results: 0 is below 1")
    error.field = "max_results"  # type: ignore[attr-defined]
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is InvalidArgumentError
    assert restored.args == error.args
    assert vars(restored) == vars(error)
    assert isinstance(restored, RagloomError)
