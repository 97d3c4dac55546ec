"""ragloom-transformer-html: HTML to readable text (selectolax/lexbor), transformer and parser."""

from ragloom.transformers.html.transformer import (
    HtmlDocumentParser,
    HtmlToTextDocumentTransformer,
    decode_html,
)

__all__ = ["HtmlDocumentParser", "HtmlToTextDocumentTransformer", "decode_html"]
