"""What runs inside a worker process: the worker loop, the browser, the arms."""
