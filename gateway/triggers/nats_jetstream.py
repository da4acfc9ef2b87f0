"""NATS JetStream: each message on a trigger's `nats_subject` is one call, exactly one job.

The messages are kept by a JetStream stream: `nats_stream`, else the one whose subjects capture
`nats_subject`, else one made for it (`toolmesh_<trigger>`, capturing only that subject). Every
gateway pulls from one durable consumer named after the project and the trigger, so a message
goes to one of them. A message is acknowledged only once its job is recorded (the job store is
the durable hand-off, as for Redis streams): a gateway that dies mid-batch leaves its messages
unacknowledged and JetStream delivers them again after `claim_after` seconds (the consumer's ack
wait), to whichever gateway pulls next; the job id is made from the message's stream sequence,
so a message recorded just before the crash is not a second job. A message that is not a call
(not JSON, wrong arguments) is a dead job and is terminated (never delivered again): it never
blocks the consumer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api

from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.gateway.jobs.job import JobStatus
from toolmesh.gateway.triggers.trigger_service import TriggerMessage, TriggerService

log = logging.getLogger("toolmesh.triggers")

#: Messages pulled at once, and how long one pull waits for new ones (s).
BATCH = 256
PULL_WAIT = 1.0
#: Seconds between tries while the server is away or the consumer cannot be made.
RETRY = 1.0


def nats_message(stream: str, msg: Msg) -> TriggerMessage:
    """A JetStream message as a trigger message (its job's id made from its stream sequence)."""
    key = f"{stream}:{msg.metadata.sequence.stream}"
    source = f"nats:{key}"
    try:
        return TriggerMessage(json.loads(msg.data), source, raw=msg.data, key=key)
    except (ValueError, RecursionError) as exc:
        return TriggerMessage(None, source, f"the message is not JSON: {exc}", msg.data, key)


class NatsReader:
    """One trigger's JetStream consumer on this gateway, from `start` to `stop`."""

    def __init__(self, service: TriggerService, trigger: TriggerConfig, project: str) -> None:
        assert trigger.nats_subject is not None and trigger.nats_url is not None
        self.service = service
        self.trigger = trigger
        self.subject = trigger.nats_subject
        self.url = trigger.nats_url
        self.durable = trigger.nats_consumer(project)
        self.stream = trigger.nats_stream
        self._nc: Client | None = None
        self._sub: JetStreamContext.PullSubscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"trigger-{self.trigger.name}")

    async def stop(self) -> None:
        """Pull no more; what was pulled is recorded and acknowledged first (the pull under way
        ends within PULL_WAIT), so a clean shutdown leaves no message half-acknowledged."""
        self._stopping = True
        if self._task is not None:
            done, _ = await asyncio.wait({self._task}, timeout=PULL_WAIT + 5.0)
            if not done:
                self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._nc is not None:
            # Not `unsubscribe`: the durable consumer stays, with its place, for the next start.
            with contextlib.suppress(Exception):
                await self._nc.flush(timeout=2)  # the last acknowledgements reach the server
            with contextlib.suppress(Exception):
                await self._nc.close()

    def stopping(self) -> bool:
        return self._stopping

    async def lag(self) -> tuple[int, float | None]:
        """Messages not yet acknowledged (undelivered and in flight) and the age in seconds of the
        oldest of them (None when there are none, or the server cannot be asked)."""
        if self._sub is None or self._nc is None or self.stream is None:
            return 0, None
        info = await self._sub.consumer_info()
        waiting = int(info.num_pending or 0) + int(info.num_ack_pending or 0)
        if waiting == 0 or info.ack_floor is None:
            return waiting, None
        oldest = int(info.ack_floor.stream_seq or 0) + 1
        try:
            raw = await self._nc.jetstream().get_msg(self.stream, oldest, next=True, subject=self.subject)
        except nats.js.errors.NotFoundError:
            return waiting, None
        if raw.time is None:
            return waiting, None
        return waiting, max(0.0, time.time() - raw.time.timestamp())

    async def _connect(self) -> JetStreamContext.PullSubscription:
        self._nc = await nats.connect(
            self.url,
            name=f"toolmesh-trigger-{self.trigger.name}",
            connect_timeout=RETRY * 2,
            max_reconnect_attempts=-1,
            reconnect_time_wait=RETRY,
            allow_reconnect=True,
        )
        js = self._nc.jetstream()
        if self.stream is None:
            try:
                self.stream = await js.find_stream_name_by_subject(self.subject)
            except nats.js.errors.NotFoundError:
                self.stream = self.trigger.nats_stream_made()
                await js.add_stream(name=self.stream, subjects=[self.subject])
                log.info(
                    "made a JetStream stream", extra={"trigger": self.trigger.name, "stream": self.stream}
                )
        else:
            try:
                await js.stream_info(self.stream)
            except nats.js.errors.NotFoundError:
                await js.add_stream(name=self.stream, subjects=[self.subject])
        config = api.ConsumerConfig(
            ack_policy=api.AckPolicy.EXPLICIT,
            ack_wait=self.trigger.claim_after,
            # Only what is published from now on: a new trigger does not replay the stream's past.
            deliver_policy=api.DeliverPolicy.NEW,
            max_ack_pending=BATCH * 16,
        )
        return await js.pull_subscribe(self.subject, durable=self.durable, stream=self.stream, config=config)

    async def _run(self) -> None:
        last_look, paused = 0.0, False
        while not self._stopping:
            try:
                if time.monotonic() - last_look >= RETRY:
                    last_look = time.monotonic()
                    paused = await self.service.paused(self.trigger.name)
                if paused:  # its messages wait in the stream
                    await asyncio.sleep(RETRY)
                    continue
                if self._sub is None:
                    self._sub = await self._connect()
                try:
                    msgs = await self._sub.fetch(BATCH, timeout=PULL_WAIT)
                except nats.errors.TimeoutError:
                    continue
                await self._record(msgs)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the server away, the job queue full: the messages come again
                if self.stopping():
                    return
                log.warning(
                    "cannot read a trigger's JetStream consumer",
                    extra={"trigger": self.trigger.name, "why": f"{type(exc).__name__}: {exc}"},
                )
                await self._drop_unsubscribed()
                await asyncio.sleep(RETRY)

    async def _drop_unsubscribed(self) -> None:
        """A connection whose consumer could not be set up is made again at the next turn."""
        if self._sub is None and self._nc is not None:
            with contextlib.suppress(Exception):
                await self._nc.close()
            self._nc = None

    async def _record(self, msgs: list[Msg]) -> None:
        """Record a batch as jobs (the store's writes overlap), then acknowledge each recorded
        message (terminate a dead one's); one not recorded is nak'd, to come again."""
        assert self.stream is not None
        problem: BaseException | None = None
        for first in range(0, len(msgs), self.service.at_once):
            chunk = msgs[first : first + self.service.at_once]
            outcomes = await asyncio.gather(
                *(self.service.fire(self.trigger, nats_message(self.stream, msg)) for msg in chunk),
                return_exceptions=True,
            )
            replies: list[Any] = []
            for msg, outcome in zip(chunk, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    problem = problem or outcome
                    replies.append(msg.nak(delay=RETRY))
                elif outcome.status is JobStatus.DEAD:
                    replies.append(msg.term())
                else:
                    replies.append(msg.ack())
            await asyncio.shield(asyncio.gather(*replies, return_exceptions=True))
        if problem is not None:
            raise problem
