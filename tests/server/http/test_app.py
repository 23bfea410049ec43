"""The HTTP surface: every route, its status codes and error bodies (lifespan runs)."""

from __future__ import annotations

import orjson
import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import pineapple
import server

from ..conftest import MakeConfig, WriteConfig
from ..engines import THREADS
from ..fakes import items_resource, unified_config

LOOPBACK = ("127.0.0.1", 50000)


@pytest.fixture
def app_config(write_config: WriteConfig, make_config: MakeConfig) -> server.Config:
    write_config(
        unified_config(
            "v1",
            resources={"feed": items_resource("feed", "v1", password="s3cr3t-pw")},
            recall_from="feed",
        )
    )
    return make_config(max_body_bytes=1024)


def test_execute_returns_the_engines_response(app_config: server.Config) -> None:
    with TestClient(server.create_app(app_config)) as client:
        response = client.post("/execute", content=b'{"common": {}, "items": []}')
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["items"] == [{"id": "static", "tag": "v1"}, {"id": "feed", "tag": "v1"}]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{not json", 400),
        (b"[1, 2]", 400),
        (b'{"items": 3}', 400),
    ],
)
def test_execute_rejects_bad_bodies_with_json_errors(
    app_config: server.Config, body: bytes, status: int
) -> None:
    with TestClient(server.create_app(app_config)) as client:
        response = client.post("/execute", content=body)
    assert response.status_code == status
    assert isinstance(response.json()["error"], str)


def test_execute_body_over_the_limit_is_413(app_config: server.Config) -> None:
    body = orjson.dumps({"common": {"pad": "x" * 2000}, "items": []})
    with TestClient(server.create_app(app_config)) as client:
        response = client.post("/execute", content=body)
        chunked = client.post("/execute", content=iter([body[:600], body[600:]]))
    assert response.status_code == 413
    assert "1024" in response.json()["error"]
    assert chunked.status_code == 413


def test_execute_contract_violation_is_400_as_on_go(
    write_config: WriteConfig, make_config: MakeConfig
) -> None:
    config = unified_config("v1")
    config["flow_contract"]["common_input"] = ["user_id"]
    write_config(config)
    with TestClient(server.create_app(make_config())) as client:
        response = client.post("/execute", content=b'{"common": {}, "items": []}')
    assert response.status_code == 400
    assert "user_id" in response.json()["error"]


def test_execute_needs_post(app_config: server.Config) -> None:
    with TestClient(server.create_app(app_config)) as client:
        response = client.get("/execute")
        missing = client.get("/nope")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert missing.status_code == 404
    assert missing.json() == {"error": "Not Found"}


def test_health_ready_and_config(app_config: server.Config) -> None:
    app = server.create_app(app_config)
    with TestClient(app) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz")
        config = client.get("/config").json()
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    info = config["config"]
    assert info["version"] == 1
    assert info["create_time"] == "2026-01-01T00:00:00Z/v1"
    assert len(info["content_hash"]) == 64
    assert info["revision"] == info["content_hash"][:12]
    assert config["pineapple_version"] == pineapple.__version__
    assert info["loaded_at"] > 0
    assert config["last_reload"]["result"] == "ok"
    assert config["last_reload"]["trigger"] == "start"
    assert config["last_reload_error"] is None
    # After shutdown the service reports draining.
    assert app.state.service.draining


def test_resources_list_and_detail(app_config: server.Config) -> None:
    with TestClient(server.create_app(app_config)) as client:
        listing = client.get("/resources").json()
        detail = client.get("/resources/feed")
        missing = client.get("/resources/nope")
    [status] = listing["resources"]
    assert status["name"] == "feed" and status["type"] == "test_items"
    assert status["version"] == 1
    assert detail.status_code == 200
    assert detail.json()["status"]["name"] == "feed"
    assert '"tag": "v1"' in detail.json()["description"]
    assert missing.status_code == 404
    assert "nope" in missing.json()["error"]


def test_refresh_endpoint_swaps_the_value(app_config: server.Config) -> None:
    with TestClient(server.create_app(app_config), client=LOOPBACK) as client:
        response = client.post("/admin/resources/feed/refresh")
        unknown = client.post("/admin/resources/nope/refresh")
    assert response.status_code == 200, response.text
    assert response.json()["result"] == "swapped"
    assert response.json()["status"]["version"] == 2
    assert unknown.status_code == 404


