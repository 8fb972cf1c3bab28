"""Whether a Chromium starts, asked before a run: an executable that is no browser (`--chromium /bin/false`), or a
browser that cannot start here (a missing library, no sandbox), would otherwise pass the preflight and then fail
every episode as the harness's fault, retried for minutes. The browser is started headless, as a worker starts it,
on a blank page in a throwaway profile, and must print that page; what it said on failure is shown. It starts with
a bare environment (`secret.bare_environment`): no key of the caller's reaches it.

The answer is kept per executable (its path, size and modification time) for the life of the process: the launch
form checks as you type, and a browser that started once need not start again for each check."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile

from om2w_tui.secret import bare_environment

START_TIMEOUT_S = 60.0
_known: dict[tuple[str, int, int], str] = {}


def _key(path: str) -> tuple[str, int, int] | None:
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None
    return real, st.st_size, st.st_mtime_ns


def _argv(path: str, profile: str) -> list[str]:
    root = ["--no-sandbox"] if os.geteuid() == 0 else []   # as a worker starts it: Chromium's sandbox needs non-root
    return [path, *root, "--headless=new", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--disable-background-networking", f"--user-data-dir={profile}", "--dump-dom", "about:blank"]


def _run(path: str, timeout: float) -> tuple[int | None, bytes, bytes]:
    """(exit code or None on timeout, stdout, stderr) of a headless start; the whole process group ended."""
    with tempfile.TemporaryDirectory(prefix="om2w-chromium-check-") as profile:
        proc = subprocess.Popen(_argv(path, profile), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, env=bare_environment(os.environ))
        try:
            out, err = proc.communicate(timeout=timeout)
            return proc.returncode, out, err
        except subprocess.TimeoutExpired:
            return None, b"", b""
        finally:
            with contextlib.suppress(OSError):   # its renderers and helpers too
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def _last_line(err: bytes) -> str:
    lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def check_starts(path: str, flag: str = "--chromium", timeout: float = START_TIMEOUT_S) -> str:
    """'' when the browser at `path` starts headless and loads a page; else what happened and what to do."""
    key = _key(path)
    if key is not None and key in _known:
        return _known[key]
    name = f"{flag} {path}" if flag else f"Chromium at {path}"
    try:
        rc, out, err = _run(path, timeout)
    except OSError as e:
        return f"{name}: cannot be run ({e.strerror or e}); give a Chromium or Chrome with --chromium PATH"
    if rc is None:
        problem = f"{name}: did not start a headless browser within {timeout:g} s"
    elif rc != 0 or b"<html" not in out.lower():
        said = _last_line(err)
        problem = (f"{name}: does not start a headless browser (exit {rc}{', it said: ' + said if said else ''}); "
                   f"give a working Chromium or Chrome with --chromium PATH")
    else:
        problem = ""
    if key is not None and rc is not None:   # a start too slow under load may pass when asked again
        _known[key] = problem
    return problem

