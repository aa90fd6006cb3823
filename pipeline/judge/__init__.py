"""The LLM judge: WenMind's four score types and Fùxì's binary evaluator, as plain functions.

  verdicts.py     score types: structured-output schemas, reading a verdict into a score
  prompts.py      a card's judge.yaml (prompts, routes, version), or the official prompt file a
                  card pins (WenMind: pipeline/benchmarks/wenmind/official_prompts.py)
  run.py          judging a partition through the engine layer and the response cache, retries
  reliability.py  repeat spread, judge vs rule agreement (Cohen's kappa), the Markdown table

Configured in models.yaml `judges:` (pipeline/config/loading.py `load_judges`); wired as the
`judgements` and `judge_reliability` assets (assets/judge.py)."""
