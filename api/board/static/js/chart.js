// The review chart: the value of the game from South's side before each sowing (a line;
// filled dots exact, hollow dots estimated) and each sowing's loss (a bar below, coloured and
// sized by its judgement). Every sowing's column is a target: click it to go there.

import { s } from "./dom.js";
import { sideName, signed } from "./format.js";

const WIDTH = 640; // its width in units when the container's is unknown; else its width in px
const TOP = 120;
const BARS = 44;
const PAD = 8;

export function drawChart(container, steps, cursor, onJump) {
  const reviewed = steps.filter((step) => step.review);
  if (!reviewed.length || reviewed.length !== steps.length) {
    container.replaceChildren();
    return;
  }
  const n = steps.length;
  const south = (step, value) => (step.mover === "south" ? value : -value);
  const points = steps.map((step) => ({ v: south(step, step.review.value_before), exact: step.review.exact }));
  const last = steps[n - 1];
  points.push({ v: south(last, last.review.value_after), exact: last.review.exact });
  const range = Math.max(4, ...points.map((p) => Math.abs(p.v)));
  const maxLoss = Math.max(6, ...steps.map((step) => step.review.loss));
  // Drawn at the container's own width, so that its 12 px labels are 12 px on screen.
  const W = Math.round(container.clientWidth) || WIDTH;
  const height = TOP + BARS + 2 * PAD;
  const step = (W - 2 * PAD) / n;
  const x = (i) => PAD + step * i;
  const y = (v) => PAD + TOP / 2 - (v / range) * (TOP / 2 - 4);

  const svg = s("svg", {
    viewBox: `0 0 ${W} ${height}`,
    class: "chart-svg",
    role: "group",
    "aria-label": "Value for South before each sowing, and each sowing's loss",
  });
  svg.append(
    s("rect", { x: PAD, y: PAD, width: W - 2 * PAD, height: TOP / 2, class: "south-half" }),
    s("line", { x1: PAD, x2: W - PAD, y1: y(0), y2: y(0), class: "axis" }),
    s("text", { x: PAD + 4, y: PAD + 14, class: "chart-label" }, `South +${range}`),
    s("text", { x: PAD + 4, y: PAD + TOP - 6, class: "chart-label" }, `North +${range}`),
    s("line", { x1: PAD, x2: W - PAD, y1: PAD + TOP + 2, y2: PAD + TOP + 2, class: "axis" }),
  );
  steps.forEach((st, i) => {
    const r = st.review;
    const column = s("g", {
      class: `column${i === cursor ? " current" : ""}`,
      "data-sowing": String(i),
      onclick: () => onJump(i),
    });
    const barHeight = (r.loss / maxLoss) * (BARS - 4);
    column.append(
      s("rect", { x: x(i), y: PAD, width: step, height: TOP + BARS, class: "hit" }),
      s("rect", {
        x: x(i) + step * 0.2,
        y: PAD + TOP + 4,
        width: step * 0.6,
        height: Math.max(r.loss ? 2 : 0, barHeight),
        class: `bar j-${r.judgement}`,
      }),
      s(
        "title",
        {},
        `${i + 1}. ${sideName(st.mover)} ${st.move}: ${r.judgement}, loss ${r.loss}; value for South ${signed(points[i].v)} before`,
      ),
    );
    svg.append(column);
  });
  svg.append(
    s("polyline", {
      points: points.map((p, i) => `${x(i).toFixed(1)},${y(p.v).toFixed(1)}`).join(" "),
      class: "value-line",
    }),
  );
  points.forEach((p, i) => {
    svg.append(s("circle", { cx: x(i), cy: y(p.v), r: 3, class: p.exact ? "dot exact" : "dot estimate" }));
  });
  container.replaceChildren(svg);
}
