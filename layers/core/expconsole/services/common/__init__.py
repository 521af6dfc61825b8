"""The mechanics every kind shares, written once: stored rules and reference cycles (`rules`),
archive and unarchive (`lifecycle`), the stored-size limit (`size`) and partial updates (`patch`).

Each module is small and imports only the store and the domain errors, so a function loads
just the ones its kinds use.
"""
