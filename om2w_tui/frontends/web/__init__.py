"""The run as a web page: `om2w-tui report OUT [OUT ...] --html DIR` writes a static, self-contained site of
finished runs (an index, a task list, one page per task, a comparison of several runs) from Jinja2 templates."""
