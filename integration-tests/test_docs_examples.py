"""Every Python block of README.md, docs/*.md and packages/*/README.md runs, one test per
block (``file:line``).

The blocks of one page share a namespace and run in page order, as a reader types them:
a test runs the blocks above its own first (once per page), so ``-k`` can pick any block.
Blocks run from the repository root, with a local OpenAI-wire server
(``ragloom.chat_models.openai.testing``) configured as the chat model through the
documented environment variables, so "the chat model from the environment" is a real
HTTP model here and no key is needed.
The local servers of scripts/services/ are the examples' servers: every address of
scripts/services/env.sh is in the environment (an example reads it with
``os.environ.get(variable, default)``), with their test credentials. Every block runs, but
for the few that need a cloud account or credentials: the line before such a block is
``<!-- not run: reason -->``, and NOT_RUN below lists each of them with its reason.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import neo4j
import psycopg
import pytest
from azure.storage.blob import BlobServiceClient
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

from ragloom.chat_models.openai.testing import CHAT_MODEL, WireServer
from ragloom.testkit.servers import exclusive_data, local_service_setting, service_setting
from ragloom.testkit.wire import raw

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PACKAGE_READMES = sorted((ROOT / "packages").glob("*/README.md"))
PAGES = [*DOCS, *PACKAGE_READMES]
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")
NOT_RUN_MARK = re.compile(r"^<!-- not run: (?P<reason>.+) -->$")
# The blocks that are not run, page -> reason (each marked in its page, see above).
NOT_RUN = {
    "packages/loader-github/README.md": (
        "reads a repository on github.com (network, GITHUB_TOKEN for its rate limit)"
    ),
    "packages/loader-tencent-cos/README.md": (
        "needs a Tencent Cloud account (TENCENTCLOUD_SECRET_ID/_KEY)"
    ),
    "packages/retriever-azure-ai-search/README.md": "needs an Azure AI Search service and its key",
    "packages/retriever-web-search/README.md": "needs a Tavily or Google Custom Search API key",
    "packages/scoring-cohere/README.md": "needs a Cohere API key",
    "packages/store-milvus/README.md": (
        'needs a Milvus server (none is installable here, see "Tested against")'
    ),
}
# Every address of scripts/services/env.sh, as the examples read them.
SERVICE_VARIABLES = (
    "RAGLOOM_AMAZON_S3_URL",
    "RAGLOOM_AZURE_BLOB_URL",
    "RAGLOOM_GOOGLE_CLOUD_STORAGE_URL",
    "RAGLOOM_NEO4J_URL",
    "RAGLOOM_PG_DSN",
    "RAGLOOM_RAY_ADDRESS",
    "RAGLOOM_SELENIUM_URL",
    "RAGLOOM_TENCENT_COS_URL",
)
# The local servers' test credentials (moto accepts any key; Azurite's well-known
# development account, public, documented by Microsoft).
TEST_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def azurite_connection_string() -> str:
    """The connection string of the local Azure Blob server's development account."""
    return (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
        f"BlobEndpoint={service_setting('RAGLOOM_AZURE_BLOB_URL')}/{AZURITE_ACCOUNT};"
    )


@dataclass(frozen=True)
class Block:
    """One fenced ```python block of a page."""

    page: Path
    line: int  # 1-based line of the opening fence
    source: str
    not_run: str | None = None  # the reason of a <!-- not run: ... --> mark

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def python_blocks(page: Path) -> Iterator[Block]:
    """The ```python / ```py blocks of a Markdown page, in order."""
    lines = page.read_text(encoding="utf-8").split("\n")
    opening: tuple[int, str, str] | None = None  # (line index, fence, info)
    body: list[str] = []
    for index, line in enumerate(lines):
        match = FENCE.match(line)
        if opening is None:
            if match:
                opening = (index, match["fence"], match["info"].strip().split(" ")[0])
                body = []
        elif match and match["fence"].startswith(opening[1]) and not match["info"].strip():
            if opening[2] in ("python", "py"):
                mark = NOT_RUN_MARK.match(lines[opening[0] - 1]) if opening[0] else None
                reason = mark["reason"] if mark else None
                yield Block(page, opening[0] + 1, "\n".join(body) + "\n", reason)
            opening = None
        else:
            body.append(line)
    if opening is not None:
        raise AssertionError(f"{page.relative_to(ROOT)}:{opening[0] + 1}: unclosed code fence")


