from __future__ import annotations

import json
from typing import Any

import pytest

from pineapple import ConfigError, ParamSpec
from pineapple.resource import Manager, Registry, ResourceSchema

from ._values import Closable


class Factory:
    """A fetcher factory that counts the fetches of every fetcher it made."""

    def __init__(self) -> None:
        self.fetches = 0

    def __call__(self, params: dict[str, Any]) -> Any:
        def fetch() -> Closable:
            self.fetches += 1
            return Closable(dict(params))

        return fetch


@pytest.fixture
def registry() -> Registry:
    reg = Registry()
    reg.register(
        ResourceSchema(
            name="table",
            description="a test table",
            default_interval=300,
            params={
                "dsn": ParamSpec(type="string", required=True, description="where"),
                "limit": ParamSpec(type="int", default=10, description="rows"),
            },
        ),
        Factory(),
    )

    def broken(params: dict[str, Any]) -> Any:
        raise ValueError(f"cannot reach {params['dsn']}")

    reg.register(
        ResourceSchema(
            name="broken",
            params={"dsn": ParamSpec(type="string", required=True)},
        ),
        broken,
    )
    return reg


def nested(**entries: Any) -> dict[str, Any]:
    return {"resource_config": entries}


def test_nested_shape_loads_with_schema_default_interval_and_param_defaults(
    registry: Registry,
) -> None:
    rm = Manager(registry)
    names = rm.load_from_root_config(nested(feed={"type": "table", "params": {"dsn": "x"}}))
    assert names == ["feed"]
    rm.start()
    with rm.get("feed") as value:  # type: ignore[union-attr]
        assert value.payload == {"dsn": "x", "limit": 10}
    assert rm.status_of("feed").interval == 300
    assert rm.status_of("feed").type == "table"
    rm.stop()


def test_flat_shape_with_type_name_loads(registry: Registry) -> None:
    config = {
        "resource_config": {
            "resources": {"r": {"type_name": "table", "dsn": "y", "limit": 3, "interval": -1}}
        }
    }
    rm = Manager(registry)
    rm.load_from_root_config(json.dumps(config).encode())
    rm.start()
    with rm.get("r") as value:  # type: ignore[union-attr]
        assert value.payload == {"dsn": "y", "limit": 3}
    assert rm.status_of("r").interval == -1
    rm.stop()


@pytest.mark.parametrize("config", [{}, {"resource_config": {}}, {"resource_config": None}])
def test_missing_or_empty_resource_config_is_not_an_error(
    registry: Registry, config: dict[str, Any]
) -> None:
    assert Manager(registry).load_from_root_config(config) == []


def test_invalid_json_is_a_config_error(registry: Registry) -> None:
    with pytest.raises(ConfigError, match="not valid JSON"):
        Manager(registry).load_from_root_config(b'{"resource_config": ')


def test_unknown_type_names_the_resource(registry: Registry) -> None:
    with pytest.raises(ConfigError, match=r"resource 'feed': unknown type 'nope'"):
        Manager(registry).load_from_root_config(nested(feed={"type": "nope"}))


def test_missing_param_names_resource_and_param(registry: Registry) -> None:
    with pytest.raises(ConfigError, match=r"resource 'feed'.*'dsn' is required"):
        Manager(registry).load_from_root_config(nested(feed={"type": "table", "params": {}}))


def test_mistyped_param_names_resource_and_param(registry: Registry) -> None:
    entry = {"type": "table", "params": {"dsn": "x", "limit": "ten"}}
    with pytest.raises(ConfigError, match=r"resource 'feed'.*'limit'") as info:
        Manager(registry).load_from_root_config(nested(feed=entry))
    assert "ten" not in str(info.value)  # values are never echoed


def test_unknown_param_is_rejected(registry: Registry) -> None:
    entry = {"type": "table", "params": {"dsn": "x", "limt": 3}}
    with pytest.raises(ConfigError, match=r"unknown parameter 'limt'"):
        Manager(registry).load_from_root_config(nested(feed=entry))


def test_factory_error_names_the_resource_and_hides_the_password(registry: Registry) -> None:
    entry = {"type": "broken", "params": {"dsn": "mysql://app:s3cr3t-pw@db:3306/feed"}}
    with pytest.raises(ConfigError, match=r"resource 'feed' \(type 'broken'\)") as info:
        Manager(registry).load_from_root_config(nested(feed=entry))
    assert "s3cr3t-pw" not in str(info.value)
    assert "mysql://app:***@db:3306/feed" in str(info.value)


