import pytest

from shop.catalog import Catalog, Product


def make_catalog():
    c = Catalog()
    c.add(Product("A1", "Blue mug", 1200))
    c.add(Product("B2", "Red mug", 1100))
    c.add(Product("C3", "Tea towel", 700))
    return c


def test_search_is_case_insensitive():
    assert [p.sku for p in make_catalog().search("MUG")] == ["A1", "B2"]


def test_duplicate_sku_rejected():
    c = make_catalog()
    with pytest.raises(ValueError):
        c.add(Product("A1", "Another", 1))


def test_price_of():
    assert make_catalog().price_of("C3") == 700


def test_price_of_unknown_sku_raises_keyerror():
    with pytest.raises(KeyError):
        make_catalog().price_of("ZZ9")
