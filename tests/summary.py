"""A line a test wants in the run's summary (a kill rate, a measured figure): recorded as a property of the
test's report, which pytest-xdist carries from its worker to the controller, and printed by conftest's
``pytest_terminal_summary``. A print from inside a test would be lost in an xdist worker."""

SUMMARY_PROPERTY = "rayaccel_summary"
