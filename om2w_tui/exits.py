"""The exit codes of every command, in one place (the command line, the console, the headless run, the tools).

    0    done: the run ended, the command did what it was asked
    1    it ran and something failed: tasks not judged, problems found (`check`), the run refused a command (`ctl`)
         or the reader of its output went away (`... | head -1`: said by no traceback, `cli/main.py`'s `main`)
    2    bad usage: a flag, a file or a folder the command cannot start with (the message says which and what to do)
    3    a headless run ended by its model guard: the model server answers, wrongly for this harness (the message)
    130  interrupted (Ctrl-C), what was done so far kept
"""

from __future__ import annotations

OK = 0
FAILED = 1
USAGE = 2
MODEL_GUARD = 3
INTERRUPTED = 130
