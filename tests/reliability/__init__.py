"""Reliability and security: invariants under load and faults, authorisation of every operation."""
