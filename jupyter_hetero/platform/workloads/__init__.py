"""The workloads world: submission and the one enqueue, a request resolved from its template, a job's files,
environment and credential, and caller-launched workloads."""
