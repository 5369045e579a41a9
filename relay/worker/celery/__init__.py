"""Scale-out on Celery: Redis is the broker and result backend, PostgreSQL the database.

Active when ``RELAY_BROKER_URL`` is set (``relay.execution`` chooses it); without it everything
runs in-process.  Needs the ``distributed`` extra (``celery[redis]``, ``psycopg``).

``config``    ``make_celery``: the Celery app with at-least-once settings (late acks, reject on
              worker loss, prefetch 1, a visibility timeout longer than the longest shard)
``names``     the task names
``tasks``     the task bodies' registration (``register``)
``runs``      a delivery's run as two tasks that never wait: plan + chord, then the callback
``shards``    an execution split into shard tasks; a shard's body; results read back
``specs``     spec files as references a worker on another machine can resolve (packaged
              name, else the file's text) — no shared filesystem
``executor``  ``CeleryExecutors``: ``relay replay``'s executors as chords over the workers
``queue``     ``CeleryQueue``: the ``relay.worker.queue.TaskQueue`` of the web app with a broker
``worker``    ``start_worker`` behind ``relay worker``
``app``       a module-level app for ``celery -A relay.worker.celery.app ...``
"""
