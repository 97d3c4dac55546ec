"""The developer's own chat settings never reach the tests (or a real server)."""

import pytest

from ragloom.easy_rag.assistant import CHAT_ENV_VARS


@pytest.fixture(autouse=True)
def _no_ambient_chat_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*CHAT_ENV_VARS, "OPENAI_BASE_URL", "RAGLOOM_CHAT_MODEL"):
        monkeypatch.delenv(name, raising=False)
