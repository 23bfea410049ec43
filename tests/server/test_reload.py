"""Hot reload: snapshots swap whole, failures change nothing, retirement waits for requests."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import orjson
import pytest
from starlette.testclient import TestClient

import server
from pineapple import resource
from server.lowlevel import Service

from .conftest import MakeConfig, WriteConfig
from .engines import TrackedEngine
from .fakes import GATES, Gate, TrackedList, Tracker, items_resource, unified_config

BODY = b'{"common": {}, "items": []}'


def _tags(client: TestClient) -> list[tuple[str, str]]:
    response = client.post("/execute", content=BODY)
    assert response.status_code == 200, response.text
    return [(i["id"], i["tag"]) for i in response.json()["items"]]


@pytest.fixture
def served(
    write_config: WriteConfig, make_config: MakeConfig
) -> Iterator[tuple[TestClient, Service]]:
    write_config(
        unified_config(
            "v1",
            resources={"keep": items_resource("keep", "k"), "feed": items_resource("feed", "v1")},
            recall_from="feed",
        )
    )
    app = server.create_app(make_config())
    with TestClient(app) as client:
        yield client, app.state.service


def test_reload_swaps_engine_and_resources_together(
    served: tuple[TestClient, Service], write_config: WriteConfig
) -> None:
    client, service = served
    old = service.holder.current
    assert _tags(client) == [("static", "v1"), ("feed", "v1")]
    write_config(
        unified_config(
            "v2",
            resources={"keep": items_resource("keep", "k"), "feed": items_resource("feed", "v2")},
            recall_from="feed",
        )
    )
    outcome = service.reloader.reload("admin")
    assert outcome.result == "ok", outcome
    new = service.holder.current
    assert new is not old and new is not None and old is not None
    assert new.engine is not old.engine and new.manager is not old.manager
    assert _tags(client) == [("static", "v2"), ("feed", "v2")]
    assert old.wait_closed(5)
    assert old.manager.state == "stopped"  # the old manager is stopped
    assert old.engine.closes == 1  # type: ignore[attr-defined]


def test_concurrent_requests_always_see_one_config(
    served: tuple[TestClient, Service], write_config: WriteConfig
) -> None:
    """Three clients send a fixed number of requests in each round while that round's reload
    runs; every answer is counted under a lock and holds one config's tags."""
    client, service = served
    clients, rounds, per_round = 3, 10, 5
    start, end = (
        threading.Barrier(clients + 1, timeout=60),
        threading.Barrier(clients + 1, timeout=60),
    )
    lock = threading.Lock()
    tags_seen: list[str] = []  # under lock: one entry per answer, its one tag
    mixed: list[list[str]] = []
    failures: list[int] = []

    def hammer() -> None:
        for _ in range(rounds):  # bounded: rounds x per_round requests
            start.wait()
            for _ in range(per_round):
                response = client.post("/execute", content=BODY)
                with lock:
                    if response.status_code != 200:
                        failures.append(response.status_code)
                        continue
                    tags = sorted({i["tag"] for i in response.json()["items"]})
                    if len(tags) != 1:  # static (engine) and feed (resource) from two configs
                        mixed.append(tags)
                    tags_seen.append(tags[0])
            end.wait()

    threads = [threading.Thread(target=hammer) for _ in range(clients)]
    for t in threads:
        t.start()
    for n in range(2, 2 + rounds):
        tag = f"v{n}"
        write_config(
            unified_config(
                tag,
                resources={
                    "keep": items_resource("keep", "k"),
                    "feed": items_resource("feed", tag),
                },
                recall_from="feed",
            )
        )
        start.wait()  # the clients send this round's requests while it reloads
        assert service.reloader.reload("admin").result == "ok"
        end.wait()
    for t in threads:
        t.join(timeout=60)
    assert failures == [] and mixed == []
    assert len(tags_seen) == clients * rounds * per_round  # every request answered, counted once
    assert set(tags_seen) <= {f"v{n}" for n in range(1, 2 + rounds)}
    assert _tags(client) == [("static", f"v{1 + rounds}"), ("feed", f"v{1 + rounds}")]


