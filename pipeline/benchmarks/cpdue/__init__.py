"""CP-DUE: deep understanding of classical poetry in five levels (cultural knowledge, theme and
style, word selection, allusions, overall quality), all single-choice."""

from pathlib import Path

from pipeline.benchmarks.benchmark_card import BenchmarkCard
from pipeline.benchmarks.cpdue.adapter import parse

CARD = BenchmarkCard(
    name="cpdue",
    title="CP-DUE",
    paper="Beyond Memorization and Recitation: Evaluating LLMs on Deep Understanding of Ancient "
          "Chinese Poetry (CP-DUE; anonymous ACL submission)",
    folder=Path(__file__).parent,
    parse=parse,
)
