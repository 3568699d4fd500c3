"""The scheduling world: the tick and its loop, the launch and the monitor of running attempts, the engine process
and its mirror, the scheduler's local copies (workload_copies.py), the preview, queue status and the inventory."""
