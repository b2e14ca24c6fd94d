// Plays one scenario with the Vercel AI SDK and its built-in `experimental_telemetry`, for every
// vercel-ai-v<N>/capture.mjs: the SDK records its `ai.*` spans through the global OpenTelemetry tracer
// provider, which the Node SDK exports over OTLP/HTTP (protobuf) to capture.py's receiver.
//
// Why a Node script driven by capture.py: the scripted server, the scenario script, the OTLP receiver
// and the truth live in Python (tests/captures/), so capture.py (../vercel_ai_capture.py) starts the
// server and the receiver, hands the folder's capture.mjs a spec and turns what the receiver got into the
// testdata .pb/.json and the truth. This module only does what an AI SDK user does: `generateText` /
// `streamText` with `tools` made by `tool({ description, inputSchema, execute })` and `stopWhen:
// stepCountIs(10)` for the tool loop (ai@4: `parameters` and `maxSteps: 10`), or, from ai@6 and when the
// spec says `runner: "agent"`, a `ToolLoopAgent({ id, model, instructions, tools, experimental_telemetry })`
// played with `.generate({ messages })` / `.stream({ messages })` (its default stop condition,
// `stepCountIs(20)`); the model from `@ai-sdk/openai`'s `createOpenAI({ baseURL })` (`.chat(id)` for Chat
// Completions, `.responses(id)` for the Responses API) and `experimental_telemetry: { isEnabled: true,
// functionId: <agent name> }`.
//
// This module imports no package itself: a bare import here would resolve from tests/captures/, which has
// no node_modules. The folder's capture.mjs imports its own pinned packages and passes them to `play`.
//
// Spec (JSON, written by capture.py): `base_url` (the scripted model), `otlp_endpoint` (the receiver),
// `api` ("chat" or "responses"), `call` ("generate" or "stream"), `runner` ("text": generateText /
// streamText, or "agent": ToolLoopAgent), `agents` (name, prompt, tools, instructions, as in
// capture_scenarios.py), `top_level` (the agents to run, in order), `sub_agents` (tool name -> agent it
// runs), `app_span` (name of an application span around the runs, or null).
//
// Output (one JSON file): `recorded` (what each tool function received, in call order, with the error
// it threw, and the call id the SDK passed), `outputs` (each top-level run's final text).
//
// Usage: node capture.mjs SPEC.json OUT.json

import { readFileSync, writeFileSync } from "node:fs";

import { playTopLevel, recording, TOOLS as SHARED_TOOLS } from "./capture_tools.mjs";

// `major`: the ai package's major version (4 to 6); `ai`: the ai module; `createOpenAI`: @ai-sdk/openai's;
// `z`: the folder's zod; `otel`: { trace, OTLPTraceExporter, resourceFromAttributes, BatchSpanProcessor,
// NodeTracerProvider } from the folder's OpenTelemetry packages; `serviceName`: the resource's service.name.
export async function play({ major, ai, createOpenAI, z, otel, serviceName }) {
  const [specPath, outPath] = process.argv.slice(2);
  const spec = JSON.parse(readFileSync(specPath, "utf8"));
  if (spec.runner === "agent" && major < 6) throw new Error(`ai@${major} has no ToolLoopAgent`);

  // The user's OpenTelemetry setup: the SDK's spans go through the global tracer provider (tracer "ai").
  const provider = new otel.NodeTracerProvider({
    resource: otel.resourceFromAttributes({ "service.name": serviceName }),
    spanProcessors: [
      new otel.BatchSpanProcessor(new otel.OTLPTraceExporter({ url: `${spec.otlp_endpoint}/v1/traces` })),
    ],
  });
  provider.register();

  // A tool definition: ai@4 names the schema `parameters`, ai@5+ `inputSchema`.
  const schemaKey = major >= 5 ? "inputSchema" : "parameters";
  const makeTool = (description, schema, execute) => ai.tool({ description, [schemaKey]: schema, execute });
  // The tool loop: ai@4 `maxSteps`, ai@5+ `stopWhen` (ai's default: one step).
  const loop = major >= 5 ? { stopWhen: ai.stepCountIs(10) } : { maxSteps: 10 };

  // The same tools, answers and failures as tests/captures/capture_tools.py (./capture_tools.mjs).
  // The SDK calls `execute(input, { toolCallId, messages, ... })`: input is the arguments after the schema.
  const recorded = [];
  const TOOLS = Object.fromEntries(
    Object.entries(SHARED_TOOLS).map(([name, t]) => [
      name,
      makeTool(
        t.description,
        t.schema(z),
        recording(recorded, name, (args, { toolCallId }) => toolCallId),
      ),
    ]),
  );

  // ai@4: `compatibility: "strict"` as @ai-sdk/openai 1.x's default `openai` instance has it: streamed chat
  // requests then ask for usage (`stream_options.include_usage`); createOpenAI's default ("compatible")
  // leaves it out and ai@4 records the usage attributes as NaN. Later versions have no such option.
  const openai = createOpenAI({
    baseURL: spec.base_url,
    apiKey: "sk-scripted-not-a-key",
    ...(major === 4 ? { compatibility: "strict" } : {}),
  });
  const modelFor = (name) =>
    spec.api === "responses" ? openai.responses(`scripted-${name}`) : openai.chat(`scripted-${name}`);
  const byName = Object.fromEntries(spec.agents.map((a) => [a.name, a]));

  // An agent used as a tool: a tool whose execute runs the sub-agent's own generateText (or its
  // ToolLoopAgent's generate; the AI SDK's documented sub-agent pattern), with its own functionId; its run
  // nests under the tool's span.
  function subAgentTool(agentName) {
    return makeTool(
      `Ask the ${agentName} agent.`,
      z.object({ input: z.string().describe("The question for the agent.") }),
      async ({ input }) => (await runAgent(agentName, [{ role: "user", content: input }])).text,
    );
  }

  function toolsOf(agent) {
    return Object.fromEntries(
      agent.tools.map((n) => [n, n in spec.sub_agents ? subAgentTool(spec.sub_agents[n]) : TOOLS[n]]),
    );
  }

  // One run of the agent `name` (generate or stream, as the spec's `call` says).
  async function runAgent(name, messages) {
    const call = spec.call;
    const agent = byName[name];
    const telemetry = { experimental_telemetry: { isEnabled: true, functionId: name } };
    if (spec.runner === "agent") {
      // The agent's `id` reaches no span (generateText has no such option): its runs are named by functionId.
      const toolLoopAgent = new ai.ToolLoopAgent({
        id: name,
        model: modelFor(name),
        instructions: agent.instructions,
        tools: toolsOf(agent),
        maxRetries: 0,
        ...telemetry,
      });
      if (call === "stream") {
        const result = await toolLoopAgent.stream({ messages });
        return { text: await result.text };
      }
      return { text: (await toolLoopAgent.generate({ messages })).text };
    }
    const options = {
      model: modelFor(name),
      system: agent.instructions,
      messages,
      tools: toolsOf(agent),
      ...loop,
      maxRetries: 0,
      ...telemetry,
    };
    if (call === "stream") {
      let failed = null;
      const result = ai.streamText({ ...options, onError: ({ error }) => (failed = error) });
      if (major === 4) await result.consumeStream(); // ai@4's promises settle only once the stream is read
      const text = await result.text;
      if (failed) throw failed;
      return { text };
    }
    return { text: (await ai.generateText(options)).text };
  }

  // The top-level runs in order; a later run continues the earlier one's conversation.
  let outputs;
  if (spec.app_span) {
    await otel.trace.getTracer("toolscore.capture").startActiveSpan(spec.app_span, async (span) => {
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
}
