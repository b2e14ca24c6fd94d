// Plays one scenario with the Vercel AI SDK (ai@5) and its built-in `experimental_telemetry`: the SDK
// records its `ai.*` spans through the global OpenTelemetry tracer provider, which the Node SDK exports
// over OTLP/HTTP (protobuf) to capture.py's receiver.
//
// Why a Node script driven by capture.py: the scripted server, the scenario script, the OTLP receiver
// and the truth live in Python (tests/captures/), so capture.py starts the server and the receiver,
// hands this script a spec and turns what the receiver got into the testdata .pb/.json and the truth.
// This script only does what an AI SDK user does: `generateText` / `streamText` with `tools` made by
// `tool({ description, inputSchema, execute })`, `stopWhen: stepCountIs(10)` for the tool loop, the model
// from `@ai-sdk/openai`'s `createOpenAI({ baseURL })` (`.chat(id)` for Chat Completions, `.responses(id)`
// for the Responses API) and `experimental_telemetry: { isEnabled: true, functionId: <agent name> }`.
//
// Spec (JSON, written by capture.py): `base_url` (the scripted model), `otlp_endpoint` (the receiver),
// `api` ("chat" or "responses"), `call` ("generate" or "stream"), `agents` (name, prompt, tools,
// instructions, as in capture_scenarios.py), `top_level` (the agents to run, in order), `sub_agents`
// (tool name -> agent it runs), `app_span` (name of an application span around the runs, or null).
//
// Output (one JSON file): `recorded` (what each tool function received, in call order, with the error
// it threw, and the call id the SDK passed), `outputs` (each top-level run's final text).
//
// Usage: node capture.mjs SPEC.json OUT.json

import { readFileSync, writeFileSync } from "node:fs";

import { createOpenAI } from "@ai-sdk/openai";
import { trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

import { playTopLevel, recording, TOOLS as SHARED_TOOLS } from "../capture_tools.mjs";

const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));

// The user's OpenTelemetry setup: the SDK's spans go through the global tracer provider (tracer "ai").
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": "toolscore-capture-vercel-ai-v5" }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${spec.otlp_endpoint}/v1/traces` }))],
});
provider.register();

// The same tools, answers and failures as tests/captures/capture_tools.py (../capture_tools.mjs).
const recorded = [];

// The SDK calls `execute(input, { toolCallId, messages, ... })`: input is the arguments after the schema.
const TOOLS = Object.fromEntries(
  Object.entries(SHARED_TOOLS).map(([name, t]) => [
    name,
    tool({
      description: t.description,
      inputSchema: t.schema(z),
      execute: recording(recorded, name, (args, { toolCallId }) => toolCallId),
    }),
  ]),
);

const openai = createOpenAI({ baseURL: spec.base_url, apiKey: "sk-scripted-not-a-key" });
const modelFor = (name) => (spec.api === "responses" ? openai.responses(`scripted-${name}`) : openai.chat(`scripted-${name}`));
const byName = Object.fromEntries(spec.agents.map((a) => [a.name, a]));

// An agent used as a tool: a tool whose execute runs the sub-agent's own generateText (the AI SDK's
// documented sub-agent pattern), with its own functionId; its run nests under the tool's span.
function subAgentTool(agentName) {
  return tool({
    description: `Ask the ${agentName} agent.`,
    inputSchema: z.object({ input: z.string().describe("The question for the agent.") }),
    execute: async ({ input }) => (await runAgent(agentName, [{ role: "user", content: input }])).text,
  });
}

function toolsOf(agent) {
  return Object.fromEntries(agent.tools.map((n) => [n, n in spec.sub_agents ? subAgentTool(spec.sub_agents[n]) : TOOLS[n]]));
}

async function runAgent(name, messages) {
  const agent = byName[name];
  const options = {
    model: modelFor(name),
    system: agent.instructions,
    messages,
    tools: toolsOf(agent),
    stopWhen: stepCountIs(10),
    maxRetries: 0,
    experimental_telemetry: { isEnabled: true, functionId: name },
  };
  if (spec.call === "stream") {
    let failed = null;
    const result = streamText({ ...options, onError: ({ error }) => (failed = error) });
    const text = await result.text;
    if (failed) throw failed;
    return { text, response: await result.response };
  }
  const result = await generateText(options);
  return { text: result.text, response: result.response };
}

// The top-level runs in order; a later run continues the earlier one's conversation.
let outputs;
if (spec.app_span) {
  await trace.getTracer("toolscore.capture").startActiveSpan(spec.app_span, async (span) => {
    try {
      outputs = await playTopLevel(spec, runAgent);
    } finally {
      span.end();
    }
  });
} else {
  outputs = await playTopLevel(spec, runAgent);
}

await provider.forceFlush();
await provider.shutdown();
writeFileSync(outPath, JSON.stringify({ recorded, outputs }, null, 1));
