// Plays one LangGraph.js scenario against the scripted OpenAI server and writes what happened.
//
// Why a Node script driven by capture.py: the scripted server, the scenario script and the
// OTLP/protobuf writer live in Python (tests/captures/), so capture.py starts the server, hands this
// script a spec (server URL, the runs to play, whether to stream) and turns what it writes into the
// testdata .pb/.json and the truth. This script only does what a LangGraph.js user does:
// `createReactAgent({ llm: new ChatOpenAI(...), tools, name })`, tools made with `tool()` from
// @langchain/core, traced by @arizeai/openinference-instrumentation-langchain into the Node SDK.
//
// Spec (JSON, written by capture.py): `base_url`, `stream`, `responses_api`, `agents` (name, prompt,
// tools, instructions, as in capture_scenarios.py), `top_level` (the agents to run, in order),
// `sub_agents` (tool name -> agent it runs), `app_span` (name of an application span around the
// runs, or null).
//
// Output (one JSON file): `otlp` (the OTLP/JSON export body of every span, from
// @opentelemetry/otlp-transformer's JsonTraceSerializer), `recorded` (what each tool function
// received, in call order, with the error it threw), and `outputs` (each run's final text).
//
// Usage: node capture.mjs SPEC.json OUT.json

import { readFileSync, writeFileSync } from "node:fs";

import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { HumanMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { ChatOpenAI } from "@langchain/openai";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { z } from "zod";

const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({
  resource: defaultResource().merge(resourceFromAttributes({ "service.name": "toolscore-capture-langchainjs" })),
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});
provider.register();
new LangChainInstrumentation({ tracerProvider: provider }).manuallyInstrument(CallbackManagerModule);

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
  get_weather: tool(
    recorder("get_weather", ({ city, unit }) => {
      if (!(city in TEMPERATURES_C)) throw failure(`unknown city: ${city}`);
      const c = TEMPERATURES_C[city];
      return unit === "fahrenheit" ? `${Math.round((c * 9) / 5 + 32)}F and sunny in ${city}` : `${c}C and sunny in ${city}`;
    }),
    {
      name: "get_weather",
      description: "Get the current weather for a city.",
      schema: z.object({
        city: z.string().describe('The city name, for example "Paris".'),
        unit: z.string().default("celsius").describe('The temperature unit, "celsius" or "fahrenheit".'),
      }),
    },
  ),
  get_time: tool(
    recorder("get_time", ({ timezone }) => {
      if (!(timezone in LOCAL_TIMES)) throw failure(`unknown timezone: ${timezone}`);
      return LOCAL_TIMES[timezone];
    }),
    {
      name: "get_time",
      description: "Get the current local time in a timezone.",
      schema: z.object({ timezone: z.string().describe('An IANA timezone name, for example "Asia/Tokyo".') }),
    },
  ),
  get_stock_price: tool(
    recorder("get_stock_price", ({ symbol }) => {
      if (!(symbol in PRICES)) throw failure(`unknown symbol: ${symbol}`);
      return `${symbol}: ${PRICES[symbol]} USD`;
    }),
    {
      name: "get_stock_price",
      description: "Get the latest stock price for a ticker symbol.",
      schema: z.object({ symbol: z.string().describe('The ticker symbol, for example "SONY".') }),
    },
  ),
};

TOOLS.search_flights = tool(
  recorder("search_flights", ({ origin, destination, passengers, depart_date }) => {
    return `2 flights ${origin}->${destination} on ${depart_date} for ${passengers.length} passengers, from 899.0 EUR`;
  }),
  {
    name: "search_flights",
    description: "Search flights between two airports.",
    schema: z.object({
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
  },
);

const graphs = {};
const outputs = [];

// A sub-agent used as a tool: the tool's body invokes the sub-agent's graph with the tool's config,
// so the sub-agent's spans are children of the tool span (LangChain.js passes callbacks by config).
function subAgentTool(toolName, agentName) {
  return tool(
    async ({ input }, config) => {
      const state = await graphs[agentName].invoke({ messages: [new HumanMessage(input)] }, config);
      const answer = state.messages[state.messages.length - 1].text;
      outputs.push(answer);
      return answer;
    },
    {
      name: toolName,
      description: `Ask the ${agentName} agent a question.`,
      schema: z.object({ input: z.string().describe("The question to ask.") }),
    },
  );
}

for (const agent of spec.agents) {
  const llm = new ChatOpenAI({
    model: `scripted-${agent.name}`,
    apiKey: "sk-scripted-not-a-key",
    useResponsesApi: Boolean(spec.responses_api),
    configuration: { baseURL: spec.base_url },
    maxRetries: 0,
  });
  const tools = agent.tools.map((name) => (name in spec.sub_agents ? subAgentTool(name, spec.sub_agents[name]) : TOOLS[name]));
  graphs[agent.name] = createReactAgent({ llm, tools, prompt: agent.instructions, name: agent.name });
}

const tracer = provider.getTracer("toolscore.capture");

// One run. Streamed scenarios stream the graph with the "messages" mode, as an app streaming tokens
// to a UI does: the model then streams from the server (stream: true). Not `ChatOpenAI({ streaming:
// true })` with `invoke`: that path estimates token counts with tiktoken, whose encodings it fetches
// from the internet (tiktoken.pages.dev), which the capture must never reach.
async function runGraph(name, input) {
  if (!spec.stream) return graphs[name].invoke(input);
  let state;
  for await (const [mode, chunk] of await graphs[name].stream(input, { streamMode: ["messages", "values"] })) {
    if (mode === "values") state = chunk;
  }
  return state;
}

// The top-level runs in order; a later run continues the earlier one's conversation.
async function playAll() {
  let history = [];
  for (const name of spec.top_level) {
    const agent = spec.agents.find((a) => a.name === name);
    const state = await runGraph(name, { messages: [...history, new HumanMessage(agent.prompt)] });
    history = state.messages;
    outputs.push(history[history.length - 1].text);
  }
}

if (spec.app_span) {
  await tracer.startActiveSpan(spec.app_span, async (span) => {
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
const spans = exporter.getFinishedSpans();
const otlp = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(spans)));
writeFileSync(outPath, JSON.stringify({ otlp, recorded, outputs }, null, 1));
await provider.shutdown();
