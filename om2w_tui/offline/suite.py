"""The offline suite: the five local sites (`sites/`) on their own ports, the shipped tasks, and the reference judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from om2w_tui.json_input import load
from om2w_tui.offline.serving import BackgroundServer
from om2w_tui.offline.sites import SITE_HANDLERS
from om2w_tui.offline.sites.common import DATA_DIR

TASKS_TEMPLATE: Path = DATA_DIR / "tasks.json"
SITE_NAMES: tuple[str, ...] = tuple(SITE_HANDLERS)


def load_task_templates(path: Path = TASKS_TEMPLATE) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = load(path)   # the shipped file: a list of rows
    return tasks


def substitute_sites(value: Any, base_urls: dict[str, str]) -> Any:
    """Replace every `{site}` placeholder in the strings of a JSON value with that site's base URL."""
    if isinstance(value, str):
        for name, url in base_urls.items():
            value = value.replace("{" + name + "}", url)
        return value
    if isinstance(value, list):
        return [substitute_sites(item, base_urls) for item in value]
    if isinstance(value, dict):
        return {key: substitute_sites(item, base_urls) for key, item in value.items()}
    return value


def normalise_text(text: str) -> str:
    return " ".join(text.casefold().split())


def judge_answer(task: dict[str, Any], answer: str | None) -> bool:
    """Correct when every reference string appears in the answer (case-insensitive, whitespace-normalised)."""
    references = task.get("reference_answer") or []
    if isinstance(references, str):
        references = [references]
    if not answer or not references:
        return False
    normalised = normalise_text(answer)
    return all(normalise_text(reference) in normalised for reference in references)


class OfflineSuite:
    """Serves every offline site on its own 127.0.0.1 port (one server and daemon thread per site)."""

    def __init__(self, host: str = "127.0.0.1"):
        self.host = host
        self.base_urls: dict[str, str] = {}
        self._servers: dict[str, BackgroundServer] = {}

    def start(self) -> OfflineSuite:
        if self._servers:
            return self
        try:
            for name, handler in SITE_HANDLERS.items():
                server = BackgroundServer(handler, app=None, host=self.host, port=0, name=name)
                server.start()
                self._servers[name] = server
                self.base_urls[name] = server.base_url
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        servers, self._servers = self._servers, {}
        self.base_urls = {}
        for server in servers.values():
            server.stop()

    @property
    def running(self) -> bool:
        return bool(self._servers)

    def tasks(self) -> list[dict[str, Any]]:
        """The shipped tasks with `{site}` placeholders replaced by this suite's base URLs."""
        if not self.running:
            raise RuntimeError("OfflineSuite.tasks() needs a started suite (its URLs are only known once serving)")
        tasks: list[dict[str, Any]] = substitute_sites(load_task_templates(), self.base_urls)   # same shape back
        return tasks

    def __enter__(self) -> OfflineSuite:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
