"""Prometheus metrics, one registry per app (never process-global: tests and
several apps in one process must not share counters)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "overspill_http_requests",
            "HTTP requests",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "overspill_http_request_seconds",
            "HTTP request latency",
            ["route"],
            registry=self.registry,
        )
        self.bytes_in = Counter(
            "overspill_bytes_in", "Artifact bytes uploaded", registry=self.registry
        )
        self.bytes_out = Counter(
            "overspill_bytes_out", "Artifact bytes served", registry=self.registry
        )
        self.artifacts_written = Counter(
            "overspill_artifacts_written",
            "Artifacts finished through the API",
            registry=self.registry,
        )
        self.storage_errors = Counter(
            "overspill_storage_errors", "Requests that failed on storage", registry=self.registry
        )
