"""Triggers: schedules, webhooks, Redis streams, NATS JetStream and PostgreSQL NOTIFY whose ticks
and messages become jobs (gateway/jobs/), so each run gets the jobs' retries, dead letters and
`/v1/jobs`. Each source is a module that hands `TriggerService.fire` a `TriggerMessage`.

    trigger_service.py   the core: a message (or tick) and its trigger -> a job; pause, resume
    schedules.py         cron and `every` ticks, fired once across replicas
    ticks.py             which replica fires a tick, paused triggers, leases: SQLite (one machine)
    redis_ticks.py       the same in Redis (`[state] url`: any number of gateways)
    webhooks.py          signature checks (GitHub, generic HMAC, Stripe) of `POST /v1/hooks/NAME`
    redis_streams.py     a consumer group per trigger; XACK once recorded, XAUTOCLAIM the dead's
    nats_jetstream.py    a durable pull consumer per trigger; ack once recorded, redelivery after
                         the ack wait for what a dead gateway held
    postgres_notify.py   LISTEN on the one gateway holding the trigger's lease (in the ticks)
    trigger_host.py      a gateway's triggers from start-up to shutdown
"""
