import pytest

from shop.pricing import apply_discount, bulk_discount, cart_total, line_total


def test_apply_discount_rounds():
    assert apply_discount(999, 10) == 899


def test_apply_discount_rejects_bad_percent():
    with pytest.raises(ValueError):
        apply_discount(100, 120)


def test_line_total():
    assert line_total(250, 4) == 1000


def test_cart_total_with_discount():
    assert cart_total([(1000, 2), (500, 1)], discount_percent=20) == 2000


def test_bulk_discount_thresholds():
    assert bulk_discount(9) == 0
    assert bulk_discount(10) == 5
    assert bulk_discount(50) == 10
