"""Settings for the console's tests."""

from __future__ import annotations


def pytest_configure(config):
    # textual-image 0.12 calls an API Pillow 12 deprecates; not ours to fix
    config.addinivalue_line("filterwarnings", "ignore:Image.Image.getdata is deprecated:DeprecationWarning")
