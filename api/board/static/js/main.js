// The analysis board: holds the shown line of sowings, keeps the URL and the history in step
// with it, asks the API for values and hands the answers to the views. Every value on the
// page comes from the public API (GET /v1/analysis, POST /v1/play, POST /v1/games/analysis).

import * as api from "./api.js";
import { drawBoard } from "./boardview.js";
import { drawChart } from "./chart.js";
import { classifyPaste, showEditor } from "./editor.js";
import { sideName } from "./format.js";
import { pvText, renderMoveValues, searchSummary } from "./movevalues.js";
import { writeGame } from "./notation.js";
import { parseCompact, startOf } from "./position.js";
import { renderRecord, renderSummary } from "./record.js";
import { effectiveRules, rulesBody } from "./rules.js";
import { initRulesPicker } from "./rulespicker.js";
import { readUrl, writeUrl } from "./url.js";

const $ = (id) => document.getElementById(id);
/** A performance mark when the first values are on screen (benchmarks/bench_board.py). */
const FIRST_VALUES = "kalah:first-values";
const LOAD_SEARCH = location.search;

/** The shown line: rules, its start, its sowings, how many are played, and whether it is a
 * reviewed game (game: its text). A step is {move, mover, captured, extra_turn, position
 * (after it), review?}. */
let view = { query: { rules: "kalah" }, start: "start", steps: [], cursor: 0, game: null };
let flipped = remembered("kalah-flipped") === "true";
let info = null;
let picker = null;
let reviewState = "none";
const answers = new Map();
let pending = null;
let analysisState = "idle";

const positionAt = (cursor) => (cursor === 0 ? view.start : view.steps[cursor - 1].position);
const current = () => positionAt(view.cursor);
const paramsOf = (position) => ({ position, ...view.query });
const keyOf = (params) => new URLSearchParams(params).toString();
const answerFor = (position) => answers.get(keyOf(paramsOf(position))) || null;

/** The browser's storage, which a privacy setting may refuse: the page works without it. */
function remembered(name) {
  try {
    return localStorage.getItem(name);
  } catch {
    return null;
  }
}

function remember(name, value) {
  try {
    localStorage.setItem(name, value);
  } catch {
    // not remembered: the board is drawn from South next time
  }
}

function snapshot() {
  return { v: 1, ...view };
}

/** Apply `change` to the view, record it in the history (a new entry unless `replace`). */
function navigate(change, { replace = false } = {}) {
  view = { ...view, ...change };
  const url = view.game ? urlOfView() : writeUrl({ query: view.query, position: current() });
  history[replace ? "replaceState" : "pushState"](snapshot(), "", url);
  showMessage("");
  render();
  requestAnalysis();
}

function urlOfView() {
  const end = view.cursor === view.steps.length;
  return writeUrl({ query: view.query, position: view.start, game: view.game, cursor: end ? null : view.cursor });
}

// -- values -----------------------------------------------------------------------------

async function requestAnalysis({ timeMs, live = false } = {}) {
  const position = current();
  const params = paramsOf(position);
  const key = keyOf(params);
  if (answers.has(key) && !timeMs) return;
  pending?.abort();
  const controller = new AbortController();
  pending = controller;
  analysisState = timeMs ? "longer" : "searching";
  renderAnswer();
  try {
    let answer;
    if (live) {
      // Search longer: a live analysis; each event shows what the search has so far.
      const onEvent = (event) => {
        answers.set(key, liveAnswer(answers.get(key), event));
        if (current() === position && pending === controller) renderAnswer();
      };
      answer = await api.analyseLive(params, { timeMs, signal: controller.signal, onEvent });
      const shown = answers.get(key);
      if (shown && !answer.exact && (answer.depth ?? 0) < (shown.depth ?? 0)) {
        answer = { ...liveAnswer(shown, answer), live: false, searching: null }; // not shallower
      }
    } else {
      answer = (!timeMs && (await prefetched(key))) || (await api.analyse(params, { timeMs, signal: controller.signal }));
    }
    answers.set(key, answer);
    analysisState = "idle";
  } catch (error) {
    if (error.name === "AbortError") {
      if (pending === controller && analysisState === "longer") {
        analysisState = "idle"; // stopped: the page keeps what the search had
        const shown = answers.get(key);
        if (shown?.live) answers.set(key, { ...shown, live: false, stopped: true });
      }
      if (current() === position) render();
      return;
    }
    analysisState = "error";
    showMessage(error.message);
  } finally {
    if (pending === controller) pending = null;
  }
  if (current() === position) render();
}

