"""The asset groups, named once. Every asset's decorator takes its group from here, and every job
of pipeline/definitions.py selects its assets by group: an asset's group is where its job
membership is written, and nowhere else.

    SOURCES, ITEMS   the item stages (job `prepare`, one run per benchmark partition; what reads
                     every benchmark at once, contamination, runs with `publish`)
    EVALUATE         model inputs, responses, judgements, scores, judge reliability (job `evaluate`,
                     one run per benchmark x model partition)
    CORPORA          a user corpus against every item (job `scan`, one run per corpus)
    WAREHOUSE        the DuckDB warehouse and the score assets built on it (job `publish`)

The configuration observed as data (benchmark_files, benchmark_corrections, prompt_settings,
dedup_settings, index_settings in SOURCES; model_settings in EVALUATE; corpus_files in CORPORA)
is in no job: no run builds it
(pipeline/run_inputs.py observes it).
"""

SOURCES = "sources"
ITEMS = "items"
EVALUATE = "evaluate"
CORPORA = "corpora"
WAREHOUSE = "warehouse"
