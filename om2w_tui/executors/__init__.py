"""Where episodes run: `local` keeps one long-lived worker process per slot."""
