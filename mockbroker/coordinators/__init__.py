"""The cluster-wide coordinators: classic groups (`groups.py`) and transactions (`transactions.py`)."""
