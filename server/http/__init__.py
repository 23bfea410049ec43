"""The HTTP edge: every byte between a socket and the serving snapshot.

Reading order (each module imports only the server's lower floors and the ones
before it here): ``_uvicorn_range`` (the uvicorn releases the edge relies on),
``_access_log``, ``_execute`` (``POST /execute`` and its one answer maker),
``_read_timeouts`` (a request's read deadlines), ``_connections`` (drain, the
write deadline, probes past the cap, half close), ``_answer_batch``, ``_direct``
(a small ``/execute`` answered from the parser's callbacks), ``_protocol`` (the
one protocol class every connection runs, composing them), ``_dag_view``,
``_routes`` (every other route), ``_app`` (the Starlette app), ``_graceful``
(SIGTERM, drain) and ``_serving`` (one process on a bound socket). Every
module is private; the server's faces are ``server`` and ``server.lowlevel``.
"""
