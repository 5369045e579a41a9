"""Scale-out on Celery: Redis is the broker and result backend, PostgreSQL the database.

Active when ``RELAY_BROKER_URL`` is set; without it everything runs in-process as before.

``config``      ``DistributedSettings`` (the extra knobs) and ``make_celery`` (the Celery app with
                at-least-once settings: late acks, reject on worker loss, prefetch 1, a broker
                visibility timeout longer than the longest shard)
``store``       the ``shard_results`` table: one row per (run key, test id), written by upsert
``specs``       spec files as references a worker on another machine can resolve (packaged
                name, else the file's text) — no shared filesystem
``tasks``       the Celery tasks: ``relay.process_delivery``, ``relay.run_shard``,
                ``relay.aggregate`` (the chord callback)
``delivery``    ``handle_delivery``: one webhook delivery processed on a worker (same steps as the
                in-process queue; the HUD report goes to the outbox the relay delivers)
``executor``    ``CeleryExecutor``: a run's items as a chord of shards over the workers
``queue``       ``CeleryQueue``: the ``relay.worker.queue.TaskQueue`` the web app uses with a broker
``worker``      ``start_worker`` behind ``relay worker``
``celery_app``  a module-level app for ``celery -A relay.worker.celery.app ...``
"""
