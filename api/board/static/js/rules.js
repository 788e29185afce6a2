// Rules as the page carries them: the query form of GET /v1/analysis ({rules: preset, plus
// one text parameter per overridden option}), turned into the objects the POST endpoints
// take and, with GET /v1/rules's presets, into every option's effective value.

export const OPTIONS = ["houses", "seeds", "capture", "end", "remaining", "majority", "pie"];
const NUMBERS = new Set(["houses", "seeds"]);
const BOOLEANS = new Set(["majority", "pie"]);

function typed(name, text) {
  if (NUMBERS.has(name)) return Number(text);
  if (BOOLEANS.has(name)) return text === "true" || text === "1";
  return text;
}

/** {preset, option: value...} for POST bodies. */
export function rulesBody(query) {
  const body = { preset: query.rules || "kalah" };
  for (const name of OPTIONS) if (query[name] !== undefined) body[name] = typed(name, query[name]);
  return body;
}

/** Every option's value: the preset's, overridden (null while the presets are unknown). */
export function effectiveRules(info, query) {
  const preset = info?.presets.find((p) => p.name === (query.rules || "kalah"));
  if (!preset) return null;
  const body = rulesBody(query);
  const rules = { ...preset.rules };
  for (const name of OPTIONS) if (name in body) rules[name] = body[name];
  return rules;
}

/** The query form of `rules` (every option) on top of `preset`: only the options that differ. */
export function rulesQuery(info, preset, rules) {
  const base = info.presets.find((p) => p.name === preset).rules;
  const query = { rules: preset };
  for (const name of OPTIONS) if (rules[name] !== base[name]) query[name] = String(rules[name]);
  return query;
}
