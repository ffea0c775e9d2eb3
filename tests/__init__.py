"""The test suite: unit/ mirrors the package, plugin/ runs pytest, e2e/ is the slow tier."""
