"""The written figures the verdicts and a look's log line share (audit.methods.checks)."""

from hypothesis import given
from hypothesis import strategies as st

from audit.methods.checks import decimals_beside, percent


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_a_value_is_written_on_its_own_side_of_the_threshold_with_the_fewest_decimals(value,
                                                                                         threshold):
    """Bugs caught: a count of decimals that still rounds across the threshold (0.1996 read
    "0.20" beside "alive from 0.2"), or that adds digits a shorter figure did not need."""
    digits = decimals_beside(value, threshold)
    assert 2 <= digits <= 12
    if digits < 12:
        assert (round(value, digits) >= threshold) == (value >= threshold)
    if digits > 2:
        assert (round(value, digits - 1) >= threshold) != (value >= threshold)


def test_a_mass_below_one_never_reads_a_hundred_percent():
    # Bug caught: the family-wise 1 - 0.05 / 1400 of an interim look written as "100%".
    assert percent(1 - 0.05 / 1400) == "99.996%"
    assert [percent(p) for p in (0.94, 1 - 0.05 / 7, 1.0)] == ["94%", "99.29%", "100%"]
