"""The console's screens: launch form, dashboard, episode view, quit dialog."""
