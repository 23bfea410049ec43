"""``KeptValues`` and ``restore_resource_pins`` on a Manager (no server): a type with a
codec serves its kept value again; one without, or a changed entry, keeps the pin on the
value read at start, and the ``Pinned`` condition says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pineapple import ParamSpec, resource
from server._config_history import ConfigHistory, HistoryLimits
from server._history_decisions import remember, restore_resource_pins
from server._kept_values import KeptValues


def _registry(source: dict[str, Any]) -> resource.Registry:
    """``shared`` (a pickle codec) and ``local`` (none), both reading ``source["value"]``."""
    registry = resource.Registry()
    for name, codec in (("shared", resource.lowlevel.PickleCodec()), ("local", None)):
        schema = resource.ResourceSchema(
            name=name,
            description="test",
            default_interval=-1,
            params={"tag": ParamSpec(type="string", default="")},
            codec=codec,
        )
        registry.register(schema, lambda params: lambda: list(source["value"]))
    return registry


def _manager(registry: resource.Registry, tag: str = "") -> resource.Manager:
    manager = resource.Manager(registry)
    config = {
        "resource_config": {
            name: {"type": name, "interval": -1, "params": {"tag": tag}}
            for name in ("shared", "local")
        }
    }
    manager.load_from_root_config(config)
    manager.start()
    return manager


def _value(manager: resource.Manager, name: str) -> Any:
    handle = manager.get(name)
    assert handle is not None
    with handle as value:
        return value


def _pinned(manager: resource.Manager, name: str) -> str:
    status = manager.status_of(name).to_dict()
    found = next(c for c in status["conditions"] if c["type"] == "Pinned")
    assert found["status"] == "True", found
    message: str = found["message"]
    return message


def test_a_kept_value_serves_again_and_a_type_without_codec_is_read_again(
    tmp_path: Path,
) -> None:
    source = {"value": [1]}
    registry = _registry(source)
    history = ConfigHistory(tmp_path, HistoryLimits(), 1 << 20)
    values = KeptValues(history.state_dir, 1 << 20, registry)
    first = _manager(registry)
    for name in ("shared", "local"):
        first.pin(name)
        remember(history, values, "pin", name, {"version": 1}, lambda n: values.keep(first, n))
    first.stop()
    history.close()

    source["value"] = [2]
    history = ConfigHistory(tmp_path, HistoryLimits(), 1 << 20)
    second = _manager(registry)
    restore_resource_pins(history, values, second)
    assert _value(second, "shared") == [1] and _value(second, "local") == [2]
    assert _pinned(second, "shared").endswith(": the value kept in the state directory")
    assert _pinned(second, "local") == (
        "kept across a restart (pin of version 1); its type 'local' has no codec: the value "
        "served was read at start"
    )
    second.stop()

    changed = _manager(registry, tag="other")  # the entry changed: its value is read again
    restore_resource_pins(history, values, changed)
    assert _value(changed, "shared") == [2]
    assert "its config entry changed since" in _pinned(changed, "shared")
    changed.stop()
    history.close()
