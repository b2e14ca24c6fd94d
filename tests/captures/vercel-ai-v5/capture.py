"""Capture Vercel AI SDK runs traced by the SDK's built-in `experimental_telemetry` (the `ai.*` spans).

Needs Node 20+ with this folder's packages (`npm ci` here) and a Python with the kit's requirements
(requirements.txt: opentelemetry-sdk, opentelemetry-proto, protobuf). From anywhere:

    (cd tests/captures/vercel-ai-v5 && npm ci)
    .venv/bin/python tests/captures/vercel-ai-v5/capture.py [--out DIR] [scenario ...]  # any venv with requirements.txt

The capture itself (scripted server, OTLP/HTTP receiver, node, truth) is ../vercel_ai_capture.py, shared
with the other vercel-ai folder; this script names the scenarios this SDK version streams, sends to the
Responses API (or cannot play), and `--out DIR` writes into DIR/traces and DIR/truth instead of
tests/testdata.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from vercel_ai_capture import VercelCapture  # noqa: E402

STREAMED = {"b_sequential", "c_parallel", "e_tool_error_retry"}  # streamText(); the others generateText()
RESPONSES_API = {"c_parallel", "h_complex_args", "i_parallel_random_ids"}  # openai.responses(); others .chat()

if __name__ == "__main__":
    VercelCapture(HERE, STREAMED, RESPONSES_API).main()
