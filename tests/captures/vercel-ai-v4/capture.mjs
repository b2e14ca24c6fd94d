// Plays one scenario with the Vercel AI SDK (ai@4) and its built-in `experimental_telemetry`: the SDK
// records its `ai.*` spans through the global OpenTelemetry tracer provider, which the Node SDK exports
// over OTLP/HTTP (protobuf) to capture.py's receiver.
//
// Why a Node script driven by capture.py: the scripted server, the scenario script, the OTLP receiver
// and the truth live in Python (tests/captures/), so capture.py starts the server and the receiver,
// hands this script a spec and turns what the receiver got into the testdata .pb/.json and the truth.
// This script only does what an AI SDK user does: `generateText` / `streamText` with `tools` made by
// `tool({ description, parameters, execute })`, `maxSteps: 10` for the tool loop, the model
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
import { generateText, streamText, tool } from "ai";
import { z } from "zod";

const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));

// The user's OpenTelemetry setup: the SDK's spans go through the global tracer provider (tracer "ai").
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": "toolscore-capture-vercel-ai-v4" }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${spec.otlp_endpoint}/v1/traces` }))],
});
provider.register();

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

// The SDK calls `execute(args, { toolCallId, messages, ... })`: args are the arguments after the schema.
function recorder(name, fn) {
  return async (args, { toolCallId }) => {
    const entry = { name, id: toolCallId, args: structuredClone(args), error: null };
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
  get_weather: tool({
    description: "Get the current weather for a city.",
    parameters: z.object({
      city: z.string().describe('The city name, for example "Paris".'),
      unit: z.string().default("celsius").describe('The temperature unit, "celsius" or "fahrenheit".'),
    }),
    execute: recorder("get_weather", ({ city, unit }) => {
      if (!(city in TEMPERATURES_C)) throw failure(`unknown city: ${city}`);
      const c = TEMPERATURES_C[city];
      return unit === "fahrenheit" ? `${Math.round((c * 9) / 5 + 32)}F and sunny in ${city}` : `${c}C and sunny in ${city}`;
    }),
  }),
  get_time: tool({
    description: "Get the current local time in a timezone.",
    parameters: z.object({ timezone: z.string().describe('An IANA timezone name, for example "Asia/Tokyo".') }),
    execute: recorder("get_time", ({ timezone }) => {
      if (!(timezone in LOCAL_TIMES)) throw failure(`unknown timezone: ${timezone}`);
      return LOCAL_TIMES[timezone];
    }),
  }),
  get_stock_price: tool({
    description: "Get the latest stock price for a ticker symbol.",
    parameters: z.object({ symbol: z.string().describe('The ticker symbol, for example "SONY".') }),
    execute: recorder("get_stock_price", ({ symbol }) => {
      if (!(symbol in PRICES)) throw failure(`unknown symbol: ${symbol}`);
      return `${symbol}: ${PRICES[symbol]} USD`;
    }),
  }),
  search_flights: tool({
    description: "Search flights between two airports.",
    parameters: z.object({
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

// `compatibility: "strict"` as @ai-sdk/openai 1.x's default `openai` instance has it: streamed chat requests
// then ask for usage (`stream_options.include_usage`); createOpenAI's default ("compatible") leaves it out and
// ai@4 records the usage attributes as NaN.
const openai = createOpenAI({ baseURL: spec.base_url, apiKey: "sk-scripted-not-a-key", compatibility: "strict" });
const modelFor = (name) => (spec.api === "responses" ? openai.responses(`scripted-${name}`) : openai.chat(`scripted-${name}`));
const byName = Object.fromEntries(spec.agents.map((a) => [a.name, a]));

// An agent used as a tool: a tool whose execute runs the sub-agent's own generateText (the AI SDK's
// documented sub-agent pattern), with its own functionId; its run nests under the tool's span.
function subAgentTool(agentName) {
  return tool({
    description: `Ask the ${agentName} agent.`,
    parameters: z.object({ input: z.string().describe("The question for the agent.") }),
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
    maxSteps: 10,
    maxRetries: 0,
    experimental_telemetry: { isEnabled: true, functionId: name },
  };
  if (spec.call === "stream") {
    let failed = null;
    const result = streamText({ ...options, onError: ({ error }) => (failed = error) });
    await result.consumeStream(); // ai@4's promises (text, response) settle only once the stream is read
    const text = await result.text;
    if (failed) throw failed;
    return { text, response: await result.response };
  }
  const result = await generateText(options);
  return { text: result.text, response: result.response };
}

const outputs = [];

// The top-level runs in order; a later run continues the earlier one's conversation.
async function playAll() {
  let history = [];
  for (const name of spec.top_level) {
    const messages = [...history, { role: "user", content: byName[name].prompt }];
    const result = await runAgent(name, messages);
    history = [...messages, { role: "assistant", content: result.text }];
    outputs.push(result.text);
  }
}

if (spec.app_span) {
  await trace.getTracer("toolscore.capture").startActiveSpan(spec.app_span, async (span) => {
    try {
      await playAll();
    } finally {
      span.end();
    }
  });
} else {
  await playAll();
}

await provider.forceFlush();
await provider.shutdown();
writeFileSync(outPath, JSON.stringify({ recorded, outputs }, null, 1));
