"""configs/production.json runs against the machine's MariaDB and Redis.

The secrets and addresses come from the environment (``${VAR}``), as in
production; the test points them at a fresh table and a unique Redis key.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pymysql
import pytest
import redis

from pineapple import Context, builtins
from pineapple.engine import Engine
from pineapple.resource import Manager, with_resources
from pineapple.resource.lowlevel import validate_resource_deps

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "production.json"

pytestmark = [pytest.mark.mysql, pytest.mark.redis]


def test_production_config_serves_from_mysql_and_redis(
    monkeypatch: pytest.MonkeyPatch,
    mysql_conn: pymysql.connections.Connection[Any],
    mysql_dsn: str,
    mysql_table: str,
    redis_addr: str,
) -> None:
    with mysql_conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE `{mysql_table}` (id VARCHAR(32) PRIMARY KEY, "
            "category VARCHAR(32), score DOUBLE)"
        )
        cur.executemany(
            f"INSERT INTO `{mysql_table}` VALUES (%s, %s, %s)",
            [("i1", "tech", 0.2), ("i2", "news", 0.9), ("i3", "tech", 0.7), ("i4", "tech", 0.5)],
        )
    user = f"u_{uuid.uuid4().hex[:8]}"
    host, _, port = redis_addr.rpartition(":")
    client = redis.Redis(host=host, port=int(port))
    monkeypatch.setenv("FEED_MYSQL_DSN", mysql_dsn)
    monkeypatch.setenv("FEED_TABLE", mysql_table)
    monkeypatch.setenv("REDIS_ADDR", redis_addr)
    monkeypatch.delenv("REDIS_PASSWORD", raising=False)
    config = json.loads(CONFIG.read_text())
    manager = Manager(builtins.resource_registry())
    manager.load_from_root_config(config)
    manager.start()
    engine = Engine(config, registry=builtins.operator_registry())
    try:
        validate_resource_deps(config, manager)
        ctx = with_resources(Context(), manager)
        request = {"common": {"user_id": user, "user_category": "tech"}, "items": []}
        cold = engine.execute(ctx, request)
        client.sadd(f"feed:seen:{user}", "i9")
        warm = engine.execute(ctx, request)
    finally:
        client.delete(f"feed:seen:{user}")
        client.close()
        engine.close()
        manager.stop()
    assert [item["item_id"] for item in cold["items"]] == ["i3", "i4", "i1"]
    assert cold["items"][0]["score"] == 0.7
    assert cold["common"] == {"seen_cache_hit": False}
    assert warm["common"] == {"seen_cache_hit": True}