/** The answer shown while a live analysis runs: what the board showed, deepened by what the
 * search has so far. "Search longer" continues from what is shown: a stream re-searching the
 * depths already shown (a new search, or another worker's engine) changes no estimate until
 * it is as deep, and every proven bound, old or new, holds (the narrower one is shown). */
function liveAnswer(before, event) {
  const deeper = !before || before.over || event.depth >= (before.depth ?? 0);
  const base = deeper ? event : before;
  const other = new Map((deeper ? before?.moves || [] : event.moves).map((m) => [String(m.move), m]));
  const moves = base.moves.map((m) => {
    const o = other.get(String(m.move));
    const lower = Math.max(m.lower, o ? o.lower : m.lower);
    const upper = Math.min(m.upper, o ? o.upper : m.upper);
    return { ...m, lower, upper, value: Math.min(Math.max(m.value, lower), upper), exact: lower === upper };
  });
  moves.sort((a, b) => b.value - a.value || Number(b.exact) - Number(a.exact) || b.lower - a.lower);
  const lower = Math.max(event.lower, before ? before.lower : event.lower);
  const upper = Math.min(event.upper, before ? before.upper : event.upper);
  const value = Math.min(Math.max(moves[0].value, lower), upper);
  const best = moves.filter((m) => m.value === moves[0].value).map((m) => m.move);
  return {
    ...before,
    depth: base.depth,
    pv: base.pv,
    moves,
    value,
    lower,
    upper,
    exact: lower === upper,
    best_moves: best,
    nodes: event.nodes,
    time_ms: event.time_ms,
    searching: event.searching,
    source: deeper ? event.source : "search",
    cached: false,
    book: null,
    live: true,
  };
}

let loadKey = null; // the analysis the page needed first: the one prefetch.js asked for

/** The answer prefetch.js asked for with the query the page was loaded with, for a request of
 * that first position only: prefetch.js runs async and may store it after the first request has
 * gone out, and it is then no answer for the position the player has moved to. */
async function prefetched(key) {
  loadKey ??= key;
  if (key !== loadKey) return null;
  const early = globalThis.kalahPrefetch;
  globalThis.kalahPrefetch = undefined;
  return early && early.search === LOAD_SEARCH ? early.answer : null;
}

function searchLonger() {
  if (analysisState === "longer") {
    pending?.abort(); // Stop: closing the stream stops the search on the server
    return;
  }
  const max = info?.limits.max_stream_time_ms ?? info?.limits.max_time_ms ?? 10000;
  requestAnalysis({ timeMs: max, live: true });
}

// -- moves --------------------------------------------------------------------------------

async function playMove(move) {
  const next = view.steps[view.cursor];
  if (next && String(next.move) === String(move)) {
    navigate({ cursor: view.cursor + 1 });
    return;
  }
  const position = current();
  const answer = answerFor(position);
  let step;
  const known = answer?.moves.find((m) => String(m.move) === String(move));
  if (known) {
    step = { move: known.move, mover: answer.to_move, captured: known.captured, extra_turn: known.extra_turn, position: known.position };
  } else {
    try {
      const played = await api.play(rulesBody(view.query), position, { moves: [move] });
      const s = played.steps[0];
      step = { move: s.move, mover: s.mover, captured: s.captured, extra_turn: s.extra_turn, over: s.over, position: s.position };
    } catch (error) {
      showMessage(error.message);
      return;
    }
  }
  navigate({ steps: [...view.steps.slice(0, view.cursor), step], cursor: view.cursor + 1, game: null });
}

