"""Shared setup of the adapter tests: the shop example harness with handlers that
count their calls, and the principals of the scenarios."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

import harnessweaver as hw

ROOT = Path(__file__).resolve().parents[3]
SHOP = ROOT / "examples" / "shop" / "harness.yaml"
DOCS = ROOT / "docs" / "adapters.md"

# The shop's own handlers, wrapped to count calls.
sys.path.insert(0, str(SHOP.parent))
from shop import tools as shop_tools  # noqa: E402

BOB = {"id": "bob", "roles": ["finance"], "scopes": ["orders:read", "payments:refund"]}
CAROL = {"id": "carol", "roles": ["support"], "scopes": ["orders:read", "payments:refund"]}
FINANCE = {"id": "fin-1", "roles": ["finance"]}
SUPPORT = {"id": "sup-1", "roles": ["support"]}


class Shop:
    """The shop harness and a log of every handler call."""

    def __init__(self, on_approval: Any = None) -> None:
        self.calls: List[Any] = []

        def lookup_order(order_id: str) -> Dict[str, Any]:
            self.calls.append(("lookup_order", order_id))
            return shop_tools.lookup_order(order_id)

        def refund_payment(order_id: str, amount_usd: float, idempotency_key: str = "") -> Dict[str, Any]:
            self.calls.append(("refund_payment", order_id, amount_usd))
            return shop_tools.refund_payment(order_id, amount_usd, idempotency_key)

        self.h = hw.load(SHOP, handlers={"lookup_order": lookup_order, "refund_payment": refund_payment},
                         on_approval=on_approval)

    def refunds(self) -> List[Any]:
        return [c for c in self.calls if c[0] == "refund_payment"]


@pytest.fixture
def shop() -> Shop:
    return Shop()


def doc_block(heading: str) -> str:
    """The first ```python block under ``heading`` in docs/adapters.md."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(heading)
    begin = text.index("```python\n", start) + len("```python\n")
    return text[begin:text.index("```", begin)]
