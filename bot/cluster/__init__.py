"""Several workers on one database: leases per thread, the workers' presence, the shared edit
pace."""
