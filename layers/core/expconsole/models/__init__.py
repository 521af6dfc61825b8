"""Pydantic models: the single source of field truth for requests, responses and OpenAPI."""
