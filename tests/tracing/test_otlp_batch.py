"""toolmesh's own spans reach a real OTLP/HTTP receiver as the standard settings ask."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.tracing.receiver import Receiver, running_receiver
from toolmesh.tracing.otlp_batch import (
    SPAN_KIND_SERVER,
    BatchExporter,
    ExportSettings,
    FinishedSpan,
)

RESOURCE = {"service.name": "toolmesh-test", "telemetry.sdk.language": "python"}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as server:
        yield server


def exporter_for(receiver: Receiver, **environ: str) -> BatchExporter:
    settings = ExportSettings.from_environ({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, **environ})
    return BatchExporter(settings, RESOURCE, ("toolmesh", "test"))


def finished(name: str = "work", **attributes: str | int | float | bool) -> FinishedSpan:
    span = FinishedSpan(name, SPAN_KIND_SERVER, 0xABC, 0x123, 0x456, "k=v", dict(attributes))
    span.end = span.start + 1000
    return span


def test_settings_are_the_standard_variables() -> None:
    settings = ExportSettings.from_environ(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
            "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc, x-team = mesh,broken",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2.5",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_BSP_SCHEDULE_DELAY": "250",
            "OTEL_BSP_MAX_QUEUE_SIZE": "nonsense",
        }
    )
    assert settings.url == "http://collector:4318/v1/traces"
    assert settings.headers == {"authorization": "Bearer abc", "x-team": "mesh"}
    assert (settings.timeout, settings.gzip, settings.schedule_delay) == (2.5, True, 0.25)
    assert settings.max_queue == 2048
    # The signal's own endpoint is used as given.
    traces = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c:4318/custom",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x",
    }
    assert ExportSettings.from_environ(traces).url == "https://c:4318/custom"


def test_a_span_arrives_whole(receiver: Receiver) -> None:
    exporter = exporter_for(receiver, OTEL_EXPORTER_OTLP_HEADERS="x-team=mesh")
    failed = finished("call", text="a", number=3, ratio=0.5, flag=True)
    failed.error = "HTTP 503"
    exporter.add(failed)
    exporter.flush()
    [span] = receiver.spans
    assert (span.service, span.name, span.kind, span.trace_state) == ("toolmesh-test", "call", 2, "k=v")
    ids = (f"{0xABC:032x}", f"{0x123:016x}", f"{0x456:016x}")
    assert (span.trace_id, span.span_id, span.parent_id) == ids
    assert span.attributes == {"text": "a", "number": 3, "ratio": 0.5, "flag": True}
    assert span.status == (2, "HTTP 503")
    assert receiver.headers[0]["x-team"] == "mesh"
    exporter.shutdown()


def test_the_thread_exports_after_the_schedule_delay(receiver: Receiver) -> None:
    exporter = exporter_for(receiver, OTEL_BSP_SCHEDULE_DELAY="50")
    exporter.add(finished())
    receiver.wait_for("toolmesh-test", 1, timeout=5)
    assert len(receiver.spans) == 1
    exporter.shutdown()


def test_under_steady_load_spans_go_out_in_full_batches(receiver: Receiver) -> None:
    # Spans keep arriving while a batch is sent: what comes in meanwhile waits for a full batch
    # (or the schedule delay), rather than going out a POST for every span or two.
    exporter = exporter_for(receiver, OTEL_BSP_MAX_EXPORT_BATCH_SIZE="50", OTEL_BSP_SCHEDULE_DELAY="60000")
    for _ in range(420):
        exporter.add(finished())
        time.sleep(0.0005)
    receiver.wait_for("toolmesh-test", 400, timeout=5)
    time.sleep(0.2)
    assert (len(receiver.headers), len(receiver.spans)) == (8, 400)
    exporter.shutdown()  # the last 20 go out at the end
    assert (len(receiver.headers), len(receiver.spans)) == (9, 420)


def test_gzip_is_sent_when_asked(receiver: Receiver) -> None:
    exporter = exporter_for(receiver, OTEL_EXPORTER_OTLP_TRACES_COMPRESSION="gzip")
    exporter.add(finished())
    exporter.flush()
    assert receiver.headers[0]["content-encoding"] == "gzip" and len(receiver.spans) == 1
    exporter.shutdown()


def test_an_unavailable_collector_is_tried_again(receiver: Receiver) -> None:
    receiver.failures = [503, 503]
    exporter = exporter_for(receiver)
    exporter.add(finished())
    exporter.flush()
    assert len(receiver.headers) == 3 and len(receiver.spans) == 1
    exporter.shutdown()


def test_a_refused_batch_is_not_retried(receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    receiver.failures = [400]
    exporter = exporter_for(receiver)
    exporter.add(finished())
    exporter.flush()
    assert len(receiver.headers) == 1 and receiver.spans == []
    assert any(record.getMessage() == "trace export failed" for record in caplog.records)
    exporter.shutdown()


def test_a_full_queue_drops_spans_and_says_so(receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    exporter = exporter_for(receiver, OTEL_BSP_MAX_QUEUE_SIZE="10", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="100")
    for _ in range(25):
        exporter.add(finished())
    exporter.flush()
    assert len(receiver.spans) == 10
    [warning] = [r for r in caplog.records if r.getMessage() == "trace export queue full: spans dropped"]
    assert warning.dropped == 15  # type: ignore[attr-defined]
    exporter.shutdown()


def test_shutdown_exports_what_is_queued(receiver: Receiver) -> None:
    exporter = exporter_for(receiver)  # the default delay: 5 s
    exporter.add(finished())
    started = time.monotonic()
    exporter.shutdown()
    assert len(receiver.spans) == 1 and time.monotonic() - started < 2
