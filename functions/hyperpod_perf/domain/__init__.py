"""The domain: plain data the layers pass to one another (no I/O, no AWS)."""
