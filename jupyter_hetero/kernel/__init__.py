"""The kernel side: the kernel provisioner that places hetero kernels, their kernelspecs, and the runner
that every job replica starts in."""
