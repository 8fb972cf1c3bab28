"""Judging finished runs: WebJudge (the official evaluator's method, against any OpenAI-compatible judge), the
official evaluator's own script run on a folder, and the run report."""
