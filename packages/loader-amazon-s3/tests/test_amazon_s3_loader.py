"""AmazonS3DocumentLoader on the moto S3 server: listing, dispatch, metadata, errors."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import boto3
import docx
import pytest

from ragloom.core.errors import DocumentParseError, EmptyDocumentError
from ragloom.core.loaders.blob import (
    BucketNotFoundError,
    ObjectNotFoundError,
    ObjectStoreAccessError,
    ObjectStoreUnavailableError,
    ObjectTooLargeError,
)
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.amazon_s3 import AmazonS3DocumentLoader
from ragloom.parsers.pdf.testing import make_pdf

pytestmark = pytest.mark.integration


def put(s3: Any, bucket: str, objects: dict[str, bytes]) -> None:
    with ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda kv: s3.put_object(Bucket=bucket, Key=kv[0], Body=kv[1]), objects.items()
            )
        )


def docx_bytes(text: str) -> bytes:
    document = docx.Document()
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_pagination_over_more_than_one_s3_page(
    s3: Any, bucket: str, loader: AmazonS3DocumentLoader
) -> None:
    objects = {f"many/{i:04d}.txt": f"object {i}".encode() for i in range(1001)}
    put(s3, bucket, objects)
    documents = loader.load_documents(bucket, "many/", parser=TextDocumentParser())
    assert documents.failures == []
    assert [d.metadata["key"] for d in documents] == sorted(objects)
    assert documents[1000].text == "object 1000"


def test_small_page_size_pages_through(s3: Any, bucket: str, server_url: str) -> None:
    put(s3, bucket, {f"k{i:02d}.txt": b"x%d" % i for i in range(23)})
    loader = AmazonS3DocumentLoader(
        endpoint_url=server_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
        page_size=5,
    )
    assert len(loader.list_objects(bucket)) == 23
    assert len(loader.load_documents(bucket)) == 23


def test_prefix_and_glob(s3: Any, bucket: str, loader: AmazonS3DocumentLoader) -> None:
    put(
        s3,
        bucket,
        {
            "docs/a.md": b"# a",
            "docs/guides/b.md": b"# b",
            "docs/c.txt": b"c",
            "other/d.md": b"# d",
            "docs/folder/": b"",
        },
    )
    keys = lambda docs: sorted(d.metadata["key"] for d in docs)  # noqa: E731
    assert keys(loader.load_documents(bucket, "docs/")) == [
        "docs/a.md",
        "docs/c.txt",
        "docs/guides/b.md",
    ]
    assert keys(loader.load_documents(bucket, glob="*.md")) == [
        "docs/a.md",
        "docs/guides/b.md",
        "other/d.md",
    ]
    assert keys(loader.load_documents(bucket, "docs/", glob="guides/*.md")) == ["docs/guides/b.md"]


def test_parser_dispatch_by_extension_and_magic_bytes(
    s3: Any, bucket: str, loader: AmazonS3DocumentLoader
) -> None:
    put(
        s3,
        bucket,
        {
            "a.txt": b"plain text",
            "b.md": b"# Markdown title",
            "c.pdf": make_pdf(["PDF page text"]),
            "d.docx": docx_bytes("Word paragraph"),
            "e-no-extension": make_pdf(["PDF without extension"]),
        },
    )
    documents = loader.load_documents(bucket)
    assert documents.failures == []
    texts = {d.metadata["key"]: d.text.strip() for d in documents}
    assert texts["a.txt"] == "plain text"
    assert texts["b.md"] == "# Markdown title"
    assert "PDF page text" in texts["c.pdf"]
    assert "Word paragraph" in texts["d.docx"]
    assert "PDF without extension" in texts["e-no-extension"]


def test_metadata(s3: Any, bucket: str, loader: AmazonS3DocumentLoader) -> None:
    s3.put_object(
        Bucket=bucket, Key="dir/note.txt", Body=b"hello", ContentType="text/plain; charset=utf-8"
    )
    head = s3.head_object(Bucket=bucket, Key="dir/note.txt")
    document = loader.load_document(bucket, "dir/note.txt")
    meta = dict(document.metadata)
    assert meta["url"] == f"s3://{bucket}/dir/note.txt"
    assert meta["bucket"] == bucket
    assert meta["key"] == "dir/note.txt"
    assert meta["size"] == 5
    assert meta["etag"] == head["ETag"].strip('"')
    assert meta["content_type"] == "text/plain; charset=utf-8"
    assert datetime.fromisoformat(str(meta["last_modified"])) == head["LastModified"]


def test_charset_of_content_type_decodes_text(
    s3: Any, bucket: str, loader: AmazonS3DocumentLoader
) -> None:
    s3.put_object(
        Bucket=bucket,
        Key="latin.txt",
        Body="déjà vu".encode("latin-1"),
        ContentType="text/plain; charset=iso-8859-1",
    )
    assert loader.load_document(bucket, "latin.txt").text == "déjà vu"


def test_missing_bucket_names_it(loader: AmazonS3DocumentLoader) -> None:
    with pytest.raises(BucketNotFoundError, match="no-such-bucket-ragloom"):
        loader.load_documents("no-such-bucket-ragloom")
    with pytest.raises(BucketNotFoundError, match="no-such-bucket-ragloom"):
        loader.load_document("no-such-bucket-ragloom", "a.txt")


def test_missing_key_names_the_uri(bucket: str, loader: AmazonS3DocumentLoader) -> None:
    with pytest.raises(ObjectNotFoundError, match=f"s3://{bucket}/nope/missing.txt"):
        loader.load_document(bucket, "nope/missing.txt")


def test_corrupt_objects_are_reported_and_good_ones_kept(
    s3: Any, bucket: str, loader: AmazonS3DocumentLoader
) -> None:
    put(
        s3,
        bucket,
        {
            "good.txt": b"good",
            "broken.pdf": b"%PDF-1.7 truncated nonsense",
            "blank.md": b"  \n",
            "also-good.md": b"# fine",
        },
    )
    documents = loader.load_documents(bucket)
    assert sorted(d.metadata["key"] for d in documents) == ["also-good.md", "good.txt"]
    failed = {f.source: f.error for f in documents.failures}
    assert set(failed) == {f"s3://{bucket}/blank.md", f"s3://{bucket}/broken.pdf"}
    assert isinstance(failed[f"s3://{bucket}/blank.md"], EmptyDocumentError)
    assert isinstance(failed[f"s3://{bucket}/broken.pdf"], DocumentParseError)
    with pytest.raises(DocumentParseError, match="blank.md"):
        loader.load_documents(bucket, strict=True)


def test_size_cap_names_the_object(s3: Any, bucket: str, server_url: str) -> None:
    put(s3, bucket, {"big.txt": b"x" * 5000, "small.txt": b"small"})
    loader = AmazonS3DocumentLoader(
        endpoint_url=server_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
        max_object_size=1000,
    )
    documents = loader.load_documents(bucket)
    assert [d.text for d in documents] == ["small"]
    assert [type(f.error) for f in documents.failures] == [ObjectTooLargeError]
    assert f"s3://{bucket}/big.txt" in str(documents.failures[0])
    with pytest.raises(ObjectTooLargeError, match="big.txt.*5000 bytes"):
        loader.load_document(bucket, "big.txt")


def test_incremental_skip_by_etag(s3: Any, bucket: str, loader: AmazonS3DocumentLoader) -> None:
    put(s3, bucket, {"a.txt": b"one", "b.txt": b"two"})
    first = loader.load_documents(bucket)
    known = {str(d.metadata["url"]): str(d.metadata["etag"]) for d in first}
    s3.put_object(Bucket=bucket, Key="b.txt", Body=b"two, changed")
    s3.put_object(Bucket=bucket, Key="c.txt", Body=b"three")
    second = loader.load_documents(bucket, known_etags=known)
    assert [d.metadata["key"] for d in second] == ["b.txt", "c.txt"]
    assert second.unchanged == [f"s3://{bucket}/a.txt"]


def test_client_passed_in(s3: Any, bucket: str) -> None:
    s3.put_object(Bucket=bucket, Key="x.txt", Body=b"via client")
    assert AmazonS3DocumentLoader(s3).load_document(bucket, "x.txt").text == "via client"


def test_unreachable_endpoint_is_a_clear_error(bucket: str) -> None:
    client = boto3.client(
        "s3",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        region_name="us-east-1",
        config=boto3.session.Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    with pytest.raises(ObjectStoreUnavailableError, match=bucket):
        AmazonS3DocumentLoader(client).load_documents(bucket)


def test_aload_documents(s3: Any, bucket: str, loader: AmazonS3DocumentLoader) -> None:
    import asyncio

    put(s3, bucket, {"a.txt": b"async"})
    documents = asyncio.run(loader.aload_documents(bucket))
    assert [d.text for d in documents] == ["async"]


def test_access_denied_maps_to_access_error() -> None:
    """moto does not enforce IAM by default: the mapping is checked on botocore's error."""
    from botocore.exceptions import ClientError

    from ragloom.loaders.amazon_s3 import s3_error_kind

    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "GetObject")
    bad_key = ClientError(
        {"Error": {"Code": "InvalidAccessKeyId", "Message": "no"}}, "ListObjectsV2"
    )
    assert s3_error_kind(denied) is not None and s3_error_kind(denied).name == "ACCESS_DENIED"
    assert s3_error_kind(bad_key) is not None and s3_error_kind(bad_key).name == "UNAUTHENTICATED"
    assert ObjectStoreAccessError
