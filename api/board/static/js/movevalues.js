// The ranked list of every legal move with its value: the DOM contract for tests and
// scrapers lives here. Each legal move of the shown position gets exactly one element with
// data-move (house number or "swap"), data-value (integer, for the mover) and data-exact.

import { h, replaceKeepingFocus } from "./dom.js";
import { boundsText, result, sideName, signed, valueText, valueWords } from "./format.js";
import { houseToken } from "./notation.js";

export function renderMoveValues(list, answer, { played = null, onPlay, state = "idle" } = {}) {
  if (!answer) {
    const text = state === "error" ? "No values: see the message above." : "Searching\u2026";
    list.replaceChildren(h("li", { class: "placeholder" }, text));
    return;
  }
  if (answer.over) {
    const [south, north] = answer.board.stores;
    list.replaceChildren(h("li", { class: "placeholder" }, `Game over: South ${south}, North ${north}.`));
    return;
  }
  const best = new Set(answer.best_moves.map(String));
  const items = document.createDocumentFragment();
  items.append(
    ...answer.moves.map((move) => {
      const isBest = best.has(String(move.move));
      const classes = ["mv", move.exact ? "exact" : "estimate", result(move.value)];
      if (isBest) classes.push("best");
      if (String(played) === String(move.move)) classes.push("played");
      const name = move.move === "swap" ? "Swap" : `House ${move.move}`;
      const tags = [];
      if (isBest) tags.push(h("span", { class: "tag best-tag" }, "best"));
      if (String(played) === String(move.move)) tags.push(h("span", { class: "tag" }, "played"));
      if (move.extra_turn) tags.push(h("span", { class: "tag" }, "again"));
      if (move.captured) tags.push(h("span", { class: "tag" }, `captures ${move.captured}`));
      const detail = move.exact ? valueWords(move.value, true) : `estimate, proven ${boundsText(move.lower, move.upper)}`;
      return h("li", {}, [
        h(
          "button",
          {
            type: "button",
            class: classes.join(" "),
            "data-move": String(move.move),
            "data-value": String(move.value),
            "data-exact": String(move.exact),
            "aria-label": `${name}: ${move.exact ? valueWords(move.value, true) : `estimated ${signed(move.value)}, between ${signed(move.lower)} and ${signed(move.upper)}`}${isBest ? ", best" : ""}`,
            onclick: () => onPlay(move.move),
          },
          [
            h("span", { class: "mv-name" }, name),
            h("span", { class: "mv-value" }, valueText(move.value, move.exact)),
            h("span", { class: "mv-detail" }, [detail, ...tags]),
          ],
        ),
      ]);
    }),
  );
  replaceKeepingFocus(list, items, "data-move");
}

/** One line on the search behind the answer: exact or estimated, depth, nodes, time. */
export function searchSummary(answer) {
  const who = sideName(answer.to_move);
  const nodes = answer.nodes.toLocaleString("en-US");
  const searched = `${nodes} nodes in ${Math.round(answer.time_ms)} ms`;
  const book = answer.book && (answer.book.kind === "deep" ? "from the deep book" : "from the opening book");
  const underway = answer.searching ? ` depth ${answer.searching.depth} (${answer.searching.moves} of ${answer.moves.length} moves)` : "";
  const from = answer.source === "deep book" ? "from the deep book, " : "";
  const source = answer.live ? `${from}${searched}, searching${underway}\u2026` : answer.stopped ? `${from}${searched}, stopped` : answer.cached ? "from the cache" : book || searched;
  if (answer.over) return "The game is over.";
  if (answer.exact) return `${who} ${valueWords(answer.value, true)} with best play (proven; ${source}).`;
  return (
    `${who}: about ${signed(answer.value)} (estimate at depth ${answer.depth}; proven between ` +
    `${signed(answer.lower)} and ${signed(answer.upper)}; ${source}).`
  );
}

/** The principal variation in Finnish-notation rounds (South left of "-", North right). */
export function pvText(answer) {
  const rounds = [];
  let side = answer.to_move;
  for (const turn of answer.pv || []) {
    const last = rounds[rounds.length - 1];
    if (side === "south" || !last || last.north !== null) rounds.push({ south: "", north: null });
    rounds[rounds.length - 1][side] = turn.map(houseToken).join("");
    side = side === "south" ? "north" : "south";
  }
  return rounds.map((r) => `${r.south}-${r.north ?? ""}`).join(", ");
}
