"""The ragloom DocumentLoader on tencent-cos."""

from ragloom.loaders.tencent_cos.loader import (
    TencentCosDocumentLoader,
)

__all__ = ["TencentCosDocumentLoader"]
