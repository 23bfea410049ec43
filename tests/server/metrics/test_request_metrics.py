"""The request families read exactly as prometheus_client's Counter and Histogram would."""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from server.metrics._metrics import ServerMetrics
from server.metrics._request_metrics import RequestFamilies

BOUNDS = (0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
# (route, method, status, seconds): on bounds, between them, past the last one, zero.
SEEN = [
    ("/execute", "POST", 200, 0.0001),
    ("/execute", "POST", 200, 0.0002),
    ("/execute", "POST", 200, 0.00020000001),
    ("/execute", "POST", 400, 0.001),
    ("/execute", "GET", 405, 0.0),
    ("/healthz", "GET", 200, 0.0004),
    ("/execute", "POST", 504, 1.0),
    ("/execute", "POST", 200, 11.5),
    ("/healthz", "GET", 503, 5.0),
    ("/execute", "POST", 200, 3e-5),
]


def _text(registry: CollectorRegistry) -> str:
    # The creation times differ by construction; everything else must not.
    return re.sub(r"_created(\{[^}]*\})? \S+", r"_created\1 T", generate_latest(registry).decode())


def test_the_families_expose_what_the_client_library_would() -> None:
    reference = CollectorRegistry()
    requests = Counter(
        "pineapple_http_requests",
        "HTTP requests answered, by route, method and status code.",
        ["route", "method", "status"],
        registry=reference,
    )
    latency = Histogram(
        "pineapple_http_request_duration_seconds",
        "Time to answer an HTTP request, by route.",
        ["route"],
        registry=reference,
        buckets=BOUNDS,
    )
    latency.labels("/execute")
    ours = CollectorRegistry()
    families = RequestFamilies(BOUNDS, ("/execute",))
    ours.register(families)
    assert _text(ours) == _text(reference)  # before any request: the /execute histogram only
    for route, method, status, seconds in SEEN:
        requests.labels(route, method, status).inc()
        latency.labels(route).observe(seconds)
        if route == "/execute" and method == "POST":
            families.observe_execute(status, seconds)
        else:
            families.observe(route, method, status, seconds)
    assert _text(ours) == _text(reference)
    assert 'pineapple_http_requests_total{method="POST",route="/execute",status="200"} 5.0' in (
        _text(ours)
    )


def test_server_metrics_count_execute_and_other_routes_in_the_same_families() -> None:
    metrics = ServerMetrics(lambda: None)
    metrics.observe_execute(200, 0.0003)
    metrics.observe_request("/execute", "GET", 405, 0.0)
    text = metrics.render().decode()
    assert 'pineapple_http_requests_total{method="POST",route="/execute",status="200"} 1.0' in text
    assert 'pineapple_http_requests_total{method="GET",route="/execute",status="405"} 1.0' in text
    assert 'pineapple_http_request_duration_seconds_count{route="/execute"} 2.0' in text
    assert 'pine_http_requests_total{method="POST",path="/execute",status="2xx"} 1.0' in text


def test_go_http_stats_of_execute_match_the_general_record() -> None:
    from server.metrics._gometrics import HttpStats

    general, fast = HttpStats(), HttpStats()
    for route, method, status, seconds in SEEN:
        general.record(method, route, status, seconds)
        if (route, method) == ("/execute", "POST"):
            fast.record_execute(status, seconds)
        else:
            fast.record(method, route, status, seconds)
    assert fast.snapshot() == general.snapshot()
    assert fast.requests[("POST", "/execute", "2xx")] == 5
