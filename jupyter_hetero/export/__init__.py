"""The catalog written out for other schedulers to enforce (Kueue, see ``kueue.py``)."""