ALL_BLOCKS = [block for page in PAGES for block in python_blocks(page)]
BLOCKS = [block for block in ALL_BLOCKS if block.not_run is None]


@dataclass
class PageRun:
    """The shared namespace of one page and how far it has run."""

    namespace: dict[str, Any] = field(default_factory=lambda: {"__name__": "__docs__"})
    done: int = 0  # blocks of the page already run
    failed_at: str | None = None


def _answers(chat_server: WireServer, *texts: str) -> None:
    """The chat model's next answers (what a real model would write for the example)."""
    for text in texts:
        body = {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "object": "chat.completion",
        }
        chat_server.script(raw(json.dumps(body).encode()))


def _s3_example_bucket(chat_server: WireServer) -> None:
    """The bucket the S3 README reads, on the local S3 server."""
    s3 = boto3.client("s3", endpoint_url=service_setting("RAGLOOM_AMAZON_S3_URL"))
    s3.create_bucket(Bucket="my-bucket")
    s3.put_object(Bucket="my-bucket", Key="guides/intro.md", Body=b"# Intro\n\nHello.\n")


def _gcs_example_bucket(chat_server: WireServer) -> None:
    """The bucket the GCS README reads, on the local emulator."""
    client = storage.Client(
        project="ragloom",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": service_setting("RAGLOOM_GOOGLE_CLOUD_STORAGE_URL")},
    )
    bucket = client.lookup_bucket("my-bucket") or client.create_bucket("my-bucket")
    bucket.blob("guides/intro.md").upload_from_string("# Intro\n\nHello.\n")


def _azure_example_container(chat_server: WireServer) -> None:
    """The container the Azure README reads, on the local Azurite."""
    service = BlobServiceClient.from_connection_string(azurite_connection_string())
    container = service.get_container_client("my-container")
    if not container.exists():
        container.create_container()
    container.upload_blob("guides/intro.md", b"# Intro\n\nHello.\n", overwrite=True)


# Locks a page's preparation takes (a shared server's data), held to the session's end.
HELD = contextlib.ExitStack()


def _neo4j_example_graph(chat_server: WireServer) -> None:
    """The books graph the Neo4j README asks about, and the Cypher a model writes for it;
    the session holds the server's data lock from here (the graph is the server's only)."""
    reset = "bash scripts/services/neo4j.sh reset"
    url = HELD.enter_context(exclusive_data("RAGLOOM_NEO4J_URL", reset=reset))
    with neo4j.GraphDatabase.driver(url, auth=None, connection_timeout=5) as driver:
        for cypher in (
            "MATCH (n) DETACH DELETE n",
            "CREATE (:Person {name: 'Frank Herbert'})",
            "CREATE (:Book {title: 'Dune'})",
            "CREATE (:Book {title: 'Dune Messiah'})",
            "MATCH (p:Person), (b:Book) CREATE (p)-[:WROTE {year: 1965}]->(b)",
        ):
            driver.execute_query(cypher, routing_=neo4j.RoutingControl.WRITE)
    _answers(
        chat_server,
        "MATCH (p:Person {name: 'Frank Herbert'})-[:WROTE]->(b:Book) RETURN b.title",
    )


def _sql_example_shop(chat_server: WireServer) -> None:
    """The shop schema the SQL README asks about (on the local PostgreSQL) with its
    SELECT-only role, and the SQL a model writes for it."""
    with psycopg.connect(service_setting("RAGLOOM_PG_DSN"), autocommit=True) as connection:
        connection.execute("DROP SCHEMA IF EXISTS shop CASCADE")
        connection.execute("CREATE SCHEMA shop")
        connection.execute("CREATE TABLE shop.customers (id int PRIMARY KEY, name text)")
        connection.execute(
            "CREATE TABLE shop.orders (id int PRIMARY KEY,"
            " customer_id int REFERENCES shop.customers, amount numeric(10, 2))"
        )
        connection.execute("INSERT INTO shop.customers VALUES (1, 'Ada'), (2, 'Grace')")
        connection.execute(
            "INSERT INTO shop.orders VALUES (1, 1, 100.50), (2, 1, 45.00), (3, 2, 20.00)"
        )
        if not connection.execute("SELECT 1 FROM pg_roles WHERE rolname = 'reader'").fetchone():
            connection.execute("CREATE ROLE reader LOGIN")
        connection.execute("GRANT USAGE ON SCHEMA shop TO reader")
        connection.execute("GRANT SELECT ON ALL TABLES IN SCHEMA shop TO reader")
    _answers(
        chat_server,
        "SELECT c.name, SUM(o.amount) AS total FROM shop.customers c"
        " JOIN shop.orders o ON o.customer_id = c.id GROUP BY c.name ORDER BY total DESC",
    )


