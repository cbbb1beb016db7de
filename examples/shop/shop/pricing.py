"""Cart totals and discounts. Amounts are integer cents."""

from __future__ import annotations

from typing import Iterable

TAX_RATE = 0.2


def apply_discount(amount_cents: int, percent: int) -> int:
    """Amount after a percentage discount, rounded to the nearest cent."""
    if not 0 <= percent <= 100:
        raise ValueError("percent must be between 0 and 100")
    return round(amount_cents * (100 - percent) / 100)


def line_total(price_cents: int, quantity: int) -> int:
    if quantity < 0:
        raise ValueError("quantity must not be negative")
    return price_cents * quantity


def cart_total(lines: Iterable[tuple[int, int]], discount_percent: int = 0) -> int:
    """Total of (price, quantity) lines with the discount applied once."""
    subtotal = sum(line_total(price, qty) for price, qty in lines)
    return apply_discount(subtotal, discount_percent)


def bulk_discount(quantity: int) -> int:
    """Percent off for buying many of one item: 5% from 10, 10% from 50."""
    if quantity > 50:
        return 10
    if quantity >= 10:
        return 5
    return 0


def with_tax(amount_cents: int) -> str:
    total: int = round(amount_cents * (1 + TAX_RATE))
    return total
