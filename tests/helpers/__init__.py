"""Helpers shared by the tests: ``from tests.helpers.fake_openai import serve``."""
