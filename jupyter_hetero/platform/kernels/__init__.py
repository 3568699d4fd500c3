"""Kernels and hub users' servers: the provisioner's requests, the idle rules, and the hub's API."""
