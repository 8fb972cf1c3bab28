"""The engine: one run in the console's process. The scheduler (dispatch, slots, timeouts, the breaker and the
storage guard), per-site pacing, the results store, the events it reports, the run's settings and `launch`,
which turns settings into a running run. It imports no front end, no Textual and no Rich."""