function jump(cursor) {
  if (cursor >= 0 && cursor <= view.steps.length && cursor !== view.cursor) navigate({ cursor });
}

/** The reviewed sowings that lose seeds (inaccuracies, mistakes, blunders), by index. */
const mistakes = () => view.steps.flatMap((step, i) => (step.review && step.review.loss > 0 ? [i] : []));

/** Show the position before the next sowing that loses seeds (after the last: the first). */
function nextMistake() {
  const found = mistakes();
  if (!found.length) return;
  jump(found.find((i) => i > view.cursor) ?? found.find((i) => i !== view.cursor) ?? found[0]);
}

// -- games --------------------------------------------------------------------------------

async function openGame(query, position, game, cursor, { replace = false } = {}) {
  let played;
  $("review-status").textContent = "Opening the game\u2026";
  try {
    played = await api.play(rulesBody(query), position, { game });
  } catch (error) {
    $("review-status").textContent = "";
    showMessage(`Game: ${error.message}`);
    return;
  }
  const steps = played.steps.map((s) => ({
    move: s.move, mover: s.mover, captured: s.captured, extra_turn: s.extra_turn, over: s.over, position: s.position,
  }));
  // A review opens at the start of the game (N: its first mistake); a cursor in the URL wins.
  const at = cursor === null ? 0 : Math.min(cursor, steps.length);
  navigate({ query, start: position === "start" ? "start" : played.start, steps, cursor: at, game: played.game }, { replace });
  review();
}

/** Ask for the review of the shown game and attach each sowing's loss to its step. */
async function review() {
  const { game, query, start } = view;
  if (!game || view.steps.every((s) => s.review)) return;
  reviewState = "pending";
  renderReview();
  try {
    const answer = await api.reviewGame(rulesBody(query), start, game);
    if (view.game !== game) {
      reviewState = "none";
      return;
    }
    const steps = view.steps.map((step, i) => {
      const m = answer.moves[i];
      if (!m || String(m.move) !== String(step.move)) return step;
      const { loss, judgement, exact, value_before, value_after, best_moves } = m;
      return { ...step, review: { loss, judgement, exact, value_before, value_after, best_moves } };
    });
    view = { ...view, steps, summary: answer.summary, annotated: answer.annotated };
    history.replaceState(snapshot(), "", location.href);
    reviewState = "done";
  } catch (error) {
    reviewState = "error";
    showMessage(`Review: ${error.message}`);
  }
  render();
}

// -- setting up -------------------------------------------------------------------------

async function openPosition(position, query = view.query) {
  try {
    const played = await api.play(rulesBody(query), position, { moves: [] });
    navigate({ query, start: played.position, steps: [], cursor: 0, game: null, summary: null, annotated: null });
  } catch (error) {
    showMessage(`Position: ${error.message}`);
  }
}

function changeRules(query) {
  navigate({ query, start: "start", steps: [], cursor: 0, game: null, summary: null, annotated: null });
}

function onPaste(event) {
  event.preventDefault();
  const text = $("paste-text").value;
  if (!text.trim()) return;
  const what = classifyPaste(text);
  if (what.game) openGame(view.query, "start", what.game, null);
  else openPosition(what.position);
}

// -- rendering ----------------------------------------------------------------------------

function boardOf(position, answer) {
  if (answer) return answer.board;
  if (position !== "start") return parseCompact(position);
  const rules = effectiveRules(info, view.query);
  return rules ? startOf(rules) : null;
}

function render() {
  renderAnswer();
  renderReview();
  picker?.show(view.query);
  if ($("editor-panel").open) fillEditor();
  $("undo").disabled = view.cursor === 0;
  $("redo").disabled = view.cursor >= view.steps.length;
}

