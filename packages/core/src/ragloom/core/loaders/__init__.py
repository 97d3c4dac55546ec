"""Document loaders: fetch bytes from a source and parse them into Documents."""

__all__: list[str] = []
