import pytest

from shop.stats import clamp, count_above, mean, spread


def test_mean():
    assert mean([1.0, 2.0, 6.0]) == 3.0


def test_count_above():
    assert count_above([1.0, 5.0, 10.0], 3.0) == 2
    assert count_above([], 3.0) == 0


def test_clamp():
    assert clamp(5, 0, 10) == 5
    assert clamp(-3, 0, 10) == 0
    assert clamp(42, 0, 10) == 10


def test_clamp_rejects_empty_range():
    with pytest.raises(ValueError):
        clamp(1, 5, 4)
    assert clamp(7, 7, 7) == 7


def test_spread():
    assert spread([4, 9, 2]) == 7
    assert spread([]) == 0
