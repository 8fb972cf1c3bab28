"""What a run measures, declared once: the settings whose change under an existing folder would mix two
measurements in one run (the model and its decoding, the agent and its budget, the browser the pages are shown in,
the benchmark and the selection). Not among them: where and how fast the episodes run (slots, pacing, executor,
shard), how the harness meets its own faults (retries, the breaker, the model guard), how the episodes are judged
as they go, where the model is served and the variable its key is read from (the served model's name is compared),
the browser's binary, the training rows kept beside.

Two readers compare with them. A campaign compares each lane with `campaign.json` (engine/plan.resume_problem), the
selection included: its arms must be compared on the same tasks. The selection is compared by the tasks it selects
(`campaign.json`'s `selection`, the task ids every lane runs: `selection_change`), not by the files that say it (a
task file grown, an --exclude-tasks file edited under the same path); a campaign.json written before it was kept
has only the settings, compared as they are. A run compares with its own manifests
(`run_changes`, launch's preflight), the selection left out: a run may grow (`--limit 10` first, then the whole
file), but not a task it settled, read otherwise from an edited task file (`task_changes`). A changed run is
refused unless `--resume-changed` is given; then the change is kept in `run.json`'s `changes` (`changes_kept`) and
`report` warns that the run's episodes mix two measurements."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.tasks import Task
from om2w_tui.engine.config import RunConfig
from om2w_tui.engine.results import EpisodeRecord, read_manifest, read_results
from om2w_tui.engine.settings import BEYOND, BY_KEY, FAULTS, JUDGING, PACING, SETTINGS, WHERE, Switch
from om2w_tui.run_folder import RunFolder

NOT_MEASURED = frozenset({s.key for s in SETTINGS if s.group in (PACING, FAULTS, WHERE, BEYOND, JUDGING)}
                         | {"out", "shard", "vllm", "api_key_env", "chromium", "instruction_template_file",
                            "record_rows", "stop_grace", "retries", "resume_changed"})
MEASURED = tuple(f.name for f in dataclasses.fields(RunConfig) if f.name not in NOT_MEASURED)
# which tasks run, not how each is measured: a run may widen it, a campaign's lanes may not
SELECTION = frozenset({"tasks", "task_ids", "levels", "sites", "limit", "exclude_tasks"})
# what a run's manifest keeps of them (run.json's "measured"; older manifests only had the resolved "config")
MANIFEST_KEY = "measured"
CHANGES_KEY = "changes"


def measured(config: RunConfig) -> dict[str, Any]:
    """What `config` measures, as the JSON a folder records it in (no secret: a key's variable is not among them)."""
    d = config.to_json()
    return {k: d[k] for k in MEASURED}


def same(key: str, was: Any, now: Any) -> bool:
    """Whether a setting measures the same as it did, by its setting's kind (a selection is a set)."""
    return BY_KEY[key].kind.same(was, now) if key in BY_KEY else bool(was == now)


def changes(was: Mapping[str, Any], now: Mapping[str, Any], keys: Iterable[str] = MEASURED,
            dashes: str = "") -> list[str]:
    """Each of `keys` that `was` records and `now` measures otherwise, as its flag is spelt (as a plan spells it, or
    with `dashes` before it as the command line does): `temperature 0.0 -> 0.5`, `top-p unset -> 0.9`, a switch
    `no-vision now given` or `no longer given`."""
    return [said(k, was[k], now[k], dashes) for k in keys if k in was and k in now and not same(k, was[k], now[k])]


def said(key: str, was: Any, now: Any, dashes: str = "") -> str:
    """One change of a setting in words, by its flag (`--level`, `--no-vision`), never its field's name or a Python
    value."""
    setting = BY_KEY.get(key)
    flag = dashes + (setting.flag.removeprefix("--") if setting is not None else key.replace("_", "-"))
    if setting is not None and isinstance(setting.kind, Switch):
        return f"{flag} {'now given' if now == setting.kind.sets else 'no longer given'}"
    return f"{flag} {'unset' if was is None else repr(was)} -> {'unset' if now is None else repr(now)}"


def recorded(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's manifest says it measured. A manifest before `measured` was kept has its resolved `config`: the
    user agent there is the one the browser gave, not the one asked for, so it is left out."""
    kept = manifest.get(MANIFEST_KEY)
    if isinstance(kept, dict):
        return kept
    config = manifest.get("config")
    return {k: v for k, v in config.items() if k != "user_agent"} if isinstance(config, dict) else {}


def run_changes(config: RunConfig, manifests: Sequence[Mapping[str, Any]]) -> list[str]:
    """What `config` measures otherwise than the run (each shard's manifest) it would resume, the selection left
    out; each change once."""
    now = measured(config)
    keys = [k for k in MEASURED if k not in SELECTION]
    return list(dict.fromkeys(c for m in manifests for c in changes(recorded(m), now, keys, "--")))


def task_changes(latest: Mapping[str, EpisodeRecord], tasks: Sequence[Task]) -> list[str]:
    """The selected tasks that settled (`latest`: each task's latest record) as another version of themselves (the
    task file edited since: another text, site, reference or hint; `Task.digest` in their records), named; records
    from before the digest say nothing."""
    changed = [t.task_id for t in tasks if (r := latest.get(t.task_id)) is not None and r.settles
               and r.task_digest is not None and t.digest and r.task_digest != t.digest]
    if not changed:
        return []
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return [f"--tasks: {len(changed)} settled task(s) changed in the task file since they ran ({shown})"]


def folder_changes(config: RunConfig, tasks: Sequence[Task] = (),
                   latest: Mapping[str, EpisodeRecord] | None = None) -> list[str]:
    """`run_changes` against the run in `config.out` (every shard's manifest; one that cannot be read says nothing),
    then `task_changes` of the selected `tasks`; nothing where no task settled yet (nothing measured to mix with).
    `latest`: each task's latest record, where the caller has read the run's records already."""
    latest = read_results(config.out).latest_records() if latest is None else latest
    if not any(r.settles for r in latest.values()):
        return []
    found = (read_manifest(p)[0] for p in RunFolder(config.out).manifests())
    return run_changes(config, [m for m in found if m]) + task_changes(latest, tasks)


def earlier_task_files(before: Mapping[str, Any] | None, sha256: str) -> list[str]:
    """run.json's `task_file.earlier_sha256`: the digests of the task files the run read before this one, kept."""
    part = (before or {}).get("task_file") or {}
    kept = [x for x in part.get("earlier_sha256") or () if isinstance(x, str)]
    last = part.get("sha256")
    return list(dict.fromkeys([*kept, *([last] if isinstance(last, str) and last != sha256 else [])]))


def some(ids: Sequence[str], n: int = 8) -> str:
    """`a, b, c` (the first `n`, then `and K more`)."""
    return ", ".join(ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n else "")


def selection_change(was: Sequence[str], now: Sequence[str]) -> str:
    """'' when `now` selects the tasks `was` did (in any order), else how it differs, as a campaign's refusal says
    it: `selection: 3 tasks -> 2 (left out: a)`, `(added: b)`."""
    before, after = set(was), set(now)
    gone, added = [t for t in was if t not in after], [t for t in now if t not in before]
    if not gone and not added:
        return ""
    how = "; ".join(([f"left out: {some(gone)}"] if gone else []) + ([f"added: {some(added)}"] if added else []))
    return f"selection: {len(before)} tasks -> {len(after)} ({how})"


def refusal(out: object, found: Sequence[str]) -> str:
    """The preflight's words for a resume that changes what the run measures."""
    return (f"--out {out}: the run there measured otherwise ({'; '.join(found)}); run it as it was, give the "
            f"changed run another --out, or add --resume-changed to go on with both in one run (kept in run.json, "
            f"and `report` warns)")


def changes_kept(before: Mapping[str, Any] | None, found: Sequence[str]) -> list[dict[str, Any]]:
    """run.json's `changes`: the earlier manifest's, and now `found` with the time, when there is any."""
    kept = list((before or {}).get(CHANGES_KEY) or [])
    return [*kept, {"at": time.time(), "changed": list(found)}] if found else kept


def kept_in_manifest(before: Mapping[str, Any] | None, config: RunConfig, found: Sequence[str]) -> dict[str, Any]:
    """What run.json keeps of this: what the run measures, and every change `--resume-changed` let through."""
    kept = changes_kept(before, found)
    return {MANIFEST_KEY: measured(config), **({CHANGES_KEY: kept} if kept else {})}


def _kept(manifest: Mapping[str, Any] | None) -> list[tuple[Any, list[str]]]:
    """Each resume a manifest keeps (`changes_kept`): (its time as written, its changes); what is not of that shape
    is passed over."""
    kept = (manifest or {}).get(CHANGES_KEY)
    entries = [e for e in kept if isinstance(e, dict)] if isinstance(kept, list) else []
    found = [(e.get("at"), [c for c in changed if isinstance(c, str)]) for e in entries
             if isinstance(changed := e.get("changed"), list)]
    return [(at, said) for at, said in found if said]


def changes_said(manifest: Mapping[str, Any] | None) -> list[str]:
    """Each change a manifest keeps (`changes_kept`), once; what is not of that shape is passed over."""
    return list(dict.fromkeys(c for _, said in _kept(manifest) for c in said))


def changes_when(manifest: Mapping[str, Any] | None) -> list[str]:
    """Each resume a manifest keeps (`changes_kept`), with when it was: `2025-05-01 12:00:03 UTC: --temperature 0.0
    -> 0.5; --max-steps 30 -> 9` (`at an unknown time` where its time is not a time)."""
    return [f"{_when(at)}: {'; '.join(said)}" for at, said in _kept(manifest)]


def _when(at: Any) -> str:
    try:
        if isinstance(at, (int, float)) and not isinstance(at, bool):
            return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
    except (OverflowError, OSError, ValueError):
        pass
    return "at an unknown time"


def resumes_changed(out: Path) -> list[str]:
    """What `doctor` says of a run folder resumed with --resume-changed, one line per manifest that keeps a change
    (a shard's each): its file, and each change with when, as `report` warns of them."""
    return [f"{p.name}: the run went on under other settings than it began with (--resume-changed, "
            f"{'; then '.join(when)}); its episodes mix two measurements"
            for p in RunFolder(out).manifests() if (when := changes_when(read_manifest(p)[0]))]
