// The line of sowings in the Finnish notation, one button per sowing. In a game review each
// reviewed sowing's button carries data-loss (seeds lost against perfect play) and its
// judgement, written as the annotated game writes it (?! inaccuracy, ? mistake, ?? blunder).

import { h } from "./dom.js";
import { JUDGEMENT_MARK, sideName } from "./format.js";
import { rounds, token } from "./notation.js";

/** cursor: how many sowings have been played in the shown position; onJump(index). */
export function renderRecord(container, steps, cursor, onJump) {
  if (!steps.length) {
    container.replaceChildren(h("p", { class: "placeholder" }, "No sowings yet: play a move on the board."));
    return;
  }
  const list = h("ol", { class: "rounds" });
  rounds(steps).forEach((round, number) => {
    list.append(
      h("li", {}, [
        h("span", { class: "round-no", "aria-hidden": "true" }, `${number + 1}.`),
        turn(round.south, steps, cursor, onJump),
        h("span", { class: "dash", "aria-hidden": "true" }, "\u2013"),
        turn(round.north, steps, cursor, onJump),
      ]),
    );
  });
  container.replaceChildren(list);
}

function turn(indexes, steps, cursor, onJump) {
  return h(
    "span",
    { class: "turn" },
    indexes.map((i) => sowingButton(steps[i], i, cursor, onJump)),
  );
}

function sowingButton(step, index, cursor, onJump) {
  const review = step.review;
  const classes = ["sowing"];
  if (review) classes.push(`j-${review.judgement}`, review.exact ? "exact" : "estimate");
  const mark = review ? JUDGEMENT_MARK[review.judgement] : "";
  let label = `${sideName(step.mover)} ${step.move === "swap" ? "swap" : `house ${step.move}`}`;
  if (step.captured) label += `, captures ${step.captured}`;
  if (review) {
    label += `: ${review.judgement}, ${review.exact ? "" : "about "}${review.loss} seed${review.loss === 1 ? "" : "s"} lost`;
  }
  return h(
    "button",
    {
      type: "button",
      class: classes.join(" "),
      "data-index": String(index),
      "data-loss": review ? String(review.loss) : undefined,
      "aria-current": index === cursor ? "step" : undefined,
      "aria-label": label,
      title: review ? `${review.judgement}: loses ${review.loss}` : undefined,
      onclick: () => onJump(index),
    },
    [token(step), mark ? h("span", { class: "mark" }, mark) : null],
  );
}

/** Per player: sowings, average loss and the judgement counts. */
export function renderSummary(container, summary) {
  if (!summary) {
    container.replaceChildren();
    return;
  }
  container.replaceChildren(
    ...["south", "north"].map((side) => {
      const p = summary[side];
      const j = p.judgements;
      return h("p", {}, [
        h("strong", {}, sideName(side)),
        `: ${count(p.sowings, "sowing", "sowings")}, average loss ${p.average_loss.toFixed(2)}${p.exact ? "" : " (estimated)"}; `,
        `${j.best} best, ${count(j.inaccuracy, "inaccuracy", "inaccuracies")}, `,
        `${count(j.mistake, "mistake", "mistakes")}, ${count(j.blunder, "blunder", "blunders")}`,
      ]);
    }),
  );
}

function count(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}
