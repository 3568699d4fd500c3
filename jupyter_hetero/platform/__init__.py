"""The platform: the imperative shell around the engine, the store and the backends, by world (see docs/architecture.md)."""
