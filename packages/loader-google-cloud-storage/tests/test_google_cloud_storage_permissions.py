"""403s and 401s in GCS's JSON API error format, from a proxy in front of the emulator.

The emulator has no IAM; the package's ``testing.DenyingProxy`` answers the denied
requests with GCS's documented error bodies and forwards the rest to the emulator, so
good objects come from the real emulator while the client parses real 403/401 answers.
"""

from __future__ import annotations

import pytest
from google.cloud import storage

from ragloom.core.loaders.blob import ObjectStoreAccessError
from ragloom.loaders.google_cloud_storage import GoogleCloudStorageDocumentLoader
from ragloom.loaders.google_cloud_storage.testing import DenyingProxy
from ragloom.testkit.servers import assert_denied_alone

pytestmark = pytest.mark.integration

SECRET = "secret.txt"


@pytest.fixture
def filled(bucket: storage.Bucket) -> storage.Bucket:
    for key, data in {"a.txt": b"alpha", "docs/b.md": b"# beta", SECRET: b"hidden"}.items():
        bucket.blob(key).upload_from_string(data, content_type="text/plain")
    return bucket


def test_denied_object_fails_alone(filled: storage.Bucket, denying_proxy: DenyingProxy) -> None:
    denying_proxy.denied.add((filled.name, SECRET))
    loader = GoogleCloudStorageDocumentLoader(endpoint_url=denying_proxy.url)
    documents = loader.load_documents(filled.name)
    assert_denied_alone(documents, f"gs://{filled.name}/{SECRET}", ["alpha", "# beta"])
    assert "storage.objects.get" in str(documents.failures[0].error)
    with pytest.raises(ObjectStoreAccessError, match=f"gs://{filled.name}/{SECRET}: access denied"):
        loader.load_document(filled.name, SECRET)


def test_denied_listing_is_an_access_error_naming_the_bucket(
    filled: storage.Bucket, denying_proxy: DenyingProxy
) -> None:
    denying_proxy.denied.add((filled.name, None))
    loader = GoogleCloudStorageDocumentLoader(endpoint_url=denying_proxy.url)
    assert loader.load_document(filled.name, "a.txt").text == "alpha"  # reads are allowed
    with pytest.raises(
        ObjectStoreAccessError,
        match=f"Google Cloud Storage bucket '{filled.name}': access denied",
    ):
        loader.load_documents(filled.name)


def test_refused_credentials_name_the_bucket(
    filled: storage.Bucket, denying_proxy: DenyingProxy
) -> None:
    denying_proxy.refuse_credentials = True
    loader = GoogleCloudStorageDocumentLoader(endpoint_url=denying_proxy.url)
    with pytest.raises(ObjectStoreAccessError, match="credentials refused") as raised:
        loader.load_documents(filled.name)
    assert filled.name in str(raised.value)
