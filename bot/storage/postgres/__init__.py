"""The PostgreSQL store, for several workers: a pool, numbered migrations beside it, leases."""