def test_failed_refresh_is_502_and_redacted(
    write_config: WriteConfig, make_config: MakeConfig, tracker: object
) -> None:
    write_config(unified_config("v1", resources={"feed": items_resource("feed", "v1")}))
    with TestClient(server.create_app(make_config()), client=LOOPBACK) as client:
        service = client.app.state.service  # type: ignore[attr-defined]
        snap = service.holder.current
        # Make the next fetch fail: the fetcher raises with a DSN holding a password.
        slot_fetch = snap.manager._slots["feed"]
        original = slot_fetch.fetcher

        def failing() -> object:
            raise RuntimeError("cannot reach mysql://app:hunter2@db/x")

        slot_fetch.fetcher = failing
        try:
            response = client.post("/admin/resources/feed/refresh")
        finally:
            slot_fetch.fetcher = original
        listing = client.get("/resources").text
    assert response.status_code == 502
    assert "hunter2" not in response.text and "hunter2" not in listing
    assert response.json()["resource"]["consecutive_failures"] == 1


def test_metrics_cover_requests_reloads_and_resources(app_config: server.Config) -> None:
    with TestClient(server.create_app(app_config), client=LOOPBACK) as client:
        client.post("/execute", content=b'{"common": {}, "items": []}')
        client.post("/execute", content=b"{bad")
        client.post("/admin/resources/feed/refresh")
        text = client.get("/metrics").text
    assert 'pineapple_http_requests_total{method="POST",route="/execute",status="200"} 1.0' in text
    assert 'pineapple_http_requests_total{method="POST",route="/execute",status="400"} 1.0' in text
    assert "pineapple_http_request_duration_seconds_bucket" in text
    assert (
        'pineapple_resource_refreshes_total{resource="feed",result="swapped",type="test_items"} 2.0'
        in text
    )
    assert 'pineapple_resource_version{resource="feed",type="test_items"} 2.0' in text
    assert 'pineapple_resource_age_seconds{resource="feed",type="test_items"}' in text
    assert 'pineapple_resource_last_success_timestamp_seconds{resource="feed"' in text
    assert "pineapple_config_reloads_total" in text


def test_two_apps_have_separate_metrics(app_config: server.Config) -> None:
    first, second = server.create_app(app_config), server.create_app(app_config)
    with TestClient(first) as a, TestClient(second) as b:
        a.post("/execute", content=b'{"common": {}, "items": []}')
        assert 'route="/execute",status="200"} 1.0' in a.get("/metrics").text
        assert 'route="/execute",status="200"}' not in b.get("/metrics").text


def test_secrets_never_leave_the_process(app_config: server.Config) -> None:
    with TestClient(server.create_app(app_config), client=LOOPBACK) as client:
        outputs = [
            client.get("/resources").text,
            client.get("/resources/feed").text,
            client.get("/config").text,
            client.get("/metrics").text,
        ]
    for text in outputs:
        assert "s3cr3t-pw" not in text
        assert "hunter2" not in text


