"""CP-DUE: deep understanding of classical poetry in five levels (cultural knowledge, theme and
style, word selection, allusions, overall quality), all single-choice; AU asks its three questions
in one prompt, answered with three letters."""

from pipeline.benchmark_card import BenchmarkCard
from pipeline.benchmarks.cpdue.adapter import parse
from pipeline.contamination.passages import classical
from pipeline.sources.layout import JSONL

CARD = BenchmarkCard(
    name="cpdue", title="CP-DUE",
    paper="Beyond Memorization and Recitation: Evaluating LLMs on Deep Understanding of Ancient "
          "Chinese Poetry (CP-DUE; anonymous ACL submission)",
    parse=parse,
    # AU: three letters in order (figure, source, meaning); 1 when all are right (the paper's
    # AU-all), each question's 0/1 in details q1-q3 (its AU Q1-Q3). The other tasks: one letter.
    scorers={"AU": "option_sequence"},
    # WS asks about a word of the poem its question quotes whole.
    passages=classical(questions=frozenset({"WS"})),
    layout=JSONL,   # where its files lie under `path` (checked before any stage)
)
