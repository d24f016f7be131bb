"""A shop's tools as a developer would write them: typed Python functions with
docstrings. `test_add_tool.py` turns each into a manifest with
`harnessweaver add tool shop_tools:<function>` and calls them governed.

Arguments arrive as JSON values: a pydantic model, TypedDict or dataclass
parameter receives a dict, an Enum parameter its value."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, TypedDict

from pydantic import BaseModel, Field
from typing_extensions import NotRequired


class OrderStatus(str, enum.Enum):
    PENDING = "pending"
    SHIPPED = "shipped"
    CANCELLED = "cancelled"


class Priority(enum.IntEnum):
    LOW = 1
    NORMAL = 2
    URGENT = 3


class Address(TypedDict):
    street: str
    city: str
    postcode: str
    country: Literal["DE", "FR", "GB", "US"]
    unit: NotRequired[str]


class LineItem(BaseModel):
    sku: str = Field(pattern=r"^SKU-[0-9]+$")
    quantity: int = Field(ge=1, le=100)
    gift_wrap: bool = False


class Customer(BaseModel):
    email: str
    loyalty_tier: Literal["bronze", "silver", "gold"] = "bronze"
    shipping: Optional[LineItem] = None


@dataclass
class Dimensions:
    length_cm: float
    width_cm: float
    height_cm: float
    fragile: bool = False
    labels: List[str] = field(default_factory=list)


def lookup_order(order_id: str) -> Dict[str, Any]:
    """Look up an order by its id.

    Args:
        order_id: The order's id, like `A-1001`.
    """
    return {"order_id": order_id, "status": "shipped"}


def search_products(
    query: str, limit: int = 10, max_price: Optional[float] = None, in_stock_only: bool = False, tags: list[str] | None = None
) -> List[Dict[str, Any]]:
    """Search the catalogue.

    Matches the query against names and descriptions.

    Args:
        query: Words to look for.
        limit: At most this many results.
        max_price: Only products at or under this price (USD).
        in_stock_only: Leave out products that are sold out.
        tags: Only products with every one of these tags.
    """
    return [{"name": f"{query} #{i}", "tags": tags or []} for i in range(min(limit, 3))]


def set_order_status(
    order_id: str, status: OrderStatus, note: Literal["customer", "internal"] = "internal", priority: Priority = Priority.NORMAL
) -> Dict[str, Any]:
    """Move an order to a new status.

    :param order_id: the order
    :param status: the new status
    :param note: who sees the change
    """
    return {"order_id": order_id, "status": OrderStatus(status).value, "note": note, "priority": int(priority)}


def create_shipment(
    order_id: str, address: Address, items: List[LineItem], options: Optional[Dict[str, bool]] = None
) -> Dict[str, Any]:
    """Ship some of an order's items to an address."""
    parsed = [LineItem.model_validate(i) for i in items]
    return {"order_id": order_id, "city": address["city"], "units": sum(i.quantity for i in parsed), "options": options or {}}


def refund_payment(
    order_id: str, amount_usd: float, reason: Literal["damaged", "late", "other"], memo: str | None = None
) -> Dict[str, Any]:
    """Refund part or all of an order's payment."""
    return {"order_id": order_id, "refunded_usd": amount_usd, "reason": reason, "memo": memo}


def bulk_update_prices(
    updates: dict[str, float], currency: Literal["USD", "EUR"] = "USD", dry_run: bool = True
) -> Dict[str, Any]:
    """Set new prices for many SKUs at once."""
    return {"changed": 0 if dry_run else len(updates), "currency": currency}


def apply_discount(
    code: Annotated[str, "The discount code, as printed on the voucher."], customer: Customer, stackable: bool = False
) -> Dict[str, Any]:
    """Apply a discount code to a customer's basket."""
    c = Customer.model_validate(customer)
    return {"code": code, "tier": c.loyalty_tier, "stackable": stackable}


def quote_shipping(
    parcel: Dimensions,
    weight_kg: float,
    destination: Tuple[str, str],
    services: set[Literal["standard", "express", "overnight"]] = frozenset({"standard"}),
) -> Dict[str, Any]:
    """Quote shipping for a parcel to a (country, postcode) destination."""
    return {
        "volume_l": parcel["length_cm"] * parcel["width_cm"] * parcel["height_cm"] / 1000,
        "to": destination[0],
        "services": sorted(services),
    }


class Opaque:
    """A class with no JSON Schema form."""


def export_report(target: Opaque) -> None:
    """Not a tool `add tool` can describe: `Opaque` has no JSON form."""
