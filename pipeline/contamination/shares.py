"""A share next to its threshold, printed so that the text sides with the number: a share below
the threshold never reads as the threshold or above it (0.4996 with a threshold of 0.5 is
"0.4996", not "0.500"), and one at or above it never reads below it."""

from __future__ import annotations

DIGITS = 3                       # decimals shown, more only where three would cross the threshold
MAX_DIGITS = 9


def share_text(share: float, threshold: float) -> str:
    """`share` with DIGITS decimals, or as many more as keep it on its side of `threshold`."""
    above = share >= threshold
    for digits in range(DIGITS, MAX_DIGITS + 1):
        text = f"{share:.{digits}f}"
        if (float(text) >= threshold) == above:
            return text
    # closer to the threshold than MAX_DIGITS decimals tell: the last decimal truncated toward
    # the share's own side
    scale = 10 ** MAX_DIGITS
    value = int(share * scale) / scale
    return f"{value:.{MAX_DIGITS}f}" if (value >= threshold) == above else repr(share)
