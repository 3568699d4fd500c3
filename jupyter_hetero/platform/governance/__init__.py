"""Governance: onboarding, metrics, alerts, usage, the report, capacity advice, the audit log and the catalog's
read views."""
