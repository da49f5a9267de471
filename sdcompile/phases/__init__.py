"""One module per command's core: functions that return frozen dataclasses and never print."""
