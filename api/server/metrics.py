"""Prometheus metrics, one registry per app (never process-global: tests and
several apps in one process must not share counters).

The local server keeps none (``Metrics(enabled=False)``): nobody scrapes a
Unix socket in a home, and prometheus_client is ~10 MB of a server that should
stay small while it waits for the next verb.
"""

from __future__ import annotations

from typing import Any


class _Nothing:
    """A counter, histogram or label set that records nothing."""

    def labels(self, *args: Any) -> _Nothing:
        return self

    def inc(self, amount: float = 1) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


class Metrics:
    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.registry: Any = None
        self.requests: Any = _Nothing()
        self.latency: Any = _Nothing()
        self.bytes_in: Any = _Nothing()
        self.bytes_out: Any = _Nothing()
        self.artifacts_written: Any = _Nothing()
        self.storage_errors: Any = _Nothing()
        if not enabled:
            return
        from prometheus_client import CollectorRegistry, Counter, Histogram

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
