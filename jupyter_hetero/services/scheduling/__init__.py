"""The scheduling world: the tick and its loop, the engine process and its mirror, the scheduler's local copies, the preview, queue status and the inventory."""
