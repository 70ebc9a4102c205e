"""cubelab's test suite, a package so that its fixtures (`tests.fixtures`, `tests.zoo`) and shared
helpers import by name, with no `sys.path` edit."""