def test_bad_interval_names_the_resource(registry: Registry) -> None:
    entry = {"type": "table", "interval": -5, "params": {"dsn": "x"}}
    with pytest.raises(ConfigError, match=r"resource 'feed': interval"):
        Manager(registry).load_from_root_config(nested(feed=entry))


def test_one_bad_entry_registers_nothing(registry: Registry) -> None:
    rm = Manager(registry)
    with pytest.raises(ConfigError):
        rm.load_from_root_config(
            nested(a={"type": "table", "params": {"dsn": "x"}}, b={"type": "nope"})
        )
    assert rm.names() == []


def test_env_interpolation(registry: Registry) -> None:
    env = {"FEED_DSN": "mysql://u:pw@h/db"}
    entry = {"type": "table", "params": {"dsn": "${FEED_DSN}", "limit": 1}}
    rm = Manager(registry)
    rm.load_from_root_config(nested(feed=entry), env=env)
    assert rm.entries()["feed"].params["dsn"] == "mysql://u:pw@h/db"
    rm2 = Manager(registry)
    rm2.load_from_root_config(
        nested(feed={"type": "table", "params": {"dsn": "${MISSING:-sqlite://demo}"}}), env=env
    )
    assert rm2.entries()["feed"].params["dsn"] == "sqlite://demo"
    with pytest.raises(ConfigError, match=r"resource 'feed': environment variable 'MISSING'"):
        Manager(registry).load_from_root_config(
            nested(feed={"type": "table", "params": {"dsn": "${MISSING}"}}), env=env
        )


def test_secret_from_env_is_redacted_in_status(registry: Registry) -> None:
    def failing(params: dict[str, Any]) -> Any:
        def fetch() -> None:
            raise ConnectionError(f"access denied for {params['dsn']} ({params['password']})")

        return fetch

    registry.register(
        ResourceSchema(
            name="db",
            params={
                "dsn": ParamSpec(type="string", required=True),
                "password": ParamSpec(type="string", required=True),
            },
        ),
        failing,
    )
    entry = {"type": "db", "params": {"dsn": "app:hunter22@tcp(db:3306)/x", "password": "${PW}"}}
    rm = Manager(registry)
    rm.load_from_root_config(nested(feed=entry), env={"PW": "tok-987654"})
    rm.start(allow_partial=True)
    status = rm.status_of("feed")
    rm.stop()
    assert status.last_error is not None
    assert "hunter22" not in status.last_error
    assert "tok-987654" not in status.last_error
    assert "app:***@tcp(db:3306)/x" in status.last_error


def test_carry_over_shares_unchanged_values_and_refetches_changed_ones(registry: Registry) -> None:
    factory = registry.factory("table")
    assert isinstance(factory, Factory)
    v1 = nested(
        same={"type": "table", "params": {"dsn": "a"}},
        changed={"type": "table", "params": {"dsn": "b"}},
    )
    old = Manager(registry)
    old.load_from_root_config(v1)
    old.start()
    assert factory.fetches == 2
    v2 = nested(
        same={"type": "table", "params": {"dsn": "a"}},
        changed={"type": "table", "params": {"dsn": "b2"}},
    )
    new = Manager(registry)
    new.load_from_root_config(v2, carry_over=old)
    new.start()
    assert factory.fetches == 3  # only 'changed' was fetched again
    with old.get("same") as a, new.get("same") as b:  # type: ignore[union-attr]
        assert a is b
    assert new.status_of("same").generation == 1
    assert new.status_of("changed").generation == 2
    shared = b
    old.stop()
    assert shared.closes == 0  # the new manager still holds it
    handle = new.get("same")
    assert handle is not None
    assert handle.value.use() == {"dsn": "a", "limit": 10}
    handle.release()
    new.stop()
    assert shared.closes == 1


def test_carry_over_tells_a_new_fetcher_which_value_it_inherits() -> None:
    seen: list[Any] = []

    class Resuming:
        def __call__(self) -> Any:
            return {"v": 1}

        def carry_over(self, value: Any) -> None:
            seen.append(value)

    reg = Registry()
    reg.register(ResourceSchema(name="r"), lambda params: Resuming())
    config = nested(a={"type": "r", "interval": 60})
    old = Manager(reg)
    old.load_from_root_config(config)
    old.start()
    new = Manager(reg)
    new.load_from_root_config(config, carry_over=old)
    new.start()
    assert seen == [{"v": 1}]
    old.stop()
    new.stop()
