"""Real permission denials from moto: a bucket policy, and IAM users on an enforcing server.

moto evaluates a bucket policy's explicit Deny on object requests always, so the shared
server (scripts/services/amazon-s3.sh) gives a real 403 for one object. Denying a
listing takes IAM: moto checks signatures and user policies only once authorization is
switched on, and that switch (``POST /moto-api/reset-auth``) is server-wide: on the
shared server it would refuse every other client's made-up keys meanwhile. So those
tests run their own moto server (moto's ``ThreadedMotoServer``, the same server code as
``moto_server``) in this process on a free 127.0.0.1 port, with IAM users created before
authorization is switched on.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
import requests
from moto.server import ThreadedMotoServer

from ragloom.core.loaders.blob import ObjectStoreAccessError
from ragloom.loaders.amazon_s3 import AmazonS3DocumentLoader
from ragloom.testkit.servers import assert_denied_alone, deny_object_reads

pytestmark = pytest.mark.integration

ROOT_KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
GOOD = {"a.txt": b"alpha", "docs/b.md": b"# beta"}
SECRET = "secret.txt"


def test_object_denied_by_a_bucket_policy_fails_alone(
    s3: Any, bucket: str, loader: AmazonS3DocumentLoader
) -> None:
    for key, data in {**GOOD, SECRET: b"hidden"}.items():
        s3.put_object(Bucket=bucket, Key=key, Body=data)
    deny_object_reads(s3, bucket, SECRET)
    documents = loader.load_documents(bucket)
    assert_denied_alone(documents, f"s3://{bucket}/{SECRET}", ["alpha", "# beta"])
    with pytest.raises(ObjectStoreAccessError, match=f"s3://{bucket}/{SECRET}: access denied"):
        loader.load_document(bucket, SECRET)


@dataclass
class IamServer:
    """A moto server enforcing IAM, a bucket holding GOOD and SECRET, and users' keys."""

    url: str
    bucket: str
    reader: dict[str, str]
    """May list the bucket and read every object but SECRET."""
    no_list: dict[str, str]
    """May read objects but not list the bucket."""

    def loader(self, keys: dict[str, str]) -> AmazonS3DocumentLoader:
        return AmazonS3DocumentLoader(endpoint_url=self.url, region_name="us-east-1", **keys)


@pytest.fixture(scope="module")
def iam_server() -> Iterator[IamServer]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    try:
        s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1", **ROOT_KEYS)
        iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1", **ROOT_KEYS)
        bucket = f"ragloom-{uuid.uuid4().hex[:12]}"
        s3.create_bucket(Bucket=bucket)
        for key, data in {**GOOD, SECRET: b"hidden"}.items():
            s3.put_object(Bucket=bucket, Key=key, Body=data)
        objects = f"arn:aws:s3:::{bucket}/*"

        def user(name: str, *statements: dict[str, Any]) -> dict[str, str]:
            iam.create_user(UserName=name)
            policy = {"Version": "2012-10-17", "Statement": list(statements)}
            iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps(policy))
            key = iam.create_access_key(UserName=name)["AccessKey"]
            return {
                "aws_access_key_id": key["AccessKeyId"],
                "aws_secret_access_key": key["SecretAccessKey"],
            }

        read = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": objects}
        reader = user(
            "reader",
            {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{bucket}"},
            read,
            {"Effect": "Deny", "Action": "s3:GetObject", "Resource": objects[:-1] + SECRET},
        )
        no_list = user("no-list", read)
        switched = requests.post(f"{url}/moto-api/reset-auth", data=b"0", timeout=10)
        switched.raise_for_status()
        yield IamServer(url, bucket, reader, no_list)
    finally:
        # the switch is a module global of moto in this process: put it back
        requests.post(f"{url}/moto-api/reset-auth", data=b"inf", timeout=10)
        server.stop()


def test_iam_denied_object_fails_alone(iam_server: IamServer) -> None:
    loader = iam_server.loader(iam_server.reader)
    documents = loader.load_documents(iam_server.bucket)
    assert_denied_alone(documents, f"s3://{iam_server.bucket}/{SECRET}", ["alpha", "# beta"])
    assert "AccessDenied" in str(documents.failures[0].error)


def test_iam_denied_listing_is_an_access_error_naming_the_bucket(iam_server: IamServer) -> None:
    loader = iam_server.loader(iam_server.no_list)
    assert loader.load_document(iam_server.bucket, "a.txt").text == "alpha"  # reads are allowed
    with pytest.raises(
        ObjectStoreAccessError, match=f"Amazon S3 bucket '{iam_server.bucket}': access denied"
    ):
        loader.load_documents(iam_server.bucket)


def test_unknown_access_key_is_an_access_error_naming_the_bucket(iam_server: IamServer) -> None:
    loader = iam_server.loader({"aws_access_key_id": "AKIAUNKNOWN", "aws_secret_access_key": "x"})
    with pytest.raises(ObjectStoreAccessError, match="credentials refused") as raised:
        loader.load_documents(iam_server.bucket)
    assert iam_server.bucket in str(raised.value)
