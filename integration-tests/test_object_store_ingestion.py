"""Cross-package: the same corpus ingested from the four object stores and from disk.

One small corpus (txt, md, pdf, docx; the pdf and docx made here) is written to a
directory and uploaded to a fresh bucket of each local server: moto (Amazon S3, and
Tencent COS through its own SDK), Azurite (Azure Blob) and the GCS emulator. Each source
is loaded with its loader (parser dispatch by extension and magic bytes) and ingested
into an in-memory store through ``EmbeddingStoreIngestor`` with the testkit's
deterministic model; every source must give the segments of the file-system load (text
and ``start``/``end`` offsets, per file). Segment ids differ per source (the identity
is the object's URI), and re-ingesting a bucket changes nothing.
Needs the services: `bash scripts/services/amazon-s3.sh start`, `azure-blob.sh`,
`google-cloud-storage.sh` (each prints where its log is).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import docx
import pytest
from azure.storage.blob import BlobServiceClient
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

from ragloom.core import (
    Document,
    EmbeddingSearchRequest,
    EmbeddingStoreIngestor,
    FileSystemDocumentLoader,
    InMemoryEmbeddingStore,
)
from ragloom.core.document import END, INDEX, START
from ragloom.core.document_splitters import recursive
from ragloom.core.loaders.blob import KEY, ObjectStoreDocumentLoader
from ragloom.loaders.amazon_s3 import AmazonS3DocumentLoader
from ragloom.loaders.azure_blob import AzureBlobStorageDocumentLoader
from ragloom.loaders.google_cloud_storage import GoogleCloudStorageDocumentLoader
from ragloom.loaders.tencent_cos import TencentCosDocumentLoader
from ragloom.parsers.pdf.testing import make_pdf
from ragloom.testkit import FakeEmbeddingModel
from ragloom.testkit.servers import require_server, service_setting

pytestmark = pytest.mark.integration

S3_URL = service_setting("RAGLOOM_AMAZON_S3_URL")
AZURE_URL = service_setting("RAGLOOM_AZURE_BLOB_URL")
GCS_URL = service_setting("RAGLOOM_GOOGLE_CLOUD_STORAGE_URL")
S3_KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
# Azurite's well-known development account (public, documented by Microsoft).
AZURE_ACCOUNT = "devstoreaccount1"
AZURE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
AZURE_CONNECTION = (
    f"DefaultEndpointsProtocol=http;AccountName={AZURE_ACCOUNT};AccountKey={AZURE_KEY};"
    f"BlobEndpoint={AZURE_URL}/{AZURE_ACCOUNT};"
)

PARAGRAPHS = [
    "Object stores keep documents as keys in buckets; a loader lists them page by page.",
    "Each object is fetched in parallel, capped in size, and parsed by its extension.",
    "The ingestor splits every document into segments and embeds them in batches.",
]


def docx_bytes(paragraphs: list[str]) -> bytes:
    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


CORPUS = {
    "notes.txt": "\n\n".join(PARAGRAPHS).encode(),
    "guides/readme.md": ("# Guide\n\n" + "\n\n".join(reversed(PARAGRAPHS))).encode(),
    "reports/q3.pdf": make_pdf(PARAGRAPHS[:2], info={"Title": "Q3"}),
    "letters/welcome.docx": docx_bytes(PARAGRAPHS[1:]),
}

Segments = dict[str, list[tuple[int, int, int, str]]]
"""Per corpus key: each segment's (index, start, end, text), in index order."""


@dataclass
class Source:
    """One server holding the corpus in a fresh bucket, and its loader."""

    loader: ObjectStoreDocumentLoader
    bucket: str


@pytest.fixture
def s3_source() -> Iterator[Source]:
    require_server(S3_URL, "bash scripts/services/amazon-s3.sh start")
    yield from _s3_bucket(
        f"ragloom-{uuid.uuid4().hex[:12]}",
        lambda: AmazonS3DocumentLoader(endpoint_url=S3_URL, region_name="us-east-1", **S3_KEYS),
    )


@pytest.fixture
def cos_source() -> Iterator[Source]:
    """COS's SDK against moto (COS's XML API is S3's; see ragloom-loader-tencent-cos)."""
    require_server(S3_URL, "bash scripts/services/amazon-s3.sh start")
    yield from _s3_bucket(
        f"ragloom-{uuid.uuid4().hex[:8]}-1250000000",
        lambda: TencentCosDocumentLoader(endpoint_url=S3_URL),
    )


def _s3_bucket(name: str, loader: Callable[[], ObjectStoreDocumentLoader]) -> Iterator[Source]:
    s3 = boto3.client("s3", endpoint_url=S3_URL, region_name="us-east-1", **S3_KEYS)
    s3.create_bucket(Bucket=name)
    for key, data in CORPUS.items():
        s3.put_object(Bucket=name, Key=key, Body=data)
    yield Source(loader(), name)
    s3.delete_objects(Bucket=name, Delete={"Objects": [{"Key": key} for key in CORPUS]})
    s3.delete_bucket(Bucket=name)


