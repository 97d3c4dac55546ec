"""The ragloom document loader for Amazon S3 (and S3-compatible endpoints), over boto3."""

from ragloom.loaders.amazon_s3.loader import AmazonS3DocumentLoader, S3ObjectStore, s3_error_kind

__all__ = ["AmazonS3DocumentLoader", "S3ObjectStore", "s3_error_kind"]
