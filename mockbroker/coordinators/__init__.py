"""The cluster-wide coordinators: classic groups (`groups.py`), transactions (`transactions.py`)."""
