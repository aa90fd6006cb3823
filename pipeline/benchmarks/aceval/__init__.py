"""AC-EVAL (Wei et al., 2024): 13 multiple-choice subjects on ancient Chinese in three levels
(general historical knowledge, short- and long-text understanding); test answers withheld."""

from pipeline.benchmark_card import BenchmarkCard
from pipeline.benchmarks.aceval.adapter import LAYOUT, parse, submission
from pipeline.contamination.passages import quoted_passages

CARD = BenchmarkCard(
    name="aceval", title="AC-EVAL",
    paper="Wei et al. 2024, AC-EVAL: Evaluating Ancient Chinese Language Understanding in Large "
          "Language Models",
    parse=parse,
    submission=submission,
    # The paper's numbers are on test (answers withheld: scored by submission); dev holds the
    # few-shot examples, and is scored only when sources.yaml asks (`evaluate: [dev, test]`).
    eval_splits=("test",),
    exemplar_splits=("dev",),
    # The passage a question asks about sits inside it (quoted, or after its instruction line).
    passages=quoted_passages,
    layout=LAYOUT,   # where its files lie under `path` (checked before any stage)
)
