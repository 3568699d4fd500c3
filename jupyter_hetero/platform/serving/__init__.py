"""Online services: replicas, readiness, traffic and the canary rollout."""
