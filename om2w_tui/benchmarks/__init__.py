"""Benchmarks as files: task files (loaders, fetching with pins, date refreshing), websites as pacing keys, the
trajectory layouts the official evaluator reads (v1, v2, earlier attempts) and the conformance check."""
