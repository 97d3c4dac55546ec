"""Conversions between LlamaIndex nodes and ragloom segments and contents."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from ragloom.core.content import EMBEDDING_ID, SEGMENT_ID, Content
from ragloom.core.document import TextSegment
from ragloom.core.embedding import Embedding
from ragloom.core.errors import EmbeddingStoreError

NODE_CONTENT_KEY = "_node_content"
"""Where LlamaIndex keeps a whole node (relationships included) in a store's metadata."""
REF_DOC_ID_KEY = "ref_doc_id"
"""The metadata key of a node's source document, which ``delete(ref_doc_id)`` filters on."""


def node_entry(node: BaseNode, flat_metadata: bool) -> tuple[Embedding, TextSegment]:
    """The vector and segment stored for one node: its text, its metadata and, as every
    LlamaIndex store does, the node itself as JSON (``None`` values left out: ragloom
    metadata has no null)."""
    if node.embedding is None:
        raise EmbeddingStoreError(f"node {node.node_id!r} has no embedding; embed it first")
    metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=flat_metadata)
    return Embedding(node.embedding), TextSegment(
        node.get_content(metadata_mode=MetadataMode.NONE),
        {key: value for key, value in metadata.items() if value is not None},
    )


def segment_node(segment: TextSegment, id: str) -> BaseNode:
    """The LlamaIndex node of a stored segment: rebuilt whole when LlamaIndex stored it,
    a ``TextNode`` with the segment's metadata when ragloom did."""
    metadata: dict[str, Any] = segment.metadata.to_dict()
    if NODE_CONTENT_KEY in metadata:
        return metadata_dict_to_node(metadata, text=segment.text)
    return TextNode(id_=id, text=segment.text, metadata=metadata)


def content_node(content: Content) -> NodeWithScore:
    """A retrieved content as a scored node (id: the embedding or keyword index id)."""
    ids: Mapping[str, Any] = content.metadata
    id = ids.get(EMBEDDING_ID, ids.get(SEGMENT_ID))
    if id is None:
        node: BaseNode = TextNode(
            text=content.text, metadata=content.text_segment.metadata.to_dict()
        )
    else:
        node = segment_node(content.text_segment, str(id))
    return NodeWithScore(node=node, score=content.score)