def test_failed_start_keeps_the_old_snapshot_serving(
    served: tuple[TestClient, Service],
    write_config: WriteConfig,
    tracker: Tracker,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, service = served
    old = service.holder.current
    write_config(
        unified_config(
            "v2",
            resources={
                "keep": items_resource("keep", "k"),
                "feed": items_resource("feed", "v2", fail=True),
            },
            recall_from="feed",
        )
    )
    outcome = service.reloader.reload("admin")
    assert outcome.result == "error" and outcome.step == "start"
    assert "feed" in (outcome.error or "") and "hunter2" not in (outcome.error or "")
    [logged] = [
        r for r in caplog.records if r.name == "pineapple.server" and r.levelname == "ERROR"
    ]
    assert "previous config keeps serving" in logged.getMessage()
    assert "hunter2" not in caplog.text
    assert service.holder.current is old
    assert _tags(client) == [("static", "v1"), ("feed", "v1")]
    assert old is not None and old.manager.state == "started" and not old.closed
    # The engine built for the failed config was closed; the old one was not.
    failed_engine = TrackedEngine.instances[-1]
    assert failed_engine is not old.engine and failed_engine.closes == 1
    assert old.engine.closes == 0  # type: ignore[attr-defined]
    # Visible in /config, in metrics, redacted.
    config = client.get("/config").json()
    assert config["last_reload"]["result"] == "error"
    assert config["last_reload_error"]["step"] == "start"
    assert "hunter2" not in client.get("/config").text
    assert 'pineapple_config_reloads_total{result="error"} 1.0' in client.get("/metrics").text
    # The value that the failed manager carried over was released, not closed.
    resource.lowlevel.flush_closes()
    assert [v.name for v in tracker.closed_values] == []


@pytest.mark.parametrize(
    ("config", "step"),
    [
        (b"{not json", "engine"),
        (orjson.dumps(unified_config("x", extra_ops={"bad": {"type_name": "nope"}})), "engine"),
        (
            orjson.dumps({**unified_config("x"), "resource_config": {"r": {"type": "nope"}}}),
            "resources",
        ),
        (orjson.dumps(unified_config("x", recall_from="undeclared")), "deps"),
    ],
)
def test_each_failing_step_changes_nothing(
    served: tuple[TestClient, Service],
    config_path: object,
    config: bytes,
    step: str,
) -> None:
    client, service = served
    old = service.holder.current
    with open(str(config_path), "wb") as f:
        f.write(config)
    outcome = service.reloader.reload("admin")
    assert (outcome.result, outcome.step) == ("error", step), outcome
    assert service.holder.current is old
    assert _tags(client) == [("static", "v1"), ("feed", "v1")]


def test_carried_over_resources_are_not_refetched(
    served: tuple[TestClient, Service], write_config: WriteConfig, tracker: Tracker
) -> None:
    _client, service = served
    old = service.holder.current
    assert old is not None
    assert tracker.fetches == {"keep": 1, "feed": 1}
    with old.manager.get("keep") as kept_before:  # type: ignore[union-attr]
        pass
    write_config(
        unified_config(
            "v2",
            resources={"keep": items_resource("keep", "k"), "feed": items_resource("feed", "v2")},
            recall_from="feed",
        )
    )
    assert service.reloader.reload("admin").result == "ok"
    new = service.holder.current
    assert new is not None
    assert tracker.fetches == {"keep": 1, "feed": 2}  # only the changed entry was fetched
    with new.manager.get("keep") as kept_after:  # type: ignore[union-attr]
        assert kept_after is kept_before  # the same value object, shared
    assert new.manager.status_of("keep").generation == 1
    assert new.manager.status_of("feed").generation == 2
    assert old.wait_closed(5)
    resource.lowlevel.flush_closes()
    # The old feed value is closed once; the shared keep value is still open.
    assert [(v.name, v.closes) for v in tracker.closed_values] == [("feed", 1)]
    assert isinstance(kept_before, TrackedList) and kept_before.closes == 0


def test_retired_snapshot_serves_its_in_flight_request(
    write_config: WriteConfig, make_config: MakeConfig, tracker: Tracker
) -> None:
    gate = GATES["hold"] = Gate()
    write_config(
        unified_config(
            "v1", resources={"feed": items_resource("feed", "v1")}, recall_from="feed", gate="hold"
        )
    )
    app = server.create_app(make_config())
    with TestClient(app) as client:
        service: Service = app.state.service
        old = service.holder.current
        assert old is not None
        result: dict[str, object] = {}
        request = threading.Thread(
            target=lambda: result.update(r=client.post("/execute", content=BODY))
        )
        request.start()
        assert gate.entered.wait(5)  # the request is inside the old engine
        write_config(
            unified_config(
                "v2", resources={"feed": items_resource("feed", "v2")}, recall_from="feed"
            )
        )
        assert service.reloader.reload("admin").result == "ok"
        # New requests already get the new snapshot...
        assert _tags(client) == [("static", "v2"), ("feed", "v2")]
        # ...while the old one stays whole for the request it is serving.
        assert not old.closed and old.manager.state == "started"
        assert old.engine.closes == 0  # type: ignore[attr-defined]
        assert tracker.closed_values == []
        gate.go.set()
        request.join(5)
        response = result["r"]
        assert response.status_code == 200  # type: ignore[attr-defined]
        items = response.json()["items"]  # type: ignore[attr-defined]
        assert [(i["id"], i["tag"]) for i in items] == [("static", "v1"), ("feed", "v1")]
        assert old.wait_closed(5)  # torn down after its last request
        assert old.manager.state == "stopped" and old.engine.closes == 1  # type: ignore[attr-defined]
        resource.lowlevel.flush_closes()
        assert [(v.name, v[0]["tag"], v.closes) for v in tracker.closed_values] == [
            ("feed", "v1", 1)
        ]


def test_a_borrow_that_outlives_the_swap_keeps_its_value_alive(
    served: tuple[TestClient, Service], write_config: WriteConfig, tracker: Tracker
) -> None:
    _, service = served
    old = service.holder.current
    assert old is not None
    handle = old.manager.get("feed")
    assert handle is not None
    write_config(
        unified_config(
            "v2",
            resources={"keep": items_resource("keep", "k"), "feed": items_resource("feed", "v2")},
            recall_from="feed",
        )
    )
    assert service.reloader.reload("admin").result == "ok"
    assert old.wait_closed(5)  # the old snapshot is gone (no request held it)...
    assert old.manager.state == "stopped"
    resource.lowlevel.flush_closes()
    value = handle.value
    assert value[0]["tag"] == "v1" and value.closes == 0  # ...but the borrowed value lives
    handle.release()
    resource.lowlevel.flush_closes()
    assert value.closes == 1


def test_unchanged_content_is_a_no_op(served: tuple[TestClient, Service], tracker: Tracker) -> None:
    _client, service = served
    old = service.holder.current
    outcome = service.reloader.reload("signal")
    assert outcome.result == "unchanged"
    assert service.holder.current is old
    forced = service.reloader.reload("admin", force=True)
    assert forced.result == "ok" and service.holder.current is not old
    assert tracker.fetches == {"keep": 1, "feed": 1}  # a forced reload still carries over


def test_hand_resources_are_kept_across_reloads(
    write_config: WriteConfig, make_config: MakeConfig
) -> None:
    class HandFetcher:
        def __init__(self) -> None:
            self.fetches = 0
            self.closes = 0

        def __call__(self) -> list[dict[str, str]]:
            assert self.closes == 0, "fetch after close"
            self.fetches += 1
            return [{"id": "hand", "tag": "h"}]

        def close(self) -> None:
            self.closes += 1

    fetcher = HandFetcher()
    write_config(unified_config("v1", recall_from="by_hand"))
    config = make_config(resources=[server.HandResource("by_hand", fetcher, interval=-1)])
    app = server.create_app(config)
    with TestClient(app) as client:
        assert _tags(client) == [("static", "v1"), ("hand", "h")]
        for tag in ("v2", "v3"):
            write_config(unified_config(tag, recall_from="by_hand"))
            assert app.state.service.reloader.reload("admin").result == "ok"
            assert _tags(client) == [("static", tag), ("hand", "h")]
        # carried over, not refetched; the retired managers did not close the shared fetcher
        assert (fetcher.fetches, fetcher.closes) == (1, 0)
    assert fetcher.closes == 1  # closed once, at shutdown


def test_admin_reload_endpoint_reports_the_outcome(
    served: tuple[TestClient, Service], config_path: object
) -> None:
    client, _service = served
    with open(str(config_path), "wb") as f:
        f.write(b"{broken")
    local = TestClient(client.app, client=("127.0.0.1", 1))
    failed = local.post("/admin/reload")
    assert failed.status_code == 422
    assert failed.json()["result"] == "error" and failed.json()["step"] == "engine"
