"""Content retrievers: fetch the Contents relevant to a Query from some source."""

__all__: list[str] = []
