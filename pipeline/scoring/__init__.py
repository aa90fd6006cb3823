"""Rule scorers: pure functions from (item, response text) to a score in [0, 1] or a reason why not."""
