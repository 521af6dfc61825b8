"""The pydantic-errors translation, where the API layer has always found it (`models.validation`)."""

from expconsole.models.validation import field_errors, field_path, message

__all__ = ["field_errors", "field_path", "message"]