class TestAdmin:
    def test_refuses_a_non_loopback_client_without_a_token(self, app_config: server.Config) -> None:
        with TestClient(server.create_app(app_config), client=("203.0.113.7", 5000)) as client:
            reload = client.post("/admin/reload")
            refresh = client.post("/admin/resources/feed/refresh")
            status = client.get("/resources")  # read-only routes stay open
        assert reload.status_code == 403 and refresh.status_code == 403
        assert "loopback" in reload.json()["error"]
        assert status.status_code == 200

    def test_answers_loopback_without_a_token(self, app_config: server.Config) -> None:
        for host in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
            with TestClient(server.create_app(app_config), client=(host, 5000)) as client:
                response = client.post("/admin/reload")
            assert response.status_code == 200, host
            assert response.json()["result"] == "unchanged"

    def test_with_a_token_everyone_must_send_it(
        self, make_config: MakeConfig, app_config: server.Config
    ) -> None:
        config = make_config(admin_token="t0ken")
        app = server.create_app(config)
        with TestClient(app, client=("203.0.113.7", 5000)) as remote:
            without = remote.post("/admin/reload")
            wrong = remote.post("/admin/reload", headers={"authorization": "Bearer nope"})
            right = remote.post("/admin/reload", headers={"authorization": "Bearer t0ken"})
        with TestClient(server.create_app(config), client=("127.0.0.1", 5000)) as local:
            local_without = local.post("/admin/reload")
        assert without.status_code == 401 and without.headers["www-authenticate"] == "Bearer"
        assert wrong.status_code == 401
        assert right.status_code == 200
        assert local_without.status_code == 401
        assert "t0ken" not in without.text

    def test_token_comes_from_the_environment(
        self, make_config: MakeConfig, app_config: server.Config, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(server.ADMIN_TOKEN_ENV, "from-env")
        config = make_config(admin_token=None)
        with TestClient(server.create_app(config), client=("203.0.113.7", 5000)) as client:
            ok = client.post("/admin/reload", headers={"authorization": "Bearer from-env"})
        assert ok.status_code == 200


@pytest.mark.parametrize(
    ("probe", "on_worker_thread"),
    [("test_probe_inline", False), ("test_probe_blocking", True)],
)
def test_execute_runs_blocking_engines_off_the_event_loop(
    write_config: WriteConfig, make_config: MakeConfig, probe: str, on_worker_thread: bool
) -> None:
    write_config(unified_config("v1", extra_ops={"probe": {"type_name": probe}}))
    THREADS.clear()
    with TestClient(server.create_app(make_config())) as client:
        assert client.app.state.service.holder.current.blocking is on_worker_thread  # type: ignore[attr-defined]
        response = client.post("/execute", content=b'{"common": {}, "items": []}')
    assert response.status_code == 200, response.text
    [(ran, thread)] = THREADS
    assert ran == probe
    assert (thread == "AnyIO worker thread") is on_worker_thread


def test_execute_on_a_named_pipeline_group(
    write_config: WriteConfig, make_config: MakeConfig
) -> None:
    config = unified_config("v1")
    operators = config["pipeline_config"]["operators"]
    operators["other"] = {**operators["static"], "items": [{"id": "other", "tag": "v1"}]}
    config["pipeline_group"]["alt"] = {"pipeline": ["other"]}
    write_config(config)
    body = b'{"common": {}, "items": []}'
    with TestClient(server.create_app(make_config())) as client:
        default = client.post("/execute", content=body)
        main = client.post("/execute/main", content=body)
        alt = client.post("/execute/alt", content=body)
        unknown = client.post("/execute/nope", content=body)
    assert default.json() == main.json()
    assert default.json()["items"] == [{"id": "static", "tag": "v1"}]
    assert alt.json()["items"] == [{"id": "other", "tag": "v1"}]
    assert unknown.status_code == 404
    assert "unknown pipeline group 'nope'" in unknown.json()["error"]


def test_config_version_without_pineapple_version_is_the_revision(
    app_config: server.Config,
) -> None:
    path = app_config.path
    data = orjson.loads(path.read_bytes())
    del data["_PINEAPPLE_VERSION"]
    path.write_bytes(orjson.dumps(data))
    with TestClient(server.create_app(app_config)) as client:
        info = client.get("/config").json()["config"]
    assert info["version"] == info["revision"] == info["content_hash"][:12]


def test_user_middleware_applies_to_execute_too(app_config: server.Config) -> None:
    seen: list[str] = []

    class Tag:
        def __init__(self, app: ASGIApp) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                seen.append(scope["path"])

            async def tagged(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message["headers"], (b"x-tag", b"1")]
                await send(message)

            await self.app(scope, receive, tagged)

    app = server.create_app(app_config)
    app.add_middleware(Tag)
    with TestClient(app) as client:
        executed = client.post("/execute", content=b'{"common": {}, "items": []}')
        grouped = client.post("/execute/nope", content=b'{"common": {}, "items": []}')
        health = client.get("/healthz")
    assert executed.status_code == 200 and executed.headers["x-tag"] == "1"
    assert executed.json()["items"][0]["tag"] == "v1"
    assert grouped.status_code == 404 and grouped.headers["x-tag"] == "1"
    assert health.headers["x-tag"] == "1"
    assert seen == ["/execute", "/execute/nope", "/healthz"]
