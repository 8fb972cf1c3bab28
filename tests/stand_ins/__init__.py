"""Stand-ins for outside programs in unit tests: `STAND_IN_CHROMIUM` answers a preflight's headless start as a
Chromium does and starts nothing."""

from pathlib import Path

STAND_IN_CHROMIUM = str(Path(__file__).with_name("chromium"))
