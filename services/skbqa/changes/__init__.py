"""Live knowledge-base updates: the change format, the durable change log, and applying changes to an index."""
