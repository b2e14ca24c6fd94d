"""A document read as a trace file and as serve's request body gives the same spans: one OTLP/JSON reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict

from toolscore.collector.serve.receivers._otlp_json_request import request_from_json
from toolscore.collector.sources.otlp_json import spans_from_json_bytes
from toolscore.collector.sources.otlp_proto import spans_from_request

TRACES = Path(__file__).parent / "testdata" / "traces"
# Every capture's trace document (its GenAI logs beside it, `*.logs.json`, are not trace exports).
DOCUMENTS = sorted(path for path in TRACES.glob("*/*.json") if not path.name.endswith(".logs.json"))


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_file_and_a_request_body_read_the_same_spans(path: Path) -> None:
    data = path.read_bytes()
    from_file = spans_from_json_bytes(data)
    from_body = spans_from_request(request_from_json(data).request)
    assert from_file == from_body
    assert from_file


def test_the_protobuf_json_mapping_reads_the_same_through_both() -> None:
    data = (TRACES / "pydantic-ai" / "a_single_tool.json").read_bytes()
    request = request_from_json(data).request
    mapping = json.dumps(MessageToDict(request)).encode()  # base64 ids, as MessageToJson writes them
    assert spans_from_json_bytes(mapping) == spans_from_request(request_from_json(mapping).request)
    assert spans_from_json_bytes(mapping) == spans_from_json_bytes(data)
