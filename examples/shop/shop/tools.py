"""Native handlers of the shop example. `hw.load("examples/shop/harness.yaml")`
imports them (the harness directory is first on `sys.path`)."""

from __future__ import annotations

from typing import Any, Dict, List

_ORDERS = {
    "A-1001": {"order_id": "A-1001", "status": "shipped", "total_usd": 42.5, "customer": "jane@example.com"},
    "A-1002": {"order_id": "A-1002", "status": "processing", "total_usd": 180.0, "customer": "li@example.com"},
}

_CATALOG = ["café beans", "crème brûlée kit", "🍰 cake stand", "espresso cups"]


def lookup_order(order_id: str) -> Dict[str, Any]:
    """The order, or `{"order_id": ..., "status": "unknown"}`."""
    return _ORDERS.get(order_id, {"order_id": order_id, "status": "unknown"})


def refund_payment(order_id: str, amount_usd: float, idempotency_key: str = "") -> Dict[str, Any]:
    """Pretends to refund; the idempotency key is what a payment API would dedupe on."""
    return {"order_id": order_id, "refunded_usd": amount_usd, "idempotency_key": idempotency_key}


def search_catalog(query: str, limit: int = 10) -> List[str]:
    """Catalogue entries containing `query`."""
    return [item for item in _CATALOG if query.lower() in item.lower()][:limit]
