"""The graph schema put in the prompt: labels, relationship types and their properties.

Introspection samples the graph with plain Cypher in a READ transaction (no APOC, no
Neo4j-only procedures), so it works on any Bolt server that speaks Cypher: the property
names and types of up to ``sample`` nodes per label, and the relationship patterns of
up to ``sample`` relationships.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import neo4j

__all__ = ["GraphSchema", "introspect_schema", "quote_name"]


def quote_name(name: str) -> str:
    """``name`` as a backtick-quoted Cypher identifier (backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "INTEGER"
    if isinstance(value, float):
        return "FLOAT"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, list | tuple):
        return "LIST"
    return type(value).__name__.upper()


def _properties(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for row in rows:
        for key, value in row.items():
            if value is not None:
                found.setdefault(key, _type_name(value))
    return dict(sorted(found.items()))


@dataclass(frozen=True, slots=True)
class GraphSchema:
    """Node labels and relationship types with their properties (name -> type name).

    ``patterns`` are ``(source label, relationship type, target label)`` triples.
    """

    node_properties: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    relationship_properties: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    patterns: Sequence[tuple[str, str, str]] = ()

    def describe(self) -> str:
        """The schema as prompt text."""

        def props(properties: Mapping[str, str]) -> str:
            return "{" + ", ".join(f"{k}: {t}" for k, t in properties.items()) + "}"

        lines = ["Node labels and properties:"]
        lines += [f"  (:{label} {props(p)})" for label, p in self.node_properties.items()]
        lines.append("Relationship types and properties:")
        lines += [f"  [:{rel} {props(p)}]" for rel, p in self.relationship_properties.items()]
        lines.append("Relationships:")
        lines += [f"  (:{src})-[:{rel}]->(:{dst})" for src, rel, dst in self.patterns]
        return "\n".join(lines)


def introspect_schema(
    driver: neo4j.Driver, *, database: str | None = None, sample: int = 100
) -> GraphSchema:
    """The schema of the graph behind ``driver``, from a sample of its nodes and edges."""

    def read(tx: neo4j.ManagedTransaction) -> GraphSchema:
        labels = sorted(str(r["label"]) for r in tx.run("CALL db.labels()"))
        nodes = {}
        for label in labels:
            rows = tx.run(
                f"MATCH (n:{quote_name(label)}) WITH n LIMIT {int(sample)} "
                "RETURN properties(n) AS p"
            )
            nodes[label] = _properties([row["p"] for row in rows])
        edges: dict[str, list[Mapping[str, Any]]] = {}
        patterns: set[tuple[str, str, str]] = set()
        for row in tx.run(
            f"MATCH (a)-[r]->(b) WITH a, r, b LIMIT {int(sample)} "
            "RETURN labels(a) AS src, type(r) AS rel, labels(b) AS dst, properties(r) AS p"
        ):
            edges.setdefault(row["rel"], []).append(row["p"])
            for src in row["src"]:
                for dst in row["dst"]:
                    patterns.add((src, row["rel"], dst))
        return GraphSchema(
            nodes,
            {rel: _properties(rows) for rel, rows in sorted(edges.items())},
            sorted(patterns),
        )

    with driver.session(database=database, default_access_mode=neo4j.READ_ACCESS) as session:
        return session.execute_read(read)
