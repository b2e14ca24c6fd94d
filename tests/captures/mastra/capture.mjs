// Plays one Mastra scenario against the scripted OpenAI server; Mastra's own tracing exports the spans
// over OTLP/HTTP (protobuf) to capture.py's receiver.
//
// Why a Node script driven by capture.py: the scripted server, the scenario script, the OTLP receiver
// and the truth live in Python (tests/captures/), so capture.py starts the server and the receiver,
// hands this script a spec and turns what the receiver got into the testdata .pb/.json and the truth.
// This script only does what a Mastra user does: `new Agent({ id, name, instructions, model, tools,
// agents })` with tools made by `createTool`, the model from `@ai-sdk/openai`'s `createOpenAI({ baseURL
// })`, the agents registered on `new Mastra({ agents, observability: new Observability({ configs: {
// otel: { exporters: [new OtelExporter({ provider: { custom: { endpoint, protocol } } })] } } }) })`.
//
// Spec (JSON, written by capture.py): `base_url` (the scripted model), `otlp_endpoint` (the receiver),
// `api` ("chat" or "responses"), `call` ("generate" or "stream"), `agents` (name, prompt, tools,
// instructions, as in capture_scenarios.py), `top_level` (the agents to run, in order), `sub_agents`
// (tool name -> agent it runs), `app_span` (name of an application span around the runs, or null).
//
// Output (one JSON file): `recorded` (what each tool function received, in call order, with the error
// it threw), `outputs` (each run's final text) and `runs` (each top-level run's traceId/spanId as
// Mastra returns them).
//
// Usage: node capture.mjs SPEC.json OUT.json

import { readFileSync, writeFileSync } from "node:fs";

import { createOpenAI } from "@ai-sdk/openai";
import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { createTool } from "@mastra/core/tools";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";

import { playTopLevel, recording, TOOLS as SHARED_TOOLS } from "../capture_tools.mjs";

const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));

// The same tools, answers and failures as tests/captures/capture_tools.py (../capture_tools.mjs).
const recorded = [];

// Mastra calls `execute(inputData, context)`: inputData is the arguments after the schema.
const TOOLS = Object.fromEntries(
  Object.entries(SHARED_TOOLS).map(([name, t]) => [
    name,
    createTool({ id: name, description: t.description, inputSchema: t.schema(z), execute: recording(recorded, name) }),
  ]),
);

const openai = createOpenAI({ baseURL: spec.base_url, apiKey: "sk-scripted-not-a-key" });
const modelFor = (name) => (spec.api === "responses" ? openai.responses(`scripted-${name}`) : openai.chat(`scripted-${name}`));

// Sub-agents first: an agent used as a tool is Mastra's own `agents: { <key>: agent }`, which the
// parent's model sees as the tool `agent-<key>`.
const agents = {};
const order = [...spec.agents].sort((a, b) => Object.values(spec.sub_agents).includes(b.name) - Object.values(spec.sub_agents).includes(a.name));
for (const agent of order) {
  const tools = {};
  const subs = {};
  for (const name of agent.tools) {
    if (name in spec.sub_agents) subs[name] = agents[spec.sub_agents[name]];
    else tools[name] = TOOLS[name];
  }
  agents[agent.name] = new Agent({
    id: agent.name,
    name: agent.name,
    description: `The ${agent.name} agent.`,
    instructions: agent.instructions,
    model: modelFor(agent.name),
    tools,
    ...(Object.keys(subs).length ? { agents: subs } : {}),
  });
}

const mastra = new Mastra({
  agents,
  observability: new Observability({
    configs: {
      otel: {
        serviceName: "toolscore-capture-mastra",
        exporters: [
          new OtelExporter({
            provider: { custom: { endpoint: spec.otlp_endpoint, protocol: "http/protobuf" } },
            signals: { logs: false },
          }),
        ],
      },
    },
  }),
});

// The application span of g_two_runs_one_trace: the user's own OTel tracer, exporting to the same
// receiver. Mastra does not follow the OTel context; it joins an outside trace through
// `tracingOptions: { traceId, parentSpanId }` (documented for correlating with an external span).
const appProvider = new BasicTracerProvider({
  resource: resourceFromAttributes({ "service.name": "toolscore-capture-mastra-app" }),
  spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${spec.otlp_endpoint}/v1/traces` }))],
});
const tracer = appProvider.getTracer("toolscore.capture");

const runs = [];

async function runAgent(name, messages, tracingOptions) {
  const agent = mastra.getAgent(name);
  const options = { maxSteps: 10, ...(tracingOptions ? { tracingOptions } : {}) };
  if (spec.call === "stream") {
    const stream = await agent.stream(messages, options);
    const text = await stream.text;
    return { text, traceId: stream.traceId, response: await stream.response };
  }
  const result = await agent.generate(messages, options);
  return { text: result.text, traceId: result.traceId, response: result.response };
}

// The top-level runs in order; a later run continues the earlier one's conversation. Under the
// application span, each run joins its trace.
async function playAll(parent) {
  const ctx = parent?.spanContext();
  return playTopLevel(spec, async (name, messages) => {
    const result = await runAgent(name, messages, ctx ? { traceId: ctx.traceId, parentSpanId: ctx.spanId } : undefined);
    runs.push({ agent: name, traceId: result.traceId });
    return result;
  });
}

let outputs;
if (spec.app_span) {
  const span = tracer.startSpan(spec.app_span);
  try {
    outputs = await playAll(span);
  } finally {
    span.end();
  }
} else {
  outputs = await playAll(null);
}

// Mastra's exporter batches spans (BatchSpanProcessor, 5 s): flush and shut down so that every span
// reaches the receiver before node exits.
await mastra.observability.flush();
await mastra.shutdown();
await appProvider.shutdown();
writeFileSync(outPath, JSON.stringify({ recorded, outputs, runs }, null, 1));
