"""`Idempotency-Key` for calls: the first request with a key runs its call and keeps the outcome
in the shared state; a repeat answers that outcome and runs nothing.

    outcome_store.py    the seam: what a store of keyed calls does (OutcomeStore), and its records
    local_outcomes.py   in this process (a Mesh built without a store, tests)
    sqlite_outcomes.py  one machine: a SQLite file in the project's data directory, shared by
                        every gateway that uses that directory
    redis_outcomes.py   any number of replicas: Redis (`[state] url`)

The rules (claim the key, wait for a running one, replay, settle) are the core's:
gateway/core/keyed_calls.py, on top of these stores.
"""
