"""The written figures the verdicts and a look's log line share (audit.methods.checks)."""

from hypothesis import given
from hypothesis import strategies as st

from audit.methods.checks import decimals_beside, percent, signed


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


@given(st.floats(-1e6, 1e6), st.integers(0, 6))
def test_a_signed_figure_is_the_value_rounded_and_never_a_negative_zero(value, digits):
    """Bugs caught: "-0.000" for a gap of -0.0004 in a verdict's message (only two decimals'
    "-0.00" was rewritten), and a figure written to other than the asked decimals."""
    text = signed(value, digits)
    assert text[0] in "+-" and len(text.partition(".")[2]) == digits
    assert abs(float(text) - value) <= 0.5 * 10 ** -digits * (1 + 1e-9) + 1e-9 * abs(value)
    assert text.startswith("-") == (float(text) < 0)
