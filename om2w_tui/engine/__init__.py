"""The engine: what runs a benchmark with no front end (dispatch, pacing, results, sharding)."""
