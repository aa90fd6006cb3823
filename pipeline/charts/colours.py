"""Model colours and hatches: a model keeps its colour across a report's charts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# Colour-blind-safe (Okabe-Ito). With `model_colours`, a model keeps its colour across a report's
# charts; without, a series gets the colour of its position in its chart.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
# A model's further series in one chart (another split, setting or variant): hatched in its colour.
HATCHES = ("////", "....", "xxxx", "\\\\\\\\", "++++", "oo")


def model_colours(models: Iterable[str]) -> dict[str, str]:
    """One colour per model for every chart of a report: the models sorted, each given the Okabe-Ito
    colour of its place (repeating after eight)."""
    return {model: COLOURS[k % len(COLOURS)] for k, model in enumerate(sorted({str(m) for m in models}))}


def _style(name: str, k: int, series: list[str], model_of: Mapping[str, str],
           colours: Mapping[str, str] | None) -> tuple[str, str | None]:
    """A series' (colour, hatch). Without `colours`: the colour of its place in the chart, solid.
    With: its model's colour; the model's first series solid, its further ones hatched."""
    if colours is None:
        return COLOURS[k % len(COLOURS)], None
    model = model_of[name]
    colour = colours.get(model) or COLOURS[k % len(COLOURS)]
    nth = [s for s in series if model_of[s] == model].index(name)
    return colour, (HATCHES[(nth - 1) % len(HATCHES)] if nth else None)
