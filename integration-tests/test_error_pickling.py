"""Every error of every installed ragloom distribution survives a pickle round trip with
its type, message and attributes, as Ray ingestion, multiprocessing and the server's
workers need (core's own errors: packages/core/tests/test_error_pickling.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ragloom
from ragloom.core.errors import RagloomError
from ragloom.testkit.error_pickling import (
    check_error_pickles,
    error_classes,
    import_modules,
    sample_error,
)

ROOT = Path(__file__).resolve().parent.parent

MODULES = import_modules(ragloom)
CLASSES = error_classes("ragloom")


def test_the_walk_imports_every_package() -> None:
    """Each packages/*/src tree is installed here and had a module imported."""
    packages = sorted(path.parent.name for path in (ROOT / "packages").glob("*/src"))
    roots = {Path(root).parent.parent.name for root in ragloom.__path__}
    assert sorted(roots) == packages
    assert len(MODULES) > len(packages)


def test_the_walk_sees_the_errors_with_extra_arguments() -> None:
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in CLASSES}
    assert {
        "ragloom.chat_models.openai.errors.OpenAiPromptTooLongError",
        "ragloom.easy_rag.streaming.AnswerTimeoutError",
        "ragloom.embeddings.onnx.errors.TextTooLongError",
        "ragloom.loaders.github.loader.GitHubRateLimitError",
        "ragloom.retrievers.sql._guard.UnsafeSqlError",
    } <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_error_survives_pickling(cls: type[RagloomError]) -> None:
    check_error_pickles(sample_error(cls))
