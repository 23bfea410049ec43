"""The server's public face lists exactly what it exports."""

from __future__ import annotations

import importlib

import server


def test_all_lists_existing_public_names() -> None:
    exported = server.__all__
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), n))
    for name in exported:
        assert hasattr(server, name), name
    public = {
        n
        for n, v in vars(server).items()
        if not n.startswith("_") and not isinstance(v, type(importlib))
    }
    assert public <= set(exported)


def test_config_defaults_are_production_safe() -> None:
    config = server.Config(config_path="x.json")
    assert config.addr == "127.0.0.1:8080"  # loopback unless told otherwise
    assert config.watch and config.workers == 1
    assert config.max_body_bytes == 8 * 1024 * 1024