function renderAnswer() {
  const position = current();
  const answer = answerFor(position);
  const board = boardOf(position, answer);
  const next = view.steps[view.cursor];
  const played = next ? next.move : null;
  if (board) {
    const values = new Map();
    const best = new Set((answer?.best_moves || []).map(String));
    for (const m of answer?.moves || []) values.set(m.move, { value: m.value, exact: m.exact, best: best.has(String(m.move)) });
    drawBoard($("board"), board, { flipped, values, played, onPlay: playMove });
    $("to-move").textContent = answer?.over ? gameOver(board) : toMove(board);
  }
  renderMoveValues($("moves"), answer, { played, onPlay: playMove, state: analysisState });
  if (answer && !performance.getEntriesByName(FIRST_VALUES).length) performance.mark(FIRST_VALUES);
  $("search-info").textContent = answer ? searchSummary(answer) : "";
  const pv = answer ? pvText(answer) : "";
  $("pv").textContent = pv ? `Best line: ${pv}` : "";
  $("longer").disabled = !answer || answer.exact || answer.over;
  $("longer").textContent = analysisState === "longer" ? "Stop" : "Search longer";
  $("busy").hidden = !(analysisState === "searching" || analysisState === "longer");
}

function toMove(board) {
  return `${sideName(board.to_move)} to move${board.swap_available ? " \u00b7 North may swap" : ""}`;
}

function gameOver(board) {
  const [south, north] = board.stores;
  const winner = south === north ? "a draw" : `${south > north ? "South" : "North"} wins`;
  return `Game over: South ${south}, North ${north} \u2014 ${winner}`;
}

function renderReview() {
  renderRecord($("record"), view.steps, view.cursor, jump);
  drawChart($("chart"), view.steps, view.cursor, jump);
  $("chart-caption").hidden = !$("chart").firstChild;
  renderSummary($("summary"), view.game ? view.summary : null);
  const text = view.game && view.annotated ? view.annotated : writeGame(view.steps);
  $("game-text").textContent = text;
  $("game-text").hidden = !text;
  const reviewing = view.game && reviewState === "pending" && !view.steps.every((s) => s.review);
  $("review-status").textContent = reviewing ? "Reviewing every sowing\u2026" : "";
  const canReview = !view.game && view.steps.length > 0;
  $("review-line").hidden = !canReview;
  const found = view.game ? mistakes() : [];
  const reviewed = view.game && view.steps.length > 0 && view.steps.every((s) => s.review);
  $("review-nav").hidden = !reviewed;
  $("next-mistake").disabled = !found.length;
  const after = found.filter((i) => i >= view.cursor).length;
  $("mistake-info").textContent = !reviewed
    ? ""
    : found.length === 0
      ? "No sowing loses seeds."
      : `${found.length} sowing${found.length === 1 ? "" : "s"} lose seeds` +
        (after ? `, ${after} from here` : "");
}

function fillEditor() {
  const position = current();
  const board = boardOf(position, answerFor(position));
  if (board) showEditor($("editor"), board, (edited) => openPosition(edited), info?.limits.max_seeds);
}

function showMessage(text) {
  $("message").textContent = text;
  $("message").hidden = !text;
}

// -- wiring -------------------------------------------------------------------------------

function onKey(event) {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  if (event.target.closest("input, select, textarea, [contenteditable]")) return;
  const key = event.key;
  const actions = {
    ArrowLeft: () => jump(view.cursor - 1),
    ArrowRight: () => jump(view.cursor + 1),
    Home: () => jump(0),
    End: () => jump(view.steps.length),
    f: () => $("flip").click(),
    l: () => $("longer").disabled || searchLonger(),
    s: () => playIfLegal("swap"),
    n: () => nextMistake(),
  };
  // Houses 1..9 by their digit, 10..12 by their letter in the Finnish notation (a, b, c).
  if (/^[1-9]$/.test(key)) actions[key] = () => playIfLegal(Number(key));
  if (/^[a-c]$/.test(key)) actions[key] = () => playIfLegal(key.charCodeAt(0) - 87);
  if (!actions[key]) return;
  event.preventDefault();
  actions[key]();
}

