"""HTTP concerns shared by every function: envelope, errors, pagination, auth, resolver."""
