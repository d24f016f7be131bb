"""Native handlers of the support-desk example (`support_tools:<function>` in its
manifests). The order data is `data/orders.json`, which the TypeScript demo
reads too, so both demos see the same shop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

_ORDERS: Dict[str, Any] = json.loads((Path(__file__).resolve().parent / "data" / "orders.json").read_text("utf-8"))


def lookup_order(order_id: str) -> Dict[str, Any]:
    """The order, or `{"order_id": ..., "status": "unknown"}`."""
    return _ORDERS.get(order_id, {"order_id": order_id, "status": "unknown"})


def refund_payment(order_id: str, amount_usd: float, reason: str = "", idempotency_key: str = "") -> Dict[str, Any]:
    """Pretends to refund; a payment API would dedupe on the idempotency key."""
    return {"order_id": order_id, "refunded_usd": amount_usd, "status": "refunded", "idempotency_key": idempotency_key}


def send_email(to: str, subject: str, body: str) -> Dict[str, Any]:
    """Pretends to queue the message (the demo never sends mail)."""
    return {"queued": True, "to": to}
