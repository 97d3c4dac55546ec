"""Fixtures over the S3 server of scripts/services/amazon-s3.sh, spoken to in COS's API.

There is no COS emulator; COS's XML API is S3's, so the COS SDK is pointed at moto_server
(anonymous requests: moto cannot read COS's request signatures). See the README.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from ragloom.loaders.tencent_cos import TencentCosDocumentLoader
from ragloom.testkit.servers import require_server, service_setting

SERVER_URL = service_setting("RAGLOOM_TENCENT_COS_URL")
START_HINT = "bash scripts/services/amazon-s3.sh start"


@pytest.fixture(scope="session")
def server_url() -> str:
    """The server's URL; fails (never skips) with the command that starts it."""
    return require_server(SERVER_URL, START_HINT, variable="RAGLOOM_TENCENT_COS_URL")


@pytest.fixture(scope="session")
def s3(server_url: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=server_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


@pytest.fixture
def bucket(s3: Any) -> Iterator[str]:
    """A fresh, empty bucket named like COS's ``<name>-<appid>``."""
    name = f"ragloom-{uuid.uuid4().hex[:8]}-1250000000"
    s3.create_bucket(Bucket=name)
    yield name
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=name, Delete={"Objects": keys})
    s3.delete_bucket(Bucket=name)


@pytest.fixture
def make_loader(server_url: str) -> Callable[..., TencentCosDocumentLoader]:
    """Builds COS loaders sending every request to the test server (anonymous)."""
    return lambda **options: TencentCosDocumentLoader(endpoint_url=server_url, **options)
