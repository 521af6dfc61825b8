"""Business rules: field limits beyond the models, state transitions, versioning, references."""
