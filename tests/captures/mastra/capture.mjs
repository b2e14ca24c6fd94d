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

const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));

// The same tools, answers and failures as tests/captures/capture_tools.py.
const TEMPERATURES_C = { Paris: 21, London: 15, Tokyo: 18, Lisbon: 24, Oslo: 4, Rome: 26, Berlin: 12, Madrid: 28 };
const LOCAL_TIMES = {
  "Asia/Tokyo": "2026-11-28T22:00:00+09:00",
  "Europe/Paris": "2026-11-28T14:00:00+01:00",
  "Europe/Rome": "2026-11-28T14:00:00+01:00",
  "America/New_York": "2026-11-28T08:00:00-05:00",
};
const PRICES = { SONY: 92.4, AAPL: 231.5, NVDA: 141.2, MSFT: 512.8 };

const recorded = [];

// Mastra calls `execute(inputData, context)`: inputData is the arguments after the schema.
function recorder(name, fn) {
  return async (args) => {
    const entry = { name, args: structuredClone(args), error: null };
    recorded.push(entry);
    try {
      return await fn(args);
    } catch (err) {
      entry.error = `${err.name}: ${err.message}`;
      throw err;
    }
  };
}

function failure(message) {
  const err = new Error(message);
  err.name = "ToolFailure";
  return err;
}

const TOOLS = {
  get_weather: createTool({
    id: "get_weather",
    description: "Get the current weather for a city.",
    inputSchema: z.object({
      city: z.string().describe('The city name, for example "Paris".'),
      unit: z.string().default("celsius").describe('The temperature unit, "celsius" or "fahrenheit".'),
    }),
    execute: recorder("get_weather", ({ city, unit }) => {
      if (!(city in TEMPERATURES_C)) throw failure(`unknown city: ${city}`);
      const c = TEMPERATURES_C[city];
      return unit === "fahrenheit" ? `${Math.round((c * 9) / 5 + 32)}F and sunny in ${city}` : `${c}C and sunny in ${city}`;
    }),
  }),
  get_time: createTool({
    id: "get_time",
    description: "Get the current local time in a timezone.",
    inputSchema: z.object({ timezone: z.string().describe('An IANA timezone name, for example "Asia/Tokyo".') }),
    execute: recorder("get_time", ({ timezone }) => {
      if (!(timezone in LOCAL_TIMES)) throw failure(`unknown timezone: ${timezone}`);
      return LOCAL_TIMES[timezone];
    }),
  }),
  get_stock_price: createTool({
    id: "get_stock_price",
    description: "Get the latest stock price for a ticker symbol.",
    inputSchema: z.object({ symbol: z.string().describe('The ticker symbol, for example "SONY".') }),
    execute: recorder("get_stock_price", ({ symbol }) => {
      if (!(symbol in PRICES)) throw failure(`unknown symbol: ${symbol}`);
      return `${symbol}: ${PRICES[symbol]} USD`;
    }),
  }),
  search_flights: createTool({
    id: "search_flights",
    description: "Search flights between two airports.",
    inputSchema: z.object({
      origin: z.string().describe("IATA code of the departure airport."),
      destination: z.string().describe("IATA code of the arrival airport."),
      passengers: z
        .array(z.record(z.string(), z.any()))
        .describe("One object per traveller: name, age, and an optional seat object."),
      depart_date: z.string().describe("The departure date, YYYY-MM-DD."),
      max_price: z.number().nullable().optional().describe("The highest acceptable price in EUR, or null for no limit."),
      direct_only: z.boolean().optional().describe("Whether to list only direct flights."),
      cabin: z.string().nullable().optional().describe("The cabin class, or null for any."),
      filters: z
        .record(z.string(), z.any())
        .nullable()
        .optional()
        .describe("Extra filters: airlines (a list), max_stops (a number), and so on."),
    }),
    execute: recorder("search_flights", ({ origin, destination, passengers, depart_date }) => {
      return `2 flights ${origin}->${destination} on ${depart_date} for ${passengers.length} passengers, from 899.0 EUR`;
    }),
  }),
};

const openai = createOpenAI({ baseURL: spec.base_url, apiKey: "sk-scripted-not-a-key" });
const modelFor = (name) => (spec.api === "responses" ? openai.responses(`scripted-${name}`) : openai.chat(`scripted-${name}`));

// Sub-agents first: an agent used as a tool is Mastra's own `agents: { <key>: agent }`, which the
// parent's model sees as the tool `agent-<key>`.
const agents = {};
const byName = Object.fromEntries(spec.agents.map((a) => [a.name, a]));
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

const outputs = [];
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

// The top-level runs in order; a later run continues the earlier one's conversation.
async function playAll(parent) {
  let history = [];
  for (const name of spec.top_level) {
    const agent = byName[name];
    const messages = [...history, { role: "user", content: agent.prompt }];
    const ctx = parent?.spanContext();
    const result = await runAgent(name, messages, ctx ? { traceId: ctx.traceId, parentSpanId: ctx.spanId } : undefined);
    history = [...messages, { role: "assistant", content: result.text }];
    outputs.push(result.text);
    runs.push({ agent: name, traceId: result.traceId });
  }
}

if (spec.app_span) {
  const span = tracer.startSpan(spec.app_span);
  try {
    await playAll(span);
  } finally {
    span.end();
  }
} else {
  await playAll(null);
}

// Mastra's exporter batches spans (BatchSpanProcessor, 5 s): flush and shut down so that every span
// reaches the receiver before node exits.
await mastra.observability.flush();
await mastra.shutdown();
await appProvider.shutdown();
writeFileSync(outPath, JSON.stringify({ recorded, outputs, runs }, null, 1));
