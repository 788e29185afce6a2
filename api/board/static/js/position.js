// The compact notation of positions (docs/rules.md, "Positions"): parsed here only to draw the board
// and fill the editor before the API answers; the API stays the judge of validity.

const DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const COMPACT = /^([0-9a-zA-Z~]+)-(\d{1,3})-([0-9a-zA-Z~]+)-(\d{1,3})-([sn])(p?)$/;

function parseHouses(text) {
  const counts = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "~") {
      counts.push(DIGITS.indexOf(text[i + 1]) * 62 + DIGITS.indexOf(text[i + 2]));
      i += 2;
    } else {
      counts.push(DIGITS.indexOf(text[i]));
    }
  }
  return counts;
}

function writeHouses(counts) {
  return counts
    .map((c) => (c < 62 ? DIGITS[c] : "~" + DIGITS[Math.floor(c / 62)] + DIGITS[c % 62]))
    .join("");
}

export function isCompact(text) {
  return COMPACT.test(text);
}

/** {south, north, stores, to_move, swap_available} from the compact notation, or null. */
export function parseCompact(text) {
  const match = COMPACT.exec(text);
  if (!match) return null;
  const [, south, southStore, north, northStore, side, pie] = match;
  return {
    south: parseHouses(south),
    north: parseHouses(north),
    stores: [Number(southStore), Number(northStore)],
    to_move: side === "s" ? "south" : "north",
    swap_available: pie === "p",
  };
}

export function toCompact(board) {
  const side = (board.to_move === "south" ? "s" : "n") + (board.swap_available ? "p" : "");
  return `${writeHouses(board.south)}-${board.stores[0]}-${writeHouses(board.north)}-${board.stores[1]}-${side}`;
}

/** The start of `rules` (an object of every option). */
export function startOf(rules) {
  const houses = Array(rules.houses).fill(rules.seeds);
  return { south: houses, north: [...houses], stores: [0, 0], to_move: "south", swap_available: rules.pie };
}
