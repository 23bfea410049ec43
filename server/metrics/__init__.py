"""The server's Prometheus metrics: what ``/metrics`` renders, in one process or a pod.

``_request_metrics`` (the ``pineapple_http_*`` families, plain counters on the
event loop), ``_gometrics`` (the Go engine's ``pine_*`` families),
``_probe_metrics`` and ``_client_metrics`` (reachability, pools and commands of
client values), ``_pod_metrics`` (every process's metrics in one directory,
merged at scrape), ``_state_metrics`` (the state a team alerts on, from the
process that decides it) and ``_metrics`` (``ServerMetrics``: the registry that holds
them). The wing reads what serves through ``Served`` (``_served``), so it sits
below the snapshot, the reload and the edge. Every module is private.
"""
