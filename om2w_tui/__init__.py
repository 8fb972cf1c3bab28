"""om2w-tui: a console for live web-agent benchmarks run with browser-use agents."""

__version__ = "0.1.0"
