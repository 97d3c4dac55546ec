"""Fixtures over the S3 server of scripts/services/amazon-s3.sh (moto_server)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from ragloom.loaders.amazon_s3 import AmazonS3DocumentLoader
from ragloom.testkit.servers import require_server, service_setting

SERVER_URL = service_setting("RAGLOOM_AMAZON_S3_URL")
START_HINT = "bash scripts/services/amazon-s3.sh start"
CREDENTIALS = {
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
    "region_name": "us-east-1",
}


@pytest.fixture(scope="session")
def server_url() -> str:
    """The server's URL; fails (never skips) with the command that starts it."""
    return require_server(SERVER_URL, START_HINT, variable="RAGLOOM_AMAZON_S3_URL")


@pytest.fixture(scope="session")
def s3(server_url: str) -> Any:
    """A boto3 client of the test server."""
    return boto3.client("s3", endpoint_url=server_url, **CREDENTIALS)


@pytest.fixture
def bucket(s3: Any) -> Iterator[str]:
    """A fresh, empty bucket, deleted with its objects afterwards."""
    name = f"ragloom-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    yield name
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=name, Delete={"Objects": keys})
    s3.delete_bucket(Bucket=name)


@pytest.fixture
def make_loader(server_url: str) -> Callable[..., AmazonS3DocumentLoader]:
    """Builds loaders of the test server from keyword arguments (endpoint, keys, options)."""
    return lambda **options: AmazonS3DocumentLoader(
        endpoint_url=server_url, **CREDENTIALS, **options
    )


@pytest.fixture
def loader(make_loader: Callable[..., AmazonS3DocumentLoader]) -> AmazonS3DocumentLoader:
    """The loader under test, with the default options."""
    return make_loader()
