// The tools of tests/captures/capture_tools.py for the JavaScript captures (the same answers and
// failures), shared by the folders' capture.mjs: `TOOLS` gives each tool's description, zod schema and
// function; each capture.mjs wraps them in its framework's own tool type with `recording`.
//
// This module imports nothing: a bare import here would resolve from tests/captures/, which has no
// node_modules. `schema(z)` takes the zod of the importing folder (its package.json pins the version).

export const TEMPERATURES_C = { Paris: 21, London: 15, Tokyo: 18, Lisbon: 24, Oslo: 4, Rome: 26, Berlin: 12, Madrid: 28 };
export const LOCAL_TIMES = {
  "Asia/Tokyo": "2026-11-28T22:00:00+09:00",
  "Europe/Paris": "2026-11-28T14:00:00+01:00",
  "Europe/Rome": "2026-11-28T14:00:00+01:00",
  "America/New_York": "2026-11-28T08:00:00-05:00",
};
export const PRICES = { SONY: 92.4, AAPL: 231.5, NVDA: 141.2, MSFT: 512.8 };

export function failure(message) {
  const err = new Error(message);
  err.name = "ToolFailure";
  return err;
}

export const TOOLS = {
  get_weather: {
    description: "Get the current weather for a city.",
    schema: (z) =>
      z.object({
        city: z.string().describe('The city name, for example "Paris".'),
        unit: z.string().default("celsius").describe('The temperature unit, "celsius" or "fahrenheit".'),
      }),
    fn: ({ city, unit }) => {
      if (!(city in TEMPERATURES_C)) throw failure(`unknown city: ${city}`);
      const c = TEMPERATURES_C[city];
      return unit === "fahrenheit" ? `${Math.round((c * 9) / 5 + 32)}F and sunny in ${city}` : `${c}C and sunny in ${city}`;
    },
  },
  get_time: {
    description: "Get the current local time in a timezone.",
    schema: (z) => z.object({ timezone: z.string().describe('An IANA timezone name, for example "Asia/Tokyo".') }),
    fn: ({ timezone }) => {
      if (!(timezone in LOCAL_TIMES)) throw failure(`unknown timezone: ${timezone}`);
      return LOCAL_TIMES[timezone];
    },
  },
  get_stock_price: {
    description: "Get the latest stock price for a ticker symbol.",
    schema: (z) => z.object({ symbol: z.string().describe('The ticker symbol, for example "SONY".') }),
    fn: ({ symbol }) => {
      if (!(symbol in PRICES)) throw failure(`unknown symbol: ${symbol}`);
      return `${symbol}: ${PRICES[symbol]} USD`;
    },
  },
  search_flights: {
    description: "Search flights between two airports.",
    schema: (z) =>
      z.object({
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
    fn: ({ origin, destination, passengers, depart_date }) => {
      return `2 flights ${origin}->${destination} on ${depart_date} for ${passengers.length} passengers, from 899.0 EUR`;
    },
  },
};

// The tool function `name` as its framework calls it, noting in `recorded` what it received (the
// arguments after the framework's schema) and the error it threw. `idOf(args, options)`, when given,
// is the call id the framework passed, kept as `id`.
export function recording(recorded, name, idOf = null) {
  const fn = TOOLS[name].fn;
  return async (args, options) => {
    const entry = idOf ? { name, id: idOf(args, options), args: structuredClone(args), error: null } : { name, args: structuredClone(args), error: null };
    recorded.push(entry);
    try {
      return await fn(args);
    } catch (err) {
      entry.error = `${err.name}: ${err.message}`;
      throw err;
    }
  };
}

// The top-level runs in order, each continuing the earlier one's conversation; their final texts.
// `run(name, messages)` plays one run and returns at least `{ text }`.
export async function playTopLevel(spec, run) {
  const byName = Object.fromEntries(spec.agents.map((a) => [a.name, a]));
  const outputs = [];
  let history = [];
  for (const name of spec.top_level) {
    const messages = [...history, { role: "user", content: byName[name].prompt }];
    const result = await run(name, messages);
    history = [...messages, { role: "assistant", content: result.text }];
    outputs.push(result.text);
  }
  return outputs;
}
