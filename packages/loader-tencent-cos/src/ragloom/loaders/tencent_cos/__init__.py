"""The ragloom document loader for Tencent Cloud COS, over cos-python-sdk-v5."""

from ragloom.loaders.tencent_cos.loader import (
    CosObjectStore,
    TencentCosDocumentLoader,
    cos_error_kind,
)

__all__ = ["CosObjectStore", "TencentCosDocumentLoader", "cos_error_kind"]
