"""Content retrievers: fetch the Contents relevant to a Query from some source."""