# What a page's examples expect (a reader's own buckets, data, and a model's answers),
# made before the page's first block.
PREPARE: dict[str, Callable[[WireServer], None]] = {
    "packages/loader-amazon-s3/README.md": _s3_example_bucket,
    "packages/loader-azure-blob/README.md": _azure_example_container,
    "packages/loader-google-cloud-storage/README.md": _gcs_example_bucket,
    "packages/retriever-neo4j/README.md": _neo4j_example_graph,
    "packages/retriever-sql/README.md": _sql_example_shop,
}


@pytest.fixture(scope="session", autouse=True)
def held_locks() -> Iterator[None]:
    """Release what the pages' preparations hold when the session ends."""
    with HELD:
        yield


@pytest.fixture(scope="session")
def chat_server() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.fixture(scope="session")
def page_runs() -> dict[Path, PageRun]:
    return {}


def _run(block: Block, namespace: dict[str, Any]) -> None:
    """Run a block so that tracebacks name the page and its line numbers (a block with a
    top-level ``await`` runs in an event loop, as in a notebook)."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    code = compile("\n" * block.line + block.source, str(block.page), "exec", flags=flags)
    if code.co_flags & inspect.CO_COROUTINE:
        asyncio.run(eval(code, namespace))
    else:
        exec(code, namespace)


@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_doc_block_runs(
    block: Block,
    chat_server: WireServer,
    page_runs: dict[Path, PageRun],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert block.page not in DOCS or "ragloom.testkit" not in block.source, (
        f"{block.name}: a user's example imports the testkit (contributors' tooling)"
    )
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGLOOM_CHAT_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name in SERVICE_VARIABLES:
        monkeypatch.setenv(name, service_setting(name))
    for name, value in TEST_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite_connection_string())
    monkeypatch.setenv("RAGLOOM_CHAT_BASE_URL", chat_server.url)
    monkeypatch.setenv("RAGLOOM_CHAT_MODEL_NAME", CHAT_MODEL)
    monkeypatch.chdir(ROOT)
    run = page_runs.setdefault(block.page, PageRun())
    if run.failed_at is not None:
        pytest.fail(f"an earlier block of the page failed: {run.failed_at}")
    page_blocks = [b for b in BLOCKS if b.page == block.page]
    position = page_blocks.index(block)
    assert run.done <= position, f"{block.name} already ran as part of its page"
    if run.done == 0 and (prepare := PREPARE.get(str(block.page.relative_to(ROOT)))):
        prepare(chat_server)
    for current in page_blocks[run.done : position + 1]:
        run.done += 1
        try:
            _run(current, run.namespace)
        except Exception:
            run.failed_at = current.name
            raise


def test_blocks_are_found() -> None:
    """The collector sees the pages' blocks (a broken fence parser would run nothing)."""
    assert len(BLOCKS) >= 20
    assert {block.page.name for block in BLOCKS} >= {"README.md", "ai-services.md"}
    assert {block.page.parent.name for block in BLOCKS} >= {"store-qdrant", "embedding-onnx"}


def test_the_blocks_not_run_are_the_listed_ones() -> None:
    """Each <!-- not run --> mark is in NOT_RUN with its reason, and each NOT_RUN page has one."""
    marked = {str(b.page.relative_to(ROOT)): b.not_run for b in ALL_BLOCKS if b.not_run}
    assert marked == NOT_RUN


def test_service_variables_are_env_shs_addresses() -> None:
    """SERVICE_VARIABLES names every address env.sh defines (a new service is served too)."""
    for name in SERVICE_VARIABLES:
        assert local_service_setting(name)
    env_sh = (ROOT / "scripts" / "services" / "env.sh").read_text(encoding="utf-8")
    defined = set(re.findall(r"^export (RAGLOOM_\w+_(?:URL|DSN|ADDRESS))=", env_sh, re.MULTILINE))
    assert defined == set(SERVICE_VARIABLES)
