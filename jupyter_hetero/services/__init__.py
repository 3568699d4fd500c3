"""Services: the imperative shell around the engine, the store and the backends."""