function playIfLegal(move) {
  const answer = answerFor(current());
  if (answer?.moves.some((m) => String(m.move) === String(move))) playMove(move);
}

function restore(state) {
  view = { query: state.query, start: state.start, steps: state.steps, cursor: state.cursor, game: state.game,
    summary: state.summary, annotated: state.annotated };
  showMessage("");
  render();
  requestAnalysis();
  if (view.game) review();
}

function load() {
  const url = readUrl(location);
  const state = history.state;
  if (state?.v === 1) {
    restore(state);
  } else if (url.game) {
    view = { ...view, query: url.query };
    openGame(url.query, url.position, url.game, url.cursor, { replace: true });
  } else {
    navigate({ query: url.query, start: url.position, steps: [], cursor: 0, game: null }, { replace: true });
  }
}

function main() {
  $("undo").addEventListener("click", () => jump(view.cursor - 1));
  $("redo").addEventListener("click", () => jump(view.cursor + 1));
  $("flip").addEventListener("click", () => {
    flipped = !flipped;
    remember("kalah-flipped", String(flipped));
    $("flip").setAttribute("aria-pressed", String(flipped));
    renderAnswer();
  });
  $("flip").setAttribute("aria-pressed", String(flipped));
  $("longer").addEventListener("click", searchLonger);
  $("next-mistake").addEventListener("click", nextMistake);
  // The board and the chart are drawn at their width (text at least 12 px): redraw on resize.
  let resizing = 0;
  window.addEventListener("resize", () => {
    cancelAnimationFrame(resizing);
    resizing = requestAnimationFrame(() => {
      renderAnswer();
      renderReview();
    });
  });
  $("paste").addEventListener("submit", onPaste);
  $("editor-panel").addEventListener("toggle", () => $("editor-panel").open && fillEditor());
  $("review-line").addEventListener("click", () =>
    openGame(view.query, view.start, writeGame(view.steps), view.cursor),
  );
  document.addEventListener("keydown", onKey);
  window.addEventListener("popstate", (event) => {
    if (event.state?.v === 1) restore(event.state);
    else load();
  });
  load();
  api
    .rulesInfo()
    .then((rules) => {
      info = rules;
      picker = initRulesPicker($("rules-form"), info, changeRules);
      render();
      watchDatabases(rules.databases);
    })
    .catch((error) => showMessage(`Rules: ${error.message}`));
}

// -- endgame databases ------------------------------------------------------------------------

const DATABASES_EVERY_MS = 5000;

/** While the server builds endgame databases, say how far each has got (GET /v1/rules every
 * few seconds): until one is ready, mid-game answers for its rules are estimates more often. */
function watchDatabases(databases) {
  const building = (databases?.builds || []).filter((b) => b.state === "queued" || b.state === "building");
  const text = building.map((b) => {
    const share = `${Math.floor(100 * (b.progress || 0))}%`;
    const eta = b.eta_s == null ? "" : `, about ${formatDuration(b.eta_s)} left`;
    return `${b.presets.join("/")} (${b.max_seeds} seeds): ${b.state === "queued" ? "waiting" : share + eta}`;
  });
  $("databases").textContent = text.length
    ? `Endgame databases being built \u2014 ${text.join("; ")}. Answers near the end of a game get exact as they finish.`
    : "";
  $("databases").hidden = !text.length;
  if (!text.length) return;
  setTimeout(() => {
    api.rulesInfo().then((rules) => watchDatabases(rules.databases)).catch(() => watchDatabases(null));
  }, DATABASES_EVERY_MS);
}

function formatDuration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}

main();
