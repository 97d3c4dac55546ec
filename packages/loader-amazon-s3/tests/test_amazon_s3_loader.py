"""AmazonS3DocumentLoader on the moto S3 server: listing, dispatch, metadata, errors."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import docx
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, NoCredentialsError

from ragloom.core.errors import DocumentParseError, EmptyDocumentError
from ragloom.core.loaders.blob import ObjectStoreErrorKind, ObjectStoreUnavailableError
from ragloom.core.parsers.text import TextDocumentParser
from ragloom.loaders.amazon_s3 import AmazonS3DocumentLoader, s3_error_kind
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
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    with pytest.raises(ObjectStoreUnavailableError, match=bucket):
        AmazonS3DocumentLoader(client).load_documents(bucket)


def test_error_codes_map_to_kinds() -> None:
    """The codes moto does not send (real 403s: test_amazon_s3_permissions.py)."""

    def kind(code: str) -> ObjectStoreErrorKind | None:
        return s3_error_kind(ClientError({"Error": {"Code": code, "Message": "m"}}, "GetObject"))

    assert kind("AccessDenied") is ObjectStoreErrorKind.ACCESS_DENIED
    assert kind("InvalidAccessKeyId") is ObjectStoreErrorKind.UNAUTHENTICATED
    assert kind("SignatureDoesNotMatch") is ObjectStoreErrorKind.UNAUTHENTICATED
    assert kind("NoSuchBucket") is ObjectStoreErrorKind.NO_SUCH_BUCKET
    assert kind("NoSuchKey") is ObjectStoreErrorKind.NO_SUCH_OBJECT
    assert kind("SlowDown") is None
    assert s3_error_kind(NoCredentialsError()) is ObjectStoreErrorKind.UNAUTHENTICATED
