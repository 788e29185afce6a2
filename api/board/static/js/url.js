// Every state of the page is a URL with the query parameters of GET /v1/analysis
// (position, rules and the rule options) plus game= for a reviewed game, whose shown sowing
// is the fragment (#12: the position before the 13th sowing; none: the end of the game).

import { OPTIONS } from "./rules.js";

export function readUrl(location) {
  const params = new URLSearchParams(location.search);
  const query = { rules: params.get("rules") || "kalah" };
  for (const name of OPTIONS) if (params.has(name)) query[name] = params.get(name);
  const hash = /^#(\d+)$/.exec(location.hash);
  return {
    query,
    position: params.get("position") || "start",
    game: params.get("game"),
    cursor: hash ? Number(hash[1]) : null,
  };
}

/** The URL of a state: `position` is the shown position, or a reviewed game's start. */
export function writeUrl({ query, position, game = null, cursor = null }) {
  const params = new URLSearchParams();
  if (!game || position !== "start") params.set("position", position);
  params.set("rules", query.rules || "kalah");
  for (const name of OPTIONS) if (query[name] !== undefined) params.set(name, query[name]);
  if (game) params.set("game", game);
  return `/?${params.toString().replaceAll("+", "%20")}${cursor === null ? "" : `#${cursor}`}`;
}
