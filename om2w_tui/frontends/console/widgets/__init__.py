"""The console's widgets: the run header, the four dashboard panels, the screenshot viewer."""
