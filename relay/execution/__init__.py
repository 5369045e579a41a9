"""Where work runs: in this process, or on Celery workers — chosen here and nowhere else.

``registry``  ``executors_for`` (how a run's tests execute) and ``task_queue_for`` (where
              accepted deliveries go), both decided by ``RELAY_BROKER_URL``
"""
