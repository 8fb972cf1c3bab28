"""The Textual front end: app, screens and widgets. Only this package (and cli/headless) may import textual or rich."""
