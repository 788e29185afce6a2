"""What the board page shows, read as the browser renders it (shared by the browser tests)."""

from __future__ import annotations

from typing import Any


def shown_values(page: Any) -> dict[str, tuple[int, bool]]:
    page.wait_for_selector("[data-move]")
    values = {}
    for element in page.query_selector_all("[data-move]"):
        move = element.get_attribute("data-move")
        assert move not in values, f"two elements carry data-move={move}"
        values[move] = (
            int(element.get_attribute("data-value")),
            element.get_attribute("data-exact") == "true",
        )
    return values
