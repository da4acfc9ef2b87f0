"""Triggers: schedules, webhooks and Redis streams (NATS and PostgreSQL NOTIFY are to come, as
modules beside these that hand `TriggerService.fire` a `TriggerMessage`) whose ticks and messages
become jobs (gateway/jobs/), so each run gets the jobs' retries, dead letters and `/v1/jobs`.

    trigger_service.py   the core: a message (or tick) and its trigger -> a job; pause, resume
    schedules.py         cron and `every` ticks, fired once across replicas
    ticks.py             which replica fires a tick, and paused triggers: SQLite (one machine)
    redis_ticks.py       the same in Redis (`[state] url`: any number of gateways)
    webhooks.py          signature checks (GitHub, generic HMAC, Stripe) of `POST /v1/hooks/NAME`
    redis_streams.py     a consumer group per trigger; XACK once recorded, XAUTOCLAIM the dead's
    trigger_host.py      a gateway's triggers from start-up to shutdown
"""
