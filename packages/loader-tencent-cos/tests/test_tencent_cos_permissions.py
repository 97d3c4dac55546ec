"""A real 403 for one object through the COS SDK: a bucket policy's Deny, enforced by moto.

moto evaluates a bucket policy's explicit Deny on object requests whoever asks (the COS
SDK's requests reach it anonymously), so one object is refused with a 403 while the
others are served. A denied listing needs IAM, which moto checks only on AWS signatures
(not COS's); that path is the same status-code mapping, tested on the SDK's error type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from qcloud_cos.cos_exception import CosServiceError

from ragloom.core.loaders.blob import ObjectStoreAccessError, ObjectStoreErrorKind
from ragloom.loaders.tencent_cos import TencentCosDocumentLoader, cos_error_kind
from ragloom.testkit.servers import assert_denied_alone, deny_object_reads

SECRET = "secret.txt"


@pytest.mark.integration
def test_object_denied_by_a_bucket_policy_fails_alone(
    s3: Any, bucket: str, make_loader: Callable[..., TencentCosDocumentLoader]
) -> None:
    for key, data in {"a.txt": b"alpha", "docs/b.md": b"# beta", SECRET: b"hidden"}.items():
        s3.put_object(Bucket=bucket, Key=key, Body=data)
    deny_object_reads(s3, bucket, SECRET)
    loader = make_loader()
    documents = loader.load_documents(bucket)
    assert_denied_alone(documents, f"cos://{bucket}/{SECRET}", ["alpha", "# beta"])
    with pytest.raises(ObjectStoreAccessError, match=f"cos://{bucket}/{SECRET}: access denied"):
        loader.load_document(bucket, SECRET)


def test_error_codes_map_to_kinds() -> None:
    def kind(status: int, code: str) -> ObjectStoreErrorKind | None:
        body = (  # COS's documented error body (the SDK needs every element)
            f"<Error><Code>{code}</Code><Message>m</Message><Resource>b.cos.x/k</Resource>"
            "<RequestId>r</RequestId><TraceId>t</TraceId></Error>"
        )
        return cos_error_kind(CosServiceError("GET", body, status))

    assert kind(403, "AccessDenied") is ObjectStoreErrorKind.ACCESS_DENIED
    assert kind(403, "InvalidAccessKeyId") is ObjectStoreErrorKind.UNAUTHENTICATED
    assert kind(403, "SignatureDoesNotMatch") is ObjectStoreErrorKind.UNAUTHENTICATED
    assert kind(404, "NoSuchBucket") is ObjectStoreErrorKind.NO_SUCH_BUCKET
    assert kind(404, "NoSuchKey") is ObjectStoreErrorKind.NO_SUCH_OBJECT
    assert kind(503, "SlowDown") is None
