import sys

from om2w_tui.cli.main import main

sys.exit(main())
