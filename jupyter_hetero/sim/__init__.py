"""Trace-driven simulations that measure the engine against published results."""
