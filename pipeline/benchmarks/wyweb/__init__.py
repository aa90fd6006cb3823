"""WYWEB (Zhou et al., ACL Findings 2023): nine classical-Chinese NLP tasks (classification,
sequence labeling, reading comprehension, translation), verbalised for generative models."""

from pipeline.benchmark_card import BenchmarkCard
from pipeline.benchmarks.wyweb.adapter import LAYOUT, parse

CARD = BenchmarkCard(
    name="wyweb", title="WYWEB",
    paper="Zhou et al. 2023, WYWEB: A NLP Evaluation Benchmark For Classical Chinese",
    parse=parse,
    # Labeling tasks are asked as rewriting the text and scored on the marks put back.
    scorers={"punc": "punctuation_f1", "glner": "entity_f1", "wywmt": "chrf"},
    # The public snapshot has dev and train splits, no test: the dev split is what is evaluated.
    eval_splits=("dev",),
    exemplar_splits=(),
    layout=LAYOUT,   # where its files lie under `path` (checked before any stage)
)
