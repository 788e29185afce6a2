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
