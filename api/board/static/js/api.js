// The public API, as this page uses it: one function per endpoint, answers as parsed JSON.
// A problem+json answer is thrown as an ApiError carrying the problem (detail, field).

export class ApiError extends Error {
  constructor(problem, status) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.problem = problem;
    this.status = status;
  }
}

async function send(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { Accept: "application/json", ...(options.headers || {}) },
  });
  const body = await response.json().catch(() => ({ detail: `HTTP ${response.status}` }));
  if (!response.ok) throw new ApiError(body, response.status);
  return body;
}

function post(path, body, signal) {
  return send(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
}

/** GET /v1/analysis: `params` are the page's query parameters (position, rules, ...). */
export function analyse(params, { timeMs, signal } = {}) {
  const query = new URLSearchParams(params);
  if (timeMs) query.set("time_ms", String(timeMs));
  return send(`/v1/analysis?${query}`, { signal });
}

/** GET /v1/analysis as a live analysis (NDJSON): `onEvent` gets each event while the search
 * deepens; resolves to the answer (the last event's). Aborting `signal` closes the stream,
 * which stops the search on the server. */
export async function analyseLive(params, { timeMs, signal, onEvent }) {
  const query = new URLSearchParams(params);
  if (timeMs) query.set("time_ms", String(timeMs));
  const response = await fetch(`/v1/analysis?${query}`, { signal, headers: { Accept: "application/x-ndjson" } });
  if (!response.ok) {
    const problem = await response.json().catch(() => ({ detail: `HTTP ${response.status}` }));
    throw new ApiError(problem, response.status);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (!line) continue; // a heartbeat
      const event = JSON.parse(line);
      if (event.final) {
        if (event.problem) throw new ApiError(event.problem, event.problem.status || 500);
        return event.answer;
      }
      onEvent(event);
    }
  }
  throw new ApiError({ detail: "the live analysis ended without its answer" }, 502);
}

/** POST /v1/play: `moves` (houses or "swap") or a Finnish-notation `game` from `position`. */
export function play(rules, position, { moves, game } = {}) {
  const body = { rules, position };
  if (game !== undefined) body.game = game;
  else body.moves = moves || [];
  return post("/v1/play", body);
}

/** POST /v1/games/analysis: every sowing's loss and judgement. */
export function reviewGame(rules, position, game, signal) {
  return post("/v1/games/analysis", { rules, position, game }, signal);
}

/** GET /v1/rules: presets, options and this server's limits. */
export function rulesInfo() {
  return send("/v1/rules");
}
