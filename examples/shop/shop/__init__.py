"""shop: catalog, cart pricing, orders and storage for a tiny web shop."""

from .catalog import Catalog, Product
from .pricing import cart_total, apply_discount

__all__ = ["Catalog", "Product", "cart_total", "apply_discount"]
__version__ = "0.1.0"
