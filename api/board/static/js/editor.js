// Setting up a position: counts of every house and store, the side to move and the pie flag;
// and pasting a position (compact or JSON) or a game (Finnish notation).

import { h } from "./dom.js";
import { isCompact } from "./position.js";

/** Fill `form` with inputs for `board`; onSubmit(board) gets the edited board. maxSeeds: the
 * most seeds a position may hold (GET /v1/rules' limits.max_seeds). */
export function showEditor(form, board, onSubmit, maxSeeds = 600) {
  const n = board.south.length;
  const counts = (side) =>
    h(
      "div",
      { class: "counts" },
      board[side].map((count, i) =>
        h("label", { class: "count-input" }, [
          h("span", {}, String(i + 1)),
          h("input", { type: "number", min: 0, max: maxSeeds, value: count, name: `${side}-${i}`, "aria-label": `${side} house ${i + 1}` }),
        ]),
      ),
    );
  const store = (side, index) =>
    h("label", { class: "count-input store-input" }, [
      h("span", {}, "store"),
      h("input", { type: "number", min: 0, max: maxSeeds, value: board.stores[index], name: `${side}-store`, "aria-label": `${side} store` }),
    ]);
  const toMove = h("select", { name: "to_move", "aria-label": "Side to move" }, [
    h("option", { value: "south", selected: board.to_move === "south" }, "South to move"),
    h("option", { value: "north", selected: board.to_move === "north" }, "North to move"),
  ]);
  const swap = h("input", { type: "checkbox", name: "swap", checked: board.swap_available });
  form.replaceChildren(
    h("fieldset", {}, [h("legend", {}, "North (houses from North's left)"), counts("north"), store("north", 1)]),
    h("fieldset", {}, [h("legend", {}, "South (houses from South's left)"), counts("south"), store("south", 0)]),
    h("div", { class: "field-row" }, [toMove, h("label", {}, [swap, " swap available (pie rule)"])]),
    h("div", { class: "field-row" }, [
      h("button", { type: "submit" }, "Analyse this position"),
      h("button", { type: "button", onclick: () => clear(form) }, "Empty the houses"),
    ]),
  );
  form.onsubmit = (event) => {
    event.preventDefault();
    const value = (name) => Number(form.elements[name].value);
    const side = (name) => Array.from({ length: n }, (_, i) => value(`${name}-${i}`));
    onSubmit({
      south: side("south"),
      north: side("north"),
      stores: [value("south-store"), value("north-store")],
      to_move: toMove.value,
      swap_available: swap.checked,
    });
  };
}

function clear(form) {
  for (const input of form.querySelectorAll("input[type=number]")) input.value = "0";
}

/** What a pasted text is: {position} (compact, JSON or "start") or {game}. */
export function classifyPaste(text) {
  const trimmed = text.trim();
  if (trimmed === "start" || trimmed.startsWith("{") || isCompact(trimmed)) return { position: trimmed };
  return { game: trimmed };
}
