// The rules picker: a preset and every option, built from GET /v1/rules. A change starts a
// new game under the chosen rules (onChange gets the rules' query form).

import { h } from "./dom.js";
import { OPTIONS, effectiveRules, rulesQuery } from "./rules.js";

export function initRulesPicker(form, info, onChange) {
  const controls = {};
  const preset = h(
    "select",
    { id: "rule-preset", name: "rules" },
    info.presets.map((p) => h("option", { value: p.name, title: p.description }, p.name)),
  );
  const rows = [field("rule-preset", "Preset", preset)];
  for (const option of info.options.filter((o) => OPTIONS.includes(o.name))) {
    const id = `rule-${option.name}`;
    let control;
    if (option.type === "integer") {
      control = h("input", { id, name: option.name, type: "number", min: option.values[0], max: option.values[1], step: 1 });
    } else if (option.type === "boolean") {
      control = h("input", { id, name: option.name, type: "checkbox" });
    } else {
      control = h("select", { id, name: option.name }, option.values.map((v) => h("option", { value: v }, v)));
    }
    control.title = option.description;
    controls[option.name] = control;
    rows.push(field(id, option.name, control));
  }
  form.replaceChildren(...rows);

  const read = () => {
    const rules = {};
    for (const [name, control] of Object.entries(controls)) {
      rules[name] = control.type === "checkbox" ? control.checked : control.type === "number" ? Number(control.value) : control.value;
    }
    return rules;
  };
  preset.addEventListener("change", () => onChange({ rules: preset.value }));
  for (const control of Object.values(controls)) {
    control.addEventListener("change", () => {
      if (control.type === "number" && !control.checkValidity()) return;
      onChange(rulesQuery(info, preset.value, read()));
    });
  }
  // The controls are set only when the shown rules change: a render for an answer that
  // arrives while someone types must not overwrite what they typed.
  let shown = null;
  return {
    show(query) {
      const rules = effectiveRules(info, query);
      const key = JSON.stringify([query.rules || "kalah", rules]);
      if (!rules || key === shown) return;
      shown = key;
      preset.value = query.rules || "kalah";
      for (const [name, control] of Object.entries(controls)) {
        if (control.type === "checkbox") control.checked = rules[name];
        else control.value = String(rules[name]);
      }
    },
  };
}

function field(id, label, control) {
  return h("div", { class: "field" }, [h("label", { for: id }, label), control]);
}
