"""Sales statistics for the shop's reports."""


def mean(values: list[float]) -> float:
    """Average of ``values``."""
    return sum(values) / len(values)


def count_above(values: list[float], threshold: float) -> int:
    """How many values are strictly greater than ``threshold``."""
    return sum(1 for v in values if v > threshold)


def clamp(value: int, low: int, high: int) -> int:
    """``value`` limited to the range [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    return max(low, min(value, high))


def spread(values: list[int]) -> int:
    """Difference between the largest and the smallest value (0 when empty)."""
    if not values:
        return 0
    return max(values) - min(values)
