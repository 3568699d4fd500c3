"""Capacity reserved per flavor for a queue (production inference): others may borrow it only
preemptibly, and give it back when the owning queue needs it; or, where the queue lends none, never use it."""

from __future__ import annotations

from .model import QueuePolicy

__all__ = ["Reservations"]


class Reservations:
    """Reserved device-milli per (flavor, queue), what each reserving queue uses of it, and what other queues'
    work placed on reserved capacity borrows of it (per flavor: any lending owner may take it back)."""

    def __init__(self, queues: dict[str, QueuePolicy]):
        self.reserved: dict[str, dict[str, int]] = {}
        self.lent = {name for name, policy in queues.items() if policy.lends_reserved}
        for queue in sorted(queues):
            for flavor, devices in sorted(queues[queue].reserved.items()):
                self.reserved.setdefault(flavor, {})[queue] = devices * 1000
        self.used: dict[tuple[str, str], int] = {}
        self.borrowed: dict[str, int] = {}

    def owns(self, queue: str, flavor: str) -> bool:
        return queue in self.reserved.get(flavor, {})

    def charge(self, queue: str, flavor: str, device_milli: int, *, on_reservation: bool = False) -> None:
        """Charge work of ``queue`` on ``flavor`` (negative: refund); ``on_reservation``: another queue's work placed
        on what is reserved, which holds that much of the reservation until its owner takes it back."""
        if self.owns(queue, flavor):
            self.used[(flavor, queue)] = self.used.get((flavor, queue), 0) + device_milli
        elif on_reservation:
            self.borrowed[flavor] = self.borrowed.get(flavor, 0) + device_milli

    def refund(self, queue: str, flavor: str, device_milli: int, *, on_reservation: bool = False) -> None:
        self.charge(queue, flavor, -device_milli, on_reservation=on_reservation)

    def unused(self, queue: str, flavor: str) -> int:
        """Device-milli of ``queue``'s own reservation on ``flavor`` that it does not use now."""
        return max(0, self.reserved.get(flavor, {}).get(queue, 0) - self.used.get((flavor, queue), 0))

    def outstanding(self, flavor: str, *, excluding: str, lent_too: bool = True) -> int:
        """Device-milli still held back on ``flavor`` for queues other than ``excluding``; without ``lent_too``
        only that of queues that lend none of theirs (what no other queue may use at all).

        What is lent and occupied is held already: the work on it gives it back when an owner needs it, so
        free capacity is not held back for it a second time (that made a never-preempted queue evict a borrower
        of the reservation to reach a free device, and the borrower came back to the same reserved device)."""
        unused = {queue: max(0, reserved - self.used.get((flavor, queue), 0))
                  for queue, reserved in self.reserved.get(flavor, {}).items() if queue != excluding}
        kept = sum(amount for queue, amount in unused.items() if queue not in self.lent)
        if not lent_too:
            return kept
        lent = sum(amount for queue, amount in unused.items() if queue in self.lent)
        return kept + max(0, lent - self.borrowed.get(flavor, 0))
