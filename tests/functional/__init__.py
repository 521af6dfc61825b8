"""Functional tests: handlers and the local server on moto, no network."""
