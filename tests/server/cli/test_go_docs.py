"""The "Coming from the Go server" page names every flag of the Go tools."""

from __future__ import annotations

from pathlib import Path

from server.cli._go_flags import RUN_FLAGS, SERVER_FLAGS

PAGE = Path(__file__).resolve().parents[3] / "docs" / "coming-from-go.md"


def test_the_page_names_every_go_flag() -> None:
    text = PAGE.read_text()
    for flag in (*SERVER_FLAGS, *RUN_FLAGS):
        assert f"`-{flag}" in text, f"-{flag} is not on docs/coming-from-go.md"
