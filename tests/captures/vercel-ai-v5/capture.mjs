// Plays one scenario with the Vercel AI SDK ai@5 and its built-in `experimental_telemetry` (the `ai.*`
// spans): ../vercel_ai_capture.mjs does it with this folder's pinned packages (package.json), imported here.
//
// Usage: node capture.mjs SPEC.json OUT.json (capture.py writes the spec and reads the output)

import { createOpenAI } from "@ai-sdk/openai";
import { trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import * as ai from "ai";
import { z } from "zod";

import { play } from "../vercel_ai_capture.mjs";

await play({
  major: 5,
  ai,
  createOpenAI,
  z,
  otel: { trace, OTLPTraceExporter, resourceFromAttributes, BatchSpanProcessor, NodeTracerProvider },
  serviceName: "toolscore-capture-vercel-ai-v5",
});