@pytest.fixture
def azure_source() -> Iterator[Source]:
    require_server(AZURE_URL, "bash scripts/services/azure-blob.sh start")
    service = BlobServiceClient.from_connection_string(AZURE_CONNECTION)
    container = service.create_container(f"ragloom-{uuid.uuid4().hex[:12]}")
    for key, data in CORPUS.items():
        container.upload_blob(key, data)
    yield Source(
        AzureBlobStorageDocumentLoader(connection_string=AZURE_CONNECTION),
        container.container_name,
    )
    container.delete_container()


@pytest.fixture
def gcs_source() -> Iterator[Source]:
    require_server(GCS_URL, "bash scripts/services/google-cloud-storage.sh start")
    client = storage.Client(
        project="ragloom",
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": GCS_URL},
    )
    bucket = client.create_bucket(f"ragloom-{uuid.uuid4().hex[:12]}")
    for key, data in CORPUS.items():
        bucket.blob(key).upload_from_string(data, content_type="application/octet-stream")
    yield Source(GoogleCloudStorageDocumentLoader(client), bucket.name)
    bucket.delete(force=True)


SOURCES = ["s3_source", "azure_source", "gcs_source", "cos_source"]


def ingest(documents: list[Document]) -> InMemoryEmbeddingStore:
    store = InMemoryEmbeddingStore()
    ingestor = EmbeddingStoreIngestor(
        store, FakeEmbeddingModel(), document_splitter=recursive(90, 20)
    )
    result = ingestor.ingest(documents)
    assert result.failures == []
    return store


def stored(store: InMemoryEmbeddingStore, key_of: Callable[[dict[str, Any]], str]) -> Segments:
    """Every segment of the store, grouped by corpus key; and the ids checked unique."""
    everything = store.search(EmbeddingSearchRequest([1.0] * 64, max_results=len(store)))
    assert len(everything.matches) == len(store)
    segments: Segments = {}
    for match in everything.matches:
        assert match.embedded is not None
        meta = match.embedded.metadata.to_dict()
        segments.setdefault(key_of(meta), []).append(
            (meta[INDEX], meta[START], meta[END], match.embedded.text)
        )
    return {key: sorted(found) for key, found in segments.items()}


@pytest.fixture(scope="module")
def from_disk(tmp_path_factory: pytest.TempPathFactory) -> Segments:
    """The reference: the corpus loaded from a directory by FileSystemDocumentLoader."""
    root = tmp_path_factory.mktemp("corpus")
    for key, data in CORPUS.items():
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_bytes(data)
    documents = FileSystemDocumentLoader.load_documents(root, recursive=True)
    assert documents.failures == []
    assert len(documents) == len(CORPUS)

    def key_of(meta: dict[str, Any]) -> str:
        path = Path(meta["absolute_directory_path"]) / meta["file_name"]
        return path.relative_to(root).as_posix()

    segments = stored(ingest(list(documents)), key_of)
    assert set(segments) == set(CORPUS)
    assert all(len(found) >= 2 for found in segments.values())  # offsets really compared
    return segments


@pytest.mark.parametrize("source_name", SOURCES)
def test_each_store_gives_the_segments_of_the_file_system(
    source_name: str, request: pytest.FixtureRequest, from_disk: Segments
) -> None:
    source: Source = request.getfixturevalue(source_name)
    documents = source.loader.load_documents(source.bucket)
    assert documents.failures == []
    store = ingest(list(documents))
    assert stored(store, lambda meta: str(meta[KEY])) == from_disk


@pytest.mark.parametrize("source_name", SOURCES)
def test_re_ingesting_a_bucket_is_idempotent(
    source_name: str, request: pytest.FixtureRequest
) -> None:
    source: Source = request.getfixturevalue(source_name)
    store = InMemoryEmbeddingStore()
    ingestor = EmbeddingStoreIngestor(
        store, FakeEmbeddingModel(), document_splitter=recursive(90, 20)
    )
    first = source.loader.load_documents(source.bucket)
    ids = ingestor.ingest(first).ids
    size = len(store)
    again = ingestor.ingest(source.loader.load_documents(source.bucket)).ids
    assert sorted(again) == sorted(ids)
    assert len(store) == size == len(set(ids))
    uris = {str(d.metadata["url"]) for d in first}
    assert uris == {source.loader.uri(source.bucket, key) for key in CORPUS}
    # an incremental sync with the etags of the first load fetches nothing
    etags = {str(d.metadata["url"]): str(d.metadata["etag"]) for d in first}
    unchanged = source.loader.load_documents(source.bucket, known_etags=etags)
    assert list(unchanged) == []
    assert sorted(unchanged.unchanged) == sorted(uris)


def test_segment_ids_differ_per_source(
    s3_source: Source, gcs_source: Source, from_disk: Segments
) -> None:
    """The identity is the object's URI: the same file in two stores is two documents."""
    store = InMemoryEmbeddingStore()
    ingestor = EmbeddingStoreIngestor(
        store, FakeEmbeddingModel(), document_splitter=recursive(90, 20)
    )
    ids = ingestor.ingest(s3_source.loader.load_documents(s3_source.bucket)).ids
    more = ingestor.ingest(gcs_source.loader.load_documents(gcs_source.bucket)).ids
    assert not set(ids) & set(more)
    assert len(store) == len(ids) + len(more) == 2 * sum(map(len, from_disk.values()))
