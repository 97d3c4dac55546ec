"""Prometheus metrics of one server (own registry, so two apps in a process never clash)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["ROUTES", "ServerMetrics", "route_label"]

# The route labels: a fixed set, so a client cannot grow the metrics with random paths.
ROUTES = (
    "/",
    "/healthz",
    "/readyz",
    "/metrics",
    "/v1/models",
    "/v1/retrieve",
    "/v1/chat/completions",
    "/v1/documents",
    "/v1/jobs",
    "/mcp",
)


def route_label(path: str) -> str:
    """The route of ``path`` for metric labels (``other`` for anything unknown)."""
    for route in ROUTES:
        if path == route or (route not in {"/"} and path.startswith(route + "/")):
            return route
    return "other"


class ServerMetrics:
    """Requests, latency, retrieval and model time, errors by kind."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "ragloom_http_requests",
            "HTTP requests by route, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "ragloom_http_request_seconds",
            "HTTP request latency (to the end of the response)",
            ["route"],
            registry=self.registry,
        )
        self.retrieval = Histogram(
            "ragloom_retrieval_seconds", "Time spent retrieving", registry=self.registry
        )
        self.answer = Histogram(
            "ragloom_answer_seconds",
            "Time spent answering (retrieval plus chat model)",
            registry=self.registry,
        )
        self.errors = Counter(
            "ragloom_errors", "Error responses by kind", ["kind"], registry=self.registry
        )
        self.ingested = Counter(
            "ragloom_uploads", "Uploads accepted for ingestion", registry=self.registry
        )
