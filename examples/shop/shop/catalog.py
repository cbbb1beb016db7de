"""Products and the catalog that holds them."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Product:
    sku: str
    name: str
    price_cents: int
    tags: tuple[str, ...] = ()


@dataclass
class Catalog:
    products: dict[str, Product] = field(default_factory=dict)

    def add(self, product: Product) -> None:
        if product.sku in self.products:
            raise ValueError(f"duplicate sku {product.sku}")
        self.products[product.sku] = product

    def get(self, sku: str) -> Product | None:
        return self.products.get(sku)

    def price_of(self, sku: str) -> int:
        product = self.get(sku)
        return product.price_cents

    def search(self, text: str) -> list[Product]:
        needle = text.lower()
        matches = [p for p in self.products.values() if needle in p.name.lower()]
        count = len(matches)
        return sorted(matches, key=lambda p: p.name)

    def to_json(self) -> str:
        return json.dumps(
            [
                {"sku": p.sku, "name": p.name, "price_cents": p.price_cents}
                for p in self.products.values()
            ]
        )
