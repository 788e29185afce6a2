// How values are written: from the mover's point of view, signed, with the result.
// Exact values are plain numbers; estimates are prefixed with "≈" and carry their proven
// bounds and the search depth, so the two differ in text, not only in colour.

export const MINUS = "\u2212";

export function signed(value) {
  if (value > 0) return `+${value}`;
  if (value < 0) return `${MINUS}${-value}`;
  return "0";
}

/** "win", "draw" or "loss" for the mover; an estimate's result is what it is most likely. */
export function result(value) {
  return value > 0 ? "win" : value < 0 ? "loss" : "draw";
}

/** The short text of a value: "+4" exact, "≈+4" estimated. */
export function valueText(value, exact) {
  return (exact ? "" : "\u2248") + signed(value);
}

/** "wins by 4" / "draw" / "loses by 3" (exact) or "about +4" (estimate). */
export function valueWords(value, exact) {
  if (!exact) return `estimated ${signed(value)}`;
  if (value > 0) return `wins by ${value}`;
  if (value < 0) return `loses by ${-value}`;
  return "draw";
}

/** The proven interval of an estimate: "−46…+48". */
export function boundsText(lower, upper) {
  return `${signed(lower)}\u2026${signed(upper)}`;
}

export function sideName(side) {
  return side === "south" ? "South" : "North";
}

export const JUDGEMENT_MARK = { best: "", inaccuracy: "?!", mistake: "?", blunder: "??" };
