pytest_plugins = ["tests.helpers.fixtures"]
