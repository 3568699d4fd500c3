"""Reliability and security: authorisation of every operation, for every kind of caller."""
