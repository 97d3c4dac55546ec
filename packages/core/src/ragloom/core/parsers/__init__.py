"""Document parsers: turn raw bytes into a :class:`~ragloom.core.document.Document`."""

__all__: list[str] = []
