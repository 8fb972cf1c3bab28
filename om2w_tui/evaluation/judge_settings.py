"""The judge's settings: its modes and reply readings, the official evaluator's call settings, and `Settings`, what one
`om2w-tui judge` (or a run judging as it goes) is asked to do, with the official evaluator's name of its mode (the
output file is named by it: `judge_files.py`). The method itself is `judge.py`'s docstring."""

from __future__ import annotations

from dataclasses import dataclass

from om2w_tui.engine.config import RunConfig

MODES = ("webjudge", "webvoyager")
PARSINGS = ("official", "lenient")
MAX_TOKENS = 512                  # the official evaluator's max_tokens for every call
# our mode (a run's --judge-mode: engine/config.py's JUDGE_MODES) -> the file name's mode, as the official evaluator
# names its modes
FILE_MODES = {"webjudge": "WebJudge_Online_Mind2Web_eval", "webjudge-answer": "WebJudge_Online_Mind2Web_eval_answer",
              "webvoyager": "WebVoyager_eval"}


@dataclass
class Settings:
    model: str
    mode: str = "webjudge"
    score_threshold: int = 3
    include_answer: bool = False
    last_screenshots: int = 3
    workers: int = 4
    retries: int = 5
    backoff: float = 2.0
    request_timeout: float = 300.0
    temperature: float | None = 0.0    # the official setting; None: not sent
    max_tokens: int | None = MAX_TOKENS
    parsing: str = "official"          # how replies are read: as the official evaluator reads them, or leniently

    @property
    def mode_name(self) -> str:
        return "webjudge-answer" if self.mode == "webjudge" and self.include_answer else self.mode

    @property
    def file_mode(self) -> str:
        return FILE_MODES[self.mode_name]

    @classmethod
    def of_run(cls, cfg: RunConfig) -> Settings:
        """A run's live judge (--judge-model, --judge-mode, --judge-workers): the same method and file as `om2w-tui
        judge --mode ...` with those settings."""
        answer = cfg.judge_mode == "webjudge-answer"
        return cls(model=cfg.judge_model or "", mode="webjudge" if answer else cfg.judge_mode, include_answer=answer,
                   workers=cfg.judge_workers)
