// The Finnish notation of a line of sowings: rounds "south-north"
// separated by ", ", a turn's sowings written together, "*" after a capture. Mirrors
// kalah_core.finnish.write_fi, split into tokens so the page can make each sowing a button.

/** Rounds of turns: [{south: [index...], north: [index...]}], indexes into `steps`. */
export function rounds(steps) {
  const result = [];
  let turn = [];
  steps.forEach((step, k) => {
    turn.push(k);
    const endsTurn = !step.extra_turn || step.over || k === steps.length - 1;
    if (!endsTurn) return;
    const last = result[result.length - 1];
    if (step.mover === "south" || !last || last.north.length) result.push({ south: [], north: [] });
    result[result.length - 1][step.mover] = turn;
    turn = [];
  });
  return result;
}

/** A sowing's house as written: 1..9, then a, b, c for houses 10..12 (kalah_core.finnish). */
export function houseToken(move) {
  return typeof move === "number" && move >= 10 ? String.fromCharCode(87 + move) : String(move);
}

export function token(step) {
  return `${houseToken(step.move)}${step.captured ? "*" : ""}`;
}

/** The canonical text of the line (what POST /v1/play answers as `game`). */
export function writeGame(steps) {
  return rounds(steps)
    .map((r) => `${r.south.map((i) => token(steps[i])).join("")}-${r.north.map((i) => token(steps[i])).join("")}`)
    .join(", ");
}
