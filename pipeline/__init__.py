"""wenheng (文衡): the library behind the asset graph. Nothing here imports Dagster except
`pipeline.definitions`, so every piece of domain logic is testable as plain Python."""
