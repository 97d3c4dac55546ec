"""GitHubDocumentLoader passes the testkit DocumentLoaderSuite unchanged.

The backend is GitHubWireServer (ragloom.loaders.github.testing): no GitHub is
reachable here, so a local server speaking GitHub's REST wire format stands in for it.
"""

from __future__ import annotations

import pytest

from ragloom.core.document import Document
from ragloom.core.loaders.result import LoadedDocuments
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.github import PATH, GitHubDocumentLoader
from ragloom.loaders.github.testing import GitHubWireServer
from ragloom.testkit import DocumentLoaderSuite


class GitHubHarness:
    """The suite's view of one fresh repository on the wire server."""

    def __init__(self, server: GitHubWireServer, loader: GitHubDocumentLoader, repo: str) -> None:
        self.server, self.loader, self.repo = server, loader, repo
        server.add_repository("octo", repo)

    def put(self, name: str, data: bytes) -> None:
        self.server.put("octo", self.repo, name, data)

    def load_document(self, name: str, parser: TextDocumentParser) -> Document:
        return self.loader.load_document("octo", self.repo, name, parser=parser)

    def load_documents(self, parser: TextDocumentParser) -> LoadedDocuments:
        return self.loader.load_documents("octo", self.repo, parser=parser)

    def name_of(self, document: Document) -> str:
        return str(document.metadata[PATH])


class TestGitHubConformance(DocumentLoaderSuite):
    @pytest.fixture
    def harness(
        self, server: GitHubWireServer, loader: GitHubDocumentLoader, repo_name: str
    ) -> GitHubHarness:
        return GitHubHarness(server, loader, repo_name)
