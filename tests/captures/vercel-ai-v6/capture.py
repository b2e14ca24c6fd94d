"""Capture Vercel AI SDK ai@6 runs traced by the SDK's built-in `experimental_telemetry` (the `ai.*` spans).

Needs Node 20+ with this folder's packages (`npm ci` here) and a Python with the kit's requirements
(requirements.txt: opentelemetry-sdk, opentelemetry-proto, protobuf). From anywhere:

    (cd tests/captures/vercel-ai-v6 && npm ci)
    .venv/bin/python tests/captures/vercel-ai-v6/capture.py [--out DIR] [scenario ...]  # any venv with requirements.txt

The capture itself (scripted server, OTLP/HTTP receiver, node, truth) is ../vercel_ai_capture.py, shared
with the other vercel-ai folders; this script names the scenarios this SDK version streams, sends to the
Responses API and plays through ai@6's `ToolLoopAgent`, and `--out DIR` writes into DIR/traces and DIR/truth
instead of tests/testdata.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from vercel_ai_capture import VercelCapture  # noqa: E402

STREAMED = {"b_sequential", "c_parallel", "e_tool_error_retry"}  # streamText(); the others generateText()
RESPONSES_API = {"c_parallel", "h_complex_args", "i_parallel_random_ids"}  # openai.responses(); others .chat()
AGENT = {"e_tool_error_retry", "f_agent_as_tool", "g_two_runs_one_trace"}  # ToolLoopAgent .stream()/.generate()

if __name__ == "__main__":
    VercelCapture(HERE, STREAMED, RESPONSES_API, agent=AGENT).main()
