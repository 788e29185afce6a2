// The board as SVG, drawn like kalah_core/svg.py: South at the bottom unless flipped, houses
// numbered from each player's own left, North's store on the left. The mover's playable
// houses are buttons (click, Enter, Space) and carry their value in a chip beside them.

import { replaceKeepingFocus, s } from "./dom.js";
import { result, valueText, valueWords } from "./format.js";

const CELL = 64;
const PAD = 10;
const LABEL = 18;
const CHIP = 30;
const SWAP_PREFIX = "\u21c4 "; // ⇄: the swap, named in full in its label
const MIN_TEXT_PX = 12; // no text smaller on screen, however narrow the board is drawn
const MAX_WIDTH_PX = 720; // .board-svg's max-width
let chipFont = 16; // the chips' font size in the board's units (larger on a small board)

/**
 * Draw `board` into `container`.
 * values: Map move -> {value, exact, best}; played: the move to outline (a review's sowing);
 * onPlay(move): called when a playable house is chosen.
 */
export function drawBoard(container, board, { flipped = false, values = new Map(), played = null, onPlay }) {
  const n = board.south.length;
  const width = 2 * PAD + (n + 2) * CELL;
  const height = 2 * PAD + 2 * CHIP + 2 * LABEL + 2 * CELL;
  const bottom = flipped ? "north" : "south";
  const top = flipped ? "south" : "north";
  const boardTop = PAD + CHIP + LABEL;
  const svg = s("svg", {
    viewBox: `0 0 ${width} ${height}`,
    // More than 8 houses: a wide board keeps its counts legible (scrolling on a phone).
    class: n > 8 ? "board-svg wide" : "board-svg",
    role: "group",
    "aria-label": `Board seen from ${bottom}`,
  });
  // The board is drawn at the container's width: below MIN_TEXT_PX on screen, labels and
  // chips grow in the board's units (board.css reads --min-font).
  const shown = Math.min(container.clientWidth || MAX_WIDTH_PX, MAX_WIDTH_PX);
  const minFont = (MIN_TEXT_PX * width) / shown;
  svg.style.setProperty("--min-font", `${minFont.toFixed(2)}px`);
  chipFont = Math.max(16, minFont);
  svg.append(
    s("rect", { x: PAD, y: boardTop, width: width - 2 * PAD, height: 2 * CELL, rx: CELL / 2, class: "wood" }),
  );
  for (const [row, side] of [[0, top], [1, bottom]]) {
    const mover = board.to_move === side;
    for (let house = 1; house <= n; house++) {
      const column = row === 1 ? house - 1 : n - house;
      const x = PAD + CELL * (column + 1) + CELL / 2;
      const y = boardTop + CELL * row + CELL / 2;
      const count = board[side][house - 1];
      const info = mover ? values.get(house) : undefined;
      svg.append(houseGroup(x, y, count, side, house, { info, played: mover && played === house, onPlay, mover }));
      const labelY = row === 1 ? y + CELL / 2 + LABEL - 4 : y - CELL / 2 - 5;
      svg.append(s("text", { x, y: labelY, class: mover ? "label mover" : "label" }, String(house)));
      if (info) {
        const chipY = row === 1 ? labelY + 5 : labelY - LABEL - 22;
        svg.append(chip(x, chipY, info));
      }
    }
  }
  for (const [side, left] of [[top, true], [bottom, false]]) {
    svg.append(store(width, boardTop, left, board.stores[side === "south" ? 0 : 1], side, board.to_move === side));
  }
  const swap = values.get("swap");
  if (swap) {
    // The pie swap: a chip by the mover's store, in the mover's row of chips.
    const moverOnTop = board.to_move === top;
    const half = chipWidth(SWAP_PREFIX + valueText(swap.value, swap.exact)) / 2;
    const x = moverOnTop ? PAD + half : width - PAD - half;
    const y = moverOnTop ? PAD + 3 : boardTop + 2 * CELL + LABEL + 1;
    svg.append(swapButton(x, y, swap, played === "swap", onPlay));
  }
  replaceKeepingFocus(container, svg, "data-house");
}

function houseGroup(x, y, count, side, house, { info, played, onPlay, mover }) {
  const playable = mover && count > 0 && onPlay;
  const classes = ["house"];
  if (info?.best) classes.push("best");
  if (played) classes.push("played");
  if (playable) classes.push("playable");
  const what = `${side === "south" ? "South" : "North"} house ${house}, ${count} seed${count === 1 ? "" : "s"}`;
  const group = s("g", {
    class: classes.join(" "),
    "data-house": `${side}-${house}`,
    role: playable ? "button" : "img",
    tabindex: playable ? 0 : undefined,
    "aria-label": info ? `${what}: play it, ${valueWords(info.value, info.exact)}${info.best ? ", best" : ""}` : what,
  });
  group.append(
    s("circle", { cx: x, cy: y, r: CELL / 2 - 6 }),
    s("text", { x, y: y + 8, class: count >= 100 ? "count small" : "count", "aria-hidden": "true" }, String(count)),
  );
  if (playable) {
    group.addEventListener("click", () => onPlay(house));
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        onPlay(house);
      }
    });
  }
  return group;
}

function swapButton(x, y, info, played, onPlay) {
  const group = s("g", {
    class: `house swap${played ? " played" : ""}`,
    "data-house": "swap",
    role: "button",
    tabindex: 0,
    "aria-label": `Swap sides (pie rule): ${valueWords(info.value, info.exact)}${info.best ? ", best" : ""}`,
  });
  group.append(s("title", {}, "Swap sides (pie rule)"), chip(x, y, info, SWAP_PREFIX));
  group.addEventListener("click", () => onPlay("swap"));
  group.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      onPlay("swap");
    }
  });
  return group;
}

function chipWidth(text) {
  return Math.max(40, 12 + 0.625 * chipFont * text.length);
}

function chip(x, y, info, prefix = "") {
  const text = prefix + valueText(info.value, info.exact);
  const width = chipWidth(text);
  const classes = ["chip", info.exact ? "exact" : "estimate", result(info.value)];
  if (info.best) classes.push("best");
  return s("g", { class: classes.join(" "), "aria-hidden": "true" }, [
    s("rect", { x: x - width / 2, y, width, height: 24, rx: 12 }),
    s("text", { x, y: y + 17.5 }, text),
  ]);
}

function store(width, boardTop, left, count, side, mover) {
  const w = CELL - 12;
  const h = 2 * CELL - 16;
  const x = left ? PAD + 6 : width - PAD - CELL + 6;
  const y = boardTop + 8;
  const name = side === "south" ? "South" : "North";
  const labelY = left ? boardTop - 5 : boardTop + 2 * CELL + LABEL - 4;
  return s("g", { class: mover ? "store mover" : "store", role: "img", "aria-label": `${name}'s store, ${count}` }, [
    s("rect", { x, y, width: w, height: h, rx: w / 2 }),
    s("text", { x: x + w / 2, y: y + h / 2 + 9, class: "count", "aria-hidden": "true" }, String(count)),
    s("text", { x: x + w / 2, y: labelY, class: mover ? "label mover" : "label", "aria-hidden": "true" }, name),
  ]);
}
