"""Summaries of finished runs, one or several side by side: `om2w-tui report OUT [OUT ...]`.

The computation is plain functions over plain data, for the command line and for a screen of the console:
`summarize(out) -> dict` for one run folder, `compare([summary, ...]) -> dict` for several, and their text
(Markdown, CSV, JSON, and the sections a rich table is drawn from). The command is `cli/report.py`; the rich
table is `frontends/console/report_table.py` and the console's screen `frontends/console/screens/report.py`: the
engine imports no front end.

A run folder is anything in the Online-Mind2Web v1 (or v2) layout. With om2w-tui's `results.jsonl` and `run.json`
the summary has statuses, durations, tokens and errors; a folder written by another harness has only its task
folders (steps = the length of the action history). Success comes from a judge output file in the folder
(`*_auto_eval_results.json`: ours, the official evaluator's, or its copy `official_...` that `judge --official`
keeps; the newest, or the one given), else from the offline suite's `correct`; every other judge file in the folder
is summed up beside it, so our judge's rate and the official one's are read side by side. A file's mode and model
come from its lines (ours) or its name (the official evaluator's lines carry neither). Like the official
evaluator, a success rate divides by every task of the run, judged or not.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from om2w_tui.benchmarks.conformance import read_run
from om2w_tui.benchmarks.site_keys import site_key
from om2w_tui.engine.results import STATUSES, read_results
from om2w_tui.evaluation.judge import parse_output_name, read_judged

JUDGE_GLOB = "*_auto_eval_results.json"
UNKNOWN = "-"
METRICS = ("steps", "duration_s", "prompt_tokens", "completion_tokens")

# ------------------------------------------------------------------------------------------ small pieces

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>)\]]*[^\s'\"<>)\].,:;!?]", re.IGNORECASE)
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
_HEX = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b", re.IGNORECASE)
_HOSTPORT = re.compile(r"\b((?:\d{1,3}\.){3}\d{1,3}|localhost|\[[0-9a-f:]+\])(?::\d+)?", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w<])(?:/[\w.@+-]+){2,}/?")
_NUM = re.compile(r"(?<![\w<])[-+]?\d+(?:[.,]\d+)*(?![\w>])")


def normalise_error(message: str | None) -> str:
    """An error message with what varies from one occurrence to the next (URLs, paths, ids, hosts and ports,
    numbers) replaced by placeholders, so that the same error groups together."""
    text = " ".join(str(message or "").split())
    text = _URL.sub("<url>", text)
    text = _UUID.sub("<id>", text)
    text = _HEX.sub("<id>", text)
    text = _HOSTPORT.sub("<host>", text)
    text = _PATH.sub("<path>", text)
    text = _NUM.sub("<n>", text)
    return text[:300] or "(no message)"


def quantile(values: list[float], q: float) -> float | None:
    """The q-quantile by linear interpolation between the closest ranks (numpy's default); None when empty."""
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def stats(values: Iterable[Any]) -> dict[str, Any]:
    xs = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return {"n": len(xs), "median": quantile(xs, 0.5), "p90": quantile(xs, 0.9),
            "total": sum(xs) if xs else None}


def rate(successes: int, tasks: int) -> dict[str, Any]:
    return {"successes": successes, "tasks": tasks, "rate": (successes / tasks) if tasks else None}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def _site_of(website: str | None) -> str:
    if not website:
        return UNKNOWN
    m = re.fullmatch(r"\{(\w+)\}.*", website)   # an offline suite template: {shop}/
    if m:
        return m[1]
    return site_key(website) or UNKNOWN


def task_meta(manifest: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """task_id -> {level, site} from the run's task file, when run.json names one that is still there. The offline
    suite's sites are named by their template ({shop} -> shop), not by this run's port."""
    path = ((manifest or {}).get("task_file") or {}).get("path")
    if not path or not Path(path).is_file():
        return {}
    rows: list[Any] = []
    text = None
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = json.loads(text)
        rows = data if isinstance(data, list) else (data.get("tasks") or [] if isinstance(data, dict) else [])
    except (OSError, UnicodeDecodeError):
        return {}
    except json.JSONDecodeError:
        for line in (text or "").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    meta: dict[str, dict[str, Any]] = {}
    for row in rows:
        if not isinstance(row, dict):
            continue
        tid = row.get("task_id", row.get("id"))
        if tid is None:
            continue
        website = row.get("website", row.get("web"))
        meta[str(tid)] = {"level": row.get("level", row.get("web_name")), "site": _site_of(website)}
    return meta


def find_judge_file(out: Path) -> Path | None:
    """The newest judge output file in the run's folder."""
    files = [p for p in Path(out).glob(JUDGE_GLOB) if p.is_file()]
    return max(files, key=lambda p: (p.stat().st_mtime, p.name)) if files else None


def read_judge_file(path: Path) -> dict[str, dict[str, Any]]:
    return read_judged(path)


def judge_file_info(path: Path, judged: dict[str, dict[str, Any]], task_ids: Iterable[str]) -> dict[str, Any]:
    """Whose judge file it is, its mode, model and threshold (from its lines, else its name), and its rate over
    the run's tasks."""
    tasks = set(task_ids)
    any_rec = next(iter(judged.values()), {})
    named = parse_output_name(path.name)
    ours = "judge_model" in any_rec
    in_run = [r for t, r in judged.items() if t in tasks]
    return {"file": str(path), "mode": any_rec.get("mode") or (named.mode if named else None),
            "model": any_rec.get("judge_model") or (named.model if named else None),
            "threshold": any_rec.get("score_threshold", named.threshold if named else None),
            "by": "om2w-tui" if ours else ("the official evaluator" if named and judged else None),
            "judged": len(in_run),
            "rate": rate(sum(1 for r in in_run if r.get("predicted_label") == 1), len(tasks))}


def _label(manifest: dict[str, Any] | None, out: Path) -> str:
    cfg = (manifest or {}).get("config") or {}
    if cfg.get("arm") or cfg.get("model"):
        return f"{cfg.get('arm') or '?'}/{cfg.get('model') or '?'}"
    return Path(out).name


# ------------------------------------------------------------------------------------------ one run


def summarize(out: str | Path, judge_file: str | Path | None = None) -> dict[str, Any]:
    """One run's summary as plain data (JSON-ready)."""
    out = Path(out)
    warnings: list[str] = []
    # a run split into shards has one manifest per shard (run.shard-K-of-N.json); any of them names the task file
    found = [p for p in [out / "run.json", *sorted(out.glob("run.shard*.json"))] if p.is_file()]
    manifest = _read_json(found[0]) if found else None
    if manifest is not None and not isinstance(manifest, dict):
        warnings.append("run.json is not a JSON object; ignored")
        manifest = None
    log = read_results(out)
    warnings += log.warnings
    latest = log.latest()
    read = read_run(out)
    folders = set(read.task_dirs)
    task_ids = sorted(set(latest) | folders)
    meta = task_meta(manifest)
    cfg = (manifest or {}).get("config") or {}

    # success: a judge file, else the offline suite's `correct`
    jpath = Path(judge_file) if judge_file else find_judge_file(out)
    judged: dict[str, dict[str, Any]] = {}
    success_source: str | None = None
    judge_info: dict[str, Any] | None = None
    if jpath is not None:
        if not jpath.is_file():
            raise FileNotFoundError(f"{jpath}: no such judge file")
        judged = read_judge_file(jpath)
        success_source = "judge"
        judge_info = judge_file_info(jpath, judged, task_ids)
        stray = sorted(set(judged) - set(task_ids))
        if stray:
            warnings.append(f"{jpath.name}: {len(stray)} judged task(s) are not in this run (e.g. {stray[0]})")
    elif any("correct" in r for r in latest.values()):
        success_source = "correct"

    per_task: dict[str, dict[str, Any]] = {}
    for tid in task_ids:
        rec = latest.get(tid) or {}
        ep = read.episodes.get(tid)
        m = meta.get(tid, {})
        level = rec.get("level") or m.get("level")
        site = m.get("site") or _site_of(rec.get("website"))
        ok: bool | None = None
        if success_source == "judge":
            ok = judged.get(tid, {}).get("predicted_label") == 1 if tid in judged else None
        elif success_source == "correct":
            ok = bool(rec.get("correct")) if rec else None
        steps = rec.get("steps") if isinstance(rec.get("steps"), int) else (ep.steps if ep else None)
        per_task[tid] = {
            "level": str(level) if level is not None else UNKNOWN, "site": site or UNKNOWN,
            "status": rec.get("status") or ("unrecorded" if latest else "folder"),
            "success": ok, "steps": steps, "duration_s": rec.get("duration_s"),
            "prompt_tokens": rec.get("prompt_tokens"), "completion_tokens": rec.get("completion_tokens"),
            "has_folder": tid in folders,
        }

    def group(key: str) -> dict[str, Any]:
        buckets: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for t in per_task.values():
            buckets[t[key]].append(t)
        return {k: rate(sum(1 for t in v if t["success"]), len(v))
                for k, v in sorted(buckets.items(), key=lambda kv: (_level_order(kv[0]) if key == "level" else 0,
                                                                    -len(kv[1]) if key == "site" else 0, kv[0]))}

    others = [judge_file_info(f, read_judge_file(f), task_ids) for f in sorted(out.glob(JUDGE_GLOB))
              if f.is_file() and (jpath is None or f.resolve() != jpath.resolve())]
    success: dict[str, Any] = {"source": success_source, "judge": judge_info, "other_judges": others}
    if success_source:
        success["overall"] = rate(sum(1 for t in per_task.values() if t["success"]), len(per_task))
        success["by_level"] = group("level")
        success["by_site"] = group("site")

    status = Counter(t["status"] for t in per_task.values())
    status_counts = {s: status.get(s, 0) for s in STATUSES}
    status_counts.update({k: v for k, v in status.items() if k not in STATUSES})

    # errors, over every attempt: a retried infra error is still an error the run met
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in log.records:
        if r.get("status") == "done" and not r.get("error"):
            continue
        if not r.get("error") and r.get("status") not in ("error", "blocked", "timeout", "killed"):
            continue
        msg = normalise_error(r.get("error"))
        key = (str(r.get("status")), str(r.get("error_kind") or UNKNOWN), msg)
        g = groups.setdefault(key, {"status": key[0], "kind": key[1], "message": msg, "count": 0, "tasks": []})
        g["count"] += 1
        tid = str(r.get("task_id"))
        if tid not in g["tasks"]:
            g["tasks"].append(tid)
    errors = sorted(groups.values(), key=lambda g: (-g["count"], g["status"], g["message"]))
    for g in errors:
        g["task_count"] = len(g["tasks"])
        g["tasks"] = g["tasks"][:3]

    return {
        "out": str(out), "name": _label(manifest, out), "arm": cfg.get("arm"), "model": cfg.get("model"),
        "bench": cfg.get("bench"), "task_file": (manifest or {}).get("task_file"),
        "has_results": bool(log.records), "has_manifest": manifest is not None,
        "tasks": len(per_task), "attempts": len(log.records),
        "success": success, "status": status_counts,
        "metrics": {k: stats(t[k] for t in per_task.values()) for k in METRICS},
        "errors": errors,
        "conformance": {"problems": len(read.problems), "examples": read.problems[:5]},
        "warnings": warnings,
        "per_task": per_task,
    }


_LEVELS = {"easy": 0, "medium": 1, "hard": 2}


def _level_order(level: str) -> int:
    return _LEVELS.get(level.lower(), 3) if isinstance(level, str) else 3


# ------------------------------------------------------------------------------------------ several runs


def unique_names(summaries: list[dict[str, Any]]) -> list[str]:
    names = [s["name"] for s in summaries]
    out = []
    for s, n in zip(summaries, names):
        out.append(f"{n} ({Path(s['out']).name})" if names.count(n) > 1 else n)
    if len(set(out)) < len(out):   # same folder names too: number them
        out = [f"{n} #{i + 1}" for i, n in enumerate(out)]
    return out


def compare(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs side by side; every difference is against the first run (the baseline), in percentage points.
    `paired` compares the runs on the tasks they all have."""
    names = unique_names(summaries)

    def cell(s: dict[str, Any], group: str, key: str | None) -> dict[str, Any] | None:
        succ = s["success"]
        if not succ.get("source"):
            return None
        found: dict[str, Any] | None = succ["overall"] if group == "overall" else succ[group].get(key)
        return found

    def row(label: str, group: str, key: str | None) -> dict[str, Any]:
        values = [cell(s, group, key) for s in summaries]
        base = values[0]["rate"] if values and values[0] and values[0]["rate"] is not None else None
        deltas = [None if (v is None or v["rate"] is None or base is None) else 100.0 * (v["rate"] - base)
                  for v in values]
        deltas[0] = None
        return {"group": label, "values": values, "delta_pp": deltas}

    levels: list[str] = []
    sites: list[str] = []
    for s in summaries:
        for k in (s["success"].get("by_level") or {}):
            if k not in levels:
                levels.append(k)
        for k in (s["success"].get("by_site") or {}):
            if k not in sites:
                sites.append(k)
    levels.sort(key=lambda k: (_level_order(k), k))
    rows = [row("overall", "overall", None)] + [row(f"level {k}", "by_level", k) for k in levels]
    site_rows = [row(f"site {k}", "by_site", k) for k in sites]

    common = set(summaries[0]["per_task"]) if summaries else set()
    for s in summaries[1:]:
        common &= set(s["per_task"])
    paired_values: list[dict[str, Any] | None] = []
    for s in summaries:
        if not s["success"].get("source"):
            paired_values.append(None)
            continue
        paired_values.append(rate(sum(1 for t in common if s["per_task"][t]["success"]), len(common)))
    base = paired_values[0]["rate"] if paired_values and paired_values[0] else None
    paired = {"tasks": len(common), "values": paired_values,
              "delta_pp": [None] + [None if v is None or v["rate"] is None or base is None
                                    else 100.0 * (v["rate"] - base) for v in paired_values[1:]]}
    metrics = {k: [s["metrics"][k]["median"] for s in summaries] for k in METRICS}
    statuses = sorted({k for s in summaries for k in s["status"]},
                      key=lambda k: (STATUSES.index(k) if k in STATUSES else 99, k))
    return {"runs": names, "outs": [s["out"] for s in summaries], "baseline": names[0] if names else None,
            "sources": [s["success"].get("source") for s in summaries],
            "rows": rows, "site_rows": site_rows, "paired": paired,
            "status": {k: [s["status"].get(k, 0) for s in summaries] for k in statuses},
            "median": metrics}


# ------------------------------------------------------------------------------------------ rendering

def fmt_rate(v: dict[str, Any] | None) -> str:
    if not v or v.get("rate") is None:
        return "-"
    return f"{100 * v['rate']:.1f}% ({v['successes']}/{v['tasks']})"


def fmt_num(x: Any, digits: int = 1) -> str:
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:.{digits}f}"
    return str(int(x))


def fmt_delta(d: float | None) -> str:
    return "" if d is None else f"{d:+.1f} pp"


def _judge_words(j: dict[str, Any]) -> str:
    by = f"by {j['by']}, " if j.get("by") else ""
    return f"{by}{j.get('mode') or '?'}, {j.get('model') or '?'}"


def _source_line(s: dict[str, Any]) -> str:
    succ = s["success"]
    if succ.get("source") == "judge":
        j = succ["judge"]
        return (f"success from the judge file {Path(j['file']).name} ({_judge_words(j)}; {j['judged']} of "
                f"{s['tasks']} tasks judged)")
    if succ.get("source") == "correct":
        return "success from the offline suite's reference answers (`correct`)"
    return "no success measure: no judge file in the folder (run `om2w-tui judge`) and no `correct` field"


def sections(summary: dict[str, Any], site_limit: int | None = None) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) tables of one run, shared by every text format."""
    s = summary
    out: list[tuple[str, list[str], list[list[str]]]] = []
    succ = s["success"]
    if succ.get("source"):
        rows = [["overall", fmt_rate(succ["overall"])]]
        rows += [[f"level {k}", fmt_rate(v)] for k, v in succ["by_level"].items()]
        out.append(("success", ["group", "success"], rows))
        sites = list(succ["by_site"].items())
        shown = sites if site_limit is None else sites[:site_limit]
        rows = [[k, fmt_rate(v)] for k, v in shown]
        if len(shown) < len(sites):
            rows.append([f"... {len(sites) - len(shown)} more sites", ""])
        out.append(("success by site", ["site", "success"], rows))
    out.append(("episodes by status", ["status", "tasks"], [[k, str(v)] for k, v in s["status"].items() if v]))
    out.append(("per episode", ["metric", "median", "p90", "total"],
                [[k, fmt_num(m["median"]), fmt_num(m["p90"]), fmt_num(m["total"])]
                 for k, m in s["metrics"].items() if m["n"]]))
    if s["errors"]:
        out.append(("errors (every attempt, grouped)", ["count", "status", "kind", "message", "tasks"],
                    [[str(g["count"]), g["status"], g["kind"], g["message"],
                      ", ".join(g["tasks"]) + (" ..." if g["task_count"] > len(g["tasks"]) else "")]
                     for g in s["errors"]]))
    return out


def compare_sections(c: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    names = c["runs"]
    header = ["group"] + names + [f"Δ {n}" for n in names[1:]]

    def line(r: dict[str, Any]) -> list[str]:
        return [r["group"]] + [fmt_rate(v) for v in r["values"]] + [fmt_delta(d) for d in r["delta_pp"][1:]]

    rows = [line(r) for r in c["rows"]]
    p = c["paired"]
    rows.append([f"paired ({p['tasks']} common tasks)"] + [fmt_rate(v) for v in p["values"]]
                + [fmt_delta(d) for d in p["delta_pp"][1:]])
    out = [(f"success, against {c['baseline']}", header, rows)]
    out.append(("episodes by status", ["status"] + names,
                [[k] + [str(x) for x in v] for k, v in c["status"].items() if any(v)]))
    out.append(("medians", ["metric"] + names, [[k] + [fmt_num(x) for x in v] for k, v in c["median"].items()]))
    return out


def _title(s: dict[str, Any]) -> str:
    bits = [f"{s['name']}", f"{s['out']}", f"{s['tasks']} tasks"]
    if s.get("bench"):
        bits.append(f"bench {s['bench']}")
    if not s["has_results"]:
        bits.append("no results.jsonl (task folders only)")
    return " | ".join(bits)


def _notes(s: dict[str, Any]) -> list[str]:
    notes = [_source_line(s)]
    for j in s["success"].get("other_judges") or []:
        r = j["rate"]
        notes.append(f"also judged in {Path(j['file']).name} ({_judge_words(j)}): {fmt_rate(r)}, {j['judged']} of "
                     f"{s['tasks']} tasks judged")
    conf = s["conformance"]
    if conf["problems"]:
        notes.append(f"{conf['problems']} problem(s) for the official evaluator (see `om2w-tui check {s['out']}`): "
                     f"{conf['examples'][0]}")
    notes += s["warnings"]
    return notes


def to_markdown(summaries: list[dict[str, Any]], comparison: dict[str, Any] | None) -> str:
    def table(header: list[str], rows: list[list[str]]) -> str:
        esc = [[c.replace("|", "\\|") for c in r] for r in [header, *rows]]
        lines = ["| " + " | ".join(esc[0]) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
        return "\n".join(lines)

    parts: list[str] = []
    for s in summaries:
        parts.append(f"## {_title(s)}\n")
        parts += [f"- {n}" for n in _notes(s)]
        parts.append("")
        for title, header, rows in sections(s):
            parts.append(f"### {title}\n\n{table(header, rows)}\n")
    if comparison:
        parts.append("## comparison\n")
        for title, header, rows in compare_sections(comparison):
            parts.append(f"### {title}\n\n{table(header, rows)}\n")
    return "\n".join(parts).rstrip() + "\n"


def to_csv(summaries: list[dict[str, Any]], comparison: dict[str, Any] | None) -> str:
    """Long form, one number a line: run, section, group, metric, value."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run", "out", "section", "group", "metric", "value"])
    for name, s in zip(unique_names(summaries), summaries):
        succ = s["success"]
        if succ.get("source"):
            groups = [("overall", succ["overall"])] + [(f"level {k}", v) for k, v in succ["by_level"].items()] \
                + [(f"site {k}", v) for k, v in succ["by_site"].items()]
            for g, v in groups:
                for metric in ("successes", "tasks", "rate"):
                    w.writerow([name, s["out"], "success", g, metric, "" if v[metric] is None else v[metric]])
        for k, v in s["status"].items():
            w.writerow([name, s["out"], "status", k, "tasks", v])
        for k, m in s["metrics"].items():
            for metric in ("n", "median", "p90", "total"):
                w.writerow([name, s["out"], "metrics", k, metric, "" if m[metric] is None else m[metric]])
        for g in s["errors"]:
            w.writerow([name, s["out"], "errors", f"{g['status']}/{g['kind']}: {g['message']}", "count", g["count"]])
    if comparison:
        for r in comparison["rows"] + [dict(comparison["paired"], group="paired")]:
            for name, d in zip(comparison["runs"][1:], r["delta_pp"][1:]):
                w.writerow([name, "", "delta_pp", r["group"], f"vs {comparison['baseline']}", "" if d is None else d])
    return buf.getvalue()


def to_json(summaries: list[dict[str, Any]], comparison: dict[str, Any] | None) -> str:
    return json.dumps({"runs": summaries, "compare": comparison}, indent=1, ensure_ascii=False, default=str) + "\n"
