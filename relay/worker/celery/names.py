"""The names of the relay's Celery tasks (their bodies: ``relay.worker.celery.tasks``).

``relay.process_delivery(delivery_id)``                one accepted webhook delivery
``relay.run_shard(run_key, shard, ids, specs, ...)``   one shard of an execution
``relay.finish_run(shard_returns, ...)``               chord callback: a delivery's run finished
``relay.run_failed(request, exc, traceback, ...)``     chord errback: a delivery's run failed
``relay.aggregate(shard_returns, run_key, ids)``       chord callback of ``relay replay``'s shards
"""

PROCESS_DELIVERY = "relay.process_delivery"
RUN_SHARD = "relay.run_shard"
FINISH_RUN = "relay.finish_run"
RUN_FAILED = "relay.run_failed"
AGGREGATE = "relay.aggregate"
